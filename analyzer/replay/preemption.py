"""The replay's DefaultPreemption, on the engine's own state (the queue order it serves, and the
priorities and bands it reads: ``analyzer.replay.priority_order``).

Preemption (``analyzer.scheduling.plugins.defaultpreemption``, upstream's DefaultPreemption) runs when a pod the
scheduler places fits on no node, the profile has DefaultPreemption, and a running pod of strictly
lower priority exists (else it costs nothing):

- the nodes tried are the present nodes whose Filter status is ``Unschedulable`` (a node refused
  by TaintToleration or NodeAffinity cannot be cured by evicting pods); the number of candidates
  wanted is upstream's ``max(10 % of them, 100)``;
- a node is tried only if the pod fits its resources once *every* lower-priority pod is gone (the
  first check of ``SelectVictimsOnNode``, done for all nodes at once with numpy);
- on such a node ``select_victims`` (minimal victims, most important reprieved first) runs on a
  one-node copy of the state, with the filters whose answer can change when pods leave (the
  others passed: the node is ``Unschedulable``); ``pick_candidate`` chooses the node in
  upstream's order. Victims' start time is when the replay last bound them;
- the dry run reads the potential nodes from a random offset on, wrapping around (upstream's
  ``GetOffsetAndNumCandidates``, 1.20+), drawn from a generator the engine derives from the
  replay's seed (its own stream: the tie-break draws are unchanged); after a remembered failure
  only the touched nodes are tried, all of them, from an offset drawn over them;
- the victims are deleted: they keep their node for their graceful termination and the
  preemptor waits, nominated (``analyzer.replay.terminations``, the engine); ``deleting`` marks
  them meanwhile (not healthy for the budgets; still candidates for another preemptor, as
  upstream lists them on the node until they are gone), ``gone`` the victims deleted for good.

- PodDisruptionBudgets (the snapshot's, ``analyzer.replay.budgets``): ``select_victims`` gets the
  budgets that select a potential victim on the node, with ``disruptionsAllowed`` derived from the
  budget's spec and the pods existing and bound at that instant; victims violating a budget are
  counted, reprieved first and the node with the fewest violations preferred, as upstream. The dry
  run orders the candidates without violations first and stops once it has ``wanted`` candidates
  and at least one of them without violations (``DryRunPreemption``);
- ``preemptionPolicy: Never`` (the pod's PriorityClass's, ``PodDemand.preemption_policy``): the
  pod evicts nobody and waits, like any pod that fits nowhere.

Not modelled: preemption by DaemonSet/static pods and of them (the replay keeps them on their own
node in every strategy), profiles with per-GPU device state (restoring a victim would re-pick its
GPUs; as in ``analyzer score``).

No preemption loop: a pod only evicts pods of strictly lower priority, so after every preemption
the bound pods' priorities, sorted from the highest, are lexicographically larger; a victim can
never evict its preemptor (that needs a higher priority than the preemptor's), and the sequence
of preemptions at one instant ends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from analyzer.replay.budgets import ReplayBudgets
from analyzer.replay.refusals import Journal
from analyzer.replay.topology import TOPOLOGY_PLUGINS as _TOPOLOGY
from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.framework import FilterPlugin, Profile
from analyzer.scheduling.nominated_holds import Holds
from analyzer.scheduling.pdb import DisruptionBudget
from analyzer.scheduling.plugins.defaultpreemption import (
    UNRESOLVABLE_FILTERS,
    BoundPod,
    Candidate,
    DefaultPreemption,
    pick_candidate,
    rotated,
    select_victims,
)
from analyzer.scheduling.plugins.helper.node_constraints import (
    NodeAffinityFilter,
    TaintTolerationFilter,
)
from analyzer.scheduling.plugins.loadaware.plugin import LoadAwareScheduling
from analyzer.scheduling.plugins.nodeports import NodePorts
from analyzer.scheduling.plugins.noderesources.fit import NodeResourcesFit
from analyzer.scheduling.plugins.nodeunschedulable import NodeUnschedulable
from analyzer.scheduling.priority_class import PREEMPTION_POLICIES
from analyzer.scheduling.queue_order import may_preempt as queue_may_preempt
from analyzer.scheduling.state import ClusterState, PodDemand

NEVER = PREEMPTION_POLICIES[1]  # preemptionPolicy: Never
_STATIC = (NodeUnschedulable, TaintTolerationFilter, NodeAffinityFilter)
TOUCH_SCAN = 4096  # touches since a failed attempt scanned for the nodes they hit


def node_view(state: ClusterState, node: int) -> ClusterState:
    """A one-node copy of ``state`` for ``node`` (what a per-node filter reads; the columns that
    ``bind``/``unbind`` change are copies, so trying victims leaves ``state`` untouched)."""
    rows = slice(node, node + 1)
    load = state.load
    if load is not None:
        load = replace(
            load,
            has_metric=load.has_metric[rows],
            metric_present=load.metric_present[rows],
            update_time=load.update_time[rows],
            report_interval=load.report_interval[rows],
            node_usage=load.node_usage[rows],
            node_delta=load.node_delta[rows],
            node_estimated=load.node_estimated[rows],
            prod_usage=load.prod_usage[rows],
            prod_delta=load.prod_delta[rows],
            aggregated={k: (p[rows], u[rows]) for k, (p, u) in load.aggregated.items()},
        )
    return ClusterState(
        resources=state.resources,
        node_names=state.node_names[rows],
        allocatable=state.allocatable[rows],
        requested=state.requested[rows].copy(),
        nonzero_requested=state.nonzero_requested[rows].copy(),
        pod_count=state.pod_count[rows].copy(),
        allowed_pods=state.allowed_pods[rows],
        node_labels=state.node_labels[rows],
        node_annotations=state.node_annotations[rows],
        node_taints=state.node_taints[rows],
        node_unschedulable=state.node_unschedulable[rows],
        load=load,
        objects=state.objects,
        ports=state.ports.node_copy(node),
    )


class ReplayPreemption:
    """DefaultPreemption over the replay's bound pods (see the module docstring).

    The engine reports every bind and unbind of a pod the scheduler places (``bound``,
    ``unbound``) and asks ``attempt`` when such a pod fits nowhere.
    """

    def __init__(
        self,
        profile: Profile,
        plugin: DefaultPreemption,
        state: ClusterState,
        active: BoolArray,
        demands: Sequence[PodDemand],
        priorities: Sequence[int],
        on_node: Sequence[set[int]],
        journal: Journal | None = None,
        budgets: ReplayBudgets | None = None,
        rng: np.random.Generator | None = None,
    ) -> None:
        self.plugin = plugin
        # where each dry run starts among the potential nodes (GetOffsetAndNumCandidates);
        # None: offset 0. The engine passes a stream of its own derived from the replay's seed,
        # so a seed reproduces and the tie-break draws stay as they were without preemption
        self.rng = rng
        self.budgets = budgets if budgets else None  # None: no budget selects any pod
        self.on_node = on_node  # the engine's pods per node (DaemonSet/static ones too)
        self.journal = journal  # nodes touched (``ScoreCache``): failed attempts are remembered
        # a failed attempt stays failed on untouched nodes only if no filter reads anything else
        # — LoadAwareScheduling reads the node's NodeMetric row and its expiry at ``now`` too:
        # only with the score cache's ``LoadRows``, which logs the rows a report or an expiry
        # changed (``_touched_since_failure`` adds them; a new epoch: every row)
        self.load_rows = getattr(journal, "load", None)
        safe: tuple[type, ...] = (*_STATIC, NodeResourcesFit, NodePorts)  # the node's own pods
        if self.load_rows is not None:
            safe = (*safe, LoadAwareScheduling)
        self.memo = all(isinstance(f, safe) for f in profile.filters)
        # ... or also PodTopologySpread / InterPodAffinity, for a pod on which neither can act
        # (``_memo_ok``): they then pass on every node, whatever the other nodes hold
        self.memo_inert = all(isinstance(f, (*safe, *_TOPOLOGY)) for f in profile.filters)
        self.failed: dict[bytes, int] = {}  # group key -> journal changes at its failed attempt
        # group key -> (``LoadRows`` epoch, its log's length) at the failed attempt
        self.failed_load: dict[bytes, tuple[int, int]] = {}
        self.profile, self.args = profile, plugin.args
        self.state, self.active = state, active
        self.demands, self.priority = demands, list(priorities)
        self.fit = [f for f in profile.filters if isinstance(f, NodeResourcesFit)]
        self.static = [i for i, f in enumerate(profile.filters) if isinstance(f, _STATIC)]
        self.dynamic: list[FilterPlugin] = [
            f for f in profile.filters if not isinstance(f, _STATIC)
        ]
        # the per-node checks of a remembered failure: only for pods the topology plugins
        # cannot act on (``_memo_ok``), so those plugins pass and are left out
        self.per_node = [f for f in self.dynamic if not isinstance(f, _TOPOLOGY)]
        # NodePorts refuses nothing to a pod without host ports (nearly all): its dry runs leave
        # it out, as upstream's PreFilter Skip does (the same answers, fewer calls)
        self.portless: dict[int, list[FilterPlugin]] = {
            id(group): [f for f in group if not isinstance(f, NodePorts)]
            for group in (profile.filters, self.dynamic, self.per_node)
        }
        count = len(demands)
        self.node = np.full(count, -1, dtype=np.int64)  # where each placed pod runs now
        self.at = [-1] * count  # the same as a list (read per pod: no numpy scalar)
        # group key -> (the journal's taint/cordon ``epoch``, the static filters' mask): node
        # labels are fixed and taints/cordons change only with a new epoch (``ScoreCache``)
        self.static_masks: dict[bytes, tuple[int, BoolArray]] = {}
        self.since = [0] * count  # ns: when the replay last bound it (its start time)
        self.prio = np.array(self.priority, dtype=np.int64)
        self.requests = (
            np.stack([d.requests for d in demands])
            if count
            else np.zeros((0, len(state.resources)), dtype=np.int64)
        )
        self.running: Counter[int] = Counter()  # priority -> placed pods running
        self._freed_kept: _Freed | None = None  # ``_freed``'s last answer
        self.deleting = np.zeros(count, dtype=bool)  # victims terminating (still bound)
        self.gone = np.zeros(count, dtype=bool)  # victims deleted for good (budgets: not expected)
        self.attempts = 0
        self.successes = 0

    @classmethod
    def for_profile(
        cls,
        profile: Profile | None,
        state: ClusterState,
        active: BoolArray,
        demands: Sequence[PodDemand],
        priorities: Sequence[int],
        on_node: Sequence[set[int]],
        journal: Journal | None = None,
        budgets: ReplayBudgets | None = None,
        rng: np.random.Generator | None = None,
    ) -> ReplayPreemption | None:
        """The preemption of ``profile`` (None: no DefaultPreemption, or per-GPU devices)."""
        if profile is None or state.devices is not None:
            return None
        plugin = next((p for p in profile.post_filters if isinstance(p, DefaultPreemption)), None)
        if plugin is None:
            return None
        return cls(
            profile, plugin, state, active, demands, priorities, on_node, journal, budgets, rng
        )

    def bound(self, pod: int, node: int, now: int) -> None:
        """``pod`` now runs on ``node`` (since ``now``, ns)."""
        self.node[pod] = node
        self.at[pod] = node
        self.since[pod] = now
        self.running[self.priority[pod]] += 1

    def unbound(self, pod: int) -> None:
        """``pod`` left its node."""
        self.node[pod] = -1
        self.at[pod] = -1
        self.deleting[pod] = False
        priority = self.priority[pod]
        self.running[priority] -= 1
        if not self.running[priority]:
            del self.running[priority]

    def attempt(self, pod: int, now: int, key: bytes = b"") -> tuple[int, list[int]] | None:
        """PostFilter for ``pod`` (queue group ``key``), which fits nowhere at ``now`` (ns):
        (node, victims most important first), or None when preemption does not help."""
        priority = self.priority[pod]
        if self.demands[pod].preemption_policy == NEVER:
            return None  # PodEligibleToPreemptOthers: "not eligible due to preemptionPolicy=Never."
        if not self.running or min(self.running) >= priority:
            return None  # no lower-priority pod runs: nothing to evict
        self.attempts += 1
        demand = self.demands[pod]
        memo = self._memo_ok(demand)
        touched = self._touched_since_failure(key) if memo else None
        if touched is None:
            found = self._everywhere(demand, priority, now)
        else:
            found = self._on(sorted(touched), demand, priority, now, key)
        if found is None and self.journal is not None and memo:
            self.failed[key] = self.journal.changes
            if self.load_rows is not None:
                self.failed_load[key] = (self.load_rows.epoch, len(self.load_rows.log))
        else:
            self.failed.pop(key, None)
        if found is not None:
            self.successes += 1
        return found

    def may_preempt(
        self, pending: Sequence[int], changed: Sequence[int], holds: Holds | None = None
    ) -> list[int]:
        """The pods of ``pending`` (queue-group heads, none pinned) that may preempt on one of the
        ``changed`` nodes now: fit there by cpu, memory and pod count once its lower-priority
        placed pods are gone (``queue_order.may_preempt``: the retry rule both loops share), and
        the room nominated pods of lower priority hold there with them (``holds``: they do not
        count for the pod)."""
        running = self.running
        if not running or not pending or not changed:
            return []
        low, demands, prio = min(running), self.demands, self.priority
        asking = [p for p in pending if prio[p] > low and demands[p].preemption_policy != NEVER]
        if not asking:
            return []
        rows = sorted(set(changed))
        rows = [r for r in rows if self.active[r]]
        if not rows:
            return []
        state, at = self.state, self.at
        lower = [(i, p) for i, r in enumerate(rows) for p in self.on_node[r] if at[p] == r]
        if holds:  # a hold is "gone" for a pod of higher priority, as a placed pod is
            lower += [(i, p) for i, p, _ in holds.beside(rows)]
        index = np.array(rows, dtype=np.int64)
        free = state.allocatable[index, :2] - state.requested[index, :2]
        slots = state.allowed_pods[index] - state.pod_count[index]
        pods = np.array([p for _, p in lower], dtype=np.int64)
        placed = (
            np.array([i for i, _ in lower], dtype=np.int64),
            self.prio[pods],
            self.requests[pods, :2],
        )
        need = np.stack([demands[p].requests[:2] for p in asking])
        hits = queue_may_preempt(need, [prio[p] for p in asking], free, slots, placed)
        return [p for p, hit in zip(asking, hits.tolist(), strict=True) if hit]

    def _memo_ok(self, demand: PodDemand) -> bool:
        """Whether a failed attempt stays failed on untouched nodes for ``demand``: the filters
        read only each node's own pods and room, or also PodTopologySpread / InterPodAffinity
        while neither can act on the pod (no spread constraints or default selector, no affinity
        terms, no placed pod's terms matching it — the score cache's ``TopologyCheck``). A pod
        that was inert when its failure was remembered and is inert now has seen the topology
        filters pass on every node both times, so only touched nodes can have changed."""
        if self.memo:
            return True
        if not self.memo_inert or self.journal is None:
            return False
        if getattr(self.journal, "kernel", None) is None:
            return False  # not the incremental cache: no topology check to ask
        topology = getattr(self.journal, "topology", None)
        return topology is None or not topology.needs_profile(self.state, demand)

    def _touched_since_failure(self, key: bytes) -> set[int] | None:
        """The nodes touched since the group's last failed attempt, when only they can have
        become candidates (None: try every node).

        A node's candidacy reads only its own pods, its room, its static filters and whether it
        is present — all of which a touch records — so after a failure the untouched nodes fail
        again. With fewer touched nodes than ``minCandidateNodesAbsolute`` the early stop of the
        dry run cannot cut the candidates short, so trying only them gives the same answer.
        """
        last = self.failed.get(key)
        if last is None or self.journal is None:
            return None
        since = self.journal.changes - last
        log = self.journal.log
        if since > min(len(log), TOUCH_SCAN):
            return None
        touched = set(log[len(log) - since :])
        rows = self.load_rows
        if rows is not None:  # the engine chose (so synced expiry) at this instant first
            mark = self.failed_load.get(key)
            if mark is None or mark[0] != rows.epoch or len(rows.log) - mark[1] > TOUCH_SCAN:
                return None
            touched.update(rows.log[mark[1] :])
        return touched if len(touched) < self.args.min_candidate_nodes_absolute else None

    def _everywhere(
        self, demand: PodDemand, priority: int, now: int
    ) -> tuple[int, list[int]] | None:
        """The dry run over every present node (the filters over all nodes at once first)."""
        state, seconds = self.state, now / 1e9
        feasible = self.active.copy()
        unschedulable = np.zeros(state.node_count, dtype=bool)
        undecided = np.ones(state.node_count, dtype=bool)  # refused by no filter so far
        static = np.ones(state.node_count, dtype=bool)
        # the topology filters' answers of the failed choose just before, when still valid
        filtered = getattr(self.journal, "filtered", None)
        kept = filtered(demand, seconds) if filtered is not None else {}
        for plugin in self._filters(self.profile.filters, demand):
            passed = kept.get(id(plugin))
            if passed is None:
                passed = plugin.filter(state, demand, seconds).feasible
            feasible &= passed
            if plugin.name not in UNRESOLVABLE_FILTERS:  # node_statuses: the first refuser's code
                unschedulable |= undecided & ~passed
            undecided &= passed
            if isinstance(plugin, _STATIC):
                static &= passed
        if feasible.any():
            return None  # it fits somewhere: nothing to preempt for
        unschedulable &= self.active
        # the potential nodes read from the offset on, wrapping; those that cannot yield victims
        # (refused for good, no room even without every lower-priority pod) are left out after
        # the rotation, so the others keep upstream's order
        potential = np.flatnonzero(unschedulable)
        offset, wanted = self.plugin.offset_and_count(len(potential), self.rng)
        order = np.roll(potential, -offset) if offset else potential
        tried = order[(static & self._room(demand, priority))[order]].tolist()
        return self._dry_run(tried, wanted, demand, priority, now)

    def _on(
        self, nodes: list[int], demand: PodDemand, priority: int, now: int, key: bytes = b""
    ) -> tuple[int, list[int]] | None:
        """The dry run over ``nodes`` only: the static filters' mask of the whole state (kept
        per group ``key``), the others on each node's one-node copy."""
        seconds = now / 1e9
        per_node = self._filters(self.per_node, demand)
        static = self._static_mask(demand, seconds, key)
        at, prio = self.at, self.priority
        tried = []
        for node in nodes:
            if not self.active[node] or not static[node]:
                continue  # absent, or refused for good (taints, affinity)
            if not any(prio[p] < priority and at[p] == node for p in self.on_node[node]):
                continue  # nothing to evict here (most pods fail the first test)
            view = node_view(self.state, node)
            first = next(
                (f for f in per_node if not f.filter(view, demand, seconds).feasible[0]), None
            )
            if first is None:
                return None  # it fits here: nothing to preempt for
            if first.name not in UNRESOLVABLE_FILTERS:
                tried.append(node)
        wanted = self.args.min_candidate_nodes_absolute  # more than the nodes tried
        # every touched node is tried: the offset only orders them (pick_candidate's last tie);
        # drawn over them, not over every potential node, which this path does not compute
        if len(tried) > 1:  # one node or none: nothing to order (no draw)
            offset, _ = self.plugin.offset_and_count(len(tried), self.rng)
            tried = rotated(tried, offset)
        return self._dry_run(tried, wanted, demand, priority, now)

    def _static_mask(self, demand: PodDemand, seconds: float, key: bytes) -> BoolArray:
        """Where the static filters pass ``demand`` (every row), kept per group ``key`` while the
        journal's taint/cordon epoch stays (not kept without a key or an epoch)."""
        epoch = getattr(self.journal, "epoch", None)
        if key and epoch is not None:
            kept = self.static_masks.get(key)
            if kept is not None and kept[0] == epoch:
                return kept[1]
        mask = np.ones(self.state.node_count, dtype=bool)
        for f in self.profile.filters:
            if isinstance(f, _STATIC):
                mask &= f.filter(self.state, demand, seconds).feasible
        if key and epoch is not None:
            self.static_masks[key] = (epoch, mask)
        return mask

    def _dry_run(
        self, nodes: list[int], wanted: int, demand: PodDemand, priority: int, now: int
    ) -> tuple[int, list[int]] | None:
        """``select_victims`` on ``nodes`` in order until ``wanted`` candidates, at least one
        without PDB violations (``DryRunPreemption``), then ``pick_candidate`` over those without
        violations followed by the others: (node, victim pods) or None."""
        clean: list[tuple[Candidate, list[int]]] = []
        violating: list[tuple[Candidate, list[int]]] = []
        local = self.state.pod_index is None
        seconds = now / 1e9
        derived: dict[int, DisruptionBudget] = {}  # the budgets at ``now``, derived once
        for node in nodes:
            at = 0 if local else node
            lower = self._lower_on(node, priority, at)
            if not lower:
                continue
            owner = {id(b): p for p, b in lower}
            budgets = self._budgets(now, [p for p, _ in lower], derived)
            victims, violations, _ = select_victims(
                self._filters(self.dynamic if local else self.profile.filters, demand),
                node_view(self.state, node) if local else self.state,
                demand,
                priority,
                at,
                [b for _, b in lower],
                budgets,
                seconds,
            )
            if victims:
                found = (Candidate(node, victims, violations), [owner[id(v)] for v in victims])
                (violating if violations else clean).append(found)
                if clean and len(clean) + len(violating) >= wanted:
                    break
        ordered = clean + violating
        best = pick_candidate([c for c, _ in ordered])
        if best is None:
            return None
        return best.node, next(pods for c, pods in ordered if c is best)

    def _filters(self, group: list[FilterPlugin], demand: PodDemand) -> list[FilterPlugin]:
        """``group`` as the dry run for ``demand`` runs it (without NodePorts when the pod has
        no host ports)."""
        return group if demand.host_ports else self.portless[id(group)]

    def _budgets(
        self, now: int, pods: list[int], derived: dict[int, DisruptionBudget]
    ) -> list[DisruptionBudget]:
        """The budgets selecting any of ``pods``, with ``disruptionsAllowed`` at ``now``
        (``derived``: those already derived in this dry run; the state does not change during
        it)."""
        if self.budgets is None:
            return []
        which = self.budgets.covering(pods)
        missing = [i for i in which if i not in derived]
        if missing:
            found = self.budgets.at(now, self.node, missing, self.deleting, self.gone)
            derived.update(zip(missing, found, strict=True))
        return [derived[i] for i in which]

    def _room(self, demand: PodDemand, priority: int) -> BoolArray:
        """Nodes where ``pod`` passes NodeResourcesFit once every lower-priority placed pod is
        gone (all nodes when the profile has no such filter): ``SelectVictimsOnNode``'s first
        check, for every node at once."""
        state = self.state
        count = state.node_count
        ok = np.ones(count, dtype=bool)
        if not self.fit:
            return ok
        freed = self._freed(priority)
        ok &= freed.slots > 0
        for fit in self.fit:
            if any(fit._checked(r) for r in demand.off_axis_requests(state.resources)):
                return np.zeros(count, dtype=bool)
            for j, resource in enumerate(state.resources):
                if demand.requests[j] <= 0 or not fit._checked(resource):
                    continue
                ok &= freed.room(j) >= demand.requests[j]
        return ok

    def _freed(self, priority: int) -> _Freed:
        """The room every node would have without its pods of a priority below ``priority``;
        kept while no node is touched (the journal's ``changes``): the retries of one pass, each
        failing, ask it again and again."""
        changes = getattr(self.journal, "changes", None)
        kept = self._freed_kept
        if kept is not None and changes is not None and kept.key == (priority, changes):
            return kept
        lower = np.flatnonzero((self.node >= 0) & (self.prio < priority))
        freed = _Freed((priority, -1 if changes is None else changes), self.state,
                       self.node[lower], self.requests[lower])  # fmt: skip
        self._freed_kept = freed if changes is not None else None
        return freed

    def _lower_on(self, node: int, priority: int, at: int) -> list[tuple[int, BoundPod]]:
        """The placed pods on ``node`` with a priority below ``priority`` as preemption sees them
        (on node index ``at``), in the order the replay bound them."""
        where, prio = self.at, self.priority
        pods = [p for p in self.on_node[node] if prio[p] < priority and where[p] == node]
        pods.sort(key=lambda p: (self.since[p], p))
        out = []
        for p in pods:
            d = self.demands[p]
            out.append((p, BoundPod(at, d.name, d.namespace, self.priority[p], d, d.labels,
                                    self.since[p])))  # fmt: skip
        return out


class _Freed:
    """Per node, the pod slots and (per resource column, on demand) the room left once the
    pods ``where`` / ``requests`` (the lower-priority ones) are gone."""

    def __init__(
        self, key: tuple[int, int], state: ClusterState, where: Int64Array, requests: Int64Array
    ) -> None:
        self.key = key
        self.state = state
        self.where = where
        self.requests = requests
        count = state.node_count
        self.slots: Int64Array = state.allowed_pods - (
            state.pod_count - np.bincount(where, minlength=count)
        )
        self._room: dict[int, Int64Array] = {}

    def room(self, j: int) -> Int64Array:
        """Resource column ``j``'s room per node."""
        found = self._room.get(j)
        if found is None:
            state = self.state
            # float sums of int64 requests are exact below 2**53 (8 PiB of memory)
            sums = np.bincount(self.where, weights=self.requests[:, j], minlength=state.node_count)
            found = self._room[j] = (
                state.allocatable[:, j] - state.requested[:, j] + sums.astype(np.int64)
            )
        return found
