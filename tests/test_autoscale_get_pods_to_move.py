"""``analyzer autoscale`` on cluster-autoscaler's ``TestGetPodsToMove``
(simulator/drain_test.go, tag cluster-autoscaler-1.36.0), through the real CLI.

The cases are facts in ``tests/data/autoscaler/get_pods_to_move.yaml`` (its header says how each
upstream assertion maps to the output, what was adapted and what was not transcribed); every
expected value is upstream's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import by_name, data, node, pod, run

MOVE = data("get_pods_to_move.yaml")
SPARE = {
    "cpu": 1000,
    "memory": 2000000,
    "annotations": {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"},
}


def _name(case: dict[str, Any], fixture: str) -> str:
    """The pod's metadata.name in this case (upstream's, unless the case renames it)."""
    return str(case.get("rename", {}).get(fixture, MOVE["pods"][fixture]["name"]))


def _key(case: dict[str, Any], fixture: str) -> str:
    """``namespace/name`` of a fixture pod in this case, as the output names pods."""
    return f"{MOVE['pods'][fixture].get('namespace', 'default')}/{_name(case, fixture)}"


def _scenario(case: dict[str, Any]) -> dict[str, Any]:
    """The case's pods on "node", next to "spare"; the registry's objects and the PDBs."""
    pods = []
    for fixture in case["pods"]:
        facts = {k: v for k, v in MOVE["pods"][fixture].items() if k != "name"}
        pods.append(pod(_name(case, fixture), facts, MOVE["now"], "node"))
    scenario: dict[str, Any] = {
        "autoscaler": "cluster-autoscaler",
        "now": MOVE["now"],
        "options": MOVE["options"],
        "nodes": [node("node", {"cpu": 1000, "memory": 2000000}), node("spare", SPARE)],
        "pods": pods,
    }
    names = list(case.get("extra", []))
    if "rcs" in case or "replicaSets" in case:  # upstream's registry (nil otherwise)
        names += case.get("rcs", []) + case.get("replicaSets", []) + MOVE["always"]
    objects = [MOVE["objects"][n] for n in names]
    objects += [{"kind": "PodDisruptionBudget", **MOVE["pdbs"][n]} for n in case.get("pdbs", [])]
    if objects:
        scenario["objects"] = objects
    return scenario


@pytest.mark.parametrize("case", MOVE["cases"], ids=lambda c: c["desc"])
def test_get_pods_to_move_matches_upstream(tmp_path: Path, case: dict[str, Any]) -> None:
    """wantBlocking, wantPods, wantDs and wantOnCompletion of the upstream case."""
    result = run(tmp_path, _scenario(case))
    got = by_name(result)["node"]
    assert got["candidate"], "the node must be simulated"  # utilisation 0: a candidate
    blocking = case.get("wantBlocking")
    if blocking is not None:
        want = {"pod": _key(case, blocking["pod"]), "reason": blocking["reason"]}
        assert got["blockingPod"] == want
        assert got["unremovableReason"] == "BlockedByPod"
        assert not got["removable"]
        return
    assert got["blockingPod"] is None
    # a Succeeded or Failed pod never reaches GetPodsToMove in CA's loop: its AllPodLister
    # (utils/kubernetes/listers.go) drops it before the snapshot is built, so where upstream's
    # direct call lists it in wantPods (the terminal rule: drainable) the loop has no such pod
    gone = {p for p in case["pods"] if MOVE["pods"][p].get("phase") in ("Succeeded", "Failed")}
    for fixture in gone:
        assert any(_key(case, fixture) in note for note in result["notes"])
    moved = sorted(_key(case, p) for p in case.get("wantPods", []) if p not in gone)
    assert sorted(got["destinations"]) == moved
    assert set(got["destinations"].values()) <= {"spare"}
    for fixture in case.get("wantDs", []):  # DaemonSet pods are evicted, not moved
        assert _key(case, fixture) not in got["destinations"]
    waiting = sorted(_key(case, p) for p in case.get("wantOnCompletion", []))
    assert sorted(got["onCompletionPods"]) == waiting
    if waiting:  # planner.go NodesToDelete: not deleted while they run
        assert got["unremovableReason"] == "BlockedByOnCompletionPod"
        assert "node" not in result["removed"]
    else:
        assert got["removable"]
        assert got["unremovableReason"] is None
        assert got["empty"] is (not moved)
