"""Projected usage under a strategy, and the projected snapshot the evaluation reads.

DESIGN.md "Replay": projected node usage = the node's **overhead** (observed node usage minus the
observed usage of the pods that really ran on it: kubelet, OS, sandboxes, measurement skew) + the
usage series of the pods the strategy put there. A pod's usage sample at grid time ``t`` belongs
to the node the pod was bound to at ``t`` (a run ``[start, end)``; a run that began without any
wait also takes the samples before it, a run that ended with the pod's real departure also takes
the samples after it — so ``observed`` reproduces the real node usage exactly). Samples of a pod
while it was pending are lost, like the work it could not do. The projection is clamped at 0.

The projected snapshot has the same nodes, one pod row per run (a pod evicted by a leaving node
and placed again gets a second row, uid ``<uid>#2``), the pods never placed without a node, and
the projected ``node_usage``, so ``analyzer.usage.violations`` and ``analyzer.fragmentation.measure`` evaluate
it with exactly the semantics of ``analyzer violations`` / ``analyzer fragmentation``.
LoadAwareScheduling's view during the replay (the NodeMetric built from projected usage) is in
``analyzer.replay.loadfeed``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.snapshot import Snapshot, make_snapshot
from analyzer.replay.input import NEVER, ReplayInput
from analyzer.replay.result import ReplayResult

RESOURCES = ("cpu", "memory")
FloatArray = np.ndarray[Any, np.dtype[np.float64]]
Int64Array = np.ndarray[Any, np.dtype[np.int64]]


@dataclass
class UsageMatrices:
    """Observed usage on the snapshot's step grid.

    ``times``: grid times (ns, ``start + k·step``). ``node``: resource → nodes × times (NaN = no
    sample). ``pod_rows``: pod_usage rows sorted by grid column — ``pod`` (index), ``col``, and
    one float array per resource. ``overhead``: resource → nodes × times.
    """

    times: Int64Array
    node: dict[str, FloatArray]
    pod_rows: dict[str, np.ndarray[Any, Any]]
    overhead: dict[str, FloatArray]

    def column_bounds(self) -> Int64Array:
        """Row offsets of each grid column in ``pod_rows`` (length times + 1)."""
        bounds = np.searchsorted(self.pod_rows["col"], np.arange(len(self.times) + 1))
        result: Int64Array = np.asarray(bounds, dtype=np.int64)
        return result


def _columns(stamps: pd.Series, start: int, step: int, width: int) -> Int64Array:
    ns = np.asarray(pd.to_datetime(stamps, utc=True).to_numpy(dtype="datetime64[ns]"))
    cols: Int64Array = np.rint((ns.astype(np.int64) - start) / step).astype(np.int64)
    cols[(cols < 0) | (cols >= width)] = -1
    return cols


def _pod_positions(pod_index: pd.Index, uids: pd.Series) -> Int64Array:
    """Each usage row's pod position (-1: not a pod of the snapshot). The uid column is
    categorical (``POD_USAGE_COLUMNS``): look up each category once, then gather by code — a
    week's millions of rows cast to strings took seconds."""
    if isinstance(uids.dtype, pd.CategoricalDtype):
        found = pod_index.get_indexer(uids.cat.categories.astype(str))
        codes = uids.cat.codes.to_numpy()
        return np.where(codes >= 0, found[codes], -1).astype(np.int64)
    positions: Int64Array = pod_index.get_indexer(uids.astype(str)).astype(np.int64)
    return positions


# Rows per block when the pod usage table is turned into grid rows: every temporary of the
# conversion (times, grid columns, pod positions, masks, sort keys) is one block's, not the
# whole range's (a 5,000-node day is 63 M rows; each whole-table temporary was 0.5 GB).
BLOCK_ROWS = 4_194_304


def _node_matrices(inp: ReplayInput, width: int) -> dict[str, FloatArray]:
    """Observed node usage: resource -> nodes x times (NaN = no sample)."""
    usage = inp.snapshot.node_usage
    rows = pd.Index(inp.node_names).get_indexer(usage["node"].astype(str))
    cols = _columns(usage["timestamp"], inp.start, inp.step, width)
    keep = (rows >= 0) & (cols >= 0)
    node: dict[str, FloatArray] = {}
    for resource in RESOURCES:
        matrix = np.full((len(inp.node_names), width), np.nan)
        matrix[rows[keep], cols[keep]] = usage[resource].to_numpy(dtype=np.float64)[keep]
        node[resource] = matrix
    return node


def _block_rows(inp: ReplayInput, width: int, a: int, b: int) -> tuple[Int64Array, Int64Array]:
    """Pod position and grid column (-1: dropped) of pod usage rows ``a:b``."""
    usage = inp.snapshot.pod_usage
    pods = _pod_positions(pd.Index(inp.pod_uids), usage["uid"].iloc[a:b])
    cols = _columns(usage["timestamp"].iloc[a:b], inp.start, inp.step, width)
    cols[pods < 0] = -1
    return pods, cols


def _pod_rows(inp: ReplayInput, width: int) -> dict[str, np.ndarray[Any, Any]]:
    """The kept pod usage rows sorted by grid column, ties in table order (a stable sort).

    A counting sort in two passes over blocks of ``BLOCK_ROWS`` rows: the first counts each
    column's rows, the second puts each block's rows at their column's next free places. Same
    arrays as one stable ``argsort`` of the whole table (tested), without its whole-table
    temporaries."""
    usage = inp.snapshot.pod_usage
    total = len(usage)
    blocks = [(a, min(a + BLOCK_ROWS, total)) for a in range(0, total, BLOCK_ROWS)]
    counts = np.zeros(width, dtype=np.int64)
    for a, b in blocks:
        _, cols = _block_rows(inp, width, a, b)
        counts += np.bincount(cols[cols >= 0], minlength=width)
    kept = int(counts.sum())
    out: dict[str, np.ndarray[Any, Any]] = {
        "pod": np.empty(kept, dtype=np.int64),
        "col": np.empty(kept, dtype=np.int64),
        **{r: np.empty(kept, dtype=np.float64) for r in RESOURCES},
    }
    free = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    for a, b in blocks:
        pods, cols = _block_rows(inp, width, a, b)
        keep = np.flatnonzero(cols >= 0)
        order = keep[np.argsort(cols[keep], kind="stable")]
        sorted_cols = cols[order]
        # rank of each row among its column's rows in this block
        rank = np.arange(len(order)) - np.searchsorted(sorted_cols, sorted_cols, side="left")
        dest = free[sorted_cols] + rank
        out["pod"][dest] = pods[order]
        out["col"][dest] = sorted_cols
        for resource in RESOURCES:
            values = usage[resource].iloc[a:b].to_numpy(dtype=np.float64)[order]
            out[resource][dest] = np.nan_to_num(values, nan=0.0)
        free += np.bincount(sorted_cols, minlength=width)
    return out


def column_blocks(cols: Int64Array, width: int) -> list[tuple[int, int]]:
    """Row ranges of ``cols`` (sorted grid columns) of about ``BLOCK_ROWS`` rows that never split
    a column: a sum per (node, column) over such blocks adds each cell's values in the same order
    as one sum over all rows (bit-identical floats)."""
    bounds = np.searchsorted(cols, np.arange(width + 1))
    out: list[tuple[int, int]] = []
    a = 0
    while a < len(cols):
        b = int(bounds[np.searchsorted(bounds, a + BLOCK_ROWS, side="right") - 1])
        b = b if b > a else int(bounds[np.searchsorted(bounds, a, side="right")])
        out.append((a, b))
        a = b
    return out


def node_sums(
    node_of_row: Int64Array, cols: Int64Array, weights: FloatArray, n_nodes: int, width: int
) -> FloatArray:
    """Sum of ``weights`` per (node, column) (rows with node -1 skipped), column block by block."""
    sums = np.zeros(n_nodes * width, dtype=np.float64)
    for a, b in column_blocks(cols, width):
        node = node_of_row[a:b]
        on = node >= 0
        flat = node[on] * width + cols[a:b][on]
        if len(flat):
            lo, hi = int(flat.min()), int(flat.max()) + 1
            sums[lo:hi] += np.bincount(flat - lo, weights=weights[a:b][on], minlength=hi - lo)
    return sums.reshape(n_nodes, width)


def usage_matrices(inp: ReplayInput) -> UsageMatrices:
    """Observed node and pod usage on the grid, and each node's overhead."""
    width = int((inp.end - inp.start) // inp.step) + 1
    times = inp.start + inp.step * np.arange(width, dtype=np.int64)
    n_nodes = len(inp.node_names)
    node = _node_matrices(inp, width)
    pod_rows = _pod_rows(inp, width)
    overhead: dict[str, FloatArray] = {}
    real: Int64Array = inp.real_node[pod_rows["pod"]]
    for resource in RESOURCES:
        sums = node_sums(real, pod_rows["col"], pod_rows[resource], n_nodes, width)
        overhead[resource] = node[resource] - sums
    return UsageMatrices(times, node, pod_rows, overhead)


def attribute(inp: ReplayInput, result: ReplayResult, mats: UsageMatrices) -> Int64Array:
    """For every pod usage row, the index of the run (segment) it belongs to, or -1 (dropped)."""
    seg = result.segments
    pod_rows = mats.pod_rows["pod"]
    owner = np.full(len(pod_rows), -1, dtype=np.int64)
    if len(seg["pod"]) == 0:
        return owner
    natural = seg["end"] >= inp.departure[seg["pod"]]  # ended with the pod's real departure
    lo = np.where(seg["first"], np.iinfo(np.int64).min, seg["start"])
    hi = np.where(natural, NEVER, seg["end"])
    counts = np.bincount(seg["pod"], minlength=inp.pod_count)
    single = np.full(inp.pod_count, -1, dtype=np.int64)
    ones = np.flatnonzero(counts == 1)
    seg_of_pod = np.full(inp.pod_count, -1, dtype=np.int64)
    seg_of_pod[seg["pod"]] = np.arange(len(seg["pod"]))  # the last run of each pod
    single[ones] = seg_of_pod[ones]
    for a in range(0, len(pod_rows), BLOCK_ROWS):  # block by block: temporaries stay small
        b = min(a + BLOCK_ROWS, len(pod_rows))
        candidate = single[pod_rows[a:b]]
        ok = np.flatnonzero(candidate >= 0)
        when = mats.times[mats.pod_rows["col"][a:b][ok]]
        run = candidate[ok]
        inside = ok[(lo[run] <= when) & (when < hi[run])]
        owner[a + inside] = candidate[inside]
    for pod in np.flatnonzero(counts > 1):  # rare: pods evicted by a leaving node
        runs = np.flatnonzero(seg["pod"] == pod)
        mine = np.flatnonzero(pod_rows == pod)
        times = mats.times[mats.pod_rows["col"][mine]]
        for run in runs:
            hit = mine[(lo[run] <= times) & (times < hi[run])]
            owner[hit] = run
    return owner


def project(
    inp: ReplayInput,
    result: ReplayResult,
    mats: UsageMatrices,
    owner: Int64Array | None = None,
) -> dict[str, FloatArray]:
    """Projected node usage (resource → nodes × times) under ``result``'s placement.

    ``owner``: ``attribute(inp, result, mats)`` when the caller already has it.
    """
    owner = attribute(inp, result, mats) if owner is None else owner
    width = len(mats.times)
    n_nodes = len(inp.node_names)
    seg_node = np.append(result.segments["node"].astype(np.int64), -1)
    node_of_row = seg_node[owner]  # owner -1 -> the appended -1: not placed
    out: dict[str, FloatArray] = {}
    for resource in RESOURCES:
        sums = node_sums(node_of_row, mats.pod_rows["col"], mats.pod_rows[resource], n_nodes, width)
        projected = mats.overhead[resource] + sums
        out[resource] = np.where(np.isnan(projected), np.nan, np.maximum(projected, 0.0))
    return out


def _stamp(values: Int64Array) -> pd.Series:
    """ns (NEVER → NaT) as a UTC datetime series."""
    series = pd.Series(pd.to_datetime(np.where(values == NEVER, 0, values), utc=True))
    series[values == NEVER] = pd.NaT
    return series


def projected_snapshot(
    inp: ReplayInput,
    result: ReplayResult,
    mats: UsageMatrices,
    usage: dict[str, FloatArray],
    *,
    owner: Int64Array | None = None,
    with_pod_usage: bool = True,
) -> Snapshot:
    """The snapshot as it would have been under ``result``: pods' nodes and usage re-attributed.

    ``with_pod_usage=False`` leaves ``pod_usage`` empty (only prod thresholds read it).
    """
    snap = inp.snapshot
    seg = result.segments
    pods = snap.pods.reset_index(drop=True)
    run_number = np.zeros(len(seg["pod"]), dtype=np.int64)
    seen: dict[int, int] = {}
    for k, pod in enumerate(seg["pod"].tolist()):
        seen[pod] = seen.get(pod, 0) + 1
        run_number[k] = seen[pod]
    uids = np.array(inp.pod_uids, dtype=object)
    run_uid = np.where(
        run_number == 1, uids[seg["pod"]], [f"{u}#{n}" for u, n in zip(uids[seg["pod"]], run_number, strict=True)]
    ) if len(seg["pod"]) else np.zeros(0, dtype=object)  # fmt: skip
    runs = pods.iloc[seg["pod"]].reset_index(drop=True)
    runs["uid"] = run_uid
    runs["node"] = [inp.node_names[n] for n in seg["node"]]
    runs["scheduled"] = _stamp(seg["start"]).to_numpy()
    natural = seg["end"] >= inp.departure[seg["pod"]]
    runs["finished"] = np.where(natural, runs["finished"].to_numpy(), _stamp(seg["end"]).to_numpy())
    runs["last_seen"] = np.where(
        natural, runs["last_seen"].to_numpy(), _stamp(seg["end"]).to_numpy()
    )
    unplaced = pods.loc[np.bincount(seg["pod"], minlength=len(pods)) == 0].copy()
    unplaced["node"] = pd.NA
    unplaced["scheduled"] = pd.NaT
    unplaced["phase"] = "Pending"
    all_pods = pd.concat([runs, unplaced], ignore_index=True)
    width = len(mats.times)
    node_rows, node_cols = np.nonzero(~np.isnan(usage["cpu"]) | ~np.isnan(usage["memory"]))
    node_usage = pd.DataFrame(
        {
            "node": np.array(inp.node_names, dtype=object)[node_rows],
            "timestamp": pd.to_datetime(mats.times[node_cols], utc=True),
            "cpu": usage["cpu"][node_rows, node_cols],
            "memory": usage["memory"][node_rows, node_cols],
        }
    )
    owner = attribute(inp, result, mats) if owner is None else owner
    placed = (owner >= 0) & with_pod_usage
    pod_usage = pd.DataFrame(
        {
            "uid": run_uid[owner[placed]] if len(run_uid) else np.zeros(0, dtype=object),
            "timestamp": pd.to_datetime(mats.times[mats.pod_rows["col"][placed]], utc=True),
            "cpu": mats.pod_rows["cpu"][placed],
            "memory": mats.pod_rows["memory"][placed],
        }
    )
    del width
    meta = replace(
        snap.meta, source=f"{snap.meta.source} | replay {result.strategy} seed {result.seed}"
    )
    return make_snapshot(meta, snap.nodes, all_pods, node_usage, pod_usage)
