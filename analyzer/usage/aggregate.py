"""NodeMetric-like usage aggregates: per node × resource × window × stat, rolling and daily.

Semantics (DESIGN.md "Semantics", research/koordinator.md §4):

- A sample at timestamp ``t`` stands for the step interval ``(t - step, t]`` (the snapshot's usage
  grid), so a window of duration ``d`` ending at ``at`` holds the samples with
  ``at - d < t <= at``.
- Stats: ``avg`` (arithmetic mean) and ``p50/p90/p95/p99`` by ``nearest-rank`` (koordlet, default)
  or ``linear`` (Prometheus ``quantile_over_time``); see ``analyzer.usage.percentiles``.
- Cold-start / gap rule: the samples of a window cover ``samples × step``; when that is less than
  half the window the window is **missing** (value NaN, ``missing`` True), never guessed —
  koordlet leaves such an aggregate empty and the scheduler skips it.
- Resources: ``cpu`` (millicores used) and ``memory`` (bytes, MemTotal − MemAvailable).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot
from analyzer.usage.percentiles import (
    STAT_QUANTILES,
    FloatArray,
    check_method,
    grouped_stats,
    rolling_stat,
)

STATS = ("avg", "p50", "p90", "p95", "p99")
RESOURCES = ("cpu", "memory")
DEFAULT_DURATIONS = (
    timedelta(minutes=5),
    timedelta(minutes=10),
    timedelta(minutes=30),
    timedelta(hours=1),
    timedelta(days=1),
)
NODE_USAGE_WINDOW = timedelta(minutes=5)  # koordlet aggregateDurationSeconds default (300 s)
MIN_COVERAGE = 0.5  # koordlet cold-start filter: samples must span half the window
DAY = timedelta(days=1)
OPEN_END = pd.Timestamp("2200-01-01T00:00:00Z")  # end of a pod still running when the data ends


def index_in(values: pd.Series, keys: Sequence[str]) -> npt.NDArray[np.int64]:
    """Position of each value in ``keys`` (−1 if absent), via Arrow's hash kernel.

    Usage tables hold millions of string keys; this is several times faster than pandas'
    ``Index.get_indexer`` on them.
    """
    found = pc.index_in(
        pa.array(values, type=pa.string()), value_set=pa.array(list(keys), type=pa.string())
    )
    result: npt.NDArray[np.int64] = (
        pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)
    )
    return result


def check_stat(stat: str) -> str:
    """Return ``stat`` if it is one of ``STATS``, else ``InputError`` listing them."""
    if stat not in STATS:
        raise InputError(f"stat: {stat!r} is not a NodeMetric stat (one of {', '.join(STATS)})")
    return stat


def infer_step(usage: pd.DataFrame, default: timedelta = timedelta(minutes=1)) -> timedelta:
    """The sample step of a usage table: the most common gap between a series' timestamps."""
    key = "node" if "node" in usage.columns else "uid"
    if usage.empty:
        return default
    ordered = usage.sort_values([key, "timestamp"])
    gaps = ordered["timestamp"].diff()
    same = ordered[key].eq(ordered[key].shift())
    gaps = gaps[same & (gaps > pd.Timedelta(0))]
    if gaps.empty:
        return default
    step: timedelta = pd.Timedelta(gaps.mode().iloc[0]).to_pytimedelta()
    return step


def snapshot_step(snapshot: Snapshot) -> timedelta:
    """The snapshot's usage step (``meta.step_seconds``, else inferred from the data)."""
    if snapshot.meta.step_seconds and snapshot.meta.step_seconds > 0:
        return timedelta(seconds=snapshot.meta.step_seconds)
    return infer_step(snapshot.node_usage)


def missing_mask(samples: np.ndarray, step: timedelta, duration: timedelta) -> np.ndarray:
    """True where ``samples × step`` covers less than half of ``duration`` (koordlet cold start)."""
    covered = samples.astype(np.float64) * step.total_seconds()
    result: np.ndarray = covered < MIN_COVERAGE * duration.total_seconds()
    return result


def window_aggregates(
    node_usage: pd.DataFrame,
    *,
    at: pd.Timestamp,
    durations: Sequence[timedelta],
    method: str = "nearest-rank",
    step: timedelta | None = None,
) -> pd.DataFrame:
    """Stats of each node's usage over windows ``(at - d, at]`` for each duration ``d``.

    Columns: ``node`` (str), ``resource`` ("cpu" | "memory"), ``duration`` (timedelta),
    ``stat`` (one of ``STATS``), ``value`` (float: millicores or bytes; NaN if missing),
    ``samples`` (int, samples in the window), ``missing`` (bool: samples cover < half the window).
    One row per node × resource × duration × stat, in that order. ``step`` defaults to the
    step inferred from the data.
    """
    check_method(method)
    at = pd.Timestamp(at)
    step = step or infer_step(node_usage)
    codes, nodes = pd.factorize(node_usage["node"], sort=True)
    times = pd.DatetimeIndex(utc(node_usage["timestamp"])).as_unit("ns").asi8
    end_ns = at.as_unit("ns").value
    # Only rows inside the longest window matter: cut once, then mask per duration.
    longest = max((pd.Timedelta(d).value for d in durations), default=0)
    near = (times > end_ns - longest) & (times <= end_ns) & (codes >= 0)
    codes, times = codes[near].astype(np.int64), times[near]
    columns = {r: node_usage[r].to_numpy(dtype=np.float64)[near] for r in RESOURCES}
    rows: list[pd.DataFrame] = []
    for duration in durations:
        if duration <= timedelta(0):
            raise InputError(f"--durations: {duration} is not a positive duration")
        inside = times > end_ns - pd.Timedelta(duration).value
        ids = codes[inside]
        for resource in RESOURCES:
            values = columns[resource][inside]
            stats = grouped_stats(ids, values, len(nodes), method)
            samples = stats["count"].astype(np.int64)
            missing = missing_mask(samples, step, duration)
            for stat in STATS:
                rows.append(
                    pd.DataFrame(
                        {
                            "node": nodes.astype(str),
                            "resource": resource,
                            "duration": pd.Timedelta(duration),
                            "stat": stat,
                            "value": np.where(missing, np.nan, stats[stat]),
                            "samples": samples,
                            "missing": missing,
                        }
                    )
                )
    if not rows:
        return pd.DataFrame(
            columns=["node", "resource", "duration", "stat", "value", "samples", "missing"]
        )
    out = pd.concat(rows, ignore_index=True)
    order = {name: i for i, name in enumerate(STATS)}
    out["_stat"] = out["stat"].map(order)
    out = out.sort_values(["node", "resource", "duration", "_stat"], kind="stable")
    return out.drop(columns="_stat").reset_index(drop=True)


@dataclass
class UsageGrid:
    """Usage on a regular time grid: ``values[resource]`` is a keys × times float matrix (NaN = gap)."""

    keys: list[str]
    times: pd.DatetimeIndex
    step: timedelta
    values: dict[str, FloatArray]


def usage_grid(
    usage: pd.DataFrame,
    *,
    step: timedelta,
    key: str = "node",
    start: pd.Timestamp | None = None,
    end: pd.Timestamp | None = None,
    keys: Sequence[str] | None = None,
) -> UsageGrid:
    """Pivot a long usage table (``key``, timestamp, cpu, memory) onto a full grid of ``step``.

    Timestamps are snapped to the nearest grid point from ``start`` (default: the first sample);
    duplicates at one point keep the last row. ``keys`` fixes the rows (default: the keys in
    ``usage``, sorted); rows of other keys are dropped, keys without rows stay all-NaN.
    """
    keys = (
        [str(k) for k in keys]
        if keys is not None
        else sorted(str(k) for k in usage[key].dropna().unique())
    )
    if usage.empty:
        times = pd.DatetimeIndex([], tz="UTC")
        return UsageGrid(keys, times, step, {r: np.zeros((len(keys), 0)) for r in RESOURCES})
    first = pd.Timestamp(start) if start is not None else usage["timestamp"].min()
    last = pd.Timestamp(end) if end is not None else usage["timestamp"].max()
    step_ns = int(pd.Timedelta(step).value)
    width = int((last - first).value // step_ns) + 1
    times = pd.date_range(first, periods=width, freq=pd.Timedelta(step_ns, "ns"))
    offsets = (usage["timestamp"] - first).to_numpy().astype("timedelta64[ns]").astype(np.int64)
    cols = np.rint(offsets / step_ns).astype(np.int64)
    rows = index_in(usage[key], keys)
    inside = (cols >= 0) & (cols < width) & (rows >= 0)
    values: dict[str, FloatArray] = {}
    for resource in RESOURCES:
        matrix = np.full((len(keys), width), np.nan)
        matrix[rows[inside], cols[inside]] = usage[resource].to_numpy(dtype=np.float64)[inside]
        values[resource] = matrix
    return UsageGrid(keys, times, step, values)


def rolling_grid(
    grid: UsageGrid,
    *,
    duration: timedelta,
    stat: str,
    method: str = "nearest-rank",
    min_coverage: float = MIN_COVERAGE,
    every: int = 1,
) -> UsageGrid:
    """The stat over the trailing window ``(t - duration, t]`` at every grid time ``t``.

    What the scheduler would have read from NodeMetric at ``t``. A point whose window samples
    cover less than ``min_coverage`` of the window is NaN (missing). ``every`` evaluates only
    every k-th point (the last one always), leaving the others NaN — for long windows on fine grids.
    """
    check_stat(stat)
    check_method(method)
    window = max(1, int(np.ceil(duration / grid.step)))
    out: dict[str, FloatArray] = {}
    for resource, matrix in grid.values.items():
        values, counts = rolling_stat(matrix, window, stat, method, every)
        covered = counts * grid.step.total_seconds()
        values[covered < min_coverage * duration.total_seconds()] = np.nan
        out[resource] = values
    return UsageGrid(grid.keys, grid.times, grid.step, out)


def rolling_aggregates(
    node_usage: pd.DataFrame,
    *,
    duration: timedelta,
    stat: str,
    method: str = "nearest-rank",
    step: timedelta | None = None,
) -> pd.DataFrame:
    """Long form of ``rolling_grid`` for every node along the whole period.

    Columns: ``node``, ``timestamp`` (window end), ``cpu``, ``memory`` (the stat; NaN = missing).
    """
    step = step or infer_step(node_usage)
    grid = rolling_grid(
        usage_grid(node_usage, step=step), duration=duration, stat=stat, method=method
    )
    n_nodes, n_times = len(grid.keys), len(grid.times)
    return pd.DataFrame(
        {
            "node": np.repeat(np.array(grid.keys, dtype=object), n_times),
            "timestamp": np.tile(grid.times.to_numpy(), n_nodes),
            "cpu": grid.values["cpu"].ravel(),
            "memory": grid.values["memory"].ravel(),
        }
    )


def utc(column: pd.Series) -> pd.Series:
    """A time column as ``datetime64[ns, UTC]`` (an all-NaT column may load tz-naive)."""
    return pd.to_datetime(column, utc=True).astype("datetime64[ns, UTC]")


def pod_intervals(snapshot: Snapshot) -> pd.DataFrame:
    """When each pod held its node: columns ``uid``, ``node``, ``start``, ``end`` (UTC, ``[start, end)``).

    start = scheduled, else started, first_seen, created; end = finished, else last_seen when the
    pod vanished before the snapshot's end; a pod still there at the end runs on (``OPEN_END``).
    Pods never bound to a node are left out.
    """
    pods = snapshot.pods
    bound = pods["node"].notna().to_numpy()
    col = {name: utc(pods[name]) for name in ("scheduled", "started", "first_seen", "created")}
    start = col["scheduled"].fillna(col["started"]).fillna(col["first_seen"])
    start = start.fillna(col["created"]).fillna(snapshot.start)
    last_seen = utc(pods["last_seen"])
    vanished = last_seen.where(last_seen < snapshot.end)
    end = utc(pods["finished"]).fillna(vanished).fillna(OPEN_END)
    frame = pd.DataFrame(
        {
            "uid": pods["uid"].to_numpy(),
            "node": pods["node"].to_numpy(),
            "start": start.to_numpy(),
            "end": end.to_numpy(),
        }
    )
    return frame.loc[bound].reset_index(drop=True)


def daily_rollups(snapshot: Snapshot, *, method: str = "nearest-rank") -> pd.DataFrame:
    """Node × UTC day × resource × stat rollups for reports and the history store.

    Columns: ``node``, ``pool``, ``day`` (datetime64 UTC midnight), ``resource``, ``stat``,
    ``value`` (stat of the samples in ``(day, day + 1d]``; NaN if they cover < half the day),
    ``allocatable`` (int), ``requested`` (float: time-averaged Σ pod requests on the node over the
    part of the day the snapshot covers), ``samples`` (int), ``missing`` (bool).
    """
    # Imported here: the rollups build on this module's helpers.
    from analyzer.usage.rollups import node_day_rollups

    return node_day_rollups(snapshot, method=method)


def frame_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """JSON-ready records of a result frame: times RFC 3339, NaN/NA → None, numpy → Python."""
    out = []
    for row in frame.to_dict(orient="records"):
        record: dict[str, Any] = {}
        for key, value in row.items():
            if isinstance(value, pd.Timestamp):
                record[key] = value.isoformat().replace("+00:00", "Z")
            elif value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value)):
                record[key] = None
            elif isinstance(value, np.generic):
                record[key] = value.item()
            else:
                record[key] = value
        out.append(record)
    return out


def to_nodemetrics(
    snapshot: Snapshot, aggregates: pd.DataFrame, *, at: pd.Timestamp
) -> list[dict[str, Any]]:
    """Koordinator ``NodeMetric`` objects (``slo.koordinator.sh/v1alpha1``), one per node.

    ``aggregates`` is ``window_aggregates`` output for the same ``at``; see
    ``analyzer.usage.nodemetric.nodemetric_objects`` for the fields.
    """
    # Imported here: the NodeMetric builder uses this module's window and pod helpers.
    from analyzer.usage.nodemetric import nodemetric_objects

    return nodemetric_objects(snapshot, aggregates, at=at)


__all__ = [
    "DEFAULT_DURATIONS",
    "RESOURCES",
    "STATS",
    "STAT_QUANTILES",
    "UsageGrid",
    "daily_rollups",
    "frame_records",
    "index_in",
    "infer_step",
    "missing_mask",
    "pod_intervals",
    "rolling_aggregates",
    "rolling_grid",
    "snapshot_step",
    "to_nodemetrics",
    "usage_grid",
    "utc",
    "window_aggregates",
]
