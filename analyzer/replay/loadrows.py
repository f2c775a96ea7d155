"""LoadAwareScheduling inside the replay's incremental scorer: which nodes changed, a few rows.

Koordinator's filter and score of node i (``analyzer.scheduling.loadaware.plugin``) depend on the
pod (its estimate, whether it is prod, whether it is a DaemonSet pod), on node i's static inputs
(thresholds after annotations, estimated allocatable) and on node i's ``LoadInputs`` row: NodeMetric
presence, usage, the pod-assign cache's delta / estimated / prod sums, the aggregated usages, and
whether the metric has expired at ``now``. So between two placements of one shape the verdict and
the score only move on nodes whose row moved:

- a pod bound to or unbound from the node (the replay touches it, as for the resource plugins);
- a new NodeMetric report (``LoadFeed`` refreshed every node): the rows that differ from their
  values just before it (``before_reload`` copies them) are stale — every row when there are many;
- the metric expiring (``now − updateTime ≥ nodeMetricExpirationSeconds``): ``sync`` finds the rows
  whose expiry flipped, checking only once ``now`` nears the earliest possible flip.

``LoadRows`` keeps that change log (and an epoch for "every row") and evaluates the plugin for a
few rows in plain Python — the same integer arithmetic and the same float64 operations in the same
order as the plugin's arrays — or for every node by calling the plugin itself.
``tests/test_replay_loadaware.py`` checks both against ``Profile.evaluate`` and whole replays
against the full-rescoring path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.framework import Profile, WeightedScore
from analyzer.scheduling.loadaware.args import estimate_pod, pod_is_prod
from analyzer.scheduling.loadaware.plugin import LoadAwareScheduling
from analyzer.scheduling.state import ClusterState, LoadInputs, PodDemand

FULL_SHARE = 0.25  # above this share of changed nodes, every row is stale (a new epoch)
LOG_LIMIT = 1 << 20  # the change log is cut here (a new epoch)
EXPIRY_MARGIN_S = 1.0  # recheck expiry this long before the earliest possible flip
PASS, REFUSE, CHECK = 0, 1, 2  # the filter's verdict on a node before looking at the pod
NO_MARGIN = 1 << 62  # a margin no estimate reaches: the resource is not checked
REFUSED = -NO_MARGIN  # a margin every estimate reaches: the node refuses every (non-DaemonSet) pod
NO_SCORE = -NO_MARGIN  # room (capacity − base) that leaves no score for any estimate
LOWEST = int(
    np.iinfo(np.int64).min
)  # the replay's "infeasible" total (``analyzer.replay.scoring``)
# node i's side for one pod variant: (PASS/REFUSE/CHECK, (resource, margin) pairs for CHECK,
# room per resource = capacity − base, or None when the score is 0)
Terms = tuple[int, list[tuple[int, int]], list[int] | None]


@dataclass(frozen=True)
class LoadShape:
    """The pod side of the plugin for one replay shape."""

    demand: PodDemand
    vector: tuple[int, ...]  # the incoming pod's estimate, in the plugin's resource order
    prod: bool
    daemonset: bool


def _plugins(profile: Profile) -> tuple[list[LoadAwareScheduling], list[WeightedScore]]:
    filters = [f for f in profile.filters if isinstance(f, LoadAwareScheduling)]
    scorers = [w for w in profile.scorers if isinstance(w.plugin, LoadAwareScheduling)]
    return filters, scorers


def without_loadaware(profile: Profile) -> Profile:
    """``profile`` minus LoadAwareScheduling (the part the resource kernel scores)."""
    return Profile(
        profile.name,
        [f for f in profile.filters if not isinstance(f, LoadAwareScheduling)],
        [w for w in profile.scorers if not isinstance(w.plugin, LoadAwareScheduling)],
    )


class LoadRows:
    """LoadAwareScheduling's per-node verdict and weighted score, and which rows went stale."""

    def __init__(self, profile: Profile, state: ClusterState) -> None:
        filters, scorers = _plugins(profile)
        self.filter = filters[0] if filters else None
        self.weight = scorers[0].weight if scorers else 0
        plugin = filters[0] if filters else scorers[0].plugin
        assert isinstance(plugin, LoadAwareScheduling)
        self.plugin = plugin
        self.scores = bool(scorers)
        self.state = state
        assert state.load is not None
        self.load: LoadInputs = state.load
        args = plugin.args
        self.args = args
        self.log: list[int] = []
        self.epoch = 0
        self.copies: list[np.ndarray[Any, Any]] = []
        self.aggregated: dict[tuple[str, int], tuple[np.ndarray[Any, Any], Int64Array]] = {}
        self.expired: BoolArray = plugin._expired(self.load, -math.inf)
        self.next_check = -math.inf
        profiles = plugin._profiles(state)
        self.usage_t = profiles.usage.tolist()
        self.prod_t = profiles.prod.tolist()
        self.agg_t = profiles.aggregated.tolist()
        self.prod_set = profiles.prod_set.tolist()
        self.agg_set = profiles.aggregated_set.tolist()
        self.agg_key = list(profiles.aggregated_key)
        self.alloc = profiles.allocatable.tolist()
        self.alloc_safe = [[float(a) for a in row] for row in profiles.allocatable_safe.tolist()]
        self.weights = plugin.weights.tolist()
        self.weight_sum = sum(self.weights) + args.dominant_weight
        agg = args.aggregated
        self.score_key = (agg.score_type, agg.score_duration) if agg else ("", 0)
        self.score_agg = bool(agg is not None and agg.score_type)
        self.width = len(plugin.resources)
        # a prod pod reads other rows than a non-prod one only with prod thresholds or scoring
        self.prod_matters = bool(args.score_according_prod or any(self.prod_set))
        count = state.node_count
        # per prod variant (index 1: a prod pod where prod matters), node -> ``_terms`` (None:
        # not computed since the node went stale)
        self.terms: tuple[list[Terms | None], list[Terms | None]] = ([None] * count, [None] * count)
        self.cutoffs: tuple[dict[int, list[tuple[int, int]]], ...] = ({}, {}, {})
        self.cutoff_tables: dict[int, Int64Array] = {}
        # ``full``'s node arrays per prod variant, resource-major — margins (``REFUSED`` where
        # the node refuses outright) and room (``NO_SCORE`` where the score is 0) — and the rows
        # gone stale since they were built
        self.arrays: dict[bool, tuple[Int64Array, Int64Array]] = {}
        self.dirty: dict[bool, set[int]] = {}
        self.capacity_safe = np.ascontiguousarray(np.maximum(profiles.allocatable, 1).T)
        self.scoring = bool(self.scores and self.weight and self.weight_sum > 0)

    @staticmethod
    def supports(profile: Profile, state: ClusterState) -> bool:
        """One LoadAwareScheduling instance (as filter, scorer or both) fed over its own
        resource order: the case the rows are written for."""
        filters, scorers = _plugins(profile)
        plugins = {id(p) for p in filters} | {id(w.plugin) for w in scorers}
        if len(filters) > 1 or len(scorers) > 1 or len(plugins) != 1:
            return False
        plugin = filters[0] if filters else scorers[0].plugin
        assert isinstance(plugin, LoadAwareScheduling)
        return state.load is not None and state.load.resources == plugin.resources

    # ------------------------------------------------------------ what changed
    def touch(self, node: int) -> None:
        """A pod was bound to or unbound from ``node`` (its cache sums moved). The replay's
        ``ScoreCache`` logs the node itself; ``log`` holds only the rows reports made stale."""
        self.terms[0][node] = None
        self.terms[1][node] = None
        for rows in self.dirty.values():
            rows.add(node)

    def _everything(self) -> None:
        self.epoch += 1
        self.log.clear()
        count = self.state.node_count
        self.terms = ([None] * count, [None] * count)
        self.arrays.clear()
        self.dirty.clear()

    def _stale(self, rows: Sequence[int]) -> None:
        if len(rows) > FULL_SHARE * self.state.node_count or len(self.log) >= LOG_LIMIT:
            self._everything()
        else:
            self.log.extend(rows)
            plain, prod = self.terms
            for node in rows:
                plain[node] = None
                prod[node] = None
            for stale in self.dirty.values():
                stale.update(rows)

    def _inputs(self) -> list[np.ndarray[Any, Any]]:
        load = self.load
        return [
            load.has_metric,
            load.metric_present,
            load.node_usage,
            load.node_delta,
            load.node_estimated,
            load.prod_usage,
            load.prod_delta,
        ]

    def before_reload(self) -> None:
        """A report is about to replace ``LoadInputs``: keep the values every row has now."""
        self.copies = [a.copy() for a in self._inputs()]
        self.aggregated = {k: (p.copy(), t.copy()) for k, (p, t) in self.load.aggregated.items()}

    def reloaded(self, now: float) -> None:
        """The report replaced ``LoadInputs``: the rows that differ from ``before_reload``'s
        copies, or whose metric's expiry flipped, are stale (every row without copies)."""
        load = self.load
        count = self.state.node_count
        if not self.copies or set(load.aggregated) != set(self.aggregated):
            changed = np.ones(count, dtype=bool)
        else:
            pairs = list(zip(self._inputs(), self.copies, strict=True))
            for key, (present, table) in load.aggregated.items():
                old_present, old_table = self.aggregated[key]
                pairs += [(present, old_present), (table, old_table)]
            changed = np.zeros(count, dtype=bool)
            for now_values, before in pairs:
                if np.array_equal(now_values, before):  # the common case: a report that moved
                    continue  # nothing (the same usage window)
                differs = now_values != before
                changed |= differs.any(axis=1) if differs.ndim == 2 else differs
        self.copies, self.aggregated = [], {}
        expired = self.plugin._expired(load, now)
        changed |= expired != self.expired
        self.expired = expired
        self._next_check()
        self._stale(np.flatnonzero(changed).tolist())

    def _next_check(self) -> None:
        fresh = ~self.expired
        if fresh.any():
            earliest = float(self.load.update_time[fresh].min())
            self.next_check = earliest + self.args.expiration_seconds - EXPIRY_MARGIN_S
        else:  # every metric expired: nothing can flip until the next report
            self.next_check = math.inf

    def sync(self, now: float) -> None:
        """Mark the rows whose metric expired by ``now`` (cheap until a flip is near)."""
        if now < self.next_check:
            return
        expired = self.plugin._expired(self.load, now)
        flipped = np.flatnonzero(expired != self.expired).tolist()
        self.expired = expired
        self._next_check()
        if flipped:
            self._stale(flipped)

    # ------------------------------------------------------------ evaluation
    def shape(self, demand: PodDemand) -> LoadShape:
        """The pod side of the plugin for ``demand``."""
        incoming = estimate_pod(demand, self.args)
        vector = tuple(int(incoming.get(r, 0)) for r in self.plugin.resources)
        return LoadShape(demand, vector, pod_is_prod(demand), demand.daemonset)

    def full(self, shape: LoadShape, now: float) -> tuple[BoolArray, Int64Array]:
        """(passes the filter, weight × score) of every node, from the node arrays of
        ``_arrays`` (the same verdicts and integers as the plugin's ``filter`` and ``score``)."""
        count = self.state.node_count
        fails, score = self._parts(shape)
        passes: BoolArray = np.ones(count, dtype=bool) if fails is None else ~fails
        added: Int64Array = np.zeros(count, dtype=np.int64) if score is None else score
        return passes, added

    def total(self, shape: LoadShape, res: Int64Array, out: Int64Array) -> None:
        """``out`` = ``res`` (the resource plugins' total, ``LOWEST`` where they refuse) plus
        weight × score, ``LOWEST`` where either part refuses: every node in one numpy pass."""
        fails, score = self._parts(shape)
        if score is None:
            out[:] = res
        else:
            np.add(res, score, out=out)  # wraps where res is LOWEST: overwritten just below
        bad = res == LOWEST
        if fails is not None:
            bad |= fails
        np.copyto(out, LOWEST, where=bad)

    def _parts(self, shape: LoadShape) -> tuple[BoolArray | None, Int64Array | None]:
        """(refused by the filter, weight × score) of every node; None: nowhere / 0 everywhere.

        Per resource k the filter fails where ``estimate_k >= margin_k`` and the score's part is
        ``(room_k − estimate_k) × 100 // capacity_k``, 0 where that is negative (used > capacity;
        ``NO_SCORE``: capacity 0, or no fresh metric): the plugin's ``(cap − used) × 100 // cap``, 0 if used >
        cap, in the same integers, one contiguous column at a time."""
        margins, room = self._arrays(shape.prod)
        vector = shape.vector
        fails: BoolArray | None = None
        if self.filter is not None and not shape.daemonset:
            for k, estimate in enumerate(vector):
                column = margins[k] <= estimate
                fails = column if fails is None else np.logical_or(fails, column, out=fails)
        if not self.scoring:
            return fails, None
        weights, dominant = self.weights, self.args.dominant_weight
        numerator: Int64Array | None = None
        low: Int64Array | None = None
        for k, estimate in enumerate(vector):
            part = room[k] - estimate
            np.maximum(part, 0, out=part)
            part *= 100
            part //= self.capacity_safe[k]
            if dominant > 0:
                low = part.copy() if low is None else np.minimum(low, part, out=low)
            if weights[k] != 1:
                part *= weights[k]
            numerator = part if numerator is None else np.add(numerator, part, out=numerator)
        assert numerator is not None
        if low is not None:
            low *= dominant
            numerator += low
        numerator //= self.weight_sum
        if self.weight != 1:
            numerator *= self.weight
        return fails, numerator

    def _arrays(self, prod: bool) -> tuple[Int64Array, Int64Array]:
        """Per resource and node for a (non-)prod pod: the margins (the pod fails where its
        estimate ``>= margin``; ``NO_MARGIN`` where unchecked, ``REFUSED`` where the node refuses
        outright) and the room capacity − base (``NO_SCORE`` where the score is 0). Built whole
        once per epoch, then patched on the rows gone stale since."""
        variant = prod and self.prod_matters
        arrays = self.arrays.get(variant)
        if arrays is None:
            arrays = self.arrays[variant] = self._build(prod)
            self.dirty[variant] = set()
            return arrays
        margins, room = arrays
        terms = self.terms[1 if variant else 0]
        stale = list(self.dirty[variant])
        if stale:
            fills, rooms = [], []
            checks: list[tuple[int, int, int]] = []  # (resource, row, margin)
            for at, i in enumerate(stale):
                known = terms[i]
                if known is None:
                    known = terms[i] = self._terms(i, prod)
                mode, pairs, rest = known
                fills.append(REFUSED if mode == REFUSE else NO_MARGIN)
                rooms.append(rest if rest is not None else [NO_SCORE] * self.width)
                if mode == CHECK:
                    checks += [(k, at, margin) for k, margin in pairs]
            block = np.repeat(np.array(fills, dtype=np.int64)[np.newaxis, :], self.width, axis=0)
            for k, at, margin in checks:
                block[k, at] = margin
            margins[:, stale] = block
            room[:, stale] = np.array(rooms, dtype=np.int64).T
        self.dirty[variant] = set()
        return arrays

    def _build(self, prod: bool) -> tuple[Int64Array, Int64Array]:
        """``_arrays`` for every node at once (the plugin's ``_threshold_sets``, ``_estimated``
        and expiry rules as whole columns; ``_terms`` is the same for one row)."""
        plugin, load, args = self.plugin, self.load, self.args
        profiles = plugin._profiles(self.state)
        prod_rows = profiles.prod_set & prod
        agg_rows = ~prod_rows & profiles.aggregated_set
        thresholds = np.where(
            prod_rows[:, np.newaxis],
            profiles.prod,
            np.where(agg_rows[:, np.newaxis], profiles.aggregated, profiles.usage),
        )
        active = thresholds.any(axis=1) & load.has_metric
        expired = active & args.filter_expired & self.expired
        refuse = expired & (args.enable_when_expired is False)
        check = active & ~expired & load.metric_present
        normal = load.node_usage + load.node_delta
        base = normal
        if agg_rows.any():
            agg = plugin._aggregated_base(load, profiles.aggregated_groups, normal)
            base = np.where(agg_rows[:, np.newaxis], agg, base)
        if prod_rows.any():
            base = np.where(prod_rows[:, np.newaxis], load.prod_usage + load.prod_delta, base)
        cutoffs = np.where(
            prod_rows[:, np.newaxis],
            self._cutoff_table(1),
            np.where(agg_rows[:, np.newaxis], self._cutoff_table(2), self._cutoff_table(0)),
        )
        checked = check[:, np.newaxis] & (cutoffs != NO_MARGIN)
        margins = np.where(checked, cutoffs - base, NO_MARGIN).astype(np.int64)
        score_prod = args.score_according_prod and prod
        if score_prod:
            score_base = load.prod_usage + load.prod_delta
        elif self.score_agg:
            score_base = plugin._aggregated_base(load, {self.score_key: None}, normal)
        else:
            score_base = normal
        usable = load.has_metric & load.metric_present & ~self.expired
        capacity = profiles.allocatable
        scored = usable[:, np.newaxis] & (capacity > 0)  # capacity 0 scores 0 whatever the base
        room = np.where(scored, capacity - score_base, NO_SCORE)
        margins[refuse] = REFUSED
        return (
            np.ascontiguousarray(margins.T, dtype=np.int64),
            np.ascontiguousarray(room.T, dtype=np.int64),
        )

    def _cutoff_table(self, table: int) -> Int64Array:
        """Threshold set ``table``'s fail cutoffs of every node (``NO_MARGIN``: unchecked)."""
        known = self.cutoff_tables.get(table)
        if known is None:
            known = np.full((self.state.node_count, self.width), NO_MARGIN, dtype=np.int64)
            for i in range(self.state.node_count):
                for k, cut in self._cutoffs(table, i):
                    known[i, k] = cut
            self.cutoff_tables[table] = known
        return known

    def _base(self, i: int, prod: bool, key: tuple[str, int] | None) -> list[int]:
        """The estimated usage before the incoming pod (``_estimated``'s ``base`` for row i):
        prod usage + prod delta, else the aggregate for ``key`` + delta (with its fallbacks),
        else node usage + delta."""
        load, j = self.load, range(self.width)
        if prod:
            usage, delta = load.prod_usage[i].tolist(), load.prod_delta[i].tolist()
            return [usage[k] + delta[k] for k in j]
        delta = load.node_delta[i].tolist()
        if key is not None:
            present, table = load.aggregated.get(key, (None, None))
            if present is not None and table is not None and present[i]:
                agg = table[i].tolist()
                return [agg[k] + delta[k] for k in j]
            if key[1] != 0:  # an explicit window without data: every assigned pod's estimate
                estimated: list[int] = load.node_estimated[i].tolist()
                return estimated
        usage = load.node_usage[i].tolist()
        return [usage[k] + delta[k] for k in j]

    def _terms(self, i: int, prod: bool) -> Terms:
        """Node i's side of the plugin for a (non-)prod pod: the filter's mode (PASS, REFUSE or
        CHECK) with, for CHECK, (resource, margin) pairs — the pod fails iff its estimate
        ``>= margin`` (``cutoff − base``) — and the score's room ``capacity − base`` per resource
        (None: the score is 0)."""
        load = self.load
        prod_row = self.prod_set[i] and prod
        agg_row = not prod_row and self.agg_set[i]
        table = 1 if prod_row else 2 if agg_row else 0
        t = (self.usage_t, self.prod_t, self.agg_t)[table][i]
        margins: list[tuple[int, int]] = []
        has_metric, expired = load.has_metric.item(i), self.expired.item(i)
        present = load.metric_present.item(i)
        known: tuple[bool, tuple[str, int] | None] | None = None  # what ``base`` was read for
        if not any(t) or not has_metric:
            mode = PASS
        elif self.args.filter_expired and expired:
            mode = PASS if self.args.enable_when_expired is not False else REFUSE
        elif not present:
            mode = PASS
        else:
            mode = CHECK
            known = (prod_row, self.agg_key[i] if agg_row else None)
            base = self._base(i, *known)
            cutoffs = self._cutoffs(table, i)
            margins = [(k, c - base[k]) for k, c in cutoffs]
        room = None
        if self.weight_sum > 0 and has_metric and present and not expired:
            score_prod = self.args.score_according_prod and prod
            key = self.score_key if not score_prod and self.score_agg else None
            if known != (score_prod, key):  # else the filter's base is the score's
                base = self._base(i, score_prod, key)
            capacity = self.alloc[i]
            room = [c - b if c > 0 else NO_SCORE for c, b in zip(capacity, base, strict=True)]
        return mode, margins, room

    def _cutoffs(self, table: int, i: int) -> list[tuple[int, int]]:
        """(resource, the least estimate that fails) for the resources row i checks (t > 0,
        allocatable > 0) against threshold set ``table`` (static: computed once per row)."""
        known = self.cutoffs[table].get(i)
        if known is None:
            t = (self.usage_t, self.prod_t, self.agg_t)[table][i]
            alloc, safe = self.alloc[i], self.alloc_safe[i]
            known = [
                (k, fail_cutoff(safe[k], t[k]))
                for k in range(self.width)
                if t[k] > 0 and alloc[k] > 0
            ]
            self.cutoffs[table][i] = known
        return known

    def rows(self, shape: LoadShape, rows: Sequence[int]) -> list[int | None]:
        """Per row: None when the filter refuses it, else weight × score."""
        totals = self.totals(shape, rows, [0] * len(rows))
        return [None if t == LOWEST else t for t in totals]

    def totals(self, shape: LoadShape, rows: Sequence[int], res: Sequence[int]) -> list[int]:
        """Per row: ``res`` (the resource plugins' total, ``LOWEST`` where they refuse) plus
        weight × score, ``LOWEST`` where either part refuses (rows ``res`` refuses are not
        evaluated). The plugin's integers, one row at a time in plain Python."""
        scores = self.scoring
        filters = self.filter is not None and not shape.daemonset
        vector, weights, dominant = shape.vector, self.weights, self.args.dominant_weight
        variant = shape.prod and self.prod_matters
        terms = self.terms[1 if variant else 0]
        weight, weight_sum, alloc = self.weight, self.weight_sum, self.alloc
        pair = self.width == 2 and dominant <= 0
        w0, w1 = (weights[0], weights[1]) if pair else (0, 0)
        v0, v1 = (vector[0], vector[1]) if pair else (0, 0)
        out: list[int] = []
        for i, total in zip(rows, res, strict=True):
            if total == LOWEST:
                out.append(LOWEST)
                continue
            known = terms[i]
            if known is None:
                known = terms[i] = self._terms(i, shape.prod)
            mode, margins, room = known
            if filters and mode != PASS:
                if mode == REFUSE:
                    out.append(LOWEST)
                    continue
                refused = False
                for k, margin in margins:
                    if vector[k] >= margin:
                        refused = True
                        break
                if refused:
                    out.append(LOWEST)
                    continue
            if not scores or room is None:
                out.append(total)
                continue
            # per resource (cap − used) × 100 // cap with room = cap − base: 0 when the room
            # left after the pod is not positive (used > cap; NO_SCORE when cap = 0)
            if pair:  # two resources without a dominant weight, inlined
                x0, x1 = room[0] - v0, room[1] - v1
                capacity = alloc[i]
                p0 = x0 * 100 // capacity[0] if x0 > 0 else 0
                p1 = x1 * 100 // capacity[1] if x1 > 0 else 0
                out.append(total + weight * ((p0 * w0 + p1 * w1) // weight_sum))
                continue
            capacity = alloc[i]
            numerator, low = 0, None
            for k, incoming in enumerate(vector):
                left = room[k] - incoming
                part = left * 100 // capacity[k] if left > 0 else 0
                numerator += part * weights[k]
                low = part if low is None or part < low else low
            if dominant > 0 and low is not None:
                numerator += low * dominant
            out.append(total + weight * (numerator // weight_sum))
        return out


def fail_cutoff(safe: float, threshold: int) -> int:
    """The least integer estimate ``e`` with ``float(e) / safe × 100 ≥ threshold + 0.5`` — the
    plugin's "Round(e / allocatable × 100) > threshold" in its float64 operations. The left side
    only grows with ``e`` (IEEE division and multiplication are monotonic), so one cutoff
    decides every estimate; found from the real-number answer and corrected by ±1 steps."""
    bound = threshold + 0.5

    def fails(e: int) -> bool:
        return float(e) / safe * 100 >= bound

    guess = math.ceil(bound * safe / 100)
    while fails(guess - 1):
        guess -= 1
    while not fails(guess):
        guess += 1
    return guess
