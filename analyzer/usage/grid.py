"""The usage grid every usage computation shares: stats, windows, the sample step, coverage.

A sample at timestamp ``t`` stands for the step interval ``(t - step, t]``; a window of duration
``d`` ending at ``at`` holds the samples with ``at - d < t <= at``, and is missing when its samples
cover less than half of it (koordlet's cold-start rule). ``UsageGrid`` is usage pivoted onto a
regular time grid (keys × times per resource); ``rolling_grid`` is what the scheduler would have
read from NodeMetric at every grid time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
import numpy.typing as npt
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot
from analyzer.usage.percentiles import FloatArray, check_method, rolling_stat

STATS = ("avg", "p50", "p90", "p95", "p99")

RESOURCES = ("cpu", "memory")

NODE_USAGE_WINDOW = timedelta(minutes=5)  # koordlet aggregateDurationSeconds default (300 s)

MIN_COVERAGE = 0.5  # koordlet cold-start filter: samples must span half the window

DAY = timedelta(days=1)


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


def matrix_grid(
    keys: Sequence[str],
    names: Sequence[str],
    times: npt.NDArray[np.int64],
    values: dict[str, FloatArray],
    step: timedelta,
) -> UsageGrid:
    """The grid ``usage_grid`` builds from the long table of these matrices' samples, without
    the table: ``values[resource]`` is a ``names`` × ``times`` matrix (NaN: no sample) on a
    regular grid of ``step`` (ns since the epoch). As the table would hold one row per cell where
    either resource has a sample, the grid runs from the first to the last such time; its rows
    are ``keys`` (a name not in ``keys`` is dropped, a key not in ``names`` stays all-NaN).

    A projected 5,000-node week is 50 M table rows (~3 GB with the grid's own temporaries) that
    the what-if would build only to pivot them back into these matrices.
    """
    keys = [str(k) for k in keys]
    sampled = np.zeros(len(times), dtype=bool)
    for resource in RESOURCES:
        sampled |= ~np.isnan(values[resource]).all(axis=0)
    columns = np.flatnonzero(sampled)
    if not len(columns):
        empty = pd.DatetimeIndex([], tz="UTC")
        return UsageGrid(keys, empty, step, {r: np.zeros((len(keys), 0)) for r in RESOURCES})
    c0, c1 = int(columns[0]), int(columns[-1]) + 1
    first = pd.Timestamp(int(times[c0]), unit="ns", tz="UTC")
    grid_times = pd.date_range(first, periods=c1 - c0, freq=pd.Timedelta(step))
    rows = pd.Index([str(n) for n in names]).get_indexer(keys)
    present = rows >= 0
    out: dict[str, FloatArray] = {}
    for resource in RESOURCES:
        matrix = np.full((len(keys), c1 - c0), np.nan)
        matrix[present] = values[resource][rows[present], c0:c1]
        out[resource] = matrix
    return UsageGrid(keys, grid_times, step, out)


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
