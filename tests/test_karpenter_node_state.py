"""Karpenter's node states in ``analyzer autoscale`` (``autoscaler: karpenter``): nodes being
deleted and nodes not yet initialized, by kubernetes-sigs/karpenter at HEAD 2266468104f3.

- A node being deleted (``state/statenode.go`` ``StateNode.ValidateNodeDisruptable`` /
  ``MarkedForDeletion`` / ``Deleted``) is no candidate; it still counts among the NodePool's
  nodes and takes one from every budget, never below 0 (``disruption/helpers.go``
  ``BuildDisruptionBudgetMapping``); it is no destination and its pods are scheduled with the
  candidates' (``SimulateScheduling``: ``nodes.Active()``, ``Deleting()``'s reschedulable pods).
  Upstream reads the NodeClaim's deletionTimestamp; a scenario has Nodes, and its node's
  ``metadata.deletionTimestamp`` is the same fact (``node/termination/controller.go``
  ``Reconcile`` deletes the NodeClaim once its Node is deleting).
- A managed node is initialized once labelled ``karpenter.sh/initialized: "true"``
  (``StateNode.Initialized``): before, no candidate ("node isn't initialized") and not counted
  by the budgets; the existing nodes are tried initialized first, then by name
  (``Scheduler.sortExistingNodes``), and a candidate's pod scheduled onto an uninitialized node
  fails the simulation (``UninitializedNodeError``, so ``AllNonPendingPodsScheduled`` refuses
  the command). A scenario none of whose managed nodes carries the label reads every node as
  initialized (those written before 2026-12-01).

The first five cases are ``pkg/controllers/disruption/suite_test.go`` specs (named in each);
the last three follow from the functions cited. Expected values are upstream's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autoscale_cases import by_name
from test_karpenter_upstream_suite import DO_NOT_DISRUPT, MOST, NOW, _node, _pod, _run

INITIALIZED = "karpenter.sh/initialized"
# one instance type, the most expensive: no replacement is ever cheaper, so the decisions
# below are deletions or nothing
ONLY_MOST = [
    {"name": MOST, "cpu": "63900m", "memory": "131062Mi", "pods": "5", "price": 20.1438953472}
]


def _deleting(node: dict[str, Any]) -> dict[str, Any]:
    node["metadata"]["deletionTimestamp"] = NOW
    return node


def _initialized(node: dict[str, Any]) -> dict[str, Any]:
    node["metadata"]["labels"][INITIALIZED] = "true"
    return node


def test_a_deleting_node_is_no_candidate(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should not consider candidates that are
    deleting": one mostExpensiveInstance node (32 cpu, 100 pods), its NodeClaim's deletion
    timestamp set (here the node's). Upstream: no candidate ("node is deleting or marked for
    deletion")."""
    result = _run(tmp_path, [_deleting(_node("node"))], [])
    assert by_name(result)["node"]["candidate"] is False, result
    assert result["decision"]["nodes"] == []


def test_deleting_nodes_take_from_the_budget(tmp_path: Path) -> None:
    """suite_test.go, "BuildDisruptionBudgetMapping" / It "should consider nodes with a deletion
    timestamp set and MarkedForDeletion to the disruption count": ten empty nodes, nodes[0]
    deleted and nodes[1] MarkedForDeletion (here: both with a deletion timestamp); budget 100%.
    Upstream: 10 - 2 = 8 allowed; the two are no candidates, so emptiness deletes exactly the
    eight others."""
    nodes = [_deleting(_node(f"n{i}")) if i < 2 else _node(f"n{i}") for i in range(10)]
    decision = _run(tmp_path, nodes, [], budget="100%")["decision"]
    assert sorted(decision["nodes"]) == [f"n{i}" for i in range(2, 10)], decision


def test_budget_is_never_negative(tmp_path: Path) -> None:
    """suite_test.go, "BuildDisruptionBudgetMapping" / It "should not return a negative
    disruption value": ten nodes, every NodeClaim and node deleted; budget 10% (1 allowed, less
    10 disrupting: floored at 0). Upstream: 0 allowed (and no candidate): no command."""
    nodes = [_deleting(_node(f"n{i}")) for i in range(10)]
    decision = _run(tmp_path, nodes, [], budget="10%")["decision"]
    assert decision["type"] == "none" and decision["nodes"] == [], decision


def test_an_uninitialized_node_is_no_candidate(tmp_path: Path) -> None:
    """suite_test.go, "Candidate Filtering" / It "should not consider candidates that aren't yet
    initialized": the node's state is updated but never made initialized (no
    karpenter.sh/initialized label). A second, initialized node (label "true") is added so that
    the scenario says which nodes are initialized. Upstream: the first node is no candidate
    ("node isn't initialized")."""
    nodes = [_node("node"), _initialized(_node("ready"))]
    result = _run(tmp_path, nodes, [], budget="100%")
    assert by_name(result)["node"]["candidate"] is False, result
    assert "node" not in result["decision"]["nodes"]


def test_uninitialized_nodes_are_not_counted_in_the_budget(tmp_path: Path) -> None:
    """suite_test.go, "BuildDisruptionBudgetMapping" / It "should not consider nodes that are not
    initialized as part of disruption count": ten initialized empty nodes and one more whose
    node is not initialized; budget 100%. Upstream: 10 allowed (the uninitialized node not
    counted); emptiness deletes the ten, not the uninitialized one. With 10% the same count
    allows ceil(1.0) = 1 (counting the eleventh node: ceil(1.1) = 2)."""
    nodes = [*(_initialized(_node(f"n{i}")) for i in range(10)), _node("fresh")]
    decision = _run(tmp_path, nodes, [], budget="100%")["decision"]
    assert sorted(decision["nodes"]) == sorted(f"n{i}" for i in range(10)), decision
    decision = _run(tmp_path, nodes, [], budget="10%")["decision"]
    assert len(decision["nodes"]) == 1, decision


def _busy(name: str, cpu: str, **labels: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """An initialized 32-cpu node and a ReplicaSet pod of ``cpu`` on it."""
    node = _initialized(_node(name))
    node["metadata"]["labels"].update(labels)
    return node, _pod(f"{name}-pod", name, cpu=cpu, owner="ReplicaSet")


def _keep(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` annotated do-not-disrupt: a destination, never a candidate."""
    node["metadata"]["annotations"] = {DO_NOT_DISRUPT: "true"}
    return node


def test_a_pod_that_only_an_uninitialized_node_takes_blocks_the_deletion(tmp_path: Path) -> None:
    """``c``'s 1-cpu pod fits only on ``u`` (32 cpu, a 1-cpu pod on it). Uninitialized, ``u``
    is no candidate and the pod scheduled there fails the simulation: no command. Initialized,
    both are candidates and single-node consolidation deletes one, its pod onto the other."""
    c, c_pod = _busy("c", "1")
    u, u_pod = _busy("u", "1")
    del u["metadata"]["labels"][INITIALIZED]
    result = _run(tmp_path, [c, u], [c_pod, u_pod], shapes=ONLY_MOST)
    assert result["decision"]["type"] == "none", result["decision"]
    assert by_name(result)["u"]["candidate"] is False
    u["metadata"]["labels"][INITIALIZED] = "true"
    decision = _run(tmp_path, [c, u], [c_pod, u_pod], shapes=ONLY_MOST)["decision"]
    assert decision["type"] == "single" and len(decision["nodes"]) == 1, decision


def test_initialized_nodes_are_tried_first(tmp_path: Path) -> None:
    """``c``'s pod fits on ``a-fresh`` (uninitialized, first by name) and on ``b``
    (initialized, do-not-disrupt): upstream tries ``b`` first, so ``c`` is deleted. Tried by
    name alone the pod would land on ``a-fresh`` and fail."""
    c, c_pod = _busy("c", "1")
    fresh = _node("a-fresh")
    b = _keep(_initialized(_node("b")))
    decision = _run(tmp_path, [c, fresh, b], [c_pod], shapes=ONLY_MOST)["decision"]
    assert decision["type"] == "single" and decision["nodes"] == ["c"], decision


def test_a_deleting_nodes_pods_need_room_and_it_takes_none(tmp_path: Path) -> None:
    """``d`` is being deleted with a 20-cpu pod; ``e`` (do-not-disrupt) has 25 cpu free. Pods
    by cpu, largest first: ``d``'s pod takes 20 of ``e``'s room, and ``c``'s 6-cpu pod has
    nowhere left to go (``d`` itself is no destination): no command. With a 4-cpu pod ``c``
    goes. (Budget 100 %: of the three nodes ``d`` takes one disruption.)"""
    d, d_pod = _busy("d", "20")
    _deleting(d)
    e, e_pod = _busy("e", "7")
    _keep(e)
    for cpu, deleted in (("6", []), ("4", ["c"])):
        c, c_pod = _busy("c", cpu)
        decision = _run(
            tmp_path, [c, d, e], [c_pod, d_pod, e_pod], budget="100%", shapes=ONLY_MOST
        )["decision"]
        assert decision["nodes"] == deleted, (cpu, decision)
