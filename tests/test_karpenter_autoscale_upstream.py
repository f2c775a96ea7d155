"""``analyzer autoscale`` with ``autoscaler: karpenter``: the consolidation simulation's pods and
the disruption budgets, by upstream's rules (kubernetes-sigs/karpenter, pkg/…).

- ``disruption/helpers.go`` ``SimulateScheduling`` schedules the cluster's pending pods with the
  candidates' pods; ``provisioning/scheduling/queue.go`` ``byCPUAndMemoryDescending`` orders them:
  the most cpu first, then the most memory.
- ``BuildDisruptionBudgetMapping`` takes a node whose Ready condition is not True off the
  disruptions a budget allows.
- ``utils/pdb/pdb.go`` ``isEvictable``: a PodDisruptionBudget with
  ``unhealthyPodEvictionPolicy: AlwaysAllow`` never keeps a pod that is not Ready.

Instance types: small (2 cpu, 0.05), medium (4 cpu, 0.2), large (8 cpu, 0.4).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from autoscale_cases import run

NOW = "2026-11-01T12:00:00Z"
SHAPES = [
    {"name": "small", "cpu": "2", "memory": "4Gi", "price": 0.05},
    {"name": "medium", "cpu": "4", "memory": "16Gi", "price": 0.2},
    {"name": "large", "cpu": "8", "memory": "32Gi", "price": 0.4},
]
CPU = {"small": 2, "medium": 4, "large": 8, "c64": 64}


def _node(
    name: str, shape: str, ready: str | None = None, keep: bool = False, memory: str = "64Gi"
) -> dict[str, Any]:
    labels = {"node.kubernetes.io/instance-type": shape, "karpenter.sh/capacity-type": "on-demand",
              "topology.kubernetes.io/zone": "z1", "karpenter.sh/nodepool": "default"}  # fmt: skip
    status: dict[str, Any] = {"allocatable": {"cpu": str(CPU[shape]), "memory": memory,
                                              "pods": "110"}}  # fmt: skip
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if keep:  # a node that stays: never a candidate
        meta["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    return {"kind": "Node", "metadata": meta, "status": status}


def _pod(
    name: str, cpu: int, node: str | None, memory: str = "1Mi", **extra: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"app": name},
                            "ownerReferences": [{"kind": "ReplicaSet", "name": "rs",
                                                 "apiVersion": "apps/v1", "controller": True}]}  # fmt: skip
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {
        "requests": {"cpu": f"{cpu}m", "memory": memory}}}]}  # fmt: skip
    if node is not None:
        spec["nodeName"] = node
    status = {"phase": "Running" if node else "Pending", **extra}
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def _decide(tmp_path: Path, nodes: list[Any], pods: list[Any], shapes: list[Any] | None = None,
            budget: str = "100%", objects: list[Any] | None = None) -> dict[str, Any]:  # fmt: skip
    scenario = {
        "autoscaler": "karpenter", "now": NOW,
        "nodePool": {"disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                                    "consolidateAfter": "0s", "budgets": [{"nodes": budget}]},
                     "instanceTypes": shapes or SHAPES},
        "nodes": nodes, "pods": pods, **({"objects": objects} if objects else {}),
    }  # fmt: skip
    result = run(tmp_path, scenario)
    decision = result["decision"]
    assert isinstance(decision, dict)
    return {**decision, "notes": result["notes"]}


def test_the_largest_pod_is_placed_first(tmp_path: Path) -> None:
    """Candidate c (medium) holds a 1-core and a 3-core pod, listed in that order; the node
    that stays has 3 cores free. Largest first, the 3-core pod takes them and the 1-core pod
    needs a new node: small (0.05) is cheaper than c (0.2), so c is replaced. In the listed
    order the 1-core pod would take the room and the 3-core pod fit no cheaper shape: none."""
    nodes = [_node("c", "medium"), _node("stay", "large", keep=True)]
    pods = [_pod("fill", 5000, "stay"), _pod("p-small", 1000, "c"), _pod("p-big", 3000, "c")]
    got = _decide(tmp_path, nodes, pods)
    assert got["type"] == "single" and got["nodes"] == ["c"]
    assert got["replacement"]["instanceType"] == "small"


def test_pending_pods_are_scheduled_with_the_candidates_pods(tmp_path: Path) -> None:
    """Upstream's emptiness_test.go "considers pending pods when consolidating": a 64-core node
    of the cheapest type that large, a 1-core pod bound to it and a 62-core pod pending.
    Consolidating the node would need one new 63-core node, none cheaper: no command. Without
    the pending pod a small node (0.05) would replace it."""
    shapes = [*SHAPES, {"name": "c64", "cpu": "64", "memory": "256Gi", "price": 3.0}]
    nodes = [_node("n", "c64")]
    pods = [_pod("bound", 1000, "n"), _pod("unsched", 62000, None)]
    got = _decide(tmp_path, nodes, pods, shapes)
    assert got["type"] == "none" and got["nodes"] == []
    assert any("default/unsched is pending" in note for note in got["notes"])
    alone = _decide(tmp_path, nodes, pods[:1], shapes)
    assert alone["type"] == "single" and alone["replacement"]["instanceType"] == "small"


def test_a_pending_pod_takes_room_before_a_smaller_moved_pod(tmp_path: Path) -> None:
    """Candidate c (medium) holds a 1-core pod; the node that stays has 3 cores free; a 3-core
    pod is pending. Largest first, the pending pod takes those 3 cores, and c's pod needs a new
    node: c is replaced by a small one, not deleted."""
    nodes = [_node("c", "medium"), _node("stay", "large", keep=True)]
    pods = [_pod("fill", 5000, "stay"), _pod("p", 1000, "c"), _pod("new", 3000, None)]
    got = _decide(tmp_path, nodes, pods)
    assert got["type"] == "single" and got["replacement"]["instanceType"] == "small"


def test_a_node_not_ready_takes_from_the_budget(tmp_path: Path) -> None:
    """A budget of 1 node and one node whose Ready condition is False: 1 − 1 = 0 disruptions
    allowed, so the empty node stays; with that node Ready (or given without conditions), the
    empty node is deleted."""
    pods = [_pod("fill", 5000, "busy")]
    for ready, kind in (("False", "none"), ("Unknown", "none"), ("True", "empty"), (None, "empty")):
        nodes = [_node("busy", "large", ready="True"), _node("idle", "small", ready="True"),
                 _node("sick", "large", ready=ready, keep=True)]  # fmt: skip
        got = _decide(tmp_path, nodes, pods, budget="1")
        assert got["type"] == kind, (ready, got)


def test_always_allow_lets_a_pod_not_ready_go(tmp_path: Path) -> None:
    """A PodDisruptionBudget allowing no disruption covers node a's pod: a is no candidate,
    unless the budget's unhealthyPodEvictionPolicy is AlwaysAllow and the pod is not Ready;
    then a's pod fits beside b's and a is deleted."""
    nodes = [_node("a", "medium"), _node("b", "large", keep=True)]

    def pdb(policy: str | None) -> list[Any]:
        spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 0}
        if policy:
            spec["unhealthyPodEvictionPolicy"] = policy
        return [{"kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "default"},
                 "spec": spec, "status": {"disruptionsAllowed": 0}}]  # fmt: skip

    not_ready = {"conditions": [{"type": "Ready", "status": "False"}]}
    for policy, extra, kind in (
        ("AlwaysAllow", not_ready, "single"),
        ("AlwaysAllow", {}, "none"),
        ("IfHealthyBudget", not_ready, "none"),
        (None, not_ready, "none"),
    ):
        pods = [_pod("web", 1000, "a", **extra), _pod("fill", 1000, "b")]
        got = _decide(tmp_path, nodes, pods, objects=pdb(policy))
        assert got["type"] == kind, (policy, extra, got)


def test_a_spot_node_is_not_replaced_by_a_spot_node(tmp_path: Path) -> None:
    """``computeConsolidation``: candidates all spot, and a pool that may launch spot (no
    capacity-type requirement), go to spot-to-spot consolidation, which is off by default
    (``SpotToSpotConsolidation``): no replacement. Candidate c (medium) holds a 1-core pod that
    fits nowhere else: on-demand, a small node replaces it; spot, nothing happens. A spot node
    whose pods all fit elsewhere is still deleted (no new node needed)."""

    def spot(node: dict[str, Any]) -> dict[str, Any]:
        node["metadata"]["labels"]["karpenter.sh/capacity-type"] = "spot"
        return node

    full = [_pod("fill", 8000, "stay"), _pod("p", 1000, "c")]
    got = _decide(tmp_path, [_node("c", "medium"), _node("stay", "large", keep=True)], full)
    assert got["type"] == "single" and got["replacement"]["instanceType"] == "small"
    nodes = [spot(_node("c", "medium")), _node("stay", "large", keep=True)]
    got = _decide(tmp_path, nodes, full)
    assert got["type"] == "none" and "SpotToSpotConsolidation" in got["reason"]
    roomy = [_pod("fill", 5000, "stay"), _pod("p", 1000, "c")]
    got = _decide(tmp_path, nodes, roomy)
    assert got["type"] == "single" and got["replacement"] is None


def test_the_staying_nodes_are_tried_by_name(tmp_path: Path) -> None:
    """``sortExistingNodes``: initialized nodes first, then by name. Candidate c holds p1 (2
    cores, 1 GiB) and p2 (1 core, 3 GiB); a-node (listed last) has 2 cores and 1 GiB free,
    b-node 3 cores and 3 GiB. By name p1 takes a-node and p2 b-node: c is deleted. Tried in
    the listed order, p1 would take b-node's room and p2 fit nowhere (a replacement)."""
    nodes = [_node("b-node", "medium", keep=True, memory="4Gi"), _node("c", "medium"),
             _node("a-node", "medium", keep=True, memory="2Gi")]  # fmt: skip
    pods = [_pod("fill-b", 1000, "b-node", memory="1Gi"),
            _pod("fill-a", 2000, "a-node", memory="1Gi"),
            _pod("p1", 2000, "c", memory="1Gi"), _pod("p2", 1000, "c", memory="3Gi")]  # fmt: skip
    got = _decide(tmp_path, nodes, pods)
    assert got["type"] == "single" and got["nodes"] == ["c"] and got["replacement"] is None
