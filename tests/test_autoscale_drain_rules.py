"""``analyzer autoscale`` on cluster-autoscaler 1.36.0's remaining drainability rule tests (the
replicacount, pdb, daemonset, mirror, safetoevict, notsafetoevict and oncompletion rules), the
rule chain's order (rules.go ``Default``) and the remaining-PDB tracker (core/scaledown/pdb/
basic_test.go), through the real CLI.

Every expected value is upstream's (tests/data/autoscaler/drain_rules.yaml says how each test is
expressed as a scenario, and what was not transcribed and why).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import by_name, data, node, pod, run

RULES = data("drain_rules.yaml")
NOW = RULES["now"]
SCALE_DOWN_DISABLED = {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}
SPARE = {"cpu": 1000, "memory": 2000000, "annotations": SCALE_DOWN_DISABLED}
REASONS = ("moved", "empty", "waits")


def _pdb(raw: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "PodDisruptionBudget", **raw}


@pytest.mark.parametrize("case", RULES["cases"], ids=lambda c: c["upstream"][:90])
def test_drain_rule_matches_upstream(tmp_path: Path, case: dict[str, Any]) -> None:
    """The rule chain's answer for the pod on "node" (spare takes a moved pod)."""
    name = case.get("name", "bar")
    scenario: dict[str, Any] = {
        "autoscaler": "cluster-autoscaler",
        "now": NOW,
        "options": case.get("options", {}),
        "nodes": [node("node", {"cpu": 1000, "memory": 2000000}), node("spare", SPARE)],
        "pods": [pod(name, case["pod"], NOW, "node")],
    }
    if "objects" in case or "pdbs" in case:
        objects = [RULES["controllers"][key] for key in case.get("objects", [])]
        scenario["objects"] = objects + [_pdb(p) for p in case.get("pdbs", [])]
    result = run(tmp_path, scenario)
    got = by_name(result)["node"]
    key = f"{case['pod'].get('namespace', 'default')}/{name}"
    want = case["want"]
    if want not in REASONS:  # BlockDrain with that reason
        assert got["blockingPod"] == {"pod": key, "reason": want}
        assert got["unremovableReason"] == "BlockedByPod"
        assert not got["removable"]
        assert result["removed"] == []
        return
    assert got["blockingPod"] is None
    if want == "waits":  # WaitForCompletion: not moved, not blocking; NodesToDelete holds it
        assert got["destinations"] == {}
        assert got["onCompletionPods"] == [key]
        assert got["unremovableReason"] == "BlockedByOnCompletionPod"
        assert not got["removable"]
        assert result["removed"] == []
        return
    assert got["removable"] and got["unremovableReason"] is None
    assert got["onCompletionPods"] == []
    if want == "moved":  # DrainOk / Undefined: re-placed on spare
        assert got["destinations"] == {key: "spare"}
        assert not got["empty"]
    else:  # SkipDrain, or a DaemonSet pod evicted: nothing to move
        assert got["destinations"] == {}
        assert got["empty"]
    assert result["removed"] == ["node"]


# the tracker cases' fixtures (basic_test.go: pdb1 "foo" selects label-1, pdb2 "bar" label-2,
# both minAvailable 1, namespace ns; pods owned by ReplicaSet rs, extensions/v1beta1)
TAINT = [{"key": "test", "value": "x", "effect": "NoSchedule"}]
SELECTS = {"foo": "label-1", "bar": "label-2"}
RS_OWNER = ["ReplicaSet", "rs", "extensions/v1beta1"]
RS_NS = {
    "kind": "ReplicaSet",
    "metadata": {"name": "rs", "namespace": "ns"},
    "spec": {"replicas": 5},
}
WITNESS = {  # a drained node after the case's nodes: not risky ("safe") or risky
    "safe": [{"labels": []}],
    "risky": [{"labels": ["witness"]}, {"labels": ["witness"]}],
}
WITNESS_PDB = {  # covers the risky witness's two pods with 1 disruption: inParallel false
    "metadata": {"name": "w", "namespace": "ns"},
    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"witness": "true"}}},
    "status": {"disruptionsAllowed": 1},
}


def _tracker_pod(name: str, facts: dict[str, Any], node_name: str) -> dict[str, Any]:
    short: dict[str, Any] = {"namespace": "ns", "labels": dict.fromkeys(facts["labels"], "true")}
    owner = facts.get("owner", RS_OWNER)
    if owner is not None:
        short["owner"] = owner
    if "annotations" in facts:
        short["annotations"] = facts["annotations"]
    return pod(name, short, NOW, node_name)


@pytest.mark.parametrize("case", RULES["tracker"]["cases"], ids=lambda c: c["upstream"][:90])
def test_remaining_pdb_tracker_matches_upstream(tmp_path: Path, case: dict[str, Any]) -> None:
    """basicRemainingPdbTracker as a pass shows it: a PDB spent by an earlier removable node
    blocks (NotEnoughPdb), a node whose PDBs cannot take all its pods at once is risky (deleted
    after the others)."""
    layout = dict(case["nodes"])
    if "witness" in case:
        layout["witness"] = WITNESS[case["witness"]]
    nodes = [node(name, {"cpu": 1000, "memory": 2000000, "taints": TAINT}) for name in layout]
    pods = [
        _tracker_pod(f"{name}-{i}", facts, name)
        for name, held in layout.items()
        for i, facts in enumerate(held)
    ]
    pdbs = [
        _pdb({
            "metadata": {"name": pdb, "namespace": "ns"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {SELECTS[pdb]: "true"}}},
            "status": {"disruptionsAllowed": allowed},
        })
        for pdb, allowed in case["disruptions"].items()
    ]  # fmt: skip
    if case.get("witness") == "risky":
        pdbs.append(_pdb(WITNESS_PDB))
    scenario = {
        "autoscaler": "cluster-autoscaler",
        "now": NOW,
        "options": {"max-drain-parallelism": 1},
        "nodes": [*nodes, node("spare", SPARE)],
        "pods": pods,
        "objects": [RS_NS, *case.get("objects", []), *pdbs],
    }
    result = run(tmp_path, scenario)
    got = by_name(result)
    assert sorted(n for n in layout if got[n]["removable"]) == sorted(case["removable"])
    for name in case["removable"]:  # every moved pod went to spare
        assert set(got[name]["destinations"].values()) <= {"spare"}
    if "removed" in case:
        assert result["removed"] == case["removed"]
    else:
        assert len(result["removed"]) == case["removedCount"]
        assert set(result["removed"]) <= set(case["removable"])
    for name, blocking in case.get("blocking", {}).items():
        assert got[name]["blockingPod"] == blocking
        assert got[name]["unremovableReason"] == "BlockedByPod"
    for name, reason in case.get("reasons", {}).items():
        assert got[name]["unremovableReason"] == reason
        assert got[name]["blockingPod"] is None
