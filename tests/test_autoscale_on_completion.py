"""``safe-to-evict: on-completion`` (cluster-autoscaler 1.36+, upstream commit f2b5b0394b) in
``analyzer autoscale``: the ``oncompletion`` drain rule answers ``WaitForCompletion`` for a pod
with that annotation (simulator/drainability/rules/oncompletion/rule.go), after the DaemonSet,
safe-to-evict and terminal rules and before the blocking ones (rules.go ``Default``).
``GetPodsToMove`` keeps such a pod apart (``OnCompletionPods``: neither moved nor blocking), and
``Planner.NodesToDelete`` delays a node with any (``BlockedByOnCompletionPod``). Before 1.36 the
value means nothing, so the pod goes through the other rules like any pod.

Node "node" (1000m) holds the pods; "spare" (scale-down-disabled, 4000m) takes moved pods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import beside_spare, by_name, run

NOW = "2026-06-10T12:00:00Z"
ON_COMPLETION = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "on-completion"}
RS = ["ReplicaSet", "rs", "apps/v1"]
OBJECTS = [{"kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "default"},
            "spec": {"replicas": 5}},
           {"kind": "DaemonSet", "metadata": {"name": "ds", "namespace": "default"}}]  # fmt: skip


def _run(tmp_path: Path, pods: dict[str, dict[str, Any]], version: str = "1.36") -> Any:
    result = run(tmp_path, beside_spare(version, NOW, pods, OBJECTS))
    return result, by_name(result)["node"]


def test_a_pod_left_to_finish_delays_its_node(tmp_path: Path) -> None:
    """A lone unreplicated pod with the annotation neither blocks (NotReplicated comes after the
    rule) nor moves; its node is unneeded but not deleted."""
    result, got = _run(tmp_path, {"job": {"cpu": 100, "memory": 1, "annotations": ON_COMPLETION}})
    assert got["candidate"] and not got["removable"]
    assert got["unremovableReason"] == "BlockedByOnCompletionPod"
    assert got["blockingPod"] is None and got["destinations"] == {}
    assert got["onCompletionPods"] == ["default/job"]
    assert result["removed"] == []


def test_before_136_the_value_means_nothing(tmp_path: Path) -> None:
    """CA 1.35 has no such rule: the unreplicated pod blocks the drain."""
    pods = {"job": {"cpu": 100, "memory": 1, "annotations": ON_COMPLETION}}
    _, got = _run(tmp_path, pods, version="1.35")
    assert got["unremovableReason"] == "BlockedByPod"
    assert got["blockingPod"] == {"pod": "default/job", "reason": "NotReplicated"}
    assert got["onCompletionPods"] == []


def test_the_other_pods_are_still_moved_in_the_simulation(tmp_path: Path) -> None:
    pods = {
        "web": {"cpu": 200, "memory": 1, "owner": RS},
        "job": {"cpu": 100, "memory": 1, "annotations": ON_COMPLETION},
    }
    result, got = _run(tmp_path, pods)
    assert got["destinations"] == {"default/web": "spare"}
    assert got["unremovableReason"] == "BlockedByOnCompletionPod" and not got["empty"]
    assert result["removed"] == []


@pytest.mark.parametrize(
    ("facts", "why"),
    [
        ({"owner": ["DaemonSet", "ds", "apps/v1"]}, "the DaemonSet rule comes first"),
        ({"annotations": {"kubernetes.io/config.mirror": "x"}}, "the mirror rule comes first"),
    ],
)
def test_an_earlier_rule_wins(tmp_path: Path, facts: dict[str, Any], why: str) -> None:
    """A DaemonSet or mirror pod with the annotation is answered by its own rule (evicted or
    skipped): the node is empty and deleted."""
    annotations = {**ON_COMPLETION, **facts.get("annotations", {})}
    pods = {"p": {"cpu": 100, "memory": 1, **facts, "annotations": annotations}}
    result, got = _run(tmp_path, pods)
    assert got["removable"] and got["onCompletionPods"] == [], why
    assert result["removed"] == ["node"], why
