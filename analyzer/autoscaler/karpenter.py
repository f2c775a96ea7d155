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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.autoscaler.cron import active
from analyzer.autoscaler.drainability import PdbTracker
from analyzer.autoscaler.nodepool import Shape
from analyzer.autoscaler.pods import CAPod
from analyzer.autoscaler.removal_state import build_state
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
    blocked: list[str] = field(default_factory=list)  # candidates the budgets held back
    failed: list[str] = field(default_factory=list)  # tried alone: not deletable, not cheaper


def eviction_cost(pod: CAPod) -> float:
    """``disruptionutils.EvictionCost`` of a scenario's pod (``pod_eviction_cost``)."""
    return pod_eviction_cost(pod.annotations, pod.obj.priority)


def pod_eviction_cost(annotations: Mapping[str, str], priority: int | None) -> float:
    """``disruptionutils.EvictionCost``: 1, plus the pod's ``karpenter.sh/disruption-cost`` (else
    its ``pod-deletion-cost``) / 2^27, plus its priority / 2^25, clamped to [-10, 10]."""
    cost = 1.0
    raw = annotations.get(DISRUPTION_COST, annotations.get(DELETION_COST))
    if raw is not None:
        # upstream logs and ignores an annotation that is not a number
        with contextlib.suppress(ValueError):
            cost += float(raw) / 2**27
    if priority is not None:
        cost += float(priority) / 2**25
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


def summed(requests: Sequence[Mapping[str, int]]) -> dict[str, int]:
    """The requests of several pods added up per resource."""
    need: dict[str, int] = {}
    for one in requests:
        for k, v in one.items():
            need[k] = need.get(k, 0) + v
    return need


def cheapest_fit(
    requests: Sequence[Mapping[str, int]], shapes: Sequence[Shape], below: float = float("inf")
) -> Shape | None:
    """The cheapest of ``shapes`` (cheapest first) priced under ``below`` that holds every pod of
    ``requests`` (their summed requests; the pod count only where the shape gives one)."""
    need = summed(requests)
    for shape in shapes:
        if shape.price >= below:
            return None
        fits = all(shape.allocatable.get(k, 0) >= v for k, v in need.items() if v and k != "pods")
        if fits and shape.allocatable.get("pods", len(requests)) >= len(requests):
            return shape
    return None


@dataclass(frozen=True)
class Candidate:
    """A node that may be disrupted: its pool, disruption cost, emptiness and price (None: its
    instance type is unknown, so only emptiness may take it)."""

    name: str
    pool: str
    cost: float
    empty: bool
    price: float | None


def _within_budget(
    candidates: Sequence[Candidate], allowed: Callable[[str, str], int], reason: str
) -> list[Candidate]:
    """``filterByBudget``: per pool, the first candidates its budget for ``reason`` allows."""
    used: dict[str, int] = {}
    out = []
    for c in candidates:
        if used.get(c.pool, 0) < allowed(c.pool, reason):
            used[c.pool] = used.get(c.pool, 0) + 1
            out.append(c)
    return out


def decide(
    ordered: Sequence[Candidate],
    allowed: Callable[[str, str], int],
    policy: str,
    shapes: Callable[[Sequence[Candidate]], Sequence[Shape]],
    leftover: Callable[[list[str]], list[Mapping[str, int]]],
) -> Decision:
    """The disruption controller's command for the candidates ``ordered`` by disruption cost:
    emptiness, then multi-node, then single-node consolidation (module docstring).

    ``allowed(pool, reason)``: the disruptions the pool's budgets allow now for ``Empty`` or
    ``Underutilized``; ``shapes(candidates)``: the shapes a replacement may take, cheapest first;
    ``leftover(names)``: the requests of the pods of ``names`` that fit on no node that stays."""
    decision = Decision("none")
    empty = _within_budget([c for c in ordered if c.empty], allowed, "Empty")
    if empty:
        decision.kind, decision.nodes = "empty", [c.name for c in empty]
        decision.reason = f"{len(decision.nodes)} empty node(s) deleted (emptiness)"
        return decision
    if any(c.empty for c in ordered):
        decision.blocked = [c.name for c in ordered if c.empty]
    if policy == "WhenEmpty":
        decision.reason = (
            "the disruption budget allows no node now"
            if decision.blocked
            else "consolidationPolicy WhenEmpty and no candidate is empty"
        )
        return decision
    # ShouldDisrupt: consolidation needs the candidate's instance type (its price); an empty
    # node of an unknown type could still go by emptiness, above
    priced = [c for c in ordered if c.price is not None]
    within = _within_budget(priced, allowed, "Underutilized")
    held = set(decision.blocked)
    decision.blocked += [c.name for c in priced if c not in within and c.name not in held]
    if not within:
        decision.reason = (
            "the disruption budget allows no node now"
            if priced or decision.blocked
            else "no candidate to consolidate"
        )
        return decision

    def option(group: list[Candidate]) -> tuple[bool, Shape | None]:
        left = leftover([c.name for c in group])
        if not left:
            return True, None
        known = [float(c.price or 0.0) for c in group]
        below = sum(known)
        if len(group) > 1:
            # filterOutSameInstanceType: replacing several nodes by one of a type among them must
            # beat the cheapest of those, or deleting fewer nodes would disrupt less
            below = min([below, *known])
        shape = cheapest_fit(left, shapes(group), below)
        return shape is not None, shape

    multi = within[:MULTI_LIMIT]
    low, high, best = 2, len(multi), None
    while low <= high:  # the longest prefix that consolidates
        mid = (low + high) // 2
        ok, shape = option(multi[:mid])
        if ok:
            best, low = (mid, shape), mid + 1
        else:
            high = mid - 1
    if best is not None:
        decision.kind, decision.nodes = "multi", [c.name for c in multi[: best[0]]]
        decision.replacement = best[1]
        decision.reason = (
            "pods fit on the remaining nodes"
            if best[1] is None
            else f"replaced by one cheaper {best[1].name}"
        )
        return decision
    for c in within:
        ok, shape = option([c])
        if ok:
            decision.kind, decision.nodes, decision.replacement = "single", [c.name], shape
            decision.reason = (
                "pods fit on the remaining nodes"
                if shape is None
                else f"replaced by a cheaper {shape.name}"
            )
            return decision
        decision.failed.append(c.name)
    decision.reason = "no candidate's pods fit elsewhere or on a cheaper shape"
    return decision


def consolidate(scenario: AutoscaleScenario) -> Decision:
    """The command Karpenter's disruption controller would issue now."""
    pool = scenario.node_pool
    cluster = scenario.cluster
    prices = {s.name: s.price for s in pool.shapes}
    pdbs = PdbTracker(cluster.budgets)
    types = {n.name: n.labels.get(INSTANCE_TYPE, "") for n in cluster.nodes}
    notes: dict[str, str] = {}
    costs: dict[str, float] = {}
    ordered: list[Candidate] = []
    for node in cluster.nodes:
        pods = cluster.pods.get(node.name, [])
        reason = ""
        if node.annotations.get(DO_NOT_DISRUPT) == "true":
            reason = "node has the karpenter.sh/do-not-disrupt annotation"
        elif any(p.annotations.get(DO_NOT_DISRUPT) == "true" for p in pods):
            reason = "a pod has the karpenter.sh/do-not-disrupt annotation"
        elif any(pdbs.remaining[i] < 1 for p in _moves(pods) for i in pdbs.matching(p)):
            reason = "a PodDisruptionBudget prevents evicting a pod"
        notes[node.name] = reason
        costs[node.name] = sum(eviction_cost(p) for p in _moves(pods))
        if reason:
            continue
        empty = not _moves(pods)
        price = prices.get(types[node.name])
        if price is None and not empty:
            notes[node.name] = (
                f"instance type {preview(types[node.name])} is not in nodePool.instanceTypes "
                "(consolidation needs its price)"
            )
        ordered.append(Candidate(node.name, "", costs[node.name], empty, price))
    ordered.sort(key=lambda c: c.cost)
    if pool.never:
        decision = Decision("none", reason="consolidateAfter: Never disables consolidation")
    else:
        seconds = scenario.now
        count = len(cluster.nodes)

        def allowed(_pool: str, reason: str) -> int:
            return pool.allowed(
                count,
                reason,
                lambda r: r.schedule is None or active(r.schedule, r.duration, seconds),
            )

        fitter = _Fitter(scenario)

        def leftover(names: list[str]) -> list[Mapping[str, int]]:
            return [pod_requests(p.obj.spec) for p in fitter.leftover(names) or []]

        decision = decide(ordered, allowed, pool.policy, lambda _c: pool.shapes, leftover)
        if decision.kind == "none" and not ordered and not decision.reason:
            decision.reason = "no candidate"
    decision.candidates, decision.costs = notes, costs
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
