"""A node exactly at cluster-autoscaler's scale-down threshold, by CA version.

CA 1.35 (upstream commit 8704d355, on the 1.35 release branch as 66d2242f61, in tag
cluster-autoscaler-1.35.0; eligibility.go ``isNodeAtOrBelowUtilizationThreshold``) made a node
whose utilisation equals the threshold underutilised, and its backports brought the rule to
1.32.6, 1.33.4 and 1.34.3 (each the first tag of its branch with the commit's subject); before
(up to 1.34.2, 1.33.3, 1.32.5, and every 1.31 and older)
(``isNodeBelowUtilizationThreshold``, ``utilization >= threshold`` refused) it was
``NotUnderutilized``. CA's minor version follows Kubernetes', so the rule follows the scenario's
``kubernetesVersion`` (default 1.36) and ``clusterAutoscalerVersion`` (default: the minor's
newest release known, ``analyzer.autoscaler.release``) in ``analyzer autoscale``, and the
profile's version and ``autoscaler.cluster-autoscaler-version`` in the replay
(tests/test_autoscale_reuse.py ``test_a_node_exactly_at_the_threshold_by_version``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import by_name, node, pod, run

NOW = "2026-11-01T12:00:00Z"
RS = {"owner": ["ReplicaSet", "rs", "apps/v1"]}
# takes any moved pod, never a candidate itself
SINK = {
    "cpu": 64000,
    "memory": 2**36,
    "annotations": {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"},
}


def _judge(tmp_path: Path, version: str, facts: dict[str, Any], pods: list[Any],
           options: dict[str, Any] | None = None) -> dict[str, Any]:  # fmt: skip
    """``version``: the Kubernetes minor, or a CA release ("1.34.2": that minor, that patch)."""
    release = None
    if version.count(".") == 2:
        release, version = version, version.rsplit(".", 1)[0]
    scenario = {
        "autoscaler": "cluster-autoscaler",
        "kubernetesVersion": version,
        "now": NOW,
        "options": options or {},
        "nodes": [node("n", facts), node("sink", SINK)],
        "pods": [pod(f"p{i}", p, NOW, "n") for i, p in enumerate(pods)],
    }
    if release is not None:
        scenario["clusterAutoscalerVersion"] = release
    result = run(tmp_path, scenario)
    # the release whose rules applied: the one given, else the minor's newest known
    newest = {"1.35": "1.35.2", "1.36": "1.36.1", "1.37": "1.37.0", "1.34": "1.34.5",
              "1.31": "1.31.5", "1.30": "1.30.7"}  # fmt: skip
    assert result["clusterAutoscalerVersion"] == (release or newest[version])
    assert not any("clusterAutoscalerVersion" in n for n in result["notes"])
    return by_name(result)["n"]


@pytest.mark.parametrize(
    ("version", "candidate"),
    [("1.36", True), ("1.37", True), ("1.35", True), ("1.35.0", True), ("1.34", True),
     ("1.34.3", True), ("1.34.2", False), ("1.34.0", False), ("1.33.4", True),
     ("1.33.3", False), ("1.32.6", True), ("1.32.5", False), ("1.31", False), ("1.30", False)],
)  # fmt: skip
def test_a_node_at_the_threshold_is_a_candidate_from_ca_1_35(
    tmp_path: Path, version: str, candidate: bool
) -> None:
    # 500m of 1000m cpu, memory far lower: utilisation 0.5, the default threshold
    got = _judge(
        tmp_path, version, {"cpu": 1000, "memory": 2**30}, [{"cpu": 500, "memory": 1, **RS}]
    )
    assert got["utilization"] == 0.5
    assert got["candidate"] is candidate
    if candidate:  # its pod goes to the sink: removable
        assert got["removable"] and got["unremovableReason"] is None
    else:
        assert got["unremovableReason"] == "NotUnderutilized"


@pytest.mark.parametrize("version", ["1.34.0", "1.35", "1.36"])
def test_a_node_just_over_the_threshold_is_not_underutilized(tmp_path: Path, version: str) -> None:
    got = _judge(
        tmp_path, version, {"cpu": 1000, "memory": 2**30}, [{"cpu": 501, "memory": 1, **RS}]
    )
    assert got["utilization"] == pytest.approx(0.501)
    assert got["unremovableReason"] == "NotUnderutilized"


@pytest.mark.parametrize(("version", "candidate"), [("1.35", True), ("1.34.0", False)])
def test_a_gpu_node_at_the_gpu_threshold(tmp_path: Path, version: str, candidate: bool) -> None:
    # a GPU node is judged by its GPU ratio against the GPU threshold: 1 of 2 GPUs, 0.5
    facts = {"cpu": 8000, "memory": 2**34, "gpus": 2}
    got = _judge(tmp_path, version, facts, [{"cpu": 100, "memory": 1, "gpus": 1, **RS}])
    assert got["utilization"] == 0.5
    assert got["candidate"] is candidate


@pytest.mark.parametrize(("version", "candidate"), [("1.35", True), ("1.34.0", False)])
def test_only_daemonset_pods_at_a_zero_threshold(
    tmp_path: Path, version: str, candidate: bool
) -> None:
    # upstream's "only daemonsets pods on this nodes" (eligibility_test.go, with 8704d355):
    # with ignore-daemonsets-utilization the DaemonSet pod is taken off, utilisation 0, at a
    # threshold of 0: underutilised from 1.35; before, 0 >= 0 refused it (the bug it fixed)
    options = {"ignore-daemonsets-utilization": True, "scale-down-utilization-threshold": 0}
    ds = {"cpu": 500, "memory": 0, "owner": ["DaemonSet", "ds", "apps/v1"]}
    got = _judge(tmp_path, version, {"cpu": 1000, "memory": 10}, [ds], options)
    assert got["utilization"] == 0.0
    assert got["candidate"] is candidate
