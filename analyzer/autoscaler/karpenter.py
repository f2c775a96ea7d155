"""Karpenter's consolidation decision at one instant (kubernetes-sigs/karpenter
pkg/controllers/disruption: ``emptiness.go``, ``multinodeconsolidation.go``,
``singlenodeconsolidation.go``, ``consolidation.go``, ``helpers.go``; budgets from
``pkg/apis/v1/nodepool.go``).

- **Candidates**: every node of the pool except one annotated ``karpenter.sh/do-not-disrupt:
  "true"``, one running a pod with that annotation, or one with a pod whose PodDisruptionBudget
  allows no eviction now. DaemonSet and mirror pods and terminal pods need no new home.
- **Budgets**: ``disruption.budgets[].nodes`` (an integer or a percentage of the pool's nodes,
  rounded up; default ``10%``), the smallest one; ``consolidateAfter: Never`` disables it.
- **Order**: candidates by disruption cost, lowest first: Σ over the pods to move of
  ``EvictionCost`` (1 + pod-deletion-cost / 2^27 + priority / 2^25, clamped to [-10, 10]).
- **Emptiness**: the empty candidates, up to the budget → ``empty``.
- **Multi-node** (``WhenEmptyOrUnderutilized`` only): the longest prefix of ≥ 2 candidates (up to
  100, binary search) whose pods fit on the nodes that stay, with at most one new node cheaper
  than the prefix's price → ``multi``.
- **Single-node**: the first candidate that can be deleted, or replaced by a cheaper shape →
  ``single``.

"Fits" on the existing nodes is analyzer's scheduler filters (first fit, as the CA simulation);
on the replacement only the pods' summed cpu, memory and pod count against the shape (the new
node's labels and taints are not modelled). Prices come from ``nodePool.instanceTypes`` by the
nodes' ``node.kubernetes.io/instance-type`` label; as upstream's ``ShouldDisrupt``, a node of a
type not listed there goes only by emptiness (consolidation needs its price).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.autoscaler.cluster import CANode
from analyzer.autoscaler.drainability import PdbTracker
from analyzer.autoscaler.nodepool import Shape
from analyzer.autoscaler.pods import CAPod
from analyzer.autoscaler.removal import build_state
from analyzer.autoscaler.result import finite
from analyzer.autoscaler.scenario import AutoscaleScenario
from analyzer.autoscaler.utilization import calculate
from analyzer.core.resources import pod_requests
from analyzer.core.structured import preview

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
DISRUPTION_COST = "karpenter.sh/disruption-cost"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
MULTI_LIMIT = 100  # MultiNodeConsolidation considers at most 100 candidates


@dataclass
class Decision:
    """The consolidation command: its kind, nodes, replacement and why."""

    kind: str  # empty | single | multi | none
    nodes: list[str] = field(default_factory=list)
    replacement: Shape | None = None
    reason: str = ""
    candidates: dict[str, str] = field(default_factory=dict)  # node -> "" or why not
    costs: dict[str, float] = field(default_factory=dict)


def eviction_cost(pod: CAPod) -> float:
    """``disruptionutils.EvictionCost``: 1, plus the pod's ``karpenter.sh/disruption-cost`` (else
    its ``pod-deletion-cost``) / 2^27, plus its priority / 2^25, clamped to [-10, 10]."""
    cost = 1.0
    raw = pod.annotations.get(DISRUPTION_COST, pod.annotations.get(DELETION_COST))
    if raw is not None:
        # upstream logs and ignores an annotation that is not a number
        with contextlib.suppress(ValueError):
            cost += float(raw) / 2**27
    if pod.obj.priority is not None:
        cost += float(pod.obj.priority) / 2**25
    return min(10.0, max(-10.0, cost))


def _moves(pods: Sequence[CAPod]) -> list[CAPod]:
    return [p for p in pods if not (p.daemonset or p.mirror or p.terminal)]


class _Fitter:
    """Places pods of removed nodes on the nodes that stay (scheduler filters, first fit)."""

    def __init__(self, scenario: AutoscaleScenario) -> None:
        self.scenario = scenario
        self.state, self.demands = build_state(scenario.cluster)
        self.position = {n.name: i for i, n in enumerate(scenario.cluster.nodes)}

    def leftover(self, removed: Sequence[str]) -> list[CAPod] | None:
        """The moved pods that fit on no staying node (state restored afterwards)."""
        cluster = self.scenario.cluster
        allowed = np.array(
            [n.name not in removed and not n.unschedulable for n in cluster.nodes], dtype=bool
        )
        undo: list[tuple[int, Any, bool]] = []
        left: list[CAPod] = []
        for name in removed:
            i = self.position[name]
            for pod, demand in zip(cluster.pods[name], self.demands[name], strict=True):
                if pod in _moves([pod]):
                    self.state.unbind(i, demand)
                    undo.append((i, demand, True))
        for name in removed:
            for pod, demand in zip(cluster.pods[name], self.demands[name], strict=True):
                if pod not in _moves([pod]):
                    continue
                feasible = allowed.copy()
                for plugin in self.scenario.profile.filters:
                    feasible &= plugin.filter(self.state, demand, self.scenario.now).feasible
                hits = np.flatnonzero(feasible)
                if len(hits):
                    self.state.bind(int(hits[0]), demand)
                    undo.append((int(hits[0]), demand, False))
                else:
                    left.append(pod)
        for i, demand, was_unbound in reversed(undo):
            (self.state.bind if was_unbound else self.state.unbind)(i, demand)
        return left


def _replacement(left: Sequence[CAPod], shapes: Sequence[Shape], below: float) -> Shape | None:
    """The cheapest shape priced under ``below`` that holds every pod in ``left`` (their summed
    requests; the pod count only where the shape gives one)."""
    need: dict[str, int] = {}
    for pod in left:
        for k, v in pod_requests(pod.obj.spec).items():
            need[k] = need.get(k, 0) + v
    for shape in shapes:  # cheapest first
        if shape.price >= below:
            return None
        fits = all(shape.allocatable.get(k, 0) >= v for k, v in need.items() if v)
        if fits and shape.allocatable.get("pods", len(left)) >= len(left):
            return shape
    return None


def consolidate(scenario: AutoscaleScenario) -> Decision:
    """The command Karpenter's disruption controller would issue now."""
    pool = scenario.node_pool
    cluster = scenario.cluster
    shapes = pool.shapes
    prices = {s.name: s.price for s in shapes}
    pdbs = PdbTracker(cluster.budgets)
    decision = Decision("none")
    ordered: list[CANode] = []
    for node in cluster.nodes:
        pods = cluster.pods.get(node.name, [])
        reason = ""
        if node.annotations.get(DO_NOT_DISRUPT) == "true":
            reason = "node has the karpenter.sh/do-not-disrupt annotation"
        elif any(p.annotations.get(DO_NOT_DISRUPT) == "true" for p in pods):
            reason = "a pod has the karpenter.sh/do-not-disrupt annotation"
        elif any(pdbs.remaining[i] < 1 for p in _moves(pods) for i in pdbs.matching(p)):
            reason = "a PodDisruptionBudget prevents evicting a pod"
        decision.candidates[node.name] = reason
        decision.costs[node.name] = sum(eviction_cost(p) for p in _moves(pods))
        if not reason:
            ordered.append(node)
    ordered.sort(key=lambda n: decision.costs[n.name])
    if pool.never:
        decision.reason = "consolidateAfter: Never disables consolidation"
        return decision
    budget = pool.allowed(len(cluster.nodes))
    if budget < 1:
        decision.reason = "the disruption budget allows no node now"
        return decision
    empty = [n.name for n in ordered if not _moves(cluster.pods.get(n.name, []))]
    if empty:
        decision.kind, decision.nodes = "empty", empty[:budget]
        decision.reason = f"{len(decision.nodes)} empty node(s) deleted (emptiness)"
        return decision
    if pool.policy == "WhenEmpty":
        decision.reason = "consolidationPolicy WhenEmpty and no candidate is empty"
        return decision
    # ShouldDisrupt: consolidation needs the candidate's instance type (its price); an empty
    # node of an unknown type could still go by emptiness, above
    types = {n.name: n.labels.get(INSTANCE_TYPE, "") for n in cluster.nodes}
    for node in [n for n in ordered if types[n.name] not in prices]:
        decision.candidates[node.name] = (
            f"instance type {preview(types[node.name])} is not in nodePool.instanceTypes "
            "(consolidation needs its price)"
        )
    ordered = [n for n in ordered if types[n.name] in prices]
    fitter = _Fitter(scenario)

    def option(names: list[str]) -> tuple[bool, Shape | None]:
        left = fitter.leftover(names)
        if not left:
            return True, None
        known = [prices[types[name]] for name in names]
        below = sum(known)
        if len(names) > 1:
            # filterOutSameInstanceType: replacing several nodes by one of a type among them must
            # beat the cheapest of those, or deleting fewer nodes would disrupt less
            below = min([below, *known])
        shape = _replacement(left, shapes, below)
        return shape is not None, shape

    multi = ordered[: min(MULTI_LIMIT, budget)]
    low, high, best = 2, len(multi), None
    while low <= high:  # the longest prefix that consolidates
        mid = (low + high) // 2
        ok, shape = option([n.name for n in multi[:mid]])
        if ok:
            best, low = (mid, shape), mid + 1
        else:
            high = mid - 1
    if best is not None:
        decision.kind, decision.nodes = "multi", [n.name for n in multi[: best[0]]]
        decision.replacement = best[1]
        decision.reason = (
            "pods fit on the remaining nodes"
            if best[1] is None
            else f"replaced by one cheaper {best[1].name}"
        )
        return decision
    for node in ordered:
        ok, shape = option([node.name])
        if ok:
            decision.kind, decision.nodes, decision.replacement = "single", [node.name], shape
            decision.reason = (
                "pods fit on the remaining nodes"
                if shape is None
                else f"replaced by a cheaper {shape.name}"
            )
            return decision
    decision.reason = "no candidate's pods fit elsewhere or on a cheaper shape"
    return decision


def karpenter_json(scenario: AutoscaleScenario, decision: Decision) -> dict[str, Any]:
    """The Karpenter result: per node its candidacy and cost, and the decision."""
    nodes = []
    for node in scenario.cluster.nodes:
        pods = scenario.cluster.pods.get(node.name, [])
        info = calculate(
            node.allocatable,
            node.labels,
            pods,
            ignore_daemonsets=False,
            ignore_mirror=False,
            now=scenario.now,
        )
        why = decision.candidates.get(node.name, "")
        nodes.append(
            {
                "name": node.name,
                "utilization": finite(info.utilization, f"node {node.name}", scenario.notes),
                "utilizationByResource": {
                    k: finite(v, f"node {node.name} {k}", scenario.notes)
                    for k, v in info.by_resource.items()
                },
                "candidate": not why,
                "notCandidateReason": why or None,
                "disruptionCost": decision.costs.get(node.name, 0.0),
                "removable": node.name in decision.nodes,
            }
        )
    replacement = None
    if decision.replacement is not None:
        replacement = {
            "instanceType": decision.replacement.name,
            "price": decision.replacement.price,
        }
    return {
        "autoscaler": "karpenter",
        "kubernetesVersion": str(scenario.version),
        "nodes": nodes,
        "decision": {
            "type": decision.kind,
            "nodes": decision.nodes,
            "replacement": replacement,
            "reason": decision.reason,
        },
        "removed": decision.nodes,
        "notes": scenario.notes,
    }
