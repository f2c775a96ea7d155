"""``analyzer autoscale`` on the upstream scale-down test cases a completeness audit found
neither transcribed nor listed as left out (tests/data/autoscaler/audit_more.yaml, read at tag
cluster-autoscaler-1.36.0), through the real CLI.

Every expected value is the upstream case's; each test's id is "Test function / case name".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import by_name, data, node, pod, run

AUDIT = data("audit_more.yaml")
DISABLED = {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}
RS_OWNER = ["ReplicaSet", "rs", "extensions/v1beta1"]


def _node(name: str, facts: dict[str, Any]) -> dict[str, Any]:
    """``node`` plus a Ready condition when the facts give one."""
    out = node(name, facts)
    if "ready" in facts:
        out["status"]["conditions"] = [{"type": "Ready", "status": facts["ready"]}]
    return out


def _slice(name: str, facts: dict[str, Any], node_name: str) -> dict[str, Any]:
    """A resource.k8s.io/v1 ResourceSlice published for ``node_name``."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": facts["driver"],
            "nodeName": node_name,
            "pool": {"name": facts["pool"], "resourceSliceCount": facts["count"], "generation": 0},
            "devices": [{"name": d} for d in facts["devices"]],
        },
    }


def _claim(name: str, results: list[dict[str, str]]) -> dict[str, Any]:
    """An allocated resource.k8s.io/v1 ResourceClaim in namespace default."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "status": {"allocation": {"devices": {"results": results}}},
    }


def _ca(nodes: list[Any], pods: list[Any], **extra: Any) -> dict[str, Any]:
    return {"autoscaler": "cluster-autoscaler", "nodes": nodes, "pods": pods, **extra}


UTIL = AUDIT["utilization_dra"]


@pytest.mark.parametrize("case", UTIL["cases"], ids=lambda c: c["upstream"])
def test_utilization_with_dra_disabled(tmp_path: Path, case: dict[str, Any]) -> None:
    """TestCalculateWithDynamicResources, draEnabled false: the node's cpu and memory requests
    decide, whatever ResourceSlices and claims there are."""
    facts = UTIL["node"]
    pods = []
    for name, claims in case["pods"].items():
        body = pod(name, UTIL["pods"][name], UTIL["now"], facts["name"])
        if claims:
            body["spec"]["resourceClaims"] = [
                {"name": f"c{i}", "resourceClaimName": c} for i, c in enumerate(claims)
            ]
            body["spec"]["containers"][0]["resources"]["claims"] = [
                {"name": f"c{i}"} for i in range(len(claims))
            ]
        pods.append(body)
    claimed = {c for claims in case["pods"].values() for c in claims}
    objects = [_slice(s, UTIL["slices"][s], facts["name"]) for s in case["slices"]]
    objects += [_claim(c, UTIL["claims"][c]) for c in sorted(claimed)]
    scenario = _ca([node(facts["name"], facts)], pods, now=UTIL["now"])
    if objects:
        scenario["objects"] = objects
    got = by_name(run(tmp_path, scenario))[facts["name"]]
    want = case["want"]
    assert got["utilizationByResource"]["cpu"] == want["cpu"]
    assert got["utilization"] == want["utilization"]
    assert got["utilizationResource"] == want["resource"]


ELIG = AUDIT["eligibility"]


@pytest.mark.parametrize("case", ELIG["cases"], ids=lambda c: c["upstream"])
def test_eligibility_other_suite_and_dra_disabled(tmp_path: Path, case: dict[str, Any]) -> None:
    """TestFilterOutUnremovable: which nodes stay candidates and why the others do not."""
    suite = case["upstream"].rsplit(" ", 1)[1]
    options = {**ELIG["suites"][suite], **case.get("options", {})}
    scenario = _ca(
        [_node(name, ELIG["nodes"][name]) for name in case["nodes"]],
        [
            pod(name, ELIG["pods"][name], ELIG["now"], ELIG["pods"][name]["node"])
            for name in case.get("pods", [])
        ],
        now=ELIG["now"],
        options=options,
        nodeGroups=[{"name": "ng1", "minSize": 0, "maxSize": 10, "nodes": case["nodes"]}],
    )
    if case.get("slice"):
        facts = ELIG["slice"]
        scenario["objects"] = [_slice(facts["name"], facts, facts["node"])]
    nodes = by_name(run(tmp_path, scenario))
    assert [n for n in case["nodes"] if nodes[n]["candidate"]] == case["candidates"]
    for name, reason in case.get("reasons", {}).items():
        assert nodes[name]["unremovableReason"] == reason, name


UPDATE = AUDIT["update_cluster_state"]


@pytest.mark.parametrize("case", UPDATE["cases"], ids=lambda c: c["upstream"])
def test_update_cluster_state_at_threshold_one(tmp_path: Path, case: dict[str, Any]) -> None:
    """TestUpdateClusterState: the unneeded nodes (removable, empty or drained) and the
    unremovable ones."""
    nodes = []
    for name, cpu in case["nodes"].items():
        facts: dict[str, Any] = {"cpu": cpu, "memory": 10}
        if name not in case["eligible"]:
            facts["annotations"] = DISABLED
        nodes.append(node(name, facts))
    pods = [
        pod(name, {"cpu": cpu, "memory": 1, "owner": RS_OWNER}, UPDATE["now"], where)
        for name, (cpu, where) in case["pods"].items()
    ]
    scenario = _ca(
        nodes,
        pods,
        now=UPDATE["now"],
        options=UPDATE["options"],
        objects=UPDATE["objects"],
        nodeGroups=[{"name": "ng1", "minSize": 0, "maxSize": 100, "nodes": list(case["nodes"])}],
    )
    got = by_name(run(tmp_path, scenario))
    assert sorted(n for n in got if got[n]["removable"]) == sorted(case["unneeded"])
    assert sorted(n for n in got if not got[n]["removable"]) == sorted(case["unremovable"])


def test_removable_at_min_size_reached_for_empty_and_drain_nodes(tmp_path: Path) -> None:
    """TestRemovableAt "Node group min size is reached for empty and drain nodes": 2 empty and
    no drained node go; the third empty node and every drain node stay at the minimum."""
    case = AUDIT["removable_at"]
    now = case["now"]
    four = {"cpu": 4000, "memory": 16 * 2**30}
    stamp = 1793534400 - 60  # now (2026-11-01T12:00:00Z) less a minute
    taint = {"key": "ToBeDeletedByClusterAutoscaler", "value": str(stamp), "effect": "NoSchedule"}
    empty = [f"e{i}" for i in range(case["empty"])]
    drain = [f"d{i}" for i in range(case["drain"])]
    ongoing = [f"x{i}" for i in range(case["ongoing"])]
    nodes = [node(n, four) for n in empty + drain]
    nodes += [node(n, {**four, "taints": [taint]}) for n in ongoing]
    nodes.append(node("sink", four))
    rs = {"cpu": 100, "memory": 2**20, "owner": ["ReplicaSet", "rs", "apps/v1"]}
    pods = [pod(f"p-{n}", rs, now, n) for n in drain]
    scenario = _ca(
        nodes,
        pods,
        now=now,
        options={"max-scale-down-parallelism": 50, "max-drain-parallelism": 50},
        objects=[
            {
                "kind": "ReplicaSet",
                "metadata": {"name": "rs", "namespace": "default"},
                "spec": {"replicas": 50},
            }
        ],
        nodeGroups=[
            {
                "name": "ng",
                "minSize": case["min_size"],
                "maxSize": 100,
                "nodes": empty + drain + ongoing,
            }
        ],
        deletionsInProgress={"empty": 0, "drain": case["ongoing"]},
    )
    result = run(tmp_path, scenario)
    want = case["want"]
    assert len(result["removedEmpty"]) == want["empty"]
    assert len(result["removedDrained"]) == want["drain"]
    assert set(result["removedEmpty"]) <= set(empty)
    refused = [
        n["name"] for n in result["nodes"] if n["unremovableReason"] == "NodeGroupMinSizeReached"
    ]
    assert len(refused) == want["refused"]
    assert set(drain) <= set(refused)


def test_budgets_no_nodes(tmp_path: Path) -> None:
    """TestCropNodesToBudgets "no nodes": nothing to crop, nothing deleted."""
    case = AUDIT["budgets_no_nodes"]
    sink = {"cpu": 64000, "memory": 2000000000, "annotations": DISABLED}
    scenario = _ca([node("sink", sink)], [], now="2026-11-01T12:00:00Z", options=case["options"])
    result = run(tmp_path, scenario)
    assert result["removedEmpty"] == case["want"]["removedEmpty"]
    assert result["removedDrained"] == case["want"]["removedDrained"]
    assert result["removed"] == []


def test_pre_filtering_scale_down_candidates(tmp_path: Path) -> None:
    """GetScaleDownCandidates keeps the nodes of ng1 (above its minimum) only: not ng2's (at
    its minimum), not the node in no group."""
    case = AUDIT["pre_filtering"]
    groups = [{"name": g, **body} for g, body in case["groups"].items()]
    scenario = _ca([node(n, case["node"]) for n in case["nodes"]], [], nodeGroups=groups)
    got = by_name(run(tmp_path, scenario))
    assert [n for n in case["nodes"] if got[n]["candidate"]] == case["candidates"]


@pytest.mark.parametrize("case", AUDIT["scale_down_set"]["cases"], ids=lambda c: c["upstream"])
def test_scale_down_set_without_atomic_groups(tmp_path: Path, case: dict[str, Any]) -> None:
    """AtomicResizeFilteringProcessor.FilterUnremovableNodes: regular groups' nodes all go; a
    node in no group is NotAutoscaled."""
    facts = AUDIT["scale_down_set"]["node"]
    names = [n for members in case["groups"].values() for n in members]
    names += case.get("ungrouped", [])
    groups = [
        {"name": g, "minSize": 0, "maxSize": 100, "nodes": members}
        for g, members in case["groups"].items()
    ]
    scenario = _ca([node(n, facts) for n in names], [], nodeGroups=groups)
    result = run(tmp_path, scenario)
    assert sorted(result["removed"]) == sorted(case["removed"])
    got = by_name(result)
    for name, reason in case.get("reasons", {}).items():
        assert got[name]["unremovableReason"] == reason
        assert not got[name]["removable"]


def test_delay_processor_without_history_keeps_every_candidate(tmp_path: Path) -> None:
    """TestGetScaleDownCandidates with no scale-up, scale-down or failure: every node stays a
    candidate."""
    case = AUDIT["delay"]
    names = [n for members in case["groups"].values() for n in members]
    groups = [
        {"name": g, "minSize": 0, "maxSize": 3, "nodes": members}
        for g, members in case["groups"].items()
    ]
    scenario = _ca([node(n, case["node"]) for n in names], [], nodeGroups=groups)
    got = by_name(run(tmp_path, scenario))
    assert [n for n in names if got[n]["candidate"]] == case["candidates"]
