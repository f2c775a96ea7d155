"""Karpenter in the replay's loop: provisioning for pending pods, disruption of nodes.

The engine (``analyzer.replay.engine``) drives this as it drives cluster-autoscaler's loop
(``ready``, ``tick``, ``removed``, ``touch``, ``next_time``). Rules, each after
kubernetes-sigs/karpenter (docs/autoscaling.md "Karpenter in the replay"):

- **provisioning** (``analyzer.replay.karpenter_provision``): pods left pending start a batch;
  when it closes the NodeClaims are launched, Ready after ``provisioning-delay``;
- **disruption** (``pkg/controllers/disruption/controller.go``), every 10 s while anything may
  change its answer: the candidates (``types.go NewCandidate``, ``helpers.go``): present nodes not
  being disrupted, without ``karpenter.sh/do-not-disrupt`` on the node or one of its pods (a pod's
  ``"true"``, or a duration not yet elapsed since the pod was bound), no pod a
  PodDisruptionBudget keeps (more than one budget, or one allowing no eviction now; DaemonSet
  pods too), and consolidatable (``consolidateAfter`` since the node's last pod event:
  ``nodeclaim/disruption/consolidation.go``); ordered by savings ratio (price over 1 + Σ of the
  positive ``EvictionCost`` of the pods to move); then the command of
  ``analyzer.autoscaler.karpenter.decide`` (emptiness, multi-node, single-node consolidation,
  budgets per pool and reason, ``orchestration``), run 15 s later if it still holds
  (``analyzer.replay.karpenter_validate``): deletions then, their pods evicted back to the
  replay's scheduler; a replacement is launched first and the candidates are deleted when it is
  Ready (``orchestration/queue.go``). The simulation moves no candidate's pod onto a
  node within its own ``consolidateAfter`` window.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np

from analyzer.autoscaler.cron import active as cron_active
from analyzer.autoscaler.karpenter import (
    BALANCED,
    CAPACITY_TYPE,
    DISRUPTED_TAINT,
    DO_NOT_DISRUPT,
    Candidate,
    Decision,
    PoolTotals,
    decide,
    do_not_disrupt_until,
    pod_eviction_cost,
    pool_totals,
    savings_order,
)
from analyzer.autoscaler.nodepool import BudgetRule, NodePool, Shape
from analyzer.replay.autoscale_record import AutoscalerRecord
from analyzer.replay.budgets import ReplayBudgets
from analyzer.replay.input import NEVER, ReplayInput
from analyzer.replay.karpenter_kept import KeptAnswers
from analyzer.replay.karpenter_provision import holds, solve
from analyzer.replay.karpenter_setup import KarpenterPools, KarpenterSettings
from analyzer.replay.karpenter_simulate import Need, Reads, hard_defaults, leftover
from analyzer.replay.karpenter_validate import Pending, validate
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.node_taints import set_node_taints
from analyzer.scheduling.queue_order import TERMINATION_GRACE
from analyzer.scheduling.state import ClusterState

SECOND = 1_000_000_000
# a node launched for pending pods is nominated for them and no disruption candidate meanwhile
# (``state/cluster.go`` ``nominationWindow``: 2 × batchMaxDuration, at least 10 s)
MIN_NOMINATION = 10 * SECOND
# the cluster's consolidation state resets this long after its last change, so the disruption
# methods look again though nothing changed (``state/cluster.go`` ``ConsolidationState``)
CONSOLIDATION_STATE_TTL = 300 * SECOND


class KarpenterAutoscaler:
    """Karpenter's provisioner and disruption controller over one replay (module docstring)."""

    def __init__(
        self,
        inp: ReplayInput,
        pools: KarpenterPools,
        settings: KarpenterSettings,
        profile: Profile,
        state: ClusterState,
        active: np.ndarray[Any, Any],
        on_node: list[set[int]],
        bound: list[int],
        budgets: ReplayBudgets,
        rng: np.random.Generator,
    ) -> None:
        del rng  # Karpenter's choices here are deterministic (cheapest first, cost order)
        # Karpenter's simulations run its own scheduler: no GPU-sharing plugin
        self.inp, self.pools, self.settings = inp, pools, settings
        self.profile = profile.without_devices()
        self.state, self.active, self.on_node, self.bound = state, active, on_node, bound
        self.budgets = budgets
        # an evicted pod's termination: kube's default grace period
        self.eviction_grace = TERMINATION_GRACE * SECOND
        # preemption victims terminating and deleted for good (the engine sets them where it
        # preempts): not healthy, and not expected, in the budgets
        self.terminating: tuple[Any, Any] = (None, None)
        self.nodepool = NodePool(settings.policy, settings.never, rules=settings.rules)
        self.provisioning: dict[int, int] = {}  # slot -> when it becomes Ready
        self.replacing: dict[int, list[int]] = {}  # replacement slot -> candidates to delete
        self.disrupting: set[int] = set()  # candidates waiting for their replacement
        # nodes launched for pending pods: nominated for them for a while after Ready
        self.launched: set[int] = set()
        self.nominated: dict[int, int] = {}  # slot -> until when
        self.last_event = np.full(state.node_count, inp.start, dtype=np.int64)
        self.clock = inp.start
        self.dirty = True
        self._waiting = False
        self.mark: int | None = None  # when pods were last left pending (not yet looked at)
        self.looked = -1  # the last instant that was only such a look
        self.live = False  # within an instant, after ``tick`` (pod events are stamped now)
        self.stale: set[int] = set()  # nodes with a pod event before this instant's ``ready``
        # the pass's staying nodes and their room (``_room``), None until its first try
        self.room: tuple[Any, Any, Any] | None = None
        # the static filters' verdicts per pod constraints during the pass (``leftover``)
        self.masks: dict[Any, np.ndarray[Any, Any]] = {}
        self.known: set[int] = set()  # pending pods already in a batch
        self.batch: tuple[int, int] | None = None  # (first, last) pending pod of the batch
        self.next_poll = inp.start + settings.poll
        self.later = NEVER  # when a node becomes consolidatable or a budget window turns
        # upstream's consolidation state (``state.Cluster.MarkUnconsolidated``): a version
        # counted up at each change of the cluster and the time of the last one; ``marked``: the
        # version and time of the last pass that found nothing, no budget holding a candidate
        # back (``markConsolidated``: its methods skip the passes until the state changes or
        # resets, ``IsConsolidated``)
        self.version = 0
        self.state_time = inp.start
        self.marked: tuple[int, int] | None = None
        self.of = np.array(pools.of_node, dtype=np.int64)
        self.memo: dict[tuple[bytes, int], bool] = {}
        self.record = AutoscalerRecord("karpenter", pools.names, pools.of_node, pools.data_nodes)
        self.record.notes.extend(pools.notes)
        for slot in np.flatnonzero(active).tolist():
            self.record.joined(slot, inp.start)
        self.edges = self._budget_edges()
        # the pods annotated karpenter.sh/do-not-disrupt, and each pod's eviction cost (both
        # fixed for a pod's lifetime)
        self.keep = {
            p for p, d in enumerate(inp.demands) if d.annotations.get(DO_NOT_DISRUPT) == "true"
        }
        # those annotated with a duration ("1h"): they keep their node that long after they
        # started on it (``pod.IsDoNotDisruptActive``); when each was bound, pod -> (node, when)
        self.timed = {
            p: span
            for p, d in enumerate(inp.demands)
            if p not in self.keep
            and (span := do_not_disrupt_until(d.annotations.get(DO_NOT_DISRUPT), 0.0)) is not None
        }
        self.started: dict[int, tuple[int, int]] = {}
        self.unstarted: list[int] = []  # bound before this instant's ``ready``: started then
        # the pods a PodDisruptionBudget cannot evict or hold: static pods and those tolerating
        # Karpenter's disruption taint (``pod.IsEvictable``)
        tolerant: dict[int, bool] = {}  # per constraints object (shared by many pods)
        self.evictable = np.ones(len(inp.demands), dtype=bool)
        for p, d in enumerate(inp.demands):
            found = tolerant.get(id(d.constraints))
            if found is None:
                found = tolerant[id(d.constraints)] = any(
                    t.tolerates(DISRUPTED_TAINT) for t in d.constraints.tolerations
                )
            if found or (inp.pinned[p] and not d.daemonset):
                self.evictable[p] = False
        self.under: set[int] = set()  # the nodes within consolidateAfter at the last pass
        # a list read in a comprehension: the pass sums it for every candidate's pods
        self.costs = [pod_eviction_cost(d.annotations, d.priority) for d in inp.demands]
        self.needs: dict[int, Need] = {}  # per pod, for the fast simulation (``Need``)
        # every pod's requests, a row each: the simulation sums the moved pods' (``leftover``)
        self.requests = np.stack([d.requests for d in inp.demands]) if len(inp.demands) else None
        self.tainted: list[int] = []  # nodes tainted since the engine last asked
        self.pinned: list[bool] = inp.pinned.tolist()  # (a list: read per pod in the passes)
        # consolidation answers kept between passes (``karpenter_kept``)
        self.kept = KeptAnswers(state, active, on_node, self.pinned, inp.demands, self.requests)
        # (a pod spreading by the plugin's DoNotSchedule defaults reads every pod: ``kept``)
        self.kept.hard_defaults = any(
            hard_defaults(f)
            for f in self.profile.filters
            if getattr(f, "name", "") == "PodTopologySpread"
        )
        # the pods pending at this instant's tick, and those of them a pool could launch a node
        # for: consolidation's simulation schedules these too (``_disrupt``)
        self.pending: tuple[int, ...] = ()
        self.launchable: tuple[int, ...] = ()
        # the command waiting for its validation (``karpenter_validate``), and the instant of
        # the pass that follows a command at once (upstream's ``RequeueImmediately``)
        self.validating: Pending | None = None
        self.requeue: int | None = None
        # whether the pool may launch spot nodes (no capacity-type requirement excludes spot):
        # then candidates that are all spot get no replacement (``decide``)
        self.spot_launchable = all(
            r.allows({CAPACITY_TYPE: "spot"})
            for r in settings.requirements
            if r.key == CAPACITY_TYPE
        )

    # -- the engine's side ---------------------------------------------------------------------
    @property
    def waiting(self) -> bool:
        """Whether pods wait after the scheduler's last pass (the engine sets it)."""
        return self._waiting

    @waiting.setter
    def waiting(self, value: bool) -> None:
        # the engine sets this at the end of every instant: pods left pending now are looked at
        # one idle period later, unless this instant was such a look itself (nothing arrived)
        self._waiting = value
        self.live = False
        if value and self.mark is None and self.clock != self.looked:
            self.mark = self.clock

    def settle(self) -> None:
        """The end of an instant (the engine's call, as to cluster-autoscaler's loop): nothing
        to decide early here."""

    def finish(self, end: int) -> None:
        """The replay ended (the engine's call, as to cluster-autoscaler's loop): nothing left."""

    def next_time(self) -> int:
        """The next instant Karpenter acts on its own (``NEVER``: none)."""
        times = [min(self.provisioning.values(), default=NEVER)]
        if self.mark is not None:  # look at the pods left pending one idle period later
            times.append(self.mark + self.settings.batch_idle)
        if self.batch is not None:
            first, last = self.batch
            times.append(min(last + self.settings.batch_idle, first + self.settings.batch_max))
        if self.validating is not None:  # the controller waits for the command's validation
            return min(*times, self.validating.due)
        if self.requeue is not None:
            times.append(self.requeue)
        due = self._pass_due()
        if due < NEVER:  # the disruption controller polls on a 10 s grid from the start
            poll, start = self.settings.poll, self.inp.start
            grid = start + -(-(max(due, self.clock + 1) - start) // poll) * poll
            times.append(max(self.next_poll, grid))
        return min(times)

    def ready(self, now: int) -> list[int]:
        """Slots whose launch ends at ``now``: they join (the engine activates them)."""
        self.clock = now
        if self.stale:  # pod events before this instant's ``ready`` happened now (``touch``)
            self.state_time = now
        for node in self.stale:
            self.last_event[node] = now
        self.stale = set()
        for pod in self.unstarted:
            if pod in self.started:
                self.started[pod] = (self.started[pod][0], now)
        self.unstarted = []
        joining = sorted(s for s, at in self.provisioning.items() if at <= now)
        for slot in joining:
            del self.provisioning[slot]
            self.record.joined(slot, now)
            self.record.added.append((now, slot))
            self.last_event[slot] = now
            if slot in self.launched:
                self.launched.discard(slot)
                self.nominated[slot] = now + max(2 * self.settings.batch_max, MIN_NOMINATION)
        if joining:
            self._changed(now)
            self.known = set()  # pods still pending once nodes joined go into a new batch
        return joining

    def tick(self, now: int, waiting: list[int]) -> list[int]:
        """Provisioning for ``waiting`` when its batch closes, replaced nodes whose replacement
        is Ready, and a disruption pass if one is due. Returns the slots to delete now."""
        if self.mark is not None and now == self.mark + self.settings.batch_idle:
            self.looked = now
        self.clock = now
        self.live = True
        devices, self.state.devices = self.state.devices, None  # simulations ignore GPU devices
        try:
            self._batch(now, waiting)
            out = []
            for slot in [s for s in self.replacing if self.active[s]]:
                out.extend(self.replacing.pop(slot))
            if self.validating is not None:
                if now >= self.validating.due:
                    self.next_poll = now + self.settings.poll
                    out.extend(validate(self, now))
            elif (self.requeue is not None and now >= self.requeue) or (
                now >= self.next_poll and now >= self._pass_due()
            ):
                self.requeue = None
                self.next_poll = now + self.settings.poll
                out.extend(self._disrupt(now))
            return out
        finally:
            self.state.devices = devices

    def removed(self, slot: int, now: int, evicted: list[int]) -> None:
        """The engine deleted ``slot`` and evicted ``evicted`` from it."""
        self.record.left(slot, now)
        self.record.removed.append((now, slot, bool(evicted)))
        self.record.evictions.extend((now, pod) for pod in evicted)
        self.disrupting.discard(slot)
        self._changed(now)

    def node_changes(self) -> list[int]:
        """The nodes whose taints Karpenter changed since the last call (the engine's, after
        ``tick``: its score cache and refusal counts follow them)."""
        out, self.tainted = self.tainted, []
        return out

    def reads_changed(self) -> None:
        """Something the disruption pass reads changed at this instant without a bind or
        unbind: nodes' cordons or taints, or what PodDisruptionBudgets count (a pod started or
        stopped waiting, a preemption victim started terminating). The next pass is run, but
        none of these changes upstream's consolidation state (``_changed``): after a pass that
        marked it consolidated, not before it resets."""
        self.dirty = True
        self.kept.recheck = True

    def touch(self, node: int, freed: bool, pod: int = -1) -> None:
        """The engine bound or unbound ``pod`` on ``node`` (``nominated_holds.HOLD``: a
        nominated pod's hold taken or released there): a pod event (``consolidateAfter``)."""
        self.kept.touch(node, freed, pod)
        # (a departure before this instant's ``ready`` is stamped there, as its ``last_event``)
        self._changed(self.clock if self.live else None)
        if self.live:
            self.last_event[node] = self.clock
        else:  # a departure or a node's leave handled before this instant's ``ready``
            self.stale.add(node)
        if self.timed:
            self._track_starts(node, freed)

    def _changed(self, when: int | None) -> None:
        """The cluster changed as upstream's consolidation state counts it
        (``MarkUnconsolidated``: a pod bound, ``cleanupOldBindings``, or deleted, ``DeletePod``;
        a node joining or leaving, ``triggerConsolidationOnChange``, ``cleanupNode``): the next
        poll runs a pass. ``when``: its time (None: stamped by ``ready``)."""
        self.dirty = True
        self.version += 1
        if when is not None:
            self.state_time = when

    def _pass_due(self) -> int:
        """When the next disruption pass is due (``NEVER``: none): at once after a change
        (``dirty``), else when a change by time alone comes (``later``: a node turning
        consolidatable, a nomination or a do-not-disrupt duration ending, a budget window).
        But after a pass that found nothing with no budget holding a candidate back
        (``markConsolidated``), while the cluster has not changed as upstream's consolidation
        state counts it, its methods skip every poll (``IsConsolidated``) until that state
        resets: the pass is due at the first reset at or after that time."""
        wanted = self.clock if self.dirty else self.later
        marked = self.marked
        if wanted >= NEVER or marked is None or marked[0] != self.version:
            return wanted
        return self._reset_at(max(wanted, marked[1] + 1))

    def _reset_at(self, after: int) -> int:
        """The first poll at or after ``after`` at which the consolidation state resets: the
        controller's polls at least ``CONSOLIDATION_STATE_TTL`` after the last change, then at
        least that long after the reset before (``ConsolidationState``)."""
        poll, start = self.settings.poll, self.inp.start
        first = start + -(-(self.state_time + CONSOLIDATION_STATE_TTL - start) // poll) * poll
        if after <= first:
            return first
        period = -(-CONSOLIDATION_STATE_TTL // poll) * poll
        return first + -(-(after - first) // period) * period

    def _track_starts(self, node: int, freed: bool) -> None:
        """When each pod annotated ``do-not-disrupt: <duration>`` started on its node (its
        ``status.startTime``): set as it is bound, dropped as it leaves."""
        if freed:
            for pod in [p for p, (n, _) in self.started.items() if n == node]:
                if pod not in self.on_node[node]:
                    del self.started[pod]
            return
        for pod in self.on_node[node]:
            if pod in self.timed and self.started.get(pod, (-1, 0))[0] != node:
                self.started[pod] = (node, self.clock)
                if not self.live:
                    self.unstarted.append(pod)

    # -- provisioning --------------------------------------------------------------------------
    def _batch(self, now: int, waiting: list[int]) -> None:
        pinned = self.inp.pinned
        pending = [p for p in waiting if not pinned[p]]
        self.pending = tuple(sorted(pending))
        self.known &= set(pending)
        new = [p for p in pending if p not in self.known]
        seen = now if self.mark is None else self.mark
        self.mark = None
        if new:
            self.known.update(new)
            self.batch = (seen if self.batch is None else self.batch[0], seen)
        if self.batch is None:
            return
        first, last = self.batch
        if now < min(last + self.settings.batch_idle, first + self.settings.batch_max):
            return
        self.batch = None
        self._provision(now, pending)

    def _unused(self, pool: int, shape: int) -> Iterator[int]:
        """The slots of ``pool``'s ``shape`` neither present nor launching: free to launch."""
        provisioning, active = self.provisioning, self.active
        return (s for s in self.pools.slots(pool, shape) if not active[s] and s not in provisioning)

    def _free(self, pool: int, shape: int) -> int:
        return sum(1 for _ in self._unused(pool, shape))

    def _compatible(self, pod: int, pool: int) -> bool:
        """Whether a new node of ``pool`` passes ``pod``'s scheduler filters: asked of a free
        (empty, absent) slot of each shape, as upstream asks its NodeClaim template, never of a
        node that runs (its pods would fail the resource fit for a reason a new node does not
        have). Kept per pod shape where the answer reads nothing that changes (no spreading nor
        pod affinity, and a free slot of every shape asked); no free slot: no new node now."""
        key = (self.inp.shape_keys[pod], pool)
        found = self.memo.get(key)
        demand = self.inp.demands[pod]
        if found is None or demand.affinity is not None or demand.spread:
            shapes = range(len(self.pools.shapes[pool]))
            probes = [s for k in shapes if (s := next(self._unused(pool, k), None)) is not None]
            if not probes:
                return False
            seconds = self.clock / SECOND
            found = any(
                all(bool(p.filter(self.state, demand, seconds).feasible[s])
                    for p in self.profile.filters)
                for s in probes
            )  # fmt: skip
            # kept only when every shape was asked: a shape with no free slot now may be the
            # one that takes the pod once a slot of it is free again
            if demand.affinity is None and not demand.spread and len(probes) == len(shapes):
                self.memo[key] = found
        return found

    def _provision(self, now: int, pending: list[int]) -> None:
        """``Provisioner.Schedule``: the pending pods and the pods of the nodes being deleted
        (the candidates waiting for their replacement: ``nodes.Deleting()``'s reschedulable
        pods), onto the nodes that stay (not those being deleted), the nodes launching and new
        NodeClaims: a pending pod takes a replacement's room only where the candidates' pods
        leave it some."""
        existing = self.active
        moving: list[tuple[int, int]] = []  # (node being deleted, pod)
        if self.disrupting:
            existing = existing.copy()
            existing[list(self.disrupting)] = False
            pinned = self.inp.pinned
            moving = [
                (s, p)
                for s in sorted(self.disrupting)
                for p in sorted(self.on_node[s])
                if not pinned[p]
            ]
        # the pods being moved are scheduled as if gone from their nodes: no spreading or pod
        # (anti-)affinity counts them where they are (upstream's topology excludes the pods it
        # schedules, ``scheduling/topology.go``); the state is as it was afterwards (``tick``
        # has left the GPU device state out)
        state, demands = self.state, self.inp.demands
        for slot, pod in moving:
            state.unbind(slot, demands[pod])
        try:
            launch = solve(
                state, self.profile, demands, [*pending, *(p for _, p in moving)], existing,
                sorted(self.provisioning), self._compatible, self.pools.shapes, self._free,
                now / SECOND, self.of,
            )  # fmt: skip
        finally:
            for slot, pod in reversed(moving):
                state.bind(slot, demands[pod])
        for pool, shape, _ in launch:
            slot = next(self._unused(pool, shape))
            self.provisioning[slot] = now + self.settings.provisioning_delay
            self.launched.add(slot)
            self.record.scale_ups.append((now, pool, 1))

    # -- disruption ----------------------------------------------------------------------------
    def _budget_edges(self) -> list[tuple[BudgetRule, list[tuple[float, float]]]]:
        """Each scheduled budget's active spans over the window (epoch seconds)."""
        from analyzer.autoscaler.cron import windows

        start, end = self.inp.start / SECOND, self.inp.end / SECOND
        return [
            (r, windows(r.schedule, r.duration, start, end))
            for r in self.settings.rules
            if r.schedule is not None
        ]

    def _rule_active(self, rule: BudgetRule, seconds: float) -> bool:
        if rule.schedule is None:
            return True
        for r, spans in self.edges:
            if r is rule:
                return any(lo <= seconds < hi for lo, hi in spans)
        return cron_active(rule.schedule, rule.duration, seconds)

    def _next_edge(self, seconds: float) -> int:
        edges = [e for _, spans in self.edges for span in spans for e in span if e > seconds]
        return int(min(edges) * SECOND) if edges else NEVER

    def _disrupt(self, now: int, first: str = "empty") -> list[int]:
        """One pass of the disruption controller, its methods from ``first`` on; the slots to
        delete now. A command waits for its validation (``karpenter_validate``) first."""
        self.dirty = False
        seconds = now / SECOND
        self.later = self._next_edge(seconds)
        self._look_pending()
        reasons: dict[str, int] = {}

        def count(reason: str, n: int = 1) -> None:
            reasons[reason] = reasons.get(reason, 0) + n

        present: list[int] = np.flatnonzero(self.active).tolist()
        blocked = self._pdb_blocked(now, present)
        self._destinations(now, present)
        candidates: list[Candidate] = []
        for slot in present:
            why = self._held(slot, now, blocked)
            if why:
                count(why)
            else:
                candidates.append(self._candidate(slot))
        candidates = savings_order(candidates)  # stable: equal ratios keep the node order
        position = {self.state.node_names[s]: s for s in present}
        decision = (
            self._decide(now, candidates, position, first) if candidates else Decision("none")
        )
        chosen = {position[n] for n in decision.nodes}
        count("Disrupting", len(chosen))
        # each candidate under one reason: chosen, else held back by a budget, else tried alone
        held = set(decision.blocked) - set(decision.nodes)
        failed = set(decision.failed) - held - set(decision.nodes)
        refused = set(decision.refused) - held - failed - set(decision.nodes)
        count("BudgetExhausted", len(held))
        count("NotCheaper", len(failed))
        count("BalancedScore", len(refused))
        rest = len(candidates) - len(chosen) - len(held) - len(failed) - len(refused)
        if decision.kind == "none" and self.settings.policy == "WhenEmpty":
            count("WhenEmptyPolicy", rest)
        else:
            count("Consolidatable", rest)  # not the pass's choice (nor tried)
        self.record.reasons.append((now, {k: v for k, v in reasons.items() if v > 0}))
        # nothing found and no candidate held back by a budget: each method marks the state
        # consolidated (``markConsolidated``); a command leaves it unmarked
        self.marked = (self.version, now) if decision.kind == "none" and not held else None
        if decision.kind == "none":
            return []
        if self.settings.validation > 0:  # (``commandValidationDelay``)
            self.validating = Pending(decision, sorted(chosen), now + self.settings.validation)
            return []
        return self.execute(decision, sorted(chosen))

    def execute(self, decision: Decision, chosen: list[int]) -> list[int]:
        """Start the command ``decision`` on the slots ``chosen``: the slots to delete now, or
        none while their replacement launches. The next pass follows at once (upstream's
        ``RequeueImmediately`` after a command): at the next instant, once the engine has
        deleted the nodes and placed their pods."""
        self.requeue = self.clock + 1
        if decision.replacement is None:
            return chosen
        # the replacement is of the first candidate's pool (``shapes`` in ``_decide``)
        pool = self.of[self.state.node_names.index(decision.nodes[0])]
        shape = self.pools.shapes[pool].index(decision.replacement)
        slot = next(self._unused(int(pool), shape))
        self.provisioning[slot] = self.clock + self.settings.provisioning_delay
        self.record.scale_ups.append((self.clock, int(pool), 1))
        self.replacing[slot] = chosen
        self.disrupting.update(chosen)
        # the candidates are tainted karpenter.sh/disruption=disrupting:NoSchedule before the
        # replacement launches (upstream's disruption control flow, step 3): no new pod lands
        # on them while it does, but one tolerating the taint
        taints = self.state.node_taints
        set_node_taints(
            self.state,
            chosen,
            [(*(taints[s] if taints else ()), DISRUPTED_TAINT) for s in chosen],
        )
        self.tainted.extend(chosen)
        return []

    def _look_pending(self) -> None:
        """The pending pods a pool could launch a node for (``launchable``). Upstream's
        simulation schedules every pending pod, but one no pool can launch a node for only
        gives a scheduling error, which ``AllNonPendingPodsScheduled`` ignores: such a pod
        changes no answer, so it is left out."""
        shapes = self.pools.shapes
        self.launchable = tuple(
            p for p in self.pending
            if any(self._compatible(p, g) and any(holds(s, {**self.inp.demands[p].request_map,
                                                              "pods": 1}) for s in shapes[g])
                   for g in range(len(shapes)))
        )  # fmt: skip

    def _held(self, slot: int, now: int, blocked: set[int]) -> str:
        """Why ``slot`` is no disruption candidate now ("": it is one), the reason's name as
        recorded; a node consolidatable later has that pass due."""
        if slot in self.disrupting:
            return "Disrupting"
        if self.nominated.get(slot, NEVER) > now and slot in self.nominated:
            self.later = min(self.later, self.nominated[slot])
            return "Nominated"
        annotations = self.state.node_annotations
        if self.settings.never:
            return "ConsolidateAfterNever"
        if annotations and annotations[slot].get(DO_NOT_DISRUPT) == "true":
            return "DoNotDisruptNode"
        if (self.keep or self.timed) and self._kept(slot, now):
            return "DoNotDisruptPod"
        if blocked and any(p in blocked for p in self.on_node[slot]):
            return "PodDisruptionBudget"
        if now - int(self.last_event[slot]) < self.settings.consolidate_after:
            self.later = min(
                self.later, int(self.last_event[slot]) + self.settings.consolidate_after
            )
            return "ConsolidateAfter"
        return ""

    def _candidate(self, slot: int) -> Candidate:
        """The disruption candidate ``slot``: its pool, price and pods' eviction costs."""
        pool = self.pools.names[self.of[slot]]
        shape = self.pools.shape_of[slot]
        kind, price = "", None
        if shape >= 0:
            found = self.pools.shapes[self.of[slot]][shape]
            kind, price = found.name, found.price
        pinned, cost_of = self.pinned, self.costs
        costs = [cost_of[p] for p in self.on_node[slot] if not pinned[p]]  # in pod order
        labels = self.state.node_labels
        spot = bool(labels) and labels[slot].get(CAPACITY_TYPE) == "spot"
        return Candidate.of(self.state.node_names[slot], pool, costs, price, kind, spot)

    def _kept(self, slot: int, now: int) -> bool:
        """Whether a pod on ``slot`` has an active ``karpenter.sh/do-not-disrupt`` (``"true"``,
        or a duration not yet elapsed since it started there: then the pass after it elapses is
        due); DaemonSet and static pods count too (``StateNode.ValidatePodsDisruptable``)."""
        held = False
        for pod in self.on_node[slot]:
            if pod in self.keep:
                return True
            span = self.timed.get(pod)
            if span is None:
                continue
            start = self.started.get(pod, (slot, self.inp.start))[1]
            until = start + int(span * SECOND)
            if now < until:
                held = True
                self.later = min(self.later, until)
        return held

    def _pdb_blocked(self, now: int, present: list[int]) -> set[int]:
        """The pods whose eviction a PodDisruptionBudget refuses now (``pdb.Limits``
        ``CanEvictPods``): covered by more than one budget, or by one that allows no eviction.
        DaemonSet pods count; static pods and those tolerating the disruption taint do not."""
        budgets = self.budgets
        if not budgets:
            return set()
        on = np.fromiter(chain.from_iterable(self.on_node[s] for s in present), dtype=np.int64)
        on = on[budgets.count[on] > 0]
        on = on[self.evictable[on]]
        if not len(on):
            return set()
        # a pod under two budgets or more is refused whatever they allow; one under one budget
        # where that budget allows no eviction now
        many = budgets.count[on] > 1
        first = budgets.first[on]
        covering = np.unique(first[~many]).tolist()
        refused = many
        if covering:
            node_of = np.array(self.bound, dtype=np.int64)
            status = budgets.at(now, node_of, covering, *self.terminating)
            closed = np.zeros(len(budgets.budgets), dtype=bool)
            for i, b in zip(covering, status, strict=True):
                closed[i] = b.disruptions_allowed < 1
            refused = many | closed[first]
        return set(on[refused].tolist())

    def _destinations(self, now: int, present: list[int]) -> None:
        """The nodes within their ``consolidateAfter`` window now (``IsUnderConsolidateAfter``):
        the simulation moves no candidate's pod onto them (v1.14.0 ``scheduler.go``
        ``addToExistingNode``; pending pods may use them). A node whose window ended since the
        last pass counts as freed room (kept answers may change); the next end is due."""
        after = self.settings.consolidate_after
        if self.settings.never or after <= 0:
            return
        under = set()
        for slot in present:
            end = int(self.last_event[slot]) + after
            if now < end:
                under.add(slot)
                self.later = min(self.later, end)
        self.kept.freed.update(self.under - under)
        if under - self.under:  # fewer destinations: an answer kept may have left too little
            self.kept.clear()
        self.under = under

    def allowed(self, now: int) -> Callable[[str, str], int]:
        """The disruptions each pool's budgets allow now per reason (``Empty``,
        ``Underutilized``): ``GetAllowedDisruptionsByReason`` less the pool's nodes being
        disrupted now (``BuildDisruptionBudgetMapping``)."""
        seconds = now / SECOND
        sizes: dict[str, int] = {}
        busy: dict[str, int] = {}
        for slot in np.flatnonzero(self.active).tolist():
            name = self.pools.names[self.of[slot]]
            sizes[name] = sizes.get(name, 0) + 1
            if slot in self.disrupting:
                busy[name] = busy.get(name, 0) + 1

        counted: dict[tuple[str, str], int] = {}  # nothing it reads changes meanwhile

        def allowed(pool: str, reason: str) -> int:
            found = counted.get((pool, reason))
            if found is None:
                rules = self.nodepool.allowed(
                    sizes.get(pool, 0), reason, lambda r: self._rule_active(r, seconds)
                )
                found = counted[(pool, reason)] = max(0, rules - busy.get(pool, 0))
            return found

        return allowed

    def launchable_shapes(self, pool: int) -> list[Shape]:
        """The shapes a node of ``pool`` may be launched in now (a slot of it is free)."""
        return [s for k, s in enumerate(self.pools.shapes[pool]) if self._free(pool, k) > 0]

    def _decide(
        self, now: int, ordered: list[Candidate], position: dict[str, int], first: str
    ) -> Decision:
        seconds = now / SECOND
        allowed = self.allowed(now)
        launchable: dict[int, list[Shape]] = {}  # per pool: nothing launches during ``decide``

        def shapes(group: Sequence[Candidate]) -> list[Shape]:
            pool = int(self.of[position[group[0].name]])
            found = launchable.get(pool)
            if found is None:
                found = launchable[pool] = self.launchable_shapes(pool)
            return found

        self.kept.refresh(self.disrupting, self.provisioning, self.launchable)
        self.room = None  # (``_room``: made at this pass's first try)
        self.masks = {}  # nodes' labels, taints and cordons are the same during the pass

        by_name = {c.name: c for c in ordered}

        def leftover(names: list[str]) -> list[Mapping[str, int]]:
            slots = tuple(position[n] for n in names)
            if not self.settings.fast:  # the plain path: every try simulated, every shape tried
                return self._leftover(list(slots), seconds)
            # the shapes a replacement may take: launchable and strictly cheaper than the group
            # (``decide``'s ``fitting``, the same sum); the try is lost once none holds the pods
            # left, so with none at the first pod left (a node of its pool's cheapest shape)
            group = [by_name[n] for n in names]
            below = sum(float(c.price or 0.0) for c in group)
            within = [s for s in shapes(group) if s.price < below]
            # the answer holds while the candidates' pods, the pending pods and those shapes
            # are the same
            key = (
                *(tuple(sorted(self.on_node[s])) for s in slots),
                self.launchable,
                tuple(map(id, within)),
            )
            known = self.kept.get(slots, key)
            if known is not None:
                return known
            reads = Reads()
            left = self._leftover(list(slots), seconds, within, reads)
            if left:  # pods that fit nowhere: the same answer while what it read is the same
                self.kept.put(slots, key, left, reads)
            return left

        totals = self._totals(ordered) if self.settings.policy == BALANCED else None
        return decide(
            ordered, allowed, self.settings.policy, shapes, leftover, totals, first,
            self.spot_launchable,
        )  # fmt: skip

    def _totals(self, candidates: Sequence[Candidate]) -> dict[str, PoolTotals]:
        """Each pool's ``PoolTotals`` (``balanced.go`` ``computeNodePoolTotals``) over its nodes
        present or being launched: their prices (the candidates' where those sum to 0), and
        each one's disruption cost — a candidate's ``RescheduleDisruptionCost``, another's 1 +
        the positive ``EvictionCost`` of its pods but DaemonSet ones (``StateNode.
        DisruptionCost``; a node being launched holds none)."""
        chosen = {c.name for c in candidates}
        cost: dict[str, float] = {}
        others: dict[str, list[float]] = {}
        demands, costs, names = self.inp.demands, self.costs, self.state.node_names
        for slot in [*np.flatnonzero(self.active).tolist(), *self.provisioning]:
            group = int(self.of[slot])
            pool = self.pools.names[group]
            shape = self.pools.shape_of[slot]
            if shape >= 0:
                cost[pool] = cost.get(pool, 0.0) + self.pools.shapes[group][shape].price
            rest = others.setdefault(pool, [])
            if names[slot] not in chosen:
                own = 1.0
                for pod in self.on_node[slot]:
                    if not demands[pod].daemonset:
                        own += max(0.0, costs[pod])
                rest.append(own)
        return {
            pool: pool_totals(cost.get(pool, 0.0), [c for c in candidates if c.pool == pool], rest)
            for pool, rest in others.items()
        }

    def resimulate(self, slots: list[int], now: int) -> list[Mapping[str, int]]:
        """The requests left over when ``slots`` go (``_leftover``), simulated afresh at
        ``now`` with every shape of their pool (a validation's ``SimulateScheduling``)."""
        self.room, self.masks = None, {}
        return self._leftover(slots, now / SECOND)

    def _leftover(
        self,
        slots: list[int],
        seconds: float,
        within: Sequence[Shape] | None = None,
        reads: Reads | None = None,
    ) -> list[Mapping[str, int]]:
        """The requests of the pods of ``slots`` that fit on no node that stays, and of the
        pending pods that need a new node (``SimulateScheduling`` schedules them too: a node
        whose room the pending pods need is not consolidated). ``within``: the shapes a
        replacement may take (``leftover``'s; default: the pool's)."""
        allowed = self.active.copy()
        allowed[slots] = False
        for s in self.disrupting:
            allowed[s] = False
        spare = None
        if self.settings.fast:  # the staying nodes' room: the pass's sum less the candidates'
            if self.room is None:
                self.room = self._room()
            staying, positive, total = self.room
            spare = total - positive[[s for s in slots if staying[s]]].sum(axis=0)
        # the nodes still launching (for pending pods or as replacements): upstream's in-flight
        # NodeClaims, which the pending pods may use and the candidates' pods may not; so too
        # the nodes within their consolidateAfter window (``_destinations``)
        inflight = np.zeros_like(allowed)
        inflight[list(self.provisioning)] = True
        if self.under:
            waiting = list(self.under)
            inflight[waiting] |= allowed[waiting]
            allowed[waiting] = False
        moves = [(s, p) for s in slots for p in self.on_node[s] if not self.pinned[p]]
        return leftover(
            self.state, self.profile, self.inp.demands, moves, allowed,
            self.pools.shapes[int(self.of[slots[0]])], seconds, self.settings.fast, self.needs,
            self.launchable, inflight, self.requests, within, spare, self.masks, reads,
        )  # fmt: skip

    def _room(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """For this pass (the state is the same at each of its tries: they undo their binds):
        the nodes a candidate's pod may move to when no candidate leaves (present, not being
        disrupted, not within consolidateAfter), each node's room with negative room as 0, and
        that room summed per resource over those nodes."""
        staying = self.active.copy()
        staying[list(self.disrupting)] = False
        staying[list(self.under)] = False
        positive = np.maximum(self.state.allocatable - self.state.requested, 0)
        return staying, positive, positive[staying].sum(axis=0)
