"""The replay's hot path: per-shape score caches over the scheduling core's ``ClusterState``.

A kube-scheduler resource score of node i for pod shape s depends only on node i's own state
(allocatable, requested, non-zero requested, pod count) and on s. Between two placements of the
same shape only the nodes touched in between (binds, unbinds, joins, leaves) can change, so the
cache keeps, per shape, every node's total score and feasibility and recomputes only the nodes
whose version moved. Selection is the scheduling core's rule (``framework.select``): the highest
total among feasible nodes, ties uniform via the seeded generator — same draws, same results.

The recomputation uses a compiled plan of the profile's own plugins (``NodeResourcesFit`` filter
and scoring strategies, ``NodeResourcesBalancedAllocation``) on the changed rows only; the plan
calls the core's array helpers and is checked bit-for-bit against ``Profile.evaluate`` in
``tests/test_replay_scoring.py``. Score plugins marked ``static_score`` (TaintToleration,
NodeAffinity: their raw score reads only node taints and labels) are computed once per shape; a
raw score equal on every node adds the same normalised value to every feasible node and is
dropped, otherwise ``choose`` normalises it over the currently feasible nodes (one numpy pass). Static
plugins without NormalizeScore (ImageLocality) are kept per pod image set instead of per shape
(they read only node images and the present nodes; recomputed after a node joins or leaves) and
added to the shape's totals at the choice when not 0 everywhere.
Load-aware profiles (the resource plugins plus one LoadAwareScheduling) keep the resource part per
shape as above and add the load-aware verdict and score per row (``analyzer.replay.loadrows``):
rows go stale on binds and unbinds, on NodeMetric reports (only the rows whose inputs moved, or
all) and when a metric expires. Profiles with any other plugin (user plugins), and replays asked
to ``rescore_all``, use ``Profile.evaluate`` on all nodes for every pod — exact, slower (the
baseline of ``tests/test_replay_loadaware.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analyzer.replay.loadrows import LoadRows, without_loadaware
from analyzer.replay.node_ports import ports_mask, ports_rows
from analyzer.replay.node_tree import NodeSampler
from analyzer.replay.rows import (
    pair_form,
    score_rows,
    score_rows_pair,
)
from analyzer.replay.score_entry import LOWEST, Entry, choose_sampled, choose_static, track_best
from analyzer.replay.score_plan import Kernel, balanced_score, fit_score
from analyzer.replay.topology import DEFAULTS, INERT, TOPOLOGY_MARK, TopologyCheck
from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.framework import Evaluation, Profile, select
from analyzer.scheduling.nominated_holds import Holds
from analyzer.scheduling.queue_order import may_fit as queue_may_fit
from analyzer.scheduling.queue_order import may_fit_beside as queue_may_fit_beside
from analyzer.scheduling.state import ClusterState, PodDemand

FULL_RECOMPUTE_SHARE = 0.25  # above this share of changed nodes, recompute all rows at once
SCALAR_ROWS = 64  # up to this many changed nodes, score them in plain Python (no numpy overhead)
LOG_LIMIT = 1 << 20  # the change log is cut here; entries then recompute everything once


class ScoreCache:
    """Chooses a node for a pod like ``profile.select(profile.evaluate(...))``, incrementally."""

    def __init__(
        self,
        profile: Profile,
        state: ClusterState,
        active: BoolArray,
        *,
        dynamic: bool = False,
        rescore_all: bool = False,
    ) -> None:
        """``dynamic``: the profile reads inputs that change with time (a load-aware replay's
        NodeMetrics); ``rescore_all``: score every node for every pod (the reference path)."""
        self.profile = profile
        self.state = state
        self.active = active
        self.load: LoadRows | None = None
        kernel_profile = profile
        if dynamic and not rescore_all and LoadRows.supports(profile, state):
            kernel_profile = without_loadaware(profile)
            if Kernel.supports(kernel_profile):
                self.load = LoadRows(profile, state)
        incremental = Kernel.supports(kernel_profile) and not rescore_all
        if dynamic and self.load is None:
            incremental = False
        self.kernel = Kernel(kernel_profile) if incremental else None
        # fixed scores (ImageLocality, with image data): kept per pod image set, not per shape
        # (they read only node images and the present nodes), with the ``members`` version they
        # were computed in; ``members`` counts joins and leaves (each moves every node's score)
        self.fixed_on = (
            self.kernel is not None and bool(self.kernel.fixed_scores) and bool(state.node_images)
        )
        self.fixed: dict[
            tuple[tuple[str, ...], tuple[str, ...]], tuple[int, Int64Array | None]
        ] = {}
        self.members = 0
        self.known: list[bool] | None = None
        if self.fixed_on and self.kernel is not None and self.kernel.counts_nodes:
            self.known = active.tolist()
        topology = TopologyCheck(profile, state)
        self.topology = topology if topology.present and self.kernel is not None else None
        # percentageOfNodesToScore (``node_tree``): 100 = every node, as before
        self.sampler: NodeSampler | None = None
        if profile.percentage_of_nodes_to_score != 100:
            self.sampler = NodeSampler(
                profile.percentage_of_nodes_to_score, state.node_labels, state.node_names
            )
            self.sampler.begin(active)
        self.log: list[int] = []  # nodes touched, in order
        self.changes = 0  # touches so far (never reset): a version of the state
        self.before: dict[int, int] = {}  # node -> BalancedAllocation score without a pod
        self.entries: dict[bytes, Entry] = {}
        self.epoch = 0  # node taint/cordon changes so far (``node_state_changed``)
        self.filtered_at: tuple[int, int] = (-1, -1)  # (changes, epoch) at the topology filters
        self.notes: list[str] = []
        if self.kernel is None:
            self.notes.append(
                f"{profile.name}: every pod scored against all nodes (no incremental cache)"
            )

    def touch(self, node: int) -> None:
        """Node ``node`` changed (bind, unbind, join, leave): its cached rows are stale."""
        self.log.append(node)
        self.changes += 1
        self.before.pop(node, None)
        if self.known is not None and self.known[node] != bool(self.active[node]):
            self.known[node] = bool(self.active[node])
            self.members += 1
        if self.load is not None:
            self.load.touch(node)
        sampler = self.sampler
        if sampler is not None and (node in sampler.tree.members) != bool(self.active[node]):
            sampler.membership(node, bool(self.active[node]))
        if len(self.log) >= LOG_LIMIT:
            self.log.clear()
            for entry in self.entries.values():
                entry.position = -1

    def node_state_changed(self, nodes: Sequence[int]) -> None:
        """Taints or cordons of ``nodes`` changed: their rows are stale, and every shape's static
        mask and scores are rebuilt at its next use (``epoch``)."""
        self.epoch += 1
        for node in nodes:
            self.touch(node)

    def _entry(self, key: bytes, demand: PodDemand) -> Entry:
        entry = self.entries.get(key)
        if entry is not None and entry.epoch != self.epoch:
            assert self.kernel is not None
            plan = entry.plan
            plan.allowed, plan.static = self.kernel.static_part(self.state, demand)
            plan.static_sums = {}
            entry.epoch = self.epoch
        if entry is None:
            assert self.kernel is not None
            plan = self.kernel.plan(self.state, demand)
            entry = Entry(
                plan=plan,
                demand_checked=demand.requests[plan.checked],
                masked=np.full(self.state.node_count, LOWEST, dtype=np.int64),
                position=-1,
                pair=pair_form(plan.rows),
                epoch=self.epoch,
            )
            if self.load is not None:
                entry.load = self.load.shape(demand)
                entry.res = entry.masked.copy()
            self.entries[key] = entry
        return entry

    def _scalar(self, entry: Entry, rows: list[int]) -> list[int]:
        """The resource part of a few ``rows`` in plain Python (LOWEST where infeasible)."""
        if entry.pair is not None:
            totals = score_rows_pair(
                self.state, entry.plan.rows, entry.pair, rows, self.active, self.before
            )
            values = [LOWEST if t is None else t for t in totals]
        else:
            scored = score_rows(self.state, entry.plan.rows, rows, self.active)
            values = [total if ok else LOWEST for ok, total in scored]
        allowed = entry.plan.allowed
        if allowed is not None:
            values = [v if allowed[r] else LOWEST for r, v in zip(rows, values, strict=True)]
        if entry.plan.ports:
            values = ports_rows(self.state, entry.plan.ports, rows, values, LOWEST)
        return values

    def _refresh(self, entry: Entry) -> None:
        assert self.kernel is not None
        count = self.state.node_count
        changed = len(self.log) - entry.position
        if entry.position >= 0 and changed <= SCALAR_ROWS:
            rows = list(dict.fromkeys(self.log[entry.position :]))
            if rows:
                values = self._scalar(entry, rows)
                entry.pending.update(zip(rows, values, strict=True))
                track_best(entry, rows, values)
        elif entry.position < 0 or changed > FULL_RECOMPUTE_SHARE * count:
            # the present rows only: an absent one is infeasible (LOWEST), and an autoscaled
            # replay's state holds as many spare slots as nodes (``with_node_groups``)
            present = np.flatnonzero(self.active)
            feasible, total = _evaluate_rows(self.kernel, self.state, entry, present, self.active)
            entry.pending.clear()
            if len(present) == count:
                entry.masked[:] = np.where(feasible, total, LOWEST)
            else:
                entry.masked.fill(LOWEST)
                entry.masked[present] = np.where(feasible, total, LOWEST)
            entry.rewritten()
        else:
            stale = np.array(sorted(set(self.log[entry.position :])), dtype=np.int64)
            feasible, total = _evaluate_rows(self.kernel, self.state, entry, stale, self.active)
            entry.flush()
            entry.masked[stale] = np.where(feasible, total, LOWEST)
            entry.rewritten()
        entry.position = len(self.log)

    def _refresh_load(self, entry: Entry, now: float) -> None:
        """``_refresh`` for a load-aware profile: resource part + load-aware part per row."""
        load, kernel = self.load, self.kernel
        assert load is not None and kernel is not None
        assert entry.load is not None and entry.res is not None
        count = self.state.node_count
        changed = len(self.log) - entry.position
        res_all = entry.position < 0 or changed > FULL_RECOMPUTE_SHARE * count
        if not res_all and entry.load_epoch == load.epoch:
            touched = list(dict.fromkeys(self.log[entry.position :]))
            rows = touched
            if entry.load_position < len(load.log):  # rows only a report touched keep their
                seen = set(touched)  # resource part
                reported = dict.fromkeys(load.log[entry.load_position :])
                rows = touched + [r for r in reported if r not in seen]
            if len(rows) <= SCALAR_ROWS:
                if rows:
                    res = self._scalar(entry, touched) if touched else []
                    if len(rows) > len(touched):
                        kept, held = entry.res.item, entry.res_pending
                        res += [held[r] if r in held else kept(r) for r in rows[len(touched) :]]
                    values = load.totals(entry.load, rows, res)
                    entry.res_pending.update(zip(rows, res, strict=True))
                    entry.pending.update(zip(rows, values, strict=True))
                    track_best(entry, rows, values)
                entry.position, entry.load_position = len(self.log), len(load.log)
                return
        entry.flush()
        if res_all:
            every = np.arange(count)
            feasible, total = _evaluate_rows(kernel, self.state, entry, every, self.active)
            entry.res[:] = np.where(feasible, total, LOWEST)
        elif changed:
            stale = list(dict.fromkeys(self.log[entry.position :]))
            if len(stale) <= SCALAR_ROWS:
                entry.res[stale] = self._scalar(entry, stale)
            else:
                rows_array = np.array(stale, dtype=np.int64)
                feasible, total = _evaluate_rows(kernel, self.state, entry, rows_array, self.active)
                entry.res[rows_array] = np.where(feasible, total, LOWEST)
        load.total(entry.load, entry.res, entry.masked)
        entry.rewritten()
        entry.position, entry.load_position = len(self.log), len(load.log)
        entry.load_epoch = load.epoch

    def before_reload(self) -> None:
        """A NodeMetric report is about to change the load-aware inputs."""
        if self.load is not None:
            self.load.before_reload()

    def reloaded(self, now: float) -> None:
        """A NodeMetric report changed the load-aware inputs (``LoadFeed.advance`` said so)."""
        if self.load is not None:
            self.load.reloaded(now)

    def choose(
        self, key: bytes, demand: PodDemand, now: float, rng: np.random.Generator
    ) -> int | None:
        """The node the profile selects for ``demand`` (None: fits nowhere); with more than 100
        present nodes only the ones kube-scheduler would find are scored (``node_tree``)."""
        sampler = self.sampler if self.sampler is not None and self.sampler.active else None
        if self.kernel is None:
            evaluation: Evaluation = self.profile.evaluate(self.state, demand, now, self.active)
            if sampler is not None and evaluation.feasible.any():
                # score and normalise over the nodes found only (the filters pass them all)
                found = sampler.found(evaluation.feasible)
                evaluation = self.profile.evaluate(self.state, demand, now, found)
            return select(evaluation, rng)
        sample = None if sampler is None else sampler.found
        if self.load is None:  # the resource part does not read labels: shapes share rows
            key = key.split(TOPOLOGY_MARK, 1)[0]
        entry = self._entry(key, demand)
        fixed = self._fixed(demand) if self.fixed_on else None
        if self.load is not None:
            self.load.sync(now)
            self._refresh_load(entry, now)
        else:
            self._refresh(entry)
        if self.topology is not None:
            route, selector = self.topology.route(self.state, demand)
            if route != INERT:
                entry.flush()  # spread / inter-pod affinity act on this pod (``topology``)
                masked = entry.masked
                if fixed is not None:
                    masked = np.where(masked != LOWEST, masked + fixed, LOWEST)
                if route == DEFAULTS and selector is not None and sample is None:
                    # only PodTopologySpread's System defaults act on this pod
                    kept = entry if fixed is None else None  # its per-zone bests: ``masked``
                    return self.topology.choose_defaults(
                        masked, entry.plan.static, self.state, demand, selector, now, rng, kept
                    )
                self.filtered_at = (self.changes, self.epoch)
                return self.topology.choose(
                    masked, entry.plan.static, self.state, demand, now, rng, sample
                )
        if entry.plan.static or fixed is not None:
            return choose_static(entry, rng, fixed, sample)
        if sampler is not None:
            return choose_sampled(entry, rng, sampler)
        if entry.best is None:
            entry.flush()
            best = int(entry.masked.max())
            if best == LOWEST:
                return None
            entry.best = best
            entry.ties = np.flatnonzero(entry.masked == best).tolist()
        ties = entry.ties
        if len(ties) == 1:
            return ties[0]
        return ties[int(rng.integers(len(ties)))]

    def fits_alone(self, demand: PodDemand, node: int, now: float) -> bool:
        """Whether ``demand`` passes every filter on ``node`` alone: a pod's nominated node,
        tried before the others (kube-scheduler's ``evaluateNominatedNode``). The profile's own
        evaluation on the live state; the cache, the node sampler's start index and the
        tie-break generator are left as they were."""
        alone = np.zeros(self.state.node_count, dtype=bool)
        alone[node] = True
        return bool(self.profile.evaluate(self.state, demand, now, alone).feasible[node])

    def filtered(self, demand: PodDemand, now: float) -> dict[int, BoolArray]:
        """PodTopologySpread's and InterPodAffinity's filter answers over every node for
        ``demand`` (by ``id(plugin)``) from its last ``choose``, when nothing they read changed
        since (the same pod and time, no node touched, no taint or cordon changed); else none.
        DefaultPreemption's dry run asks them right after a failed ``choose``."""
        topology = self.topology
        if topology is None or topology.last is None:
            return {}
        pod, at, answers = topology.last
        if pod is not demand or at != now or self.filtered_at != (self.changes, self.epoch):
            return {}
        return answers

    def _fixed(self, demand: PodDemand) -> Int64Array | None:
        """Σ weight × score of the fixed plugins for the pod's images (None: 0 on every node),
        recomputed when nodes joined or left since."""
        assert self.kernel is not None
        key = (demand.images, demand.init_images)
        cached = self.fixed.get(key)
        if cached is not None and cached[0] == self.members:
            return cached[1]
        value = self.kernel.fixed(self.state, demand)
        self.fixed[key] = (self.members, value)
        return value

    def may_fit(
        self,
        pending: Sequence[int],
        demands: Sequence[PodDemand],
        changed: Sequence[int],
        holds: Holds | None = None,
        priorities: Sequence[int] = (),
    ) -> list[int]:
        """Pending pods that could fit on one of the ``changed`` nodes (cpu, memory, pod count).

        A pending pod fitted nowhere when it last tried; since then only nodes whose capacity
        grew can take it, so a pod failing this necessary test stays pending without scoring.
        ``holds``: nominated pods' room held in the state, which counts only for pods of lower or
        equal priority than its holder's (``priorities``), never for the holder itself.
        """
        if self.kernel is None or not self.kernel.fit_filters or self.load is not None:
            return list(pending)  # load-aware: a report may open any node (as ``rescore_all``)
        rows = np.array(sorted(set(changed)), dtype=np.int64)
        rows = rows[self.active[rows]]
        if len(rows) == 0 or not pending:
            return []
        free = self.state.allocatable[rows, :2] - self.state.requested[rows, :2]
        slots = self.state.allowed_pods[rows] - self.state.pod_count[rows]
        need = np.stack([demands[p].requests[:2] for p in pending])
        held = holds.beside(rows.tolist()) if holds else []
        if held:
            hits = queue_may_fit_beside(
                need, pending, [priorities[p] for p in pending], free, slots, held,
                lambda pod: demands[pod].requests[:2],
            )  # fmt: skip
        else:
            hits = queue_may_fit(need, free, slots > 0)  # the generator's loop: the same test
        return [p for p, hit in zip(pending, hits.tolist(), strict=True) if hit]


def _evaluate_rows(
    kernel: Kernel, state: ClusterState, entry: Entry, rows: Int64Array, active: BoolArray
) -> tuple[BoolArray, Int64Array]:
    plan = entry.plan
    feasible = active[rows] & (state.pod_count[rows] + 1 <= state.allowed_pods[rows])
    if plan.never:
        feasible = np.zeros(len(rows), dtype=bool)
    if plan.allowed is not None:
        feasible &= plan.allowed[rows]
    if plan.ports:
        feasible &= ports_mask(state, plan.ports, rows)
    if len(plan.checked) and kernel.fit_filters:
        free = (
            state.allocatable[np.ix_(rows, plan.checked)]
            - state.requested[np.ix_(rows, plan.checked)]
        )
        feasible &= ~(entry.demand_checked[np.newaxis, :] > free).any(axis=1)
    total = np.zeros(len(rows), dtype=np.int64)
    for plugin, weight, cols in plan.fit:
        total += weight * fit_score(plugin, state, cols, rows)
    for bal, weight, cols in plan.balanced:
        total += weight * balanced_score(bal, state, cols, rows)
    return feasible, total


def evaluate_all(
    profile: Profile, state: ClusterState, pod: PodDemand, active: BoolArray
) -> tuple[BoolArray, Int64Array]:
    """The compiled plan over every node (for tests comparing with ``Profile.evaluate``)."""
    kernel = Kernel(profile)
    plan = kernel.plan(state, pod)
    entry = Entry(plan, pod.requests[plan.checked], np.zeros(0, np.int64), -1)
    feasible, total = _evaluate_rows(kernel, state, entry, np.arange(state.node_count), active)
    fixed = kernel.fixed(state, pod)
    if fixed is not None:
        total = total + fixed
    for scorer, weight in kernel.static_scores:  # uniform ones too: the core adds them
        raw = scorer.score(state, pod, 0.0)
        if raw is not None:
            total = total + weight * scorer.normalize(raw, feasible)
    return feasible, total
