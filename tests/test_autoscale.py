"""``analyzer autoscale`` on cluster-autoscaler's own unit-test cases (tests/data/autoscaler/*.yaml:
utilisation, the drainability rules, eligibility, nodes to remove), through the real CLI.

Every expected value is upstream's assertion, transcribed with the test's name; the scenario is
built from the test's fixtures (``autoscale_cases``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import by_name, data, node, pod, run

UTIL = data("utilization.yaml")
ELIG = data("eligibility.yaml")
DRAIN = data("drainability.yaml")
REMOVE = data("nodes_to_remove.yaml")


@pytest.mark.parametrize("case", UTIL["cases"], ids=lambda c: c["name"])
def test_utilization_matches_upstream(tmp_path: Path, case: dict[str, Any]) -> None:
    """TestCalculate: the node's utilisation (InEpsilon 1 %) and cpu ratio (exact)."""
    facts = case["node"]
    pods = [
        pod(f"{name}-{i}", UTIL["pods"][name], UTIL["now"], facts["name"])
        for i, name in enumerate(case["pods"])
    ]
    scenario = {
        "autoscaler": "cluster-autoscaler",
        "now": UTIL["now"],
        "options": case.get("options", {}),
        "nodes": [node(facts["name"], facts)],
        "pods": pods,
    }
    got = by_name(run(tmp_path, scenario))[facts["name"]]
    if "approx" in case:
        assert got["utilization"] == pytest.approx(case["approx"], rel=0.01)
    if "cpu" in case:
        assert got["utilizationByResource"]["cpu"] == case["cpu"]  # bit-exact float64
    if "exact" in case:
        assert got["utilization"] == case["exact"]
    if "error" in case:  # upstream returns an error: UnexpectedError since CA 1.32 (714ab661ca)
        result = run(tmp_path, scenario)
        assert got["utilization"] == 0.0 and got["unremovableReason"] == "UnexpectedError"
        assert not got["candidate"]
        assert any(case["error"] in note for note in result["notes"])
        # before 1.32 the eligibility checker logged it and carried on with 0: a candidate
        old = by_name(run(tmp_path, {**scenario, "kubernetesVersion": "1.31"}))[facts["name"]]
        assert old["utilization"] == 0.0 and old["candidate"]


@pytest.mark.parametrize("case", ELIG["cases"], ids=lambda c: c["name"])
def test_eligibility_matches_upstream(tmp_path: Path, case: dict[str, Any]) -> None:
    """TestFilterOutUnremovable: which nodes stay candidates, and why the others do not. The
    upstream test calls the eligibility checker alone, with its group ng1 at minSize 1; a whole
    pass (``analyzer autoscale``) filters a group at its minSize out before that check
    (``GetScaleDownCandidates``), so the scenario's ng1 has minSize 0."""
    scenario = {
        "autoscaler": "cluster-autoscaler",
        "now": ELIG["now"],
        "options": case.get("options", {}),
        "nodeGroups": [{"name": "ng1", "minSize": 0, "maxSize": 10, "nodes": case["nodes"]}],
        "nodes": [node(name, ELIG["nodes"][name]) for name in case["nodes"]],
        "pods": [
            pod(name, ELIG["pods"][name], ELIG["now"], ELIG["pods"][name]["node"])
            for name in case.get("pods", [])
        ],
    }
    nodes = run(tmp_path, scenario)["nodes"]
    assert [n["name"] for n in nodes if n["candidate"]] == case["candidates"]
    for name, reason in case.get("reasons", {}).items():
        assert by_name({"nodes": nodes})[name]["unremovableReason"] == reason


def _drain_cases() -> list[tuple[str, dict[str, Any], bool | None]]:
    out = []
    for case in DRAIN["cases"]:
        for flag in case.get("flags", [None]):
            label = case["upstream"] + ("" if flag is None else f" skipCustomController={flag}")
            out.append((label, case, flag))
    return out


@pytest.mark.parametrize(("label", "case", "flag"), _drain_cases(), ids=lambda x: str(x)[:90])
def test_drainability_rule_matches_upstream(
    tmp_path: Path, label: str, case: dict[str, Any], flag: bool | None
) -> None:
    """Each rule's blocking reason (or none: the node is removable, its pod moved to spare)."""
    options = dict(case.get("options", {}))
    if flag is not None:
        options["skip-nodes-with-custom-controller-pods"] = flag
    spare = {
        "cpu": 1000,
        "memory": 2000000,
        "annotations": {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"},
    }
    scenario: dict[str, Any] = {
        "autoscaler": "cluster-autoscaler",
        "now": DRAIN["now"],
        "options": options,
        "nodes": [node("node", {"cpu": 1000, "memory": 2000000}), node("spare", spare)],
        "pods": [pod("bar", case["pod"], DRAIN["now"], "node")],
    }
    if "objects" in case or "pdbs" in case:
        objects = [DRAIN["controllers"][name] for name in case.get("objects", [])]
        scenario["objects"] = objects + [
            {"kind": "PodDisruptionBudget", **p} for p in case.get("pdbs", [])
        ]
    got = by_name(run(tmp_path, scenario))["node"]
    namespace = case["pod"].get("namespace", "default")
    if case["want"] is None:
        assert got["blockingPod"] is None, label
        assert got["removable"], label
        assert got["empty"] is case.get("empty", False), label  # Skip: no pod left to move
    else:
        assert got["blockingPod"] == {"pod": f"{namespace}/bar", "reason": case["want"]}, label
        assert got["unremovableReason"] == "BlockedByPod"
        assert not got["removable"]


@pytest.mark.parametrize("case", REMOVE["cases"], ids=lambda c: c["name"])
def test_nodes_to_remove_match_upstream(tmp_path: Path, case: dict[str, Any]) -> None:
    """TestFindNodesToRemove: removable nodes, where their pods go, and the unremovable ones."""
    scenario = {
        "autoscaler": "cluster-autoscaler",
        "now": REMOVE["now"],
        "nodes": [node(name, REMOVE["nodes"][name]) for name in case["nodes"]],
        "pods": [
            pod(name, REMOVE["pods"][name], REMOVE["now"], REMOVE["pods"][name]["node"])
            for name in case.get("pods", [])
        ],
        "objects": REMOVE["objects"],
    }
    result = run(tmp_path, scenario)
    nodes = by_name(result)
    for name in case.get("removable", []):
        assert nodes[name]["removable"], name
        assert nodes[name]["unremovableReason"] is None
    assert sorted(n for n in nodes if nodes[n]["removable"]) == sorted(case.get("removable", []))
    for name in case.get("empty", []):
        assert nodes[name]["empty"] and nodes[name]["destinations"] == {}
    for name, where in case.get("destinations", {}).items():
        assert nodes[name]["destinations"] == where
    for name, reason in case.get("unremovable", {}).items():
        assert nodes[name]["unremovableReason"] == reason
    for name, blocking in case.get("blocking", {}).items():
        assert nodes[name]["blockingPod"] == blocking
    # every removable node goes now: empty ones first, then one drained (max-drain-parallelism 1)
    empty = [n for n in case.get("removable", []) if n in case.get("empty", [])]
    drained = [n for n in case.get("removable", []) if n not in case.get("empty", [])]
    assert result["removed"] == empty + drained[:1]


def test_empty_nodes_match_upstream(tmp_path: Path) -> None:
    """TestFindEmptyNodes: the empty nodes are n0, n2 (only a mirror pod) and n3."""
    case = REMOVE["find_empty"]
    facts = {"cpu": 1000, "memory": 2000000}
    scenario = {
        "autoscaler": "cluster-autoscaler",
        "now": REMOVE["now"],
        "nodes": [node(name, facts) for name in case["nodes"]],
        "pods": [pod(name, p, REMOVE["now"], p["node"]) for name, p in case["pods"].items()],
    }
    nodes = by_name(run(tmp_path, scenario))
    assert [n for n in case["nodes"] if nodes[n]["empty"]] == case["empty"]
    assert nodes["n1"]["blockingPod"] == {"pod": "default/p1", "reason": "NotReplicated"}
