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

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.replay.loadcolumns import LoadShape
from analyzer.replay.loadrows import LoadRows, without_loadaware
from analyzer.replay.node_ports import ports_mask, ports_rows
from analyzer.replay.node_tree import NodeSampler
from analyzer.replay.rows import (
    BalancedRows,
    Column,
    FitRows,
    RowPlan,
    fit_strategy,
    pair_form,
    score_rows,
    score_rows_pair,
)
from analyzer.replay.topology import DEFAULTS, INERT, TOPOLOGY_MARK, TopologyCheck
from analyzer.replay.tree_mirror import TreeMirror
from analyzer.replay.zone_bests import ZoneBests
from analyzer.scheduling.arith import BoolArray, FloatArray, Int64Array
from analyzer.scheduling.framework import Evaluation, Profile, select
from analyzer.scheduling.plugins.helper.node_constraints import (
    NodeAffinityFilter,
    TaintTolerationFilter,
)
from analyzer.scheduling.plugins.interpodaffinity import InterPodAffinity
from analyzer.scheduling.plugins.nodeports import NodePorts
from analyzer.scheduling.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balance_scores,
)
from analyzer.scheduling.plugins.noderesources.fit import NodeResourcesFit, broken_linear_array
from analyzer.scheduling.plugins.noderesources.resource_allocation import (
    ResourceSpec,
    weighted_floor_mean,
)
from analyzer.scheduling.plugins.nodeunschedulable import NodeUnschedulable
from analyzer.scheduling.plugins.podtopologyspread import PodTopologySpread
from analyzer.scheduling.queue_order import may_fit as queue_may_fit
from analyzer.scheduling.state import CPU, MEMORY, ClusterState, PodDemand, is_scalar_resource

LOWEST = np.iinfo(np.int64).min
_STATIC_FILTERS = (NodeUnschedulable, TaintTolerationFilter, NodeAffinityFilter)
_TOPOLOGY = (PodTopologySpread, InterPodAffinity)
FULL_RECOMPUTE_SHARE = 0.25  # above this share of changed nodes, recompute all rows at once
SCALAR_ROWS = 64  # up to this many changed nodes, score them in plain Python (no numpy overhead)
LOG_LIMIT = 1 << 20  # the change log is cut here; entries then recompute everything once


@dataclass(frozen=True)
class _Columns:
    """Which state columns feed one plugin's per-resource loop for one pod shape."""

    alloc: Int64Array  # axis index per kept resource
    nonzero_slot: Int64Array  # CPU/MEMORY slot of nonzero_requested, or -1 = use requested
    requested_index: Int64Array  # axis index into requested (when nonzero_slot is -1)
    pod: Int64Array  # the pod's value per kept resource
    weights: Int64Array

    def as_rows(self) -> tuple[Column, ...]:
        """The columns as plain tuples for ``analyzer.replay.rows``."""
        return tuple(
            (int(a), int(s), int(r), int(v), int(w))
            for a, s, r, v, w in zip(
                self.alloc,
                self.nonzero_slot,
                self.requested_index,
                self.pod,
                self.weights,
                strict=True,
            )
        )

    def used(self, state: ClusterState, rows: Int64Array) -> Int64Array:
        """Node usage without the pod, rows × kept resources."""
        out = np.empty((len(rows), len(self.pod)), dtype=np.int64)
        for c in range(len(self.pod)):
            slot = int(self.nonzero_slot[c])
            if slot >= 0:
                out[:, c] = state.nonzero_requested[rows, slot]
            else:
                out[:, c] = state.requested[rows, int(self.requested_index[c])]
        return out


def _columns(
    state: ClusterState, pod: PodDemand, specs: Sequence[ResourceSpec], use_requested: bool
) -> _Columns:
    """The core's ``gather`` decisions for one pod, as index arrays (resources no node has dropped:
    allocatable 0 makes them invalid everywhere, so they add neither score nor weight)."""
    alloc, slots, req_index, values, weights = [], [], [], [], []
    for spec in specs:
        index = state.index_of(spec.name)
        if spec.name in ("cpu", "memory") and not use_requested:
            slot = CPU if spec.name == "cpu" else MEMORY
            value = int(pod.nonzero[slot])
        else:
            slot = -1
            value = int(pod.requests[index]) if index is not None else pod.request(spec.name)
        if is_scalar_resource(spec.name) and value == 0:
            continue
        if index is None:
            continue
        alloc.append(index)
        slots.append(slot)
        req_index.append(index)
        values.append(value)
        weights.append(spec.weight)
    return _Columns(
        *(np.array(x, dtype=np.int64) for x in (alloc, slots, req_index, values, weights))
    )


@dataclass
class _Plan:
    """A pod shape compiled against the profile: filter columns and score inputs."""

    never: bool  # requests a resource no node offers
    checked: Int64Array  # axis indices the Fit filter compares
    fit: list[tuple[NodeResourcesFit, int, _Columns]]
    balanced: list[tuple[NodeResourcesBalancedAllocation, int, _Columns]]
    rows: RowPlan  # the same plan for the scalar scorer of a few changed nodes
    allowed: BoolArray | None = None  # TaintToleration & NodeAffinity per node (None: all pass)
    # static score plugins whose raw score differs between nodes: (plugin, weight, raw)
    static: list[tuple[Any, int, Int64Array]] = field(default_factory=list)
    static_sums: dict[tuple[int, ...], Int64Array] = field(default_factory=dict)  # by maxima
    ports: tuple[Any, ...] = ()  # NodePorts: the shape's host ports (a part of its key)


class _Kernel:
    """Fast evaluation of a profile made only of NodeResourcesFit and BalancedAllocation."""

    def __init__(self, profile: Profile) -> None:
        self.fit_filters = [f for f in profile.filters if isinstance(f, NodeResourcesFit)]
        # the static filters: node labels never change during a replay; taints and cordons
        # change only with node-state intervals (``node_state_changed``: per-shape re-plan)
        self.static_filters = [f for f in profile.filters if isinstance(f, _STATIC_FILTERS)]
        # NodePorts reads the ports in use per node: checked on the rows a refresh recomputes
        self.ports = any(isinstance(f, NodePorts) for f in profile.filters)
        self.fit_scores: list[tuple[NodeResourcesFit, int]] = []
        self.balanced: list[tuple[NodeResourcesBalancedAllocation, int]] = []
        self.static_scores: list[tuple[Any, int]] = []
        # static, no NormalizeScore (ImageLocality): read only node data and the pod's images
        self.fixed_scores: list[tuple[Any, int]] = []
        for weighted in profile.scorers:
            plugin = weighted.plugin
            if isinstance(plugin, NodeResourcesFit):
                self.fit_scores.append((plugin, weighted.weight))
            elif isinstance(plugin, NodeResourcesBalancedAllocation):
                self.balanced.append((plugin, weighted.weight))
            elif getattr(plugin, "static_score", False):
                if getattr(plugin, "normalizes", True):
                    self.static_scores.append((plugin, weighted.weight))
                else:
                    self.fixed_scores.append((plugin, weighted.weight))
        # a fixed score reads the present nodes (ImageLocality's spread): recomputed when they change
        self.counts_nodes = any(getattr(p, "counts_nodes", False) for p, _ in self.fixed_scores)

    @staticmethod
    def supports(profile: Profile) -> bool:
        """True when every plugin of ``profile`` has a compiled form here (PodTopologySpread
        and InterPodAffinity: left out for the pods on which they are inert, ``topology``)."""
        for f in profile.filters:
            if not isinstance(f, (NodeResourcesFit, NodePorts, *_STATIC_FILTERS, *_TOPOLOGY)):
                return False
        for weighted in profile.scorers:
            plugin = weighted.plugin
            if isinstance(plugin, _TOPOLOGY):
                continue
            if isinstance(plugin, NodeResourcesFit):
                version = plugin.version
                if version.legacy_scale or version.rtcr_ceil_utilisation:
                    return False
            elif isinstance(plugin, NodeResourcesBalancedAllocation):
                if plugin.version.balanced_two_resource_legacy:
                    return False
            elif not getattr(plugin, "static_score", False):
                return False
        return True

    def plan(self, state: ClusterState, pod: PodDemand) -> _Plan:
        """Compile one pod shape (the same decisions the core's plugins take per pod)."""
        checked: list[int] = []
        never = False
        for f in self.fit_filters:
            checked += [
                j for j, r in enumerate(state.resources) if pod.requests[j] > 0 and f._checked(r)
            ]
            never |= any(f._checked(r) for r in pod.off_axis_requests(state.resources))
        fit = [(p, w, _columns(state, pod, p.args.resources, False)) for p, w in self.fit_scores]
        balanced = [
            (p, w, _columns(state, pod, p.args.resources, not p.version.balanced_uses_nonzero))
            for p, w in self.balanced
            if not p.skips(pod)
        ]
        checked_axis = np.array(sorted(set(checked)), dtype=np.int64)
        rows = RowPlan(
            never=never,
            checked=tuple((int(j), int(pod.requests[j])) for j in checked_axis),
            fit=tuple(
                FitRows(
                    weight=w,
                    strategy=fit_strategy(p.args.strategy),
                    top=p.version.max_node_score,
                    zero_over_capacity=p.version.most_allocated_zero_over_capacity,
                    shape=tuple(p.scaled_shape),
                    columns=c.as_rows(),
                )
                for p, w, c in fit
            ),
            balanced=tuple(
                BalancedRows(w, p.version.max_node_score, p.version.balanced_delta, c.as_rows())
                for p, w, c in balanced
            ),
        )
        allowed, varying = self.static_part(state, pod)
        ports = pod.host_ports if self.ports else ()
        return _Plan(never, checked_axis, fit, balanced, rows, allowed, varying, ports=ports)

    def static_part(
        self, state: ClusterState, pod: PodDemand
    ) -> tuple[BoolArray | None, list[tuple[Any, int, Int64Array]]]:
        """The static filters' mask (None: all pass) and the static scores that vary."""
        allowed = None
        for static in self.static_filters:
            feasible = static.filter(state, pod, 0.0).feasible
            if not feasible.all():
                allowed = feasible if allowed is None else allowed & feasible
        varying: list[tuple[Any, int, Int64Array]] = []
        for scorer, weight in self.static_scores:
            raw = scorer.score(state, pod, 0.0)
            if raw is not None and weight and len(raw) and int(raw.min()) != int(raw.max()):
                varying.append((scorer, weight, raw))
        return allowed, varying

    def fixed(self, state: ClusterState, pod: PodDemand) -> Int64Array | None:
        """Σ weight × score of the static plugins without NormalizeScore (None: all zero)."""
        total: Int64Array | None = None
        for scorer, weight in self.fixed_scores:
            raw = scorer.score(state, pod, 0.0)
            if raw is not None and weight and raw.any():
                total = weight * raw if total is None else total + weight * raw
        return total


def _fit_score(
    plugin: NodeResourcesFit, state: ClusterState, cols: _Columns, rows: Int64Array
) -> Int64Array:
    """NodeResourcesFit score on ``rows`` (research/kube-scoring.md §5–6)."""
    if len(cols.pod) == 0:
        return np.zeros(len(rows), dtype=np.int64)
    alloc = state.allocatable[np.ix_(rows, cols.alloc)]
    requested = cols.used(state, rows) + cols.pod[np.newaxis, :]
    valid = alloc > 0
    safe = np.maximum(alloc, 1)
    top = plugin.version.max_node_score
    strategy = plugin.args.strategy
    if strategy == "LeastAllocated":  # (alloc − req) × 100 // alloc, 0 when over
        raw = np.where(requested > alloc, 0, (alloc - requested) * top // safe)
    elif strategy == "MostAllocated":  # min(req, alloc) × 100 // alloc
        if plugin.version.most_allocated_zero_over_capacity:
            raw = np.where(requested > alloc, 0, requested * top // safe)
        else:
            raw = np.minimum(requested, alloc) * top // safe
    else:  # RTCR: util = req × 100 // alloc (100 at/over capacity), broken-linear shape
        util = np.where(requested >= alloc, 100, requested * 100 // safe)
        util = np.where((alloc <= 0) | (requested <= 0), 0, util)
        raw = broken_linear_array(plugin.scaled_shape, util.astype(np.int64))
        keep = valid & (raw > 0)  # resources scoring 0 leave both sums; Go math.Round
        numerator = np.where(keep, raw * cols.weights, 0).sum(axis=1)
        weight_sum = np.where(keep, cols.weights, 0).sum(axis=1)
        rounded = (2 * numerator + np.maximum(weight_sum, 1)) // (2 * np.maximum(weight_sum, 1))
        rtcr: Int64Array = np.where(weight_sum > 0, rounded, 0).astype(np.int64)
        return rtcr
    raw = np.where(valid, raw, 0).astype(np.int64)
    return weighted_floor_mean(raw, valid, cols.weights)


def _balanced_score(
    plugin: NodeResourcesBalancedAllocation, state: ClusterState, cols: _Columns, rows: Int64Array
) -> Int64Array:
    """BalancedAllocation on ``rows`` (std with the pod; 1.36+: 50 + (50 + with − without) / 2)."""
    alloc = state.allocatable[np.ix_(rows, cols.alloc)]
    used = cols.used(state, rows)
    valid = alloc > 0
    safe = np.maximum(alloc, 1).astype(np.float64)
    top = plugin.version.max_node_score
    with_pod: FloatArray = np.minimum(
        (used + cols.pod[np.newaxis, :]).astype(np.float64) / safe, 1.0
    )
    score_with = balance_scores(with_pod, valid, top)
    if not plugin.version.balanced_delta:
        return score_with
    without: FloatArray = np.minimum(used.astype(np.float64) / safe, 1.0)
    score_without = balance_scores(without, valid, top)
    result: Int64Array = 50 + (50 + score_with - score_without) // 2
    return result


@dataclass
class _Entry:
    plan: _Plan
    demand_checked: Int64Array
    masked: Int64Array  # total where feasible, LOWEST elsewhere (see ``pending``)
    position: int  # how far into the change log the rows are up to date (-1: none computed)
    pair: tuple[int, ...] | None = None  # constants of the inlined cpu/memory form, if it applies
    best: int | None = None  # highest feasible total, kept up to date by small refreshes
    ties: list[int] = field(default_factory=list)  # nodes at ``best``, ascending
    pending: dict[int, int] = field(default_factory=dict)  # row values not yet in ``masked``
    # load-aware profiles: ``masked`` = resource part + load-aware part; the resource part alone
    # (LOWEST where infeasible) is kept in ``res`` so a NodeMetric report recomputes only its half
    load: LoadShape | None = None
    res: Int64Array | None = None
    res_pending: dict[int, int] = field(default_factory=dict)
    load_position: int = 0  # how far into ``LoadRows.log`` the load-aware part is up to date
    load_epoch: int = -1  # the ``LoadRows.epoch`` it was computed in (-1: never)
    spread: ZoneBests | None = None  # per-zone bests, built for default-spread pods only
    epoch: int = 0  # the ``ScoreCache.epoch`` of node taints/cordons its static part was built in
    mirror: TreeMirror | None = None  # ``masked`` in node list order, for the sampled choice

    def rewritten(self) -> None:
        """``masked`` was rewritten in bulk: its kept bests are unknown."""
        self.best = None
        self.spread = None
        if self.mirror is not None:
            self.mirror.invalidate()

    def flush(self) -> None:
        """Write the small refreshes' values into ``masked`` (before reading it as a whole)."""
        if self.pending:
            self.masked[list(self.pending)] = list(self.pending.values())
            self.pending.clear()
        if self.res_pending:
            assert self.res is not None
            self.res[list(self.res_pending)] = list(self.res_pending.values())
            self.res_pending.clear()


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
            if _Kernel.supports(kernel_profile):
                self.load = LoadRows(profile, state)
        incremental = _Kernel.supports(kernel_profile) and not rescore_all
        if dynamic and self.load is None:
            incremental = False
        self.kernel = _Kernel(kernel_profile) if incremental else None
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
        self.entries: dict[bytes, _Entry] = {}
        self.epoch = 0  # node taint/cordon changes so far (``node_state_changed``)
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

    def _entry(self, key: bytes, demand: PodDemand) -> _Entry:
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
            entry = _Entry(
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

    def _scalar(self, entry: _Entry, rows: list[int]) -> list[int]:
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

    def _refresh(self, entry: _Entry) -> None:
        assert self.kernel is not None
        count = self.state.node_count
        changed = len(self.log) - entry.position
        if entry.position >= 0 and changed <= SCALAR_ROWS:
            rows = list(dict.fromkeys(self.log[entry.position :]))
            if rows:
                values = self._scalar(entry, rows)
                entry.pending.update(zip(rows, values, strict=True))
                _track_best(entry, rows, values)
        elif entry.position < 0 or changed > FULL_RECOMPUTE_SHARE * count:
            every = np.arange(count)
            feasible, total = _evaluate_rows(self.kernel, self.state, entry, every, self.active)
            entry.pending.clear()
            entry.masked[:] = np.where(feasible, total, LOWEST)
            entry.rewritten()
        else:
            stale = np.array(sorted(set(self.log[entry.position :])), dtype=np.int64)
            feasible, total = _evaluate_rows(self.kernel, self.state, entry, stale, self.active)
            entry.flush()
            entry.masked[stale] = np.where(feasible, total, LOWEST)
            entry.rewritten()
        entry.position = len(self.log)

    def _refresh_load(self, entry: _Entry, now: float) -> None:
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
                    _track_best(entry, rows, values)
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
                return self.topology.choose(
                    masked, entry.plan.static, self.state, demand, now, rng, sample
                )
        if entry.plan.static or fixed is not None:
            return _choose_static(entry, rng, fixed, sample)
        if sampler is not None:
            return _choose_sampled(entry, rng, sampler)
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
        self, pending: Sequence[int], demands: Sequence[PodDemand], changed: Sequence[int]
    ) -> list[int]:
        """Pending pods that could fit on one of the ``changed`` nodes (cpu, memory, pod count).

        A pending pod fitted nowhere when it last tried; since then only nodes whose capacity
        grew can take it, so a pod failing this necessary test stays pending without scoring.
        """
        if self.kernel is None or not self.kernel.fit_filters or self.load is not None:
            return list(pending)  # load-aware: a report may open any node (as ``rescore_all``)
        rows = np.array(sorted(set(changed)), dtype=np.int64)
        rows = rows[self.active[rows]]
        if len(rows) == 0 or not pending:
            return []
        free = self.state.allocatable[rows, :2] - self.state.requested[rows, :2]
        room = self.state.pod_count[rows] + 1 <= self.state.allowed_pods[rows]
        need = np.stack([demands[p].requests[:2] for p in pending])
        hits = queue_may_fit(need, free, room)  # the generator's loop runs the same test
        return [p for p, hit in zip(pending, hits.tolist(), strict=True) if hit]


def _choose_sampled(entry: _Entry, rng: np.random.Generator, sampler: NodeSampler) -> int | None:
    """The plain choice over the nodes the scheduler finds (``NodeSampler.rows``): the highest
    cached total among them, ties uniform in ascending row order."""
    mirror = entry.mirror
    if mirror is None:
        mirror = entry.mirror = TreeMirror(entry.masked, LOWEST)
    if mirror.version != sampler.version:  # (``sampler.active`` re-read a changed list)
        entry.flush()  # the mirror is rebuilt from ``masked``
    ties = sampler.choose(mirror)
    if not ties:
        return None  # fits nowhere: upstream processed every node, the index stays
    if len(ties) == 1:
        return ties[0]
    return ties[int(rng.integers(len(ties)))]


def _choose_static(
    entry: _Entry,
    rng: np.random.Generator,
    fixed: Int64Array | None = None,
    sample: Callable[[BoolArray], BoolArray] | None = None,
) -> int | None:
    """Selection with static score plugins normalised over the feasible nodes of this moment,
    plus the ``fixed`` scores (ImageLocality: no normalisation) when given.

    A normalised score depends on the raw score and on the max raw score over the feasible nodes
    only, so the weighted sum is kept per tuple of maxima; infeasible nodes stay far below any
    feasible one (LOWEST plus at most a few hundred).
    """
    entry.flush()
    feasible = entry.masked != LOWEST
    if not feasible.any():
        return None
    if sample is not None:  # normalised over the nodes found only, as upstream's NormalizeScore
        feasible = sample(feasible)
    plan = entry.plan
    total = entry.masked
    if plan.static:
        peaks = tuple(int(raw[feasible].max()) for _, _, raw in plan.static)
        extra = plan.static_sums.get(peaks)
        if extra is None:
            extra = np.zeros(len(feasible), dtype=np.int64)
            for (plugin, weight, raw), peak in zip(plan.static, peaks, strict=True):
                extra += weight * plugin.normalize(raw, raw <= peak)  # its max over these is peak
            plan.static_sums[peaks] = extra
        total = total + extra
    if fixed is not None:
        total = total + fixed
    if sample is not None:
        candidates = np.flatnonzero(feasible)
        values = total[candidates]
        ties = candidates[values == values.max()]
    else:
        ties = np.flatnonzero(total == total.max())
    if len(ties) == 1:
        return int(ties[0])
    return int(ties[int(rng.integers(len(ties)))])


def _track_best(entry: _Entry, rows: list[int], values: list[int]) -> None:
    """Update the best total and its (ascending) tie list after ``rows`` got ``values``.

    Equivalent to recomputing ``flatnonzero(masked == masked.max())``; when the tie list empties
    the best is unknown again and ``choose`` recomputes it from the whole array. The entry's
    per-zone bests (default spreading) follow the same rows.
    """
    if entry.spread is not None:
        entry.spread.update(rows, values)
    if entry.mirror is not None:
        entry.mirror.write(rows, values)
    best = entry.best
    if best is None:
        return
    ties = entry.ties
    for node, value in zip(rows, values, strict=True):
        at = bisect.bisect_left(ties, node)
        present = at < len(ties) and ties[at] == node
        if value > best:
            best, ties = value, [node]
        elif value == best:
            if not present:
                ties.insert(at, node)
        elif present:
            del ties[at]
    if not ties or best == LOWEST:
        entry.best, entry.ties = None, []
    else:
        entry.best, entry.ties = best, ties


def _evaluate_rows(
    kernel: _Kernel, state: ClusterState, entry: _Entry, rows: Int64Array, active: BoolArray
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
        total += weight * _fit_score(plugin, state, cols, rows)
    for bal, weight, cols in plan.balanced:
        total += weight * _balanced_score(bal, state, cols, rows)
    return feasible, total


def evaluate_all(
    profile: Profile, state: ClusterState, pod: PodDemand, active: BoolArray
) -> tuple[BoolArray, Int64Array]:
    """The compiled plan over every node (for tests comparing with ``Profile.evaluate``)."""
    kernel = _Kernel(profile)
    plan = kernel.plan(state, pod)
    entry = _Entry(plan, pod.requests[plan.checked], np.zeros(0, np.int64), -1)
    feasible, total = _evaluate_rows(kernel, state, entry, np.arange(state.node_count), active)
    fixed = kernel.fixed(state, pod)
    if fixed is not None:
        total = total + fixed
    for scorer, weight in kernel.static_scores:  # uniform ones too: the core adds them
        raw = scorer.score(state, pod, 0.0)
        if raw is not None:
            total = total + weight * scorer.normalize(raw, feasible)
    return feasible, total
