"""A kube-system pod no PodDisruptionBudget covers, by cluster-autoscaler version.

CA 1.33 (upstream commit 696af986ed, simulator/drainability/rules/system ``Drainable``) made such
a pod drainable once it is older than ``--blocking-system-pod-distruption-timeout`` (default 1h;
"older" strictly, and only with a creation time); before, it always blocked the drain
(``UnmovableKubeSystemPod``). The rule follows the scenario's ``kubernetesVersion``. Upstream's
own two cases are in tests/data/autoscaler/drainability.yaml.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import by_name, node, pod, run

NOW = "2026-11-01T12:00:00Z"
SPARE = {
    "cpu": 4000,
    "memory": 2**32,
    "annotations": {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"},
}


def _system_pod_node(tmp_path: Path, version: str, age: int | None, **options: Any) -> Any:
    facts: dict[str, Any] = {
        "cpu": 100,
        "memory": 1000,
        "namespace": "kube-system",
        "owner": ["ReplicaSet", "metrics-server-7d4f", "apps/v1"],
    }
    if age is not None:
        facts["createdSecondsAgo"] = age
    scenario = {
        "autoscaler": "cluster-autoscaler",
        "kubernetesVersion": version,
        "now": NOW,
        "options": options,
        "nodes": [node("n", {"cpu": 4000, "memory": 2**32}), node("spare", SPARE)],
        "pods": [pod("metrics-server", facts, NOW, "n")],
    }
    return run(tmp_path, scenario)


@pytest.mark.parametrize(
    ("version", "age", "drained"),
    [
        ("1.36", 7200, True),  # two hours old: past the default hour
        ("1.33", 3601, True),
        ("1.36", 3600, False),  # exactly the hour: not after it
        ("1.36", 1800, False),
        ("1.36", None, False),  # no creation time: upstream's zero time never passes
        ("1.32", 7200, False),  # before 1.33 the rule had no timeout
    ],
)
def test_a_system_pod_blocks_until_the_timeout(
    tmp_path: Path, version: str, age: int | None, drained: bool
) -> None:
    got = by_name(_system_pod_node(tmp_path, version, age))["n"]
    if drained:  # drainable: moved to the spare node
        assert got["removable"] and got["blockingPod"] is None
        assert got["destinations"] == {"kube-system/metrics-server": "spare"}
    else:
        assert got["blockingPod"] == {
            "pod": "kube-system/metrics-server",
            "reason": "UnmovableKubeSystemPod",
        }


def test_the_timeout_is_the_flag(tmp_path: Path) -> None:
    flag = "blocking-system-pod-distruption-timeout"
    result = _system_pod_node(tmp_path, "1.36", 700, **{flag: "10m"})
    assert by_name(result)["n"]["removable"]
    assert result["options"][flag] == 600.0
    # a CA without the flag: it is noted and kube-system pods block as they did
    result = _system_pod_node(tmp_path, "1.32", 700, **{flag: "10m"})
    assert not by_name(result)["n"]["removable"]
    assert any(flag in note and "1.33+" in note for note in result["notes"])
