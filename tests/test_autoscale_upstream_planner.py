"""``analyzer autoscale`` on cluster-autoscaler's planner tests (tests/data/autoscaler/planner.yaml):
TestUpdateClusterState and TestNodesToDelete (core/scaledown/planner/planner_test.go),
TestRemovableAt_UnremovableReasons (core/scaledown/unneeded/nodes_test.go) and EmptySorting's
TestScaleDownEarlierThan (processors/scaledowncandidates/emptycandidates), through the real CLI.

Every expected value is upstream's, transcribed with the test's name; the data file's header
says which cases could not be expressed in one instant and why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import by_name, data, node, pod, run

PLANNER = data("planner.yaml")
NOW = PLANNER["now"]
DISABLED = {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}


def _disabled(facts: dict[str, Any]) -> dict[str, Any]:
    """The node scale-down-disabled: CA's default checker's "not eligible"."""
    return {**facts, "annotations": {**facts.get("annotations", {}), **DISABLED}}


UPDATE = PLANNER["update_cluster_state"]


@pytest.mark.parametrize("case", UPDATE["cases"], ids=lambda c: c["name"])
def test_update_cluster_state_matches_upstream(tmp_path: Path, case: dict[str, Any]) -> None:
    """TestUpdateClusterState: the unneeded nodes and the unremovable ones; a node outside the
    fake checker's eligible list is scale-down-disabled (still a destination)."""
    names = list(case["nodes"])
    nodes = [
        node(n, f if n in case["eligible"] else _disabled(f)) for n, f in case["nodes"].items()
    ]
    scenario = {
        "autoscaler": "cluster-autoscaler",
        "now": NOW,
        "nodeGroups": [{"name": "ng1", "minSize": 0, "nodes": names}],
        "nodes": nodes,
        "pods": [pod(p, f, NOW, f["node"]) for p, f in case["pods"].items()],
        "objects": UPDATE["objects"],
    }
    got = by_name(run(tmp_path, scenario))
    assert sorted(case["unneeded"] + case["unremovable"]) == sorted(names)  # a partition
    for name in names:
        assert got[name]["removable"] is (name in case["unneeded"]), name
        assert (got[name]["unremovableReason"] is not None) is (name in case["unremovable"]), name


DELETE = PLANNER["nodes_to_delete"]


def _nodes_to_delete_scenario(case: dict[str, Any]) -> dict[str, Any]:
    nodes, pods, groups = [node("sink", DELETE["sink"])], [], []
    for group, members in case["groups"].items():
        others = case.get("others", {}).get(group, [])
        groups.append({"name": group, "minSize": 0, "nodes": [*members, *others]})
        for name, count in members.items():
            nodes.append(node(name, DELETE["node"]))
            pods += [pod(f"{name}-pod-{i}", DELETE["pod"], NOW, name) for i in range(count)]
            waiting = case.get("on_completion", {}).get(name, 0)
            pods += [
                pod(f"{name}-on-completion-pod-{i}", DELETE["on_completion_pod"], NOW, name)
                for i in range(waiting)
            ]
        nodes += [node(name, _disabled(DELETE["node"])) for name in others]
    return {
        "autoscaler": "cluster-autoscaler",
        "now": NOW,
        "nodeGroups": groups,
        "nodes": nodes,
        "pods": pods,
    }


@pytest.mark.parametrize("case", DELETE["cases"], ids=lambda c: c["name"])
def test_nodes_to_delete_match_upstream(tmp_path: Path, case: dict[str, Any]) -> None:
    """TestNodesToDelete: the empty and the drained nodes deletable now (as sets); the other
    nodes of the groups are not."""
    got = by_name(run(tmp_path, _nodes_to_delete_scenario(case)))
    want = set(case["want_empty"]) | set(case["want_drain"])
    listed = {n for members in case["groups"].values() for n in members}
    listed |= {n for others in case.get("others", {}).values() for n in others}
    assert {n for n in listed if got[n]["removable"]} == want
    assert {n for n in want if got[n]["empty"]} == set(case["want_empty"])
    for name in want:
        assert got[name]["unremovableReason"] is None, name
    for name, count in case.get("on_completion", {}).items():
        assert got[name]["unremovableReason"] == "BlockedByOnCompletionPod", name
        assert len(got[name]["onCompletionPods"]) == count


REASONS = PLANNER["removable_at_reasons"]


@pytest.mark.parametrize("case", REASONS["cases"], ids=lambda c: c["name"])
def test_removable_at_reasons_match_upstream(tmp_path: Path, case: dict[str, Any]) -> None:
    """TestRemovableAt_UnremovableReasons: nothing removable, the node's reason."""
    name = f"test-node-{case['name']}"
    facts = _disabled(REASONS["node"]) if case.get("annotated") else REASONS["node"]
    group = case["group"]
    groups = (
        []
        if group is None
        else [{"name": "ng", "minSize": group["minSize"], "maxSize": 100, "nodes": [name]}]
    )
    if group is not None:  # the group's only node: its size is its target size
        assert group["targetSize"] == 1
    scenario = {
        "autoscaler": "cluster-autoscaler",
        "now": NOW,
        "nodeGroups": groups,
        "nodes": [node(name, facts)],
        "pods": [],
    }
    result = run(tmp_path, scenario)
    got = by_name(result)[name]
    assert result["removed"] == []
    assert not got["removable"]
    assert got["unremovableReason"] == case["reason"]


def _sorting_pass(tmp_path: Path, case: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """A pass over ``case``'s nodes, listed ``later`` first: the result and its nodes by name."""
    scenario = {
        "autoscaler": "cluster-autoscaler",
        "now": NOW,
        "nodes": [node(n, f) for n, f in case["nodes"].items()],
        "pods": [pod(p, f, NOW, f["node"]) for p, f in case["pods"].items()],
    }
    assert list(case["nodes"]) == [case["later"], case["earlier"]]  # listed the other way round
    result = run(tmp_path, scenario)
    return result, by_name(result)


def test_empty_node_is_simulated_before_a_non_empty_one(tmp_path: Path) -> None:
    """EmptySorting's "Empty node earlier that non-empty node", observed on a pass: the empty
    node, listed second, is simulated first and is no destination afterwards, so the non-empty
    node's pod has nowhere to go."""
    case = PLANNER["empty_sorting"]
    result, got = _sorting_pass(tmp_path, case)
    assert [n for n in got if got[n]["removable"]] == case["removable"]
    assert got[case["earlier"]]["empty"]
    for name, reason in case["unremovable"].items():
        assert got[name]["unremovableReason"] == reason
    assert result["removed"] == case["removable"]


def test_a_node_with_an_on_completion_pod_is_simulated_before_a_non_empty_one(
    tmp_path: Path,
) -> None:
    """EmptySorting's "Node with on-completion pod earlier that non-empty node" (CA 1.36),
    observed on a pass (planner.yaml ``empty_sorting.on_completion``)."""
    case = PLANNER["empty_sorting"]["on_completion"]
    result, got = _sorting_pass(tmp_path, case)
    for name, reason in case["unremovable"].items():
        assert got[name]["unremovableReason"] == reason, name
    assert got[case["earlier"]]["onCompletionPods"] == ["default/p2"]
    assert result["removed"] == []
