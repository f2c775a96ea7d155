"""Karpenter's consolidation decision at one instant (kubernetes-sigs/karpenter
pkg/controllers/disruption: ``emptiness.go``, ``multinodeconsolidation.go``,
``singlenodeconsolidation.go``, ``consolidation.go``, ``helpers.go``; budgets from
``pkg/apis/v1/nodepool.go``).

- **Candidates**: every node of the pool except one annotated ``karpenter.sh/do-not-disrupt:
  "true"``, one running an active pod whose annotation is ``"true"`` or a duration (``"1h"``)
  not yet elapsed since the pod started, or one with a pod covered by more than one
  PodDisruptionBudget or by one that allows no eviction now (DaemonSet pods count; static pods
  and pods tolerating Karpenter's disruption taint do not). DaemonSet, static, terminal and
  terminating (but StatefulSet) pods need no new home.
- **Budgets**: ``disruption.budgets[].nodes`` (an integer or a percentage of the pool's nodes,
  rounded up; default ``10%``), the smallest one; ``consolidateAfter: Never`` disables it.
- **Order** (v1.14.0): by savings ratio, highest first: the node's price over
  1 + Σ max(0, ``EvictionCost``) of its pods to move (``EvictionCost``: 1 + pod-deletion-cost /
  2^27 + priority / 2^25, clamped to [-10, 10]).
- **Emptiness**: the empty candidates (no pod to move with an ``EvictionCost`` above 0), up to
  the ``Empty`` budget → ``empty``. Consolidation never takes an empty node.
- **Multi-node** (``WhenEmptyOrUnderutilized`` only): the longest prefix of ≥ 2 candidates (up to
  101, binary search, within each pool's budget) whose pods fit on the nodes that stay, with at
  most one new node cheaper than the prefix's price and than the cheapest candidate of any type
  among the new node's options → ``multi``.
- **Single-node**: the first candidate of a pool whose budget is not 0 that can be deleted, or
  replaced by a cheaper shape → ``single``.
- **Balanced** (v1.14.0, ``balanced.go``): as WhenEmptyOrUnderutilized, but a consolidation move
  passes only when its share of the pool's cost saved over its share of the pool's disruption
  is at least 1/k, k = 2 (``move_score``, ``PoolTotals``).

"Fits" on the existing nodes is analyzer's scheduler filters (first fit, as the CA simulation);
on the replacement the pods' summed cpu, memory and pod count against the shape, and each pod's
nodeSelector and required node affinity against the labels a new node of the pool may carry
(``new_node``: the template's labels and requirements, the well-known labels, the instance
type among ``instanceTypes``), and together on one new node in some zone by their spreading,
pod (anti-)affinity and host ports (``_Fitter._one_new_node``: consolidation launches at most
one NodeClaim); the new node's taints are not modelled. Prices come from
``nodePool.instanceTypes`` by the
nodes' ``node.kubernetes.io/instance-type`` label; as upstream's ``ShouldDisrupt``, a node of a
type not listed there, or without the ``karpenter.sh/capacity-type`` or
``topology.kubernetes.io/zone`` label, goes only by emptiness (consolidation needs its price).
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from analyzer.autoscaler.cluster import CANode
from analyzer.autoscaler.cron import active
from analyzer.autoscaler.drainability import PdbTracker
from analyzer.autoscaler.new_node import launchable
from analyzer.autoscaler.nodepool import Shape
from analyzer.autoscaler.pods import CAPod
from analyzer.autoscaler.removal_state import build_state
from analyzer.autoscaler.result import finite
from analyzer.autoscaler.scenario import AutoscaleScenario
from analyzer.autoscaler.utilization import calculate
from analyzer.core.structured import preview
from analyzer.scheduling.constraint_types import Taint

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ZONE = "topology.kubernetes.io/zone"
NODEPOOL = "karpenter.sh/nodepool"
# set "true" on a node Karpenter launched once it is initialized (``StateNode.Initialized``)
INITIALIZED = "karpenter.sh/initialized"
# a leftover pod's request that no instance type offers: its node selection rules out every node
# the pool launches (``new_node.launchable``)
NO_NEW_NODE = "analyzer.io/no-new-node"
NEW_NODE = "karpenter-replacement"  # the name (and hostname) a replacement is tried on
HOSTNAME = "kubernetes.io/hostname"
# MultiNodeConsolidation: at most 100 candidates in ``maxParallel``, but its binary search tries
# the first ``max + 1`` of them (``firstNConsolidationOption``), so up to 101
MULTI_LIMIT = 101
# the disruption controller's methods in its order (``controller.go`` ``NewMethods``)
METHODS = ("empty", "multi", "single")
# the ``Balanced`` consolidation policy (v1.14.0, ``pkg/apis/v1/nodepool.go`` ``BalancedK``): a
# move passes when its savings fraction over its disruption fraction is at least 1/k
BALANCED = "Balanced"
BALANCED_K = 2
# the taint Karpenter puts on a node it disrupts: a pod that tolerates it is not evicted
# (``pod.IsEvictable``), so its PodDisruptionBudget does not count
DISRUPTED_TAINT = Taint("karpenter.sh/disruption", "disrupting", "NoSchedule")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
             "h": 3600.0}  # fmt: skip
_GO_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


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
    # ``Balanced``: candidates whose move its score refused (under 1/k), and the command's score
    # (its pools' lowest; None: not scored)
    refused: list[str] = field(default_factory=list)
    score: float | None = None
    # the replacement's instance type options (cheapest first; ``replacement`` is the first):
    # the validation after ``commandValidationDelay`` needs them all to still hold the pods
    options: list[Shape] = field(default_factory=list)


@dataclass(frozen=True)
class PoolTotals:
    """A NodePool's ``NodePoolTotals`` (``balanced.go`` ``computeNodePoolTotals``): the price of
    all its nodes (``ClusterCost.GetNodepoolCost``; the candidates' prices where that is 0) and
    the disruption cost of all its nodes (a candidate's ``RescheduleDisruptionCost``, another
    node's 1 + the positive ``EvictionCost`` of its pods but DaemonSet ones)."""

    cost: float
    disruption: float


def pool_totals(
    cluster_cost: float, candidates: Sequence[Candidate], others: Iterable[float]
) -> PoolTotals:
    """``computeNodePoolTotals`` of one pool: ``cluster_cost`` (``ClusterCost``'s price of all
    its nodes; where not positive, the candidates' prices instead), the candidates'
    ``RescheduleDisruptionCost`` and ``others``, each other node's ``StateNode.DisruptionCost``."""
    cost = cluster_cost if cluster_cost > 0 else sum(float(c.price or 0.0) for c in candidates)
    return PoolTotals(cost, sum(c.reschedule for c in candidates) + sum(others))


def move_score(savings: float, disruption: float, totals: PoolTotals | None) -> float:
    """``ScoreMove(...).Score()``: the share of the pool's cost a move saves over the share of
    its disruption it causes; 0 where the totals are not positive (nothing to normalise
    against) or the move saves nothing, +inf where it disrupts nothing."""
    if totals is None or totals.cost <= 0 or totals.disruption <= 0:
        return 0.0
    saved = savings / totals.cost
    if saved <= 0:
        return 0.0
    share = disruption / totals.disruption
    return math.inf if share == 0 else saved / share


def approved(score: float) -> bool:
    """``ScoreResult.Approved``: the score at least ``1 / BalancedK``."""
    return score >= 1.0 / BALANCED_K


def eviction_cost(pod: CAPod) -> float:
    """``disruptionutils.EvictionCost`` of a scenario's pod (``pod_eviction_cost``)."""
    return pod_eviction_cost(pod.annotations, pod.obj.priority)


def pod_eviction_cost(annotations: Mapping[str, str], priority: int | None) -> float:
    """``disruptionutils.EvictionCost``: 1, plus the pod's ``pod-deletion-cost`` / 2^27, plus its
    priority / 2^25, clamped to [-10, 10] (no other annotation counts)."""
    cost = 1.0
    raw = annotations.get(DELETION_COST)
    if raw is not None:
        # upstream logs and ignores an annotation that is not a number
        with contextlib.suppress(ValueError):
            cost += float(raw) / 2**27
    if priority is not None:
        cost += float(priority) / 2**25
    return min(10.0, max(-10.0, cost))


def reschedule_cost(costs: Iterable[float]) -> float:
    """``computeRescheduleDisruptionCost`` (v1.14.0): 1 (the node's own) plus the positive
    ``EvictionCost`` of each pod to move, in order."""
    total = 1.0
    for cost in costs:
        total += max(0.0, cost)
    return total


def go_duration(text: str) -> float | None:
    """Go's ``time.ParseDuration`` in seconds (``"1h"``, ``"1h30m"``, ``"1.5s"``; None: not a
    duration)."""
    body = text[1:] if text[:1] in "+-" else text
    if text == "0" or not body:
        return 0.0 if text == "0" else None
    at, seconds = 0, 0.0
    while at < len(body):
        found = _GO_PART.match(body, at)
        if found is None:
            return None
        seconds += float(found.group(1)) * _GO_UNITS[found.group(2)]
        at = found.end()
    return -seconds if text[0] == "-" else seconds


def do_not_disrupt_until(value: str | None, start: float | None) -> float | None:
    """``pod.IsDoNotDisruptActive`` of a pod's ``karpenter.sh/do-not-disrupt`` annotation: until
    when (seconds) it blocks disruption; inf: for ever (``"true"``, or a duration without a
    start time); None: not at all (absent, or neither ``"true"`` nor a positive duration)."""
    if value is None:
        return None
    if value == "true":
        return float("inf")
    seconds = go_duration(value)
    if seconds is None or seconds <= 0:
        return None  # upstream emits an event and ignores the annotation
    return float("inf") if start is None else start + seconds


def _by_node(pod: CAPod) -> bool:
    """``pod.IsOwnedByNode``: a static pod's mirror."""
    return pod.mirror or "Node" in pod.obj.owner_kinds


def _active(pod: CAPod) -> bool:
    """``pod.IsActive``: neither terminal (Succeeded, Failed) nor terminating."""
    return not (pod.obj.terminated or pod.obj.terminating)


def _moves(pods: Sequence[CAPod]) -> list[CAPod]:
    """``pod.IsReschedulable``: active (or a terminating StatefulSet pod), neither a DaemonSet's
    nor a static pod."""
    return [
        p
        for p in pods
        if not (p.daemonset or _by_node(p))
        and (_active(p) or (p.obj.terminating and "StatefulSet" in p.obj.owner_kinds))
    ]


def _blocking_pod(pods: Sequence[CAPod], pdbs: PdbTracker, now: float) -> str:
    """``StateNode.ValidatePodsDisruptable``: why a pod keeps the node ("" if none): an active
    pod's ``karpenter.sh/do-not-disrupt`` (DaemonSet and static pods too), then each evictable
    pod's PodDisruptionBudgets (``pdb.Limits.CanEvictPods``: DaemonSet pods too, not static
    pods nor those tolerating Karpenter's disruption taint): more than one, or one allowing no
    eviction now."""
    for p in pods:
        if not _active(p):
            continue
        start = None if p.obj.start_time_ns is None else p.obj.start_time_ns / 1e9
        value = p.annotations.get(DO_NOT_DISRUPT)
        until = do_not_disrupt_until(value, start)
        if until is not None and now < until:
            how = "" if value == "true" else f" ({preview(value)} from its start)"
            return f"a pod has the karpenter.sh/do-not-disrupt annotation{how}"
    for p in pods:
        if not _active(p) or _by_node(p):
            continue
        if any(t.tolerates(DISRUPTED_TAINT) for t in p.obj.constraints.tolerations):
            continue
        matching = pdbs.matching(p)
        if len(matching) > 1:
            return "a pod is covered by more than one PodDisruptionBudget (eviction refuses it)"
        if matching and pdbs.budgets[matching[0]].always_allow_unhealthy and p.obj.not_ready:
            continue  # unhealthyPodEvictionPolicy AlwaysAllow: a pod not Ready is evictable
        if matching and pdbs.remaining[matching[0]] < 1:
            return "a PodDisruptionBudget prevents evicting a pod"
    return ""


def queue_key(pod: CAPod) -> tuple[int, int, float, str]:
    """The scheduling simulation's order (``scheduling/queue.go`` ``byCPUAndMemoryDescending``):
    the most cpu first, then the most memory, then the oldest (a pod without a creation time
    has Go's zero time, the oldest), then by UID."""
    requests = pod.requests
    created = -math.inf if pod.creation_time is None else pod.creation_time
    return (-requests.get("cpu", 0), -requests.get("memory", 0), created, pod.obj.uid)


class _Fitter:
    """Places pods of removed nodes, and the pending pods a node could be launched for, on the
    nodes that stay (scheduler filters, in ``queue_key`` order, each on the first node by name
    that fits)."""

    def __init__(self, scenario: AutoscaleScenario, shapes: Sequence[Shape]) -> None:
        self.scenario = scenario
        self.types = [s.name for s in shapes]  # the instance types a new node may be
        cluster = scenario.cluster
        # the node a replacement would be: one per zone the scenario's nodes are in (Karpenter
        # pins a NodeClaim to one zone), each labelled as the pool's template, absent from the
        # state but where ``_one_new_node`` tries a replacement (``leftover``)
        zones = sorted({n.labels[ZONE] for n in cluster.nodes if ZONE in n.labels})
        new = [
            CANode(
                f"{NEW_NODE}-{i}",
                {},
                {**scenario.node_pool.labels, **({ZONE: z} if z else {}), HOSTNAME: NEW_NODE},
            )
            for i, z in enumerate(zones or [""])
        ]
        extended = replace(
            cluster,
            nodes=[*cluster.nodes, *new],
            pods={**cluster.pods, **{n.name: [] for n in new}},
        )
        self.state, self.demands = build_state(extended, scenario.pending)
        real = len(cluster.nodes)
        self.new = list(range(real, real + len(new)))
        self.state.present = np.arange(real + len(new)) < real
        # the filters a pod meets on a new node here: spreading, pod (anti-)affinity and host
        # ports, which read the pods placed; its resources are the shapes' (``fitting``) and its
        # node selection ``launchable``'s (a new node's labels are not all known)
        self.on_new = [
            p for p in scenario.profile.filters if p.name in ("PodTopologySpread",
                                                              "InterPodAffinity", "NodePorts")
        ]  # fmt: skip
        self.position = {n.name: i for i, n in enumerate(scenario.cluster.nodes)}
        # a moved pod scheduled onto a node not yet initialized fails the simulation
        # (``SimulateScheduling``: ``UninitializedNodeError``, unless the pod is from a node
        # being deleted; ``AllNonPendingPodsScheduled`` then refuses the command)
        ready = initialized_nodes(cluster.nodes)
        self.uninitialized = {i for i, n in enumerate(cluster.nodes) if n.name not in ready}
        # the staying nodes are tried initialized first, then by name
        # (``Scheduler.sortExistingNodes``), not in the scenario's order
        names = [n.name for n in scenario.cluster.nodes]
        self.by_name = np.array(
            sorted(range(len(names)), key=lambda i: (i in self.uninitialized, names[i])),
            dtype=np.int64,
        )
        # a pending pod no instance type holds, or whose node selection no node the pool
        # launches meets (``new_node``), only gives a scheduling error upstream, which
        # ``AllNonPendingPodsScheduled`` ignores: it changes no answer, so it is left out
        extra = scenario.overhead
        self.pending = [
            (p, p.obj.demand(self.state.resources))
            for p in scenario.pending
            if any(_holds(s, {**p.requests, "pods": 1}, extra(s)) for s in shapes)
            and self.launchable(p)
        ]
        for p in scenario.pending:
            held = any(p is q for q, _ in self.pending)
            scenario.notes.append(
                f"pod {p.key} is pending: the consolidation simulation schedules it with the "
                "candidates' pods"
                if held
                else f"pod {p.key} is pending and no instance type holds it; left out"
            )

    def launchable(self, pod: CAPod) -> bool:
        """Whether a node the pool launches could take ``pod`` by its node selection and the
        template's taints (``NodeClaim.CanAdd``: ``PreferNoSchedule`` ones relaxed)."""
        pool = self.scenario.node_pool
        if pod.obj.constraints.tolerates_all(pool.taints) is not None:
            return False
        return launchable(pod.obj.constraints, pool.labels, self.types, pool.requirements)

    def leftover(self, removed: Sequence[str]) -> tuple[list[CAPod], bool]:
        """The moved and pending pods that fit on no staying node, and whether they all go on
        one new node (``_one_new_node``; state restored afterwards)."""
        cluster = self.scenario.cluster
        allowed = np.array(
            [n.name not in removed and not n.unschedulable and not n.deleting
             for n in cluster.nodes] + [False] * len(self.new),
            dtype=bool,
        )  # fmt: skip
        undo: list[tuple[int, Any, bool]] = []
        left: list[tuple[CAPod, Any]] = []
        queue = list(self.pending)
        # the nodes being deleted are no destinations, and their pods are scheduled with the
        # candidates' (``SimulateScheduling``: ``nodes.Active()``, ``Deleting()``'s pods)
        leaving = [n.name for n in cluster.nodes if n.deleting and n.name not in removed]
        moved: set[int] = set()  # the candidates' pods (ids): a pending one may go anywhere
        for name in [*removed, *leaving]:
            i = self.position[name]
            for pod, demand in zip(cluster.pods[name], self.demands[name], strict=True):
                if pod in _moves([pod]):
                    self.state.unbind(i, demand)
                    undo.append((i, demand, True))
                    queue.append((pod, demand))
                    if name in removed:
                        moved.add(id(pod))
        queue.sort(key=lambda item: queue_key(item[0]))
        failed = False  # a candidate's pod went onto a node not yet initialized
        for pod, demand in queue:
            feasible = allowed.copy()
            for plugin in self.scenario.profile.filters:
                feasible &= plugin.filter(self.state, demand, self.scenario.now).feasible
            hits = self.by_name[feasible[self.by_name]]
            if len(hits):
                self.state.bind(int(hits[0]), demand)
                undo.append((int(hits[0]), demand, False))
                if int(hits[0]) in self.uninitialized and id(pod) in moved:
                    failed = True
                    left.append((pod, demand))
            else:
                left.append((pod, demand))
        one_node = not failed and (not left or self._one_new_node(left, removed))
        for i, demand, was_unbound in reversed(undo):
            (self.state.bind if was_unbound else self.state.unbind)(i, demand)
        return [pod for pod, _ in left], one_node

    def _one_new_node(self, left: list[tuple[CAPod, Any]], removed: Sequence[str]) -> bool:
        """Whether ``left`` (in queue order) all go on one new node in some zone by the
        filters that read the pods placed (``on_new``): the removed nodes gone, every zone's
        new node a domain (Karpenter's topology knows the pool's zones), the one tried taking
        the pods. Karpenter's consolidation launches at most one NodeClaim
        (``computeConsolidation``); a spread the pods would break on one node needs more."""
        state, now = self.state, self.scenario.now
        present = state.present
        assert present is not None
        before = present.copy()
        for name in removed:
            present[self.position[name]] = False
        present[self.new] = True
        try:
            for target in self.new:
                bound: list[Any] = []
                for _pod, demand in left:
                    if not all(p.filter(state, demand, now).feasible[target] for p in self.on_new):
                        break
                    state.bind(target, demand)
                    bound.append(demand)
                for demand in reversed(bound):
                    state.unbind(target, demand)
                if len(bound) == len(left):
                    return True
            return False
        finally:
            present[:] = before


def _holds(
    shape: Shape, requests: Mapping[str, int], extra: Mapping[str, int] | None = None
) -> bool:
    """Whether a new node of ``shape`` holds ``requests`` beside ``extra`` (its DaemonSet
    pods' requests and count; the pod count only where the shape gives one)."""
    need = summed([requests, extra]) if extra else requests
    return all(
        shape.allocatable.get(k, 0) >= v for k, v in need.items() if v and k != "pods"
    ) and shape.allocatable.get("pods", 1 << 62) >= need.get("pods", 0)


def summed(requests: Sequence[Mapping[str, int]]) -> dict[str, int]:
    """The requests of several pods added up per resource."""
    need: dict[str, int] = {}
    for one in requests:
        for k, v in one.items():
            need[k] = need.get(k, 0) + v
    return need


def fitting(
    requests: Sequence[Mapping[str, int]],
    shapes: Sequence[Shape],
    below: float = float("inf"),
    overhead: Callable[[Shape], Mapping[str, int]] | None = None,
) -> list[Shape]:
    """The shapes of ``shapes`` (cheapest first) priced under ``below`` that hold every pod of
    ``requests`` (their summed requests and count; the pod count only where the shape gives
    one) beside ``overhead(shape)`` (its DaemonSet pods: ``daemon_overhead``; None: nothing):
    the new NodeClaim's instance type options (``filterInstanceTypesByRequirements``) after
    ``RemoveInstanceTypeOptionsByPriceAndMinValues``."""
    need = {**summed(requests), "pods": len(requests)}
    out = []
    for shape in shapes:
        if shape.price >= below:
            break
        if _holds(shape, need, None if overhead is None else overhead(shape)):
            out.append(shape)
    return out


@dataclass(frozen=True)
class Candidate:
    """A node that may be disrupted: its pool, disruption cost, emptiness, price (None: its
    instance type is unknown, or it lacks a label consolidation needs, so only emptiness may
    take it), instance type and ``RescheduleDisruptionCost``."""

    name: str
    pool: str
    cost: float
    empty: bool
    price: float | None
    kind: str = ""  # instance type (filterOutSameInstanceType)
    reschedule: float = 1.0  # 1 + the positive EvictionCost of its pods to move
    spot: bool = False  # labelled karpenter.sh/capacity-type: spot

    @property
    def ratio(self) -> float:
        """``Candidate.SavingsRatio``: price (0 when unknown) per unit of disruption."""
        return (self.price or 0.0) / self.reschedule

    @classmethod
    def of(
        cls,
        name: str,
        pool: str,
        costs: Sequence[float],
        price: float | None,
        kind: str,
        spot: bool = False,
    ) -> Candidate:
        """The candidate whose pods to move have the ``EvictionCost``s ``costs`` (in pod
        order: their sum is the cost), empty when none of them is above 0
        (``Candidate.IsEmpty``: a ``RescheduleDisruptionCost`` of 1)."""
        reschedule = reschedule_cost(costs)
        return cls(name, pool, sum(costs), reschedule <= 1.0, price, kind, reschedule, spot)


def savings_order(candidates: Sequence[Candidate]) -> list[Candidate]:
    """``consolidation.sortCandidates`` (v1.14.0): the highest savings ratio first (ties: in the
    order given; upstream's sort is not stable)."""
    return sorted(candidates, key=lambda c: -c.ratio)


def _within_budget(
    candidates: Sequence[Candidate], allowed: Callable[[str, str], int], reason: str
) -> list[Candidate]:
    """Per pool, the first candidates its budget for ``reason`` allows, counting down (as
    emptiness and multi-node consolidation do)."""
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
    totals: Mapping[str, PoolTotals] | None = None,
    first: str = "empty",
    spot_launchable: bool = True,
    overhead: Callable[[Shape], Mapping[str, int]] | None = None,
) -> Decision:
    """The disruption controller's command for the candidates ``ordered`` by ``savings_order``:
    emptiness, then multi-node, then single-node consolidation (module docstring).

    ``allowed(pool, reason)``: the disruptions the pool's budgets allow now for ``Empty`` or
    ``Underutilized``; ``shapes(candidates)``: the shapes a replacement may take, cheapest first;
    ``leftover(names)``: the requests of the pods of ``names`` that fit on no node that stays;
    ``totals``: each pool's ``PoolTotals``, read under the ``Balanced`` policy (a pool without
    them scores 0). ``first``: the method to start from (``METHODS``): the controller goes on
    with the next method, at the same run, when a command fails its validation.
    ``spot_launchable``: the pool may launch spot nodes (no capacity-type requirement excludes
    spot); then candidates that are all spot get no replacement (``computeConsolidation`` hands
    them to spot-to-spot consolidation, off by default: ``SpotToSpotConsolidation``).
    ``overhead(shape)``: what a new node of ``shape`` holds beside the pods (``fitting``)."""
    decision = Decision("none")
    spot_refused = False
    start = METHODS.index(first)
    empty = _within_budget([c for c in ordered if c.empty], allowed, "Empty") if start == 0 else []
    if empty:
        decision.kind, decision.nodes = "empty", [c.name for c in empty]
        decision.reason = f"{len(decision.nodes)} empty node(s) deleted (emptiness)"
        return decision
    if start == 0 and any(c.empty for c in ordered):
        decision.blocked = [c.name for c in ordered if c.empty]
    if policy == "WhenEmpty":
        decision.reason = (
            "the disruption budget allows no node now"
            if decision.blocked
            else "consolidationPolicy WhenEmpty and no candidate is empty"
        )
        return decision
    # ShouldDisrupt: consolidation needs the candidate's price (instance type, capacity type and
    # zone) and leaves empty nodes to emptiness and its Empty budget
    priced = [c for c in ordered if c.price is not None and not c.empty]
    # single-node skips a candidate whose pool's budget is 0 now, without counting down (one
    # node per command); multi-node takes the first ones each pool's budget allows
    open_ = [c for c in priced if allowed(c.pool, "Underutilized") > 0]
    taken = {id(c) for c in open_}  # (names are unique: identity is equality here)
    decision.blocked += [c.name for c in priced if id(c) not in taken]
    if not open_:
        decision.reason = (
            "the disruption budget allows no node now"
            if priced or decision.blocked
            else "no candidate to consolidate"
        )
        return decision

    balanced = policy == BALANCED
    kept = totals or {}

    def scored(group: Sequence[Candidate], shape: Shape | None) -> float:
        """``EvaluateBalancedMove``: each pool's score of the move (the savings split by the
        pools' shares of the candidates' price where it spans several), the lowest: every
        pool must approve it."""
        prices = [float(c.price or 0.0) for c in group]
        source = sum(prices)
        savings = source - (0.0 if shape is None else shape.price)
        members: dict[str, list[int]] = {}
        for i, c in enumerate(group):
            members.setdefault(c.pool, []).append(i)
        lowest = math.inf
        for pool, idx in members.items():
            share = savings
            if source > 0 and len(members) > 1:
                share = savings * (sum(prices[i] for i in idx) / source)
            cost = sum(group[i].reschedule for i in idx)
            lowest = min(lowest, move_score(share, cost, kept.get(pool)))
        return lowest

    def can_pass(c: Candidate) -> bool:
        """``CanPassThreshold``: deleting it (its whole price saved, nothing launched) would
        pass, the best any of its moves can score; a pool without positive totals passes."""
        pool = kept.get(c.pool)
        if pool is None or pool.cost <= 0:
            return True
        return approved(move_score(float(c.price or 0.0), c.reschedule, pool))

    def option(group: list[Candidate]) -> tuple[bool, list[Shape]]:
        nonlocal spot_refused
        left = leftover([c.name for c in group])
        if not left:
            return True, []
        if spot_launchable and all(c.spot for c in group):
            spot_refused = True
            return False, []
        known = [float(c.price or 0.0) for c in group]
        options = fitting(left, shapes(group), sum(known), overhead)
        if len(group) > 1 and options:
            # filterOutSameInstanceType: when the replacement's options include a type among the
            # candidates, it must beat the cheapest candidate of such a type, or deleting fewer
            # nodes would do with less disruption
            own: dict[str, float] = {}
            for c, price in zip(group, known, strict=True):
                own[c.kind] = min(own.get(c.kind, price), price)
            cap = min((own[s.name] for s in options if s.name in own), default=float("inf"))
            options = [s for s in options if s.price < cap]
        return bool(options), options

    multi = _within_budget(priced, allowed, "Underutilized")[:MULTI_LIMIT] if start < 2 else []
    low, high = 2, len(multi)
    best: tuple[int, list[Shape], float | None] | None = None
    while low <= high:  # the longest prefix that consolidates (and, Balanced, scores enough)
        mid = (low + high) // 2
        ok, options = option(multi[:mid])
        score = None
        if ok and balanced:
            score = scored(multi[:mid], options[0] if options else None)
            ok = approved(score)
        if ok:
            best, low = (mid, options, score), mid + 1
        else:
            high = mid - 1
    if best is not None:
        decision.kind, decision.nodes = "multi", [c.name for c in multi[: best[0]]]
        decision.options, decision.score = best[1], best[2]
        decision.replacement = best[1][0] if best[1] else None
        decision.reason = (
            "pods fit on the remaining nodes"
            if not best[1]
            else f"replaced by one cheaper {best[1][0].name}"
        ) + _scored(best[2])
        return decision
    for c in open_:
        if balanced and not can_pass(c):  # not even deleting it would score enough
            decision.refused.append(c.name)
            continue
        ok, options = option([c])
        shape = options[0] if options else None
        score = None
        if ok and balanced:
            score = scored([c], shape)
            if not approved(score):
                decision.refused.append(c.name)
                continue
        if ok:
            decision.kind, decision.nodes, decision.replacement = "single", [c.name], shape
            decision.options, decision.score = options, score
            decision.reason = (
                "pods fit on the remaining nodes"
                if shape is None
                else f"replaced by a cheaper {shape.name}"
            ) + _scored(score)
            return decision
        decision.failed.append(c.name)
    if decision.refused and not decision.failed:
        decision.reason = (
            f"consolidationPolicy Balanced: no move scores {1 / BALANCED_K:g} or more (the "
            "share of the pool's cost saved over the share of its disruption)"
        )
    elif decision.refused:
        decision.reason = (
            "no candidate's pods fit elsewhere or on a cheaper shape, and the Balanced score "
            f"refused the moves that did (under {1 / BALANCED_K:g})"
        )
    else:
        decision.reason = "no candidate's pods fit elsewhere or on a cheaper shape"
    if spot_refused:
        decision.reason += (
            "; a spot node is not replaced by a spot node (SpotToSpotConsolidation, off by default)"
        )
    return decision


def _scored(score: float | None) -> str:
    """The Balanced score's part of a decision's reason ("" when not scored)."""
    if score is None:
        return ""
    shown = "inf" if math.isinf(score) else f"{score:.3g}"
    return f" (Balanced score {shown} ≥ {1 / BALANCED_K:g})"


def initialized_nodes(nodes: Sequence[CANode]) -> set[str]:
    """The nodes Karpenter counts as initialized (``StateNode.Initialized``): one it manages
    (``karpenter.sh/nodepool``) once labelled ``karpenter.sh/initialized: "true"``, any other
    always. Where no managed node carries that label at all, every node (a scenario written
    before 2026-12-01, or one that leaves the label out)."""
    owned = [n for n in nodes if NODEPOOL in n.labels] or list(nodes)
    if not any(INITIALIZED in n.labels for n in owned):
        return {n.name for n in nodes}
    mine = {n.name for n in owned}
    return {n.name for n in nodes if n.name not in mine or n.labels.get(INITIALIZED) == "true"}


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
    # Karpenter disrupts only the nodes it owns (``StateNode.ValidateNodeDisruptable``: a
    # NodeClaim and the karpenter.sh/nodepool label); others stay destinations. A scenario
    # whose nodes carry no such label at all is read as every node the NodePool's own
    owned = [n for n in cluster.nodes if NODEPOOL in n.labels] or list(cluster.nodes)
    mine = {n.name for n in owned}
    # a node Karpenter launched is initialized once labelled karpenter.sh/initialized "true"
    # (``StateNode.Initialized``): no candidate before, and not among the pool's nodes its
    # budgets count. A scenario none of whose nodes carries the label is read as every node
    # initialized (scenarios written before 2026-12-01)
    initialized = initialized_nodes(cluster.nodes)
    ready = [n for n in owned if n.name in initialized]
    for node in cluster.nodes:
        pods = cluster.pods.get(node.name, [])
        if node.name not in mine:
            notes[node.name] = f"node is not managed by Karpenter (no {NODEPOOL} label)"
            costs[node.name] = sum(eviction_cost(p) for p in _moves(pods))
            continue
        # ``StateNode.ValidateNodeDisruptable``, in its order
        if node.name not in initialized:
            reason = f'node isn\'t initialized (no {INITIALIZED}: "true" label)'
        elif node.deleting:
            reason = "node is deleting or marked for deletion"
        elif node.annotations.get(DO_NOT_DISRUPT) == "true":
            reason = "node has the karpenter.sh/do-not-disrupt annotation"
        else:
            reason = _blocking_pod(pods, pdbs, scenario.now)
        notes[node.name] = reason
        moves = [eviction_cost(p) for p in _moves(pods)]
        costs[node.name] = sum(moves)
        if reason:
            continue
        kind = types[node.name]
        spot = node.labels.get(CAPACITY_TYPE) == "spot"
        candidate = Candidate.of(node.name, "", moves, prices.get(kind), kind, spot)
        missing = [k for k in (CAPACITY_TYPE, ZONE) if k not in node.labels]
        if candidate.price is None and not candidate.empty:
            notes[node.name] = (
                f"instance type {preview(kind)} is not in nodePool.instanceTypes "
                "(consolidation needs its price)"
            )
        elif missing and not candidate.empty:  # ShouldDisrupt: the price needs both labels
            candidate = replace(candidate, price=None)
            notes[node.name] = f"node has no {missing[0]} label (consolidation needs its price)"
        ordered.append(candidate)
    ordered = savings_order(ordered)
    if pool.never:
        decision = Decision("none", reason="consolidateAfter: Never disables consolidation")
    else:
        seconds = scenario.now
        # the NodePool's initialized nodes (``BuildDisruptionBudgetMapping``); one whose Ready
        # condition is not True, or being deleted, takes from the budgets (never below 0); a
        # node given without conditions counts as Ready
        count = len(ready)
        unready = sum(n.ready not in (None, "True") or n.deleting for n in ready)

        def allowed(_pool: str, reason: str) -> int:
            rules = pool.allowed(
                count,
                reason,
                lambda r: r.schedule is None or active(r.schedule, r.duration, seconds),
            )
            return max(0, rules - unready)

        fitter = _Fitter(scenario, pool.shapes)

        def leftover(names: list[str]) -> list[Mapping[str, int]]:
            # a pod no node the pool launches could take asks for a resource no shape offers,
            # so no replacement holds it (``fitting``)
            pods, one_node = fitter.leftover(names)
            # (nor one they cannot share by their spreading, affinity or host ports)
            return [
                dict(p.requests)
                if one_node and fitter.launchable(p)
                else {**p.requests, NO_NEW_NODE: 1}
                for p in pods
            ]

        totals = None
        if pool.policy == BALANCED:
            totals = {"": _pool_totals(scenario, prices, ordered, mine)}
        decision = decide(
            ordered,
            allowed,
            pool.policy,
            lambda _c: pool.shapes,
            leftover,
            totals,
            overhead=scenario.overhead,
        )
        if decision.kind == "none" and not ordered and not decision.reason:
            decision.reason = "no candidate"
    decision.candidates, decision.costs = notes, costs
    return decision


def _pool_totals(
    scenario: AutoscaleScenario,
    prices: Mapping[str, float],
    candidates: Sequence[Candidate],
    mine: AbstractSet[str],
) -> PoolTotals:
    """The NodePool's ``PoolTotals`` over every node of the scenario: the price of each node of
    a listed instance type with the capacity-type and zone labels (``ClusterCost`` counts no
    NodeClaim missing them; the candidates' prices where none is), and the disruption cost of
    each node: a candidate's ``RescheduleDisruptionCost``, another's ``StateNode.
    DisruptionCost`` (1 + the positive ``EvictionCost`` of its pods but DaemonSet and terminal
    ones: the state tracks a terminating pod until it is gone)."""
    cluster = scenario.cluster
    chosen = {c.name for c in candidates}
    cost = 0.0
    others = []
    for node in cluster.nodes:
        if node.name not in mine:  # (the NodePool's nodes only: ``mine``)
            continue
        kind = node.labels.get(INSTANCE_TYPE, "")
        if kind in prices and CAPACITY_TYPE in node.labels and ZONE in node.labels:
            cost += prices[kind]
        if node.name in chosen:
            continue
        own = 1.0
        for pod in cluster.pods.get(node.name, []):
            if "DaemonSet" not in pod.obj.owner_kinds and not pod.obj.terminated:
                own += max(0.0, eviction_cost(pod))
        others.append(own)
    return pool_totals(cost, candidates, others)


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
    verdict: dict[str, Any] = {
        "type": decision.kind,
        "nodes": decision.nodes,
        "replacement": replacement,
        "reason": decision.reason,
    }
    if scenario.node_pool.policy == BALANCED:
        # the command's score (the share of the pool's cost saved over the share of its
        # disruption; passes at 1/k = 0.5) and the candidates whose move scored less
        score = decision.score
        verdict["score"] = score if score is not None and math.isfinite(score) else None
        verdict["refusedByScore"] = decision.refused
    return {
        "autoscaler": "karpenter",
        "kubernetesVersion": str(scenario.version),
        "nodes": nodes,
        "decision": verdict,
        "removed": decision.nodes,
        "notes": scenario.notes,
    }
