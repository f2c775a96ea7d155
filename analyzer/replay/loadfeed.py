"""What LoadAwareScheduling would have seen during a replay: NodeMetrics from projected usage.

Koordinator's scheduler reads each node's NodeMetric (research/koordinator.md §1.5, §3, §4), so a
replay of a load-aware profile must feed it NodeMetrics built from the usage the *strategy's*
placement produces, not from what really happened:

- every node reports every ``reportIntervalSeconds`` (60 s, on the grid ``start + k·60 s``) once it
  has joined; a report at ``r`` is visible to scheduling decisions after ``r``;
- ``nodeUsage`` = the average of the projected node usage over ``(r − 300 s, r]`` (koordlet's
  ``aggregateDurationSeconds``); ``aggregatedNodeUsages`` (only when the profile reads them) = the
  stat over ``(r − d, r]`` per window ``d`` (5m, 10m, 30m and the configured ones), empty when the
  samples span less than half the window (koordlet's cold-start rule), nearest-rank percentiles;
- projected usage at grid time ``t`` = node overhead + usage of the pods bound at ``t``
  (``analyzer.replay.projection``), computed column by column as the replay clock passes ``t``;
- the pod-assign cache (``pod_assign_cache.go``): each bound pod adds its full estimate
  (``estimate_pod``, the core's estimator) to ``node_estimated`` and ``max(0, e − u)`` to
  ``node_delta`` when it is recent — no usage ``u`` in the report's ``podsMetric`` (the 5-minute
  average of its own samples while bound), bound after ``updateTime − reportInterval``, or a
  forced-estimation deadline after ``updateTime`` (``estimatedSecondsAfterPodScheduled``; the
  Initialized time is taken as the bind time). Prod pods feed ``prod_usage`` / ``prod_delta``.

Pods bound after the last report count at once with their full estimate, as in the scheduler.

Incremental: a report whose usage window holds the same grid columns as the previous one gives
every pod still bound since then the same usage ``u`` and the same "reported" verdict, so only
the pods whose recency can have flipped are recomputed — bound since the previous report, or
bound within one report step of ``updateTime − reportInterval`` or of the forced-estimation
deadline. Reports that bring a new column recompute every bound pod (``incremental=False``: every
report does, the reference path).
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np

from analyzer.replay.feedrows import RecentColumns, RecentRows
from analyzer.replay.input import NEVER, ReplayInput
from analyzer.replay.projection import RESOURCES, UsageMatrices, usage_matrices
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.plugins.loadaware.args import LoadAwareArgs, estimate_pod, pod_is_prod
from analyzer.scheduling.plugins.loadaware.plugin import LoadAwareScheduling
from analyzer.scheduling.state import ClusterState, LoadInputs
from analyzer.usage.percentiles import sorted_quantile

REPORT_INTERVAL_S = 60  # DefaultNodeMetricReportInterval
NODE_USAGE_WINDOW_S = 300  # koordlet aggregateDurationSeconds
POLICY_DURATIONS_S = (300, 600, 1800)  # NodeMetric nodeAggregatePolicy default
SECOND = 1_000_000_000
STAT_QUANTILE = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
FloatArray = np.ndarray[Any, np.dtype[np.float64]]


def _loadaware(profile: Profile) -> LoadAwareScheduling | None:
    for plugin in [*profile.filters, *(w.plugin for w in profile.scorers)]:
        if isinstance(plugin, LoadAwareScheduling):
            return plugin
    return None


class LoadFeed:
    """Keeps ``state.load`` (``LoadInputs``) as the scheduler would have seen it at each time."""

    def __init__(
        self,
        inp: ReplayInput,
        args: LoadAwareArgs,
        state: ClusterState,
        mats: UsageMatrices,
        *,
        incremental: bool = True,
    ) -> None:
        self.inp, self.args, self.mats = inp, args, mats
        self.incremental = incremental
        self.resources = args.resources
        self.usage_slots = [(j, r) for j, r in enumerate(self.resources) if r in RESOURCES]
        count, width, pods = len(inp.node_names), len(mats.times), inp.pod_count
        self.inputs = LoadInputs.empty(count, self.resources)
        state.load = self.inputs
        shape = (pods, len(self.resources))
        self.estimate = np.zeros(shape, dtype=np.int64)
        self.has_estimate = np.zeros(pods, dtype=bool)
        self.prod = np.zeros(pods, dtype=bool)
        self.node_of = np.full(pods, -1, dtype=np.int64)
        self.bind_time = np.full(pods, NEVER, dtype=np.int64)
        self.delta = np.zeros(shape, dtype=np.int64)
        self.prod_delta = np.zeros(shape, dtype=np.int64)
        self.prod_usage = np.zeros(shape, dtype=np.int64)
        # the rows read: a streamed snapshot's day at a time, plus the few columns before it
        # that a usage window crossing midnight reads (``analyzer.replay.feedrows``)
        keep = (NODE_USAGE_WINDOW_S + 2 * REPORT_INTERVAL_S) * SECOND + 2 * inp.step
        self.recent = RecentRows(mats.rows, keep)
        self.next_col = 0
        self.next_time = int(mats.times[0]) if len(mats.times) else NEVER  # times[next_col]
        self.last_report = -1
        self.interval = REPORT_INTERVAL_S * SECOND
        self.due_at = self.next_due  # ``advance`` makes a report visible from this instant on
        self.windows = self._aggregation_keys()
        # projected node usage of the columns a window can still read: the longest window
        # plus the report's lag behind the clock (``feedrows.RecentColumns``)
        longest = max([NODE_USAGE_WINDOW_S, *(seconds for _, seconds in self.windows)])
        lag = (longest + 2 * REPORT_INTERVAL_S) * SECOND
        self.projected = RecentColumns(RESOURCES, count, width, lag // max(inp.step, 1) + 2)
        self.system = np.zeros((count, len(self.resources)), dtype=np.int64)
        # prod usage is read only with prod thresholds (arguments or a node's annotation) or
        # scoreAccordingProdUsage; otherwise skip its bookkeeping
        annotations = " ".join(str(a) for a in inp.snapshot.nodes["annotations"].fillna(""))
        self.uses_prod = bool(
            args.prod_usage_thresholds
            or args.score_according_prod
            or "prodUsageThresholds" in annotations
        )
        # what the last report found per bound pod (the incremental pod cache reuses it)
        self.reported = np.zeros(pods, dtype=bool)
        self.used = np.zeros(shape, dtype=np.int64)
        self.seen: tuple[int, int, int] | None = None  # (report, window start, window stop)
        # the last usage window's (start, stop), sampled nodes and mean usage (``_usage``)
        self.usage_by_window: tuple[tuple[int, int], np.ndarray[Any, Any], Int64Array] | None
        self.usage_by_window = None
        self.bind_log: tuple[list[int], list[int]] = ([], [])  # (bind time, pod), in time order
        self.fresh: list[int] = []  # pods bound since the last report
        self.by_key: dict[bytes, tuple[Int64Array, bool]] = {}  # shape key -> (estimate, prod)
        # per-node sums kept in step with binds (the prod ones only when something reads them)
        self.tables = [
            (self.inputs.node_delta, self.delta),
            (self.inputs.node_estimated, self.estimate),
        ]
        if self.uses_prod:
            self.tables += [
                (self.inputs.prod_delta, self.prod_delta),
                (self.inputs.prod_usage, self.prod_usage),
            ]

    @classmethod
    def for_profile(
        cls,
        inp: ReplayInput,
        profile: Profile,
        state: ClusterState,
        mats: UsageMatrices | None = None,
        *,
        incremental: bool = True,
    ) -> LoadFeed | None:
        """A feed when ``profile`` has LoadAwareScheduling, else None."""
        plugin = _loadaware(profile)
        if plugin is None:
            return None
        mats = mats if mats is not None else usage_matrices(inp)
        return cls(inp, plugin.args, state, mats, incremental=incremental)

    def _aggregation_keys(self) -> list[tuple[str, int]]:
        agg = self.args.aggregated
        if agg is None:
            return []
        stats = {s for s in (agg.usage_type, agg.score_type) if s}
        durations = set(POLICY_DURATIONS_S) | {
            d for d in (agg.usage_duration, agg.score_duration) if d
        }
        return [(s, d) for s in sorted(stats) for d in sorted(durations)]

    # ------------------------------------------------------------------ pods
    def _estimate(self, pod: int) -> Int64Array:
        if not self.has_estimate[pod]:
            demand = self.inp.demands[pod]
            # pods of one replay shape share requests, limits and class: one estimate each
            # (per pod when annotations may customise the estimation)
            key = None if self.args.allow_customize else self.inp.shape_keys[pod]
            known = self.by_key.get(key) if key is not None else None
            if known is None:
                values = estimate_pod(demand, self.args)
                row = np.array([int(values.get(r, 0)) for r in self.resources], dtype=np.int64)
                known = (row, pod_is_prod(demand))
                if key is not None:
                    self.by_key[key] = known
            self.estimate[pod], self.prod[pod] = known
            self.has_estimate[pod] = True
        row_view: Int64Array = self.estimate[pod]
        return row_view

    def bound(self, pod: int, node: int, now: int) -> None:
        """A pod was bound after the last report: no usage yet, its full estimate counts."""
        e = self._estimate(pod)
        self.node_of[pod], self.bind_time[pod] = node, now
        self.delta[pod] = e
        if self.uses_prod:
            self.prod_delta[pod] = e if self.prod[pod] else 0
            self.prod_usage[pod] = 0
        self.bind_log[0].append(now)
        self.bind_log[1].append(pod)
        self.fresh.append(pod)
        self._apply(pod, node, 1)

    def unbound(self, pod: int, node: int, now: int) -> None:
        """The pod left the node: the cache forgets it."""
        self._apply(pod, node, -1)
        self.node_of[pod] = -1

    def _apply(self, pod: int, node: int, sign: int) -> None:
        step = np.add if sign > 0 else np.subtract
        for table, per_pod in self.tables:
            row = table[node]
            step(row, per_pod[pod], out=row)

    # ------------------------------------------------------------------ time
    def due(self, now: int) -> bool:
        """True when ``advance(now)`` will make a new report visible."""
        return now >= self.due_at

    @property
    def next_due(self) -> int:
        """The first instant at which the report after ``last_report`` is visible (reports
        are visible strictly after their time ``start + k·interval``)."""
        return self.inp.start + 1 + (self.last_report + 1) * self.interval

    def advance(self, now: int) -> bool:
        """Move the clock to ``now``; True when a new NodeMetric report became visible."""
        if now <= self.next_time and now < self.due_at:  # most instants: nothing to do
            return False
        times = self.mats.times
        if self.next_col < len(times) and now > self.next_time:  # a grid column has passed
            stop = int(np.searchsorted(times, now, side="left"))
            self._finalise(self.next_col, stop)
            self.next_col = stop
            self.next_time = int(times[stop]) if stop < len(times) else NEVER
        if now >= self.due_at:
            report = (now - self.inp.start - 1) // self.interval
            self.last_report = report
            self.due_at = self.next_due
            self._refresh(self.inp.start + report * self.interval)
            return True
        return False

    def _finalise(self, c0: int, c1: int) -> None:
        """Projected usage of grid columns ``c0..c1-1`` from the pods bound now, a day's
        columns at a time (each column's cells only ever get that column's rows)."""
        for a, b in self.mats.rows.chunks:
            if a < c1 and c0 < b:
                for lo, hi, rows in self.recent.parts(max(a, c0), min(b, c1)):
                    self._finalise_part(lo, hi, rows)

    def _finalise_part(self, c0: int, c1: int, rows: dict[str, np.ndarray[Any, Any]]) -> None:
        """``_finalise`` of the columns ``[c0, c1)`` whose rows are ``rows``."""
        nodes = self.node_of[rows["pod"]]
        ok = nodes >= 0
        span = c1 - c0
        flat = nodes[ok] * span + (rows["col"][ok] - c0)
        count = len(self.inp.node_names)
        columns = {}
        for r in RESOURCES:
            sums = np.bincount(flat, weights=rows[r][ok], minlength=count * span)
            value = self.mats.overhead[r][:, c0:c1] + sums.reshape(count, span)
            columns[r] = np.where(np.isnan(value), np.nan, np.maximum(value, 0))
        self.projected.put(c0, columns)

    def _window(self, report: int, seconds: int) -> slice:
        times = self.mats.times
        lo = int(np.searchsorted(times, report - seconds * SECOND, side="right"))
        hi = int(np.searchsorted(times, report, side="right"))
        return slice(lo, min(hi, self.next_col))

    def _refresh(self, report: int) -> None:
        """Build every node's NodeMetric at ``report`` and rerun the pod-assign cache."""
        load, inp = self.inputs, self.inp
        window = self._window(report, NODE_USAGE_WINDOW_S)
        present = (inp.node_join <= report) & (report < inp.node_leave)
        sampled, usage = self._usage(window)
        present &= sampled
        load.has_metric[:] = present
        load.metric_present[:] = present
        load.update_time[:] = np.where(present, report / SECOND, np.nan)
        load.report_interval[:] = REPORT_INTERVAL_S
        load.node_usage[:] = usage
        self._aggregated(report, present)
        self._pod_cache(report, window, usage)

    def _usage(self, window: slice) -> tuple[np.ndarray[Any, Any], Int64Array]:
        """(a sample of every resource, the mean usage) per node over the grid columns of
        ``window``; finalised columns never change, so a window seen last time is reused."""
        key = (window.start, window.stop)
        known = self.usage_by_window
        if known is not None and known[0] == key:
            return known[1], known[2]
        inp = self.inp
        sampled = np.ones(len(inp.node_names), dtype=bool)
        usage = np.zeros((len(inp.node_names), len(self.resources)), dtype=np.int64)
        with np.errstate(invalid="ignore"):
            for j, r in self.usage_slots:
                block = self.projected.get(r, window)
                samples = (~np.isnan(block)).sum(axis=1)
                sampled &= samples > 0
                mean = np.nansum(block, axis=1) / np.maximum(samples, 1)
                usage[:, j] = np.rint(mean).astype(np.int64)
        self.usage_by_window = (key, sampled, usage)
        return sampled, usage

    def _aggregated(self, report: int, present: np.ndarray[Any, Any]) -> None:
        load = self.inputs
        longest: dict[str, tuple[np.ndarray[Any, Any], Int64Array]] = {}
        for stat, seconds in self.windows:
            window = self._window(report, seconds)
            table = np.zeros_like(load.node_usage)
            ok = present.copy()
            for j, r in self.usage_slots:
                block = np.sort(self.projected.get(r, window), axis=1)  # NaN sort last
                counts = (~np.isnan(block)).sum(axis=1)
                ok &= counts * self.inp.step >= 0.5 * seconds * SECOND  # cold-start filter
                if block.shape[1] == 0:  # a window before the first usage column: no sample
                    value = np.zeros(len(block))  # (``ok`` is False: the table is not read)
                elif stat == "avg":
                    with np.errstate(invalid="ignore"):
                        value = np.nansum(block, axis=1) / np.maximum(counts, 1)
                else:
                    value = sorted_quantile(block, counts, STAT_QUANTILE[stat], "nearest-rank")
                table[:, j] = np.rint(np.nan_to_num(value)).astype(np.int64)
            load.aggregated[(stat, seconds)] = (ok, table)
            best = longest.get(stat)
            if best is None:
                longest[stat] = (ok.copy(), table.copy())
            else:  # duration 0 = the longest non-empty window: later (longer) ones win
                best[0][ok] = True
                best[1][ok] = table[ok]
        for stat, entry in longest.items():
            load.aggregated[(stat, 0)] = entry

    @staticmethod
    def _update(
        table: Int64Array,
        per_pod: Int64Array,
        bound: Int64Array,
        nodes: Int64Array,
        new: Int64Array,
    ) -> None:
        """Set the bound pods' contributions to ``new``, moving only the differences into the
        per-node ``table`` (most pods' contributions do not change between two reports)."""
        diff = new - per_pod[bound]
        changed = np.flatnonzero(diff.any(axis=1))
        if len(changed):
            np.add.at(table, nodes[changed], diff[changed])
            per_pod[bound[changed]] = new[changed]

    def _pod_cache(self, report: int, window: slice, usage: Int64Array) -> None:
        """Recompute delta / prod contributions of the bound pods against the new report."""
        seen, self.seen = self.seen, (report, window.start, window.stop)
        fresh, self.fresh = self.fresh, []
        if self.incremental and seen is not None and seen[1:] == (window.start, window.stop):
            self._pod_cache_since(seen[0], report, fresh)
            return
        load, mats = self.inputs, self.mats
        rows = self.recent.span(window.start, window.stop)
        pods_total = self.inp.pod_count
        pods = rows["pod"]
        ok = (self.node_of[pods] >= 0) & (self.bind_time[pods] <= mats.times[rows["col"]])
        counts = np.bincount(pods[ok], minlength=pods_total)
        bound = np.flatnonzero(self.node_of >= 0)
        reported = counts[bound] > 0
        if self.incremental and not self.uses_prod:
            # a pod neither recent now nor holding a delta keeps its delta of 0: skip it. The
            # reports that read this window again revisit only pods recent now or bound since
            # (``_pod_cache_since``), so the skipped pods' ``reported`` / ``used`` are not read
            bind = self.bind_time[bound]
            keep = ~reported | (bind > report - self.interval)
            if self._after > 0:
                keep |= bind + self._after * SECOND > report
            holding = self.delta[:, 0] != 0
            for k in range(1, self.delta.shape[1]):
                holding |= self.delta[:, k] != 0
            keep |= holding[bound]
            bound, reported = bound[keep], reported[keep]
            wanted = np.zeros(pods_total, dtype=bool)
            wanted[bound] = True
            ok &= wanted[pods]
        u = np.zeros((len(bound), len(self.resources)), dtype=np.int64)
        chosen, per_row = pods[ok], counts[bound]
        for j, r in self.usage_slots:
            sums = np.bincount(chosen, weights=rows[r][ok], minlength=pods_total)
            u[:, j] = np.rint(sums[bound] / np.maximum(per_row, 1)).astype(np.int64)
        self.reported[bound], self.used[bound] = reported, u
        self._contributions(report, bound)
        if self.args.prod_include_sys:  # systemUsage = node − Σ pods, the projected overhead
            system = np.zeros_like(self.system)
            for j, r in self.usage_slots:
                overhead = self.mats.overhead[r][:, window]
                samples = np.maximum((~np.isnan(overhead)).sum(axis=1), 1)
                mean = np.nansum(overhead, axis=1) / samples
                system[:, j] = np.rint(np.maximum(mean, 0)).astype(np.int64)
            load.prod_usage += system - self.system
            self.system = system
        del usage

    @property
    def _after(self) -> int:
        """The forced-estimation seconds after a pod's bind (0: none)."""
        return self.args.seconds_after_initialized or self.args.seconds_after_scheduled or 0

    def _contributions(self, report: int, bound: Int64Array) -> None:
        """Delta / prod contributions of the ``bound`` pods at ``report``, from their stored
        ``reported`` / ``used`` (the pod-assign cache's rules, see the module docstring)."""
        load = self.inputs
        reported, u = self.reported[bound], self.used[bound]
        e = self.estimate[bound]
        bind = self.bind_time[bound]
        recent = ~reported | (bind > report - self.interval)
        after = self._after
        if after > 0:
            recent |= bind + after * SECOND > report
        nodes = self.node_of[bound]
        delta = np.where(recent[:, None], np.maximum(e - u, 0), 0)
        self._update(load.node_delta, self.delta, bound, nodes, delta)
        if self.uses_prod:
            prod = self.prod[bound]
            active_prod = prod & reported  # podsMetric priority = the pod's own class here
            prod_usage = np.where(active_prod[:, None], u, 0)
            prod_recent = prod & (recent | ~active_prod)
            prod_delta = np.where(prod_recent[:, None], np.maximum(e - prod_usage, 0), 0)
            self._update(load.prod_delta, self.prod_delta, bound, nodes, prod_delta)
            self._update(load.prod_usage, self.prod_usage, bound, nodes, prod_usage)

    def _pod_cache_since(self, before: int, report: int, fresh: list[int]) -> None:
        """The pod cache at ``report`` when the previous one (``before``) read the same window.

        A pod bound since ``before`` has no sample in the window (every column of it is at or
        before ``before``): not reported, usage 0 — the values ``bound`` gave it. A pod bound at
        ``before`` keeps its samples, so only its recency can flip: ``bind > report − interval``
        for binds in ``(before − interval, report − interval]``, ``bind + after > report`` for
        binds in ``(before − after, report − after]``.
        """
        times, pods = self.bind_log
        candidates: list[int] = []
        shifts = [self.interval]
        if self._after > 0:
            shifts.append(self._after * SECOND)
        for shift in shifts:
            lo = bisect.bisect_right(times, before - shift)
            hi = bisect.bisect_right(times, report - shift)
            candidates.extend(pods[lo:hi])
        if fresh:
            alive = np.array(fresh, dtype=np.int64)
            alive = alive[self.node_of[alive] >= 0]
            self.reported[alive] = False
            self.used[alive] = 0
        if not candidates:
            return
        # recomputing a bound pod is always exact (its stored verdict is its current bind's);
        # a pod bound again since is recomputed needlessly, never missed
        chosen = np.unique(np.array(candidates, dtype=np.int64))
        chosen = chosen[self.node_of[chosen] >= 0]
        if len(chosen):
            self._contributions(report, chosen)
