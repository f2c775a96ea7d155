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
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.durations import format_duration
from analyzer.core.errors import InputError
from analyzer.core.frames import utc
from analyzer.core.snapshot import Snapshot
from analyzer.usage.grid import RESOURCES, STATS, infer_step, missing_mask, rolling_grid, usage_grid
from analyzer.usage.nodemetric import nodemetric_objects
from analyzer.usage.percentiles import check_method, grouped_stats
from analyzer.usage.rollups import node_day_rollups

DEFAULT_DURATIONS = (
    timedelta(minutes=5),
    timedelta(minutes=10),
    timedelta(minutes=30),
    timedelta(hours=1),
    timedelta(days=1),
)


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
            raise InputError(f"--durations: {format_duration(duration)} is not a positive duration")
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


def daily_rollups(snapshot: Snapshot, *, method: str = "nearest-rank") -> pd.DataFrame:
    """Node × UTC day × resource × stat rollups for reports and the history store.

    Columns: ``node``, ``pool``, ``day`` (datetime64 UTC midnight), ``resource``, ``stat``,
    ``value`` (stat of the samples in ``(day, day + 1d]``; NaN if they cover < half the day),
    ``allocatable`` (int), ``requested`` (float: time-averaged Σ pod requests on the node over the
    part of the day the snapshot covers), ``samples`` (int), ``missing`` (bool).
    """
    return node_day_rollups(snapshot, method=method)


def to_nodemetrics(
    snapshot: Snapshot, aggregates: pd.DataFrame, *, at: pd.Timestamp
) -> list[dict[str, Any]]:
    """Koordinator ``NodeMetric`` objects (``slo.koordinator.sh/v1alpha1``), one per node.

    ``aggregates`` is ``window_aggregates`` output for the same ``at``; see
    ``analyzer.usage.nodemetric.nodemetric_objects`` for the fields.
    """
    return nodemetric_objects(snapshot, aggregates, at=at)
