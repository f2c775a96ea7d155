"""Build the ``pod_usage`` table from the evaluated pod CPU and memory queries.

The two ``kind: samples`` queries arrive as one :class:`SampleTable` (rows of (namespace/pod
group, grid step) with a CPU and a memory column). cAdvisor series carry namespace and pod names
only, so each row goes to the pod uid with that name whose lifetime covers it (names are reused,
not at once). Rows after a pod's last ``kube_pod_info`` sample or its finish time are dropped:
backfilled or unscraped data has no staleness markers, so a gauge would otherwise linger for the
lookback.

A week of pod usage at 500 nodes is tens of millions of rows, so the table is *consumed*: each
time-chunk part is released as soon as it is copied into the result, rows stay in that order
(time chunks; within one, by pod then time), and the uid column is categorical (4 bytes per row
instead of a 36-character string).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from analyzer.collect.common import label
from analyzer.core.columns import category_column, codes_dtype, utc_column
from analyzer.prom.client import Series
from analyzer.prom.fetch import QueryResult
from analyzer.prom.sample_table import SampleTable
from analyzer.prom.time_grid import TimeGrid

CPU_QUERY = "pod_cpu_usage"
MEMORY_QUERY = "pod_memory_working_set"
_SCALE = {CPU_QUERY: 1000.0, MEMORY_QUERY: 1.0}  # cores → millicores; bytes stay
_NONE, _MANY = -1, -2  # a group matching no pod / several pods (a reused name)

IntArray = NDArray[np.int32]


def pod_samples(results: dict[str, QueryResult], grid: TimeGrid) -> SampleTable:
    """The joined CPU/memory table: the collector's, or one built from plain series (tests)."""
    tables = {id(r.table): r.table for n in _SCALE if (r := results.get(n)) and r.table}
    for table in tables.values():
        if all(name in table.names for name in _SCALE):
            return table
    grid_times = np.arange(grid.start, grid.end + 1, grid.step, dtype=np.float64)
    by_name: dict[str, list[Series]] = {}
    for name in _SCALE:
        result = results.get(name)
        if result is None:
            by_name[name] = []
        elif result.table is not None and name in result.table.names:
            by_name[name] = result.table.series(name, grid_times)
        else:
            by_name[name] = list(result.series)
    return SampleTable.from_series(by_name, grid.start, grid.step)


def _seconds(frame: pd.DataFrame, column: str) -> NDArray[np.float64]:
    if frame.empty or column not in frame.columns:
        return np.zeros(len(frame))
    seconds = (frame[column] - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
    result: NDArray[np.float64] = seconds.to_numpy(dtype=np.float64, na_value=np.nan)
    return result


UnmatchedKey = tuple[str, tuple[tuple[str, str], ...]]  # (query, the group's sorted labels)


def build_pod_usage(
    results: dict[str, QueryResult], pods: pd.DataFrame, grid: TimeGrid
) -> tuple[pd.DataFrame, int]:
    """``pod_usage`` per uid on the step grid, and the number of cAdvisor series with no pod."""
    frame, unmatched = pod_usage_rows(results, pods, grid)
    return frame, len(unmatched)


def pod_usage_rows(
    results: dict[str, QueryResult], pods: pd.DataFrame, grid: TimeGrid
) -> tuple[pd.DataFrame, set[UnmatchedKey]]:
    """``pod_usage`` per uid on the step grid, and which cAdvisor series (query, labels) match
    no pod: a collect read day by day counts a series once over its days, not once a day."""
    table = pod_samples(results, grid)
    for name in _SCALE:  # the results no longer hold the table: it is released as it is read
        if (result := results.get(name)) is not None:
            result.table = None
    uids = pods["uid"].astype(str).to_numpy() if not pods.empty else np.zeros(0, dtype=object)
    # A pod exists from its creation; first_seen (5m resolution) is the fallback.
    first = np.fmin(_seconds(pods, "created"), _seconds(pods, "first_seen"))
    first = np.where(np.isnan(first), -np.inf, first)
    # fmin ignores NaN: the earlier of last sample and finish time, or +inf when neither is known.
    last = np.fmin(_seconds(pods, "last_seen"), _seconds(pods, "finished"))
    # The last grid step each pod may have usage at (steps are exact multiples of the grid step).
    last_step = np.floor((last - grid.start) / grid.step)
    last_step = np.where(np.isnan(last_step), np.iinfo(np.int32).max, last_step)
    last_step = np.clip(last_step, -1, np.iinfo(np.int32).max).astype(np.int32)

    by_name: dict[tuple[str, str], list[int]] = {}
    if not pods.empty:
        for i, (ns, name) in enumerate(zip(pods["namespace"], pods["name"], strict=True)):
            by_name.setdefault((str(ns), str(name)), []).append(i)
    members = [
        sorted(by_name.get((label(g, "namespace"), label(g, "pod")), []), key=lambda i: first[i])
        for g in table.groups
    ]
    single = np.array(
        [m[0] if len(m) == 1 else (_NONE if not m else _MANY) for m in members], dtype=np.int32
    )
    if not len(last_step):  # no pods: every group is unmatched
        last_step = np.zeros(1, dtype=np.int32)
    # One pass over the table's parts (time chunks), each released once copied: the peak is
    # about one table, not the table plus a sorted copy.
    total = len(table)
    # The final columns, allocated once (untouched pages cost nothing), filled as the parts are
    # released and wrapped without a copy (``analyzer.core.columns``).
    categories = pd.Index(uids, dtype="str")
    codes = np.empty(total, dtype=codes_dtype(categories))
    stamp_ns = np.empty(total, dtype=np.int64)
    ns_start, ns_step = grid.start * 1_000_000_000, grid.step * 1_000_000_000
    cpu = np.empty(total)
    memory = np.empty(total)
    seen = {name: np.zeros(len(table.groups), dtype=bool) for name in _SCALE}
    at = 0
    for group, step, values in table.pop_parts():
        for name in _SCALE:  # non-finite values are no values (Prometheus' NaN/Inf dropped)
            values[name][~np.isfinite(values[name])] = np.nan
            seen[name][group[~np.isnan(values[name])]] = True
        entity = single[group]
        _resolve_reused_names(entity, group, step, members, first, grid)
        keep = (entity >= 0) & (step <= last_step[np.maximum(entity, 0)])
        keep &= ~np.isnan(values[CPU_QUERY]) | ~np.isnan(values[MEMORY_QUERY])
        n = int(np.count_nonzero(keep))
        codes[at : at + n] = entity[keep]
        stamp_ns[at : at + n] = step[keep].astype(np.int64) * ns_step + ns_start
        cpu[at : at + n] = values[CPU_QUERY][keep] * _SCALE[CPU_QUERY]
        memory[at : at + n] = values[MEMORY_QUERY][keep] * _SCALE[MEMORY_QUERY]
        at += n
    unmatched = {
        (name, tuple(sorted(table.groups[g].items())))
        for name in _SCALE
        for g in np.flatnonzero(seen[name] & (single == _NONE))
    }
    frame = pd.DataFrame(
        {
            "uid": category_column(codes[:at], categories),
            "timestamp": utc_column(stamp_ns[:at]),
            "cpu": cpu[:at],
            "memory": memory[:at],
        },
        copy=False,
    )
    return frame, unmatched


def _resolve_reused_names(
    entity: IntArray,
    group: IntArray,
    step: IntArray,
    members: list[list[int]],
    first: NDArray[np.float64],
    grid: TimeGrid,
) -> None:
    """Rows of names several pods had: each goes to the latest pod created at or before it."""
    rows = np.flatnonzero(entity == _MANY)
    if not len(rows):
        return
    rows = rows[np.argsort(group[rows], kind="stable")]
    groups = group[rows]
    bounds = np.flatnonzero(np.diff(groups)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(rows)], strict=True):
        part = rows[lo:hi]
        candidates = members[int(groups[lo])]
        starts = first[candidates]
        times = grid.start + step[part].astype(np.float64) * grid.step
        choice = np.clip(np.searchsorted(starts, times, side="right") - 1, 0, None)
        entity[part] = np.asarray(candidates, dtype=np.int32)[choice]
