"""The nightly run: one day of a snapshot → aggregates, violations, fragmentation, usage tables.

``run_nightly(snapshot, settings)`` is pure (no files, no templates): it returns a
``NightlyResult`` holding every table and number the nightly report shows, and the run's exit code
(DESIGN.md): 4 with ``fail_on_violations`` when any threshold was breached, else 3 when the data
is partial, else 0. Violations win over partial data because the breaches that *were* seen are
facts a cron job must act on; the report still flags the incomplete data.

The report day is a UTC day ``(midnight, next midnight]`` (a usage sample at t covers the step
ending at t). Thresholds on a stat over a window need data from before midnight, so violations are
evaluated on the day plus a look-back and the breaches are then clipped to the day.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from datetime import date, timedelta
from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.errors import EXIT_OK, EXIT_PARTIAL, EXIT_VIOLATIONS, InputError
from analyzer.core.snapshot import Snapshot, SnapshotMeta
from analyzer.fragmentation.measure import FragmentationResult, fragmentation
from analyzer.nightly.capacity_rollups import pool_rollups, workload_rollups
from analyzer.nightly.free_capacity import Headroom, headroom_at_last_data, resource_summary
from analyzer.nightly.headroom import ShapeHeadroom, empty_headroom, headroom_day
from analyzer.nightly.headroom_shapes import HeadroomShape
from analyzer.nightly.tables import (
    hourly_points,
    hourly_usage,
    node_table,
    pool_table,
    pool_usage,
    sample_coverage,
)
from analyzer.usage.aggregate import daily_rollups
from analyzer.usage.grid import snapshot_step
from analyzer.usage.percentiles import check_method
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.usage.violations import ViolationResult, find_violations

DAY = pd.Timedelta(days=1)


@dataclass(frozen=True)
class NightlySettings:
    """What to analyse and how.

    ``day``: the UTC day to report (default: the last day the snapshot covers);
    ``min_coverage``: below this share of expected usage samples the data is partial (exit 3);
    ``lookback``: data before midnight used so windowed thresholds see full windows.
    """

    day: date | None = None
    method: str = "nearest-rank"
    thresholds: ThresholdConfig = field(default_factory=ThresholdConfig)
    fail_on_violations: bool = False
    min_coverage: float = 0.95
    lookback: timedelta = timedelta(hours=1)
    source_partial: bool = False  # the collector already found the data partial
    extra_warnings: tuple[str, ...] = ()  # e.g. the collector's problems
    # the config's ``headroom:`` shapes (``headroom_shapes``); None: the day's common shapes
    headroom_shapes: tuple[HeadroomShape, ...] | None = None


@dataclass(frozen=True)
class DataQuality:
    """Was the data complete? Coverage of usage samples, incomplete nodes, source warnings."""

    coverage: float  # observed / expected usage samples over all nodes (1.0 = complete)
    expected_samples: int
    observed_samples: int
    incomplete_nodes: int  # nodes below ``min_coverage``
    per_node: pd.DataFrame  # node, pool, expected, observed, coverage
    warnings: tuple[str, ...]
    partial: bool
    step_seconds: int
    # meta.extra["scrape"] of a collected snapshot: source → interval_seconds (None: not
    # measured), method, rate_window_seconds; empty when the snapshot does not record it
    scrape: dict[str, dict[str, Any]] = field(default_factory=dict)
    # meta.extra["query_budget"] of a collected snapshot (docs/collect.md "Query budget"): the
    # points per request and requests in flight it kept; empty for a snapshot read from disk
    # that does not record it
    query_budget: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class NightlySummary:
    """The headline numbers (summary cards; stored per day in the history store)."""

    nodes: int
    pods: int
    nodes_with_breaches: int
    breaches: int
    breach_node_seconds: float  # node-time over threshold (union per node), summed over nodes
    cpu_requested_pct: float
    cpu_used_avg_pct: float
    cpu_used_p95_pct: float
    memory_requested_pct: float
    memory_used_avg_pct: float
    memory_used_p95_pct: float
    cpu_idle_requested_cores: float
    memory_idle_requested_gib: float
    fragmentation_pct: float  # mean over the day of the FGD ratio (CPU), in %
    stranded_cpu_cores: float  # mean over the day
    stranded_memory_gib: float
    coverage_pct: float
    exit_code: int
    step_seconds: int = 0  # the step the day's usage was read at (300 = 5m); 0: not known

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready numbers (NaN → None)."""
        return {k: _clean(v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class NightlyResult:
    """Everything the nightly report shows, for one day."""

    day: date
    start: pd.Timestamp  # midnight opening the day (exclusive)
    end: pd.Timestamp  # next midnight (inclusive)
    meta: SnapshotMeta
    settings: NightlySettings
    rollups: pd.DataFrame  # aggregate.daily_rollups rows of this day
    nodes: pd.DataFrame  # tables.node_table + breach_minutes, worst_pct
    pools: pd.DataFrame  # tables.pool_table
    hourly: pd.DataFrame  # tables.hourly_usage (node, pool, hour, cpu, memory in %)
    violations: ViolationResult  # breaches clipped to the day
    fragmentation: FragmentationResult
    quality: DataQuality
    summary: NightlySummary
    pods_seen: int
    free_capacity: pd.DataFrame  # free_capacity.resource_summary: one row per resource
    headroom: Headroom  # at the last instant with data
    # history/pools and history/workloads rows of this day (capacity_rollups; docs/history.md)
    pool_days: pd.DataFrame = field(default_factory=pd.DataFrame)
    workload_days: pd.DataFrame = field(default_factory=pd.DataFrame)
    # copies of each pod shape that fit by the scheduler's filters, hour by hour (``headroom``)
    shape_headroom: ShapeHeadroom = field(default_factory=empty_headroom)

    @property
    def exit_code(self) -> int:
        return self.summary.exit_code


def _clean(value: Any) -> Any:
    if isinstance(value, float | np.floating):
        return None if np.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def default_day(snapshot: Snapshot) -> date:
    """The last UTC day with data: the day holding the snapshot's final sample."""
    last = snapshot.node_usage["timestamp"].max() if len(snapshot.node_usage) else snapshot.end
    day: date = (pd.Timestamp(last) - pd.Timedelta(1, "ns")).floor("D").date()
    return day


def _utc(times: pd.Series) -> pd.Series:
    """Aware UTC times (an all-NaT column can come back from parquet without its timezone)."""
    return pd.to_datetime(times, utc=True)


def slice_snapshot(
    snapshot: Snapshot, start: pd.Timestamp, end: pd.Timestamp, *, pod_usage: bool = True
) -> Snapshot:
    """The part of ``snapshot`` in ``(start, end]``: usage samples, and the nodes and pods alive.

    ``pod_usage=False`` keeps the pod usage table as it is (cheaper when it is not needed).
    """
    nodes = snapshot.nodes
    first_seen, last_seen = _utc(nodes["first_seen"]), _utc(nodes["last_seen"])
    alive = (first_seen.isna() | (first_seen <= end)) & (last_seen.isna() | (last_seen > start))
    pods = snapshot.pods
    began = _utc(pods["created"]).fillna(_utc(pods["first_seen"]))
    ended = _utc(pods["finished"]).fillna(_utc(pods["last_seen"]))
    overlap = (began.isna() | (began <= end)) & (ended.isna() | (ended > start))

    def window(frame: pd.DataFrame) -> pd.DataFrame:
        stamps = frame["timestamp"]
        if frame.empty or (stamps.min() > start and stamps.max() <= end):
            return frame  # already inside: no copy (pod_usage can hold millions of rows)
        return frame[(stamps > start) & (stamps <= end)].reset_index(drop=True)

    meta = replace(snapshot.meta, start=start.isoformat(), end=end.isoformat())
    return Snapshot(
        meta=meta,
        nodes=nodes[alive].reset_index(drop=True),
        pods=pods[overlap].reset_index(drop=True),
        node_usage=window(snapshot.node_usage),
        pod_usage=window(snapshot.pod_usage) if pod_usage else snapshot.pod_usage,
    )


def _union_minutes(breaches: pd.DataFrame) -> float:
    """Minutes covered by at least one of ``breaches`` (cpu and memory breaches may overlap)."""
    ordered = breaches.sort_values("start")
    total = pd.Timedelta(0)
    cur_start, cur_end = None, None
    for row in ordered.itertuples(index=False):
        if cur_end is None or row.start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = row.start, row.end
        else:
            cur_end = max(cur_end, row.end)
    if cur_end is not None:
        total += cur_end - cur_start
    return float(total.total_seconds() / 60.0)


def _clip_violations(result: ViolationResult, start: pd.Timestamp) -> ViolationResult:
    """Keep breaches reaching into the day, clip their start at midnight, redo the per-node sums."""
    breaches = result.breaches
    if len(breaches):
        breaches = breaches[breaches["end"] > start].copy()
        breaches["start"] = breaches["start"].where(breaches["start"] >= start, start)
        breaches["minutes"] = (breaches["end"] - breaches["start"]).dt.total_seconds() / 60.0
        breaches = breaches.reset_index(drop=True)
    per_node = result.per_node.copy()
    if len(per_node):
        by_node = breaches.groupby("node") if len(breaches) else None
        count = by_node.size() if by_node is not None else pd.Series(dtype="int64")
        minutes = (
            by_node[["start", "end"]].apply(_union_minutes)
            if by_node is not None
            else pd.Series(dtype="float64")
        )
        per_node["breaches"] = per_node["node"].map(count).fillna(0).astype("int64")
        per_node["breach_minutes"] = per_node["node"].map(minutes).astype("float64").fillna(0.0)
        if len(breaches):
            worst = breaches.sort_values("peak_pct", ascending=False).drop_duplicates("node")
            worst = worst.set_index("node")
            per_node["worst_pct"] = per_node["node"].map(worst["peak_pct"]).astype("float64")
            per_node["worst_resource"] = per_node["node"].map(worst["resource"])
            per_node["worst_kind"] = per_node["node"].map(worst["kind"])
        else:
            per_node["worst_pct"] = np.nan
        per_node = per_node.sort_values(
            ["breach_minutes", "worst_pct", "node"], ascending=[False, False, True]
        ).reset_index(drop=True)
    return replace(result, breaches=breaches, per_node=per_node)


def _quality(day: Snapshot, settings: NightlySettings, start: pd.Timestamp) -> DataQuality:
    step = int(snapshot_step(day).total_seconds())  # meta.step_seconds, else inferred
    per_node = sample_coverage(
        day.node_usage, day.nodes, start=start, end=start + DAY, step_seconds=step
    )
    expected = int(per_node["expected"].sum())
    observed = int(per_node["observed"].sum())
    coverage = observed / expected if expected else 0.0
    incomplete = int((per_node["coverage"] < settings.min_coverage).sum())
    warnings = tuple(str(w) for w in day.meta.warnings) + settings.extra_warnings
    # Collector coverage (``analyzer.collect.run``): a query that ended in an error is missing data.
    queries = (day.meta.coverage or {}).get("queries") or {}
    failed = [name for name, q in queries.items() if isinstance(q, dict) and q.get("error")]
    warnings += tuple(f"query {name} failed: {queries[name]['error']}" for name in failed)
    partial = (
        coverage < settings.min_coverage
        or incomplete > 0
        or bool(failed)
        or settings.source_partial
    )
    return DataQuality(
        coverage=coverage,
        expected_samples=expected,
        observed_samples=observed,
        incomplete_nodes=incomplete,
        per_node=per_node,
        warnings=warnings,
        partial=partial,
        step_seconds=int(step),
        scrape={
            str(k): dict(v)
            for k, v in ((day.meta.extra or {}).get("scrape") or {}).items()
            if isinstance(v, dict)
        },
        query_budget=_query_budget((day.meta.extra or {}).get("query_budget")),
    )


def _query_budget(raw: object) -> dict[str, int]:
    """The recorded query budget's whole-number fields (anything else in a hand-edited meta.json
    is left out, not shown)."""
    if not isinstance(raw, dict):
        return {}
    return {str(k): v for k, v in raw.items() if isinstance(v, int) and not isinstance(v, bool)}


def _pct(numerator: float, denominator: float) -> float:
    return float(numerator) / float(denominator) * 100.0 if denominator else float("nan")


def _summary(
    nodes: pd.DataFrame,
    pools: pd.DataFrame,
    violations: ViolationResult,
    frag: FragmentationResult,
    quality: DataQuality,
    pods_seen: int,
    exit_code: int,
) -> NightlySummary:
    def total(column: str) -> float:
        return float(nodes[column].sum())

    over = frag.over_time
    breaches = violations.breaches
    return NightlySummary(
        nodes=len(nodes),
        pods=pods_seen,
        nodes_with_breaches=int(breaches["node"].nunique()) if len(breaches) else 0,
        breaches=len(breaches),
        breach_node_seconds=float(violations.per_node["breach_minutes"].sum()) * 60.0
        if len(violations.per_node)
        else 0.0,
        cpu_requested_pct=_pct(total("cpu_requested"), total("cpu_allocatable")),
        cpu_used_avg_pct=_pct(total("cpu_avg"), total("cpu_allocatable")),
        # Cluster p95 = the highest pool p95 share: the pool total is what ran hot together.
        cpu_used_p95_pct=float(pools["cpu_p95_pct"].max()) if len(pools) else float("nan"),
        memory_requested_pct=_pct(total("memory_requested"), total("memory_allocatable")),
        memory_used_avg_pct=_pct(total("memory_avg"), total("memory_allocatable")),
        memory_used_p95_pct=float(pools["memory_p95_pct"].max()) if len(pools) else float("nan"),
        cpu_idle_requested_cores=total("cpu_idle_requested") / 1000.0,
        memory_idle_requested_gib=total("memory_idle_requested") / 2**30,
        fragmentation_pct=_mean(over, "cpu", "frag_ratio") * 100.0,
        stranded_cpu_cores=_mean(over, "cpu", "stranded") / 1000.0,
        stranded_memory_gib=_mean(over, "memory", "stranded") / 2**30,
        coverage_pct=quality.coverage * 100.0,
        exit_code=exit_code,
        step_seconds=quality.step_seconds,
    )


def _mean(over_time: pd.DataFrame, resource: str, column: str) -> float:
    """Day mean of one fragmentation measure (``over_time`` is long: time × resource)."""
    if over_time.empty or column not in over_time.columns:
        return float("nan")
    values = pd.to_numeric(
        over_time.loc[over_time["resource"] == resource, column], errors="coerce"
    )
    return float(values.mean()) if values.notna().any() else float("nan")


def fragmentation_times(
    day: Snapshot, start: pd.Timestamp, end: pd.Timestamp
) -> list[pd.Timestamp]:
    """Hour marks of the day up to its last usage sample, then that sample's instant.

    A snapshot collected shortly after midnight can end at 23:55: at 24:00 no node is seen any
    more, and a placement taken there would read as an empty cluster (0 pods of headroom). The
    last point is therefore the last instant that has data, and the page names it.
    """
    stamps = day.node_usage["timestamp"]
    inside = stamps[(stamps > start) & (stamps <= end)]
    last = pd.Timestamp(inside.max()) if len(inside) else end
    marks = [t + pd.Timedelta(hours=1) for t in hourly_points(start, end)]
    times = [t for t in marks if t <= last]
    if not times or times[-1] != last:
        times.append(last)
    return times


def _ending_at(snapshot: Snapshot, last: pd.Timestamp) -> Snapshot:
    return replace(snapshot, meta=replace(snapshot.meta, end=last.isoformat()))


def run_nightly(snapshot: Snapshot, settings: NightlySettings) -> NightlyResult:
    """Analyse one day of ``snapshot``; see the module docstring for the exit code rule."""
    check_method(settings.method)
    day = settings.day or default_day(snapshot)
    start = pd.Timestamp(day, tz="UTC")
    end = start + DAY
    if len(snapshot.node_usage) == 0:
        raise InputError("snapshot: table node_usage is empty; collect a range with usage data")
    first = snapshot.node_usage["timestamp"].min()
    last = snapshot.node_usage["timestamp"].max()
    if last <= start or first > end:
        # A sample at t covers the step ending at t, so a sample at 00:00 belongs to the day before.
        first_day, last_day = ((t - pd.Timedelta(1, "ns")).floor("D") for t in (first, last))
        raise InputError(
            f"--date: {day} has no usage data; the snapshot's usage runs from "
            f"{first:%Y-%m-%dT%H:%M:%SZ} to {last:%Y-%m-%dT%H:%M:%SZ}, so the UTC days with data "
            f"are {first_day:%Y-%m-%d} to {last_day:%Y-%m-%d}, both included "
            "(a sample at 00:00 closes the day before)"
        )
    with_lookback = slice_snapshot(snapshot, start - pd.Timedelta(settings.lookback), end)
    # Pod usage serves prod thresholds only, so the day itself need not narrow it again.
    today = slice_snapshot(with_lookback, start, end, pod_usage=False)
    thresholds = replace(settings.thresholds, method=settings.method)
    violations = _clip_violations(find_violations(with_lookback, thresholds), start)
    rollups = daily_rollups(today, method=settings.method)
    rollups = rollups[rollups["day"] == start].reset_index(drop=True)
    nodes = node_table(rollups, today.nodes)
    per_node = violations.per_node.set_index("node") if len(violations.per_node) else None
    nodes["breach_minutes"] = (
        nodes["node"].map(per_node["breach_minutes"]).fillna(0.0) if per_node is not None else 0.0
    )
    nodes["worst_pct"] = (
        nodes["node"].map(per_node["worst_pct"]).astype("float64")
        if per_node is not None
        else np.nan
    )
    # the pools' usage stats serve the report's pool table and the history's pool rows alike
    usage = pool_usage(today.node_usage, today.nodes, start=start, end=end, method=settings.method)
    pools = pool_table(
        today.node_usage, nodes, start=start, end=end, method=settings.method, usage=usage
    )
    hourly = hourly_usage(today.node_usage, today.nodes, start, end)
    times = fragmentation_times(today, start, end)
    # A day whose data stops early (23:55) ends there: pods seen until then still run at the last
    # point (``pod_intervals`` ends a pod only when it vanished before the snapshot's end).
    frag_day = today if times[-1] >= end else _ending_at(today, times[-1])
    frag = fragmentation(frag_day, times=times)
    quality = _quality(today, settings, start)
    if settings.fail_on_violations and len(violations.breaches):
        exit_code = EXIT_VIOLATIONS
    elif quality.partial:
        exit_code = EXIT_PARTIAL
    else:
        exit_code = EXIT_OK
    pods_seen = int(today.pods["node"].notna().sum())
    summary = _summary(nodes, pools, violations, frag, quality, pods_seen, exit_code)
    return NightlyResult(
        day=day,
        start=start,
        end=end,
        meta=snapshot.meta,
        settings=settings,
        rollups=rollups,
        nodes=nodes,
        pools=pools,
        hourly=hourly,
        violations=violations,
        fragmentation=frag,
        quality=quality,
        summary=summary,
        pods_seen=pods_seen,
        free_capacity=resource_summary(frag),
        headroom=headroom_at_last_data(frag),
        pool_days=pool_rollups(today, start, end, method=settings.method, usage=usage),
        workload_days=workload_rollups(today, start, end, method=settings.method),
        shape_headroom=headroom_day(frag_day, times, settings.headroom_shapes),
    )
