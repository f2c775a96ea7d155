"""LoadAwareScheduling inside the replay's incremental scorer: which nodes changed, a few rows.

Koordinator's filter and score of node i (``analyzer.scheduling.plugins.loadaware.plugin``) depend on the
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
order as the plugin's arrays — adding it to the resource plugins' total of each row in the same
loop, or for every node in one numpy pass per shape (``analyzer.replay.loadcolumns``).
``tests/test_replay_loadaware.py`` checks both against ``Profile.evaluate`` and whole replays
against the full-rescoring path.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from analyzer.replay.loadcolumns import (
    CHECK,
    LOWEST,
    NO_SCORE,
    PASS,
    REFUSE,
    LoadShape,
    Terms,
    parts,
)
from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.framework import Profile, WeightedScore
from analyzer.scheduling.plugins.loadaware.args import estimate_pod, pod_is_prod
from analyzer.scheduling.plugins.loadaware.plugin import LoadAwareScheduling
from analyzer.scheduling.state import ClusterState, LoadInputs, PodDemand

FULL_SHARE = 0.25  # above this share of changed nodes, every row is stale (a new epoch)
LOG_LIMIT = 1 << 20  # the change log is cut here (a new epoch)
EXPIRY_MARGIN_S = 1.0  # recheck expiry this long before the earliest possible flip


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
        ``analyzer.replay.loadcolumns`` (the same verdicts and integers as the plugin's
        ``filter`` and ``score``)."""
        count = self.state.node_count
        fails, score = parts(self, shape)
        passes: BoolArray = np.ones(count, dtype=bool) if fails is None else ~fails
        added: Int64Array = np.zeros(count, dtype=np.int64) if score is None else score
        return passes, added

    def total(self, shape: LoadShape, res: Int64Array, out: Int64Array) -> None:
        """``out`` = ``res`` (the resource plugins' total, ``LOWEST`` where they refuse) plus
        weight × score, ``LOWEST`` where either part refuses: every node in one numpy pass."""
        fails, score = parts(self, shape)
        if score is None:
            out[:] = res
        else:
            np.add(res, score, out=out)  # wraps where res is LOWEST: overwritten just below
        bad = res == LOWEST
        if fails is not None:
            bad |= fails
        np.copyto(out, LOWEST, where=bad)

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
