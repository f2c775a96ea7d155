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


def usage_matrices(inp: ReplayInput) -> UsageMatrices:
    """Observed node and pod usage on the grid, and each node's overhead."""
    snap = inp.snapshot
    width = int((inp.end - inp.start) // inp.step) + 1
    times = inp.start + inp.step * np.arange(width, dtype=np.int64)
    n_nodes = len(inp.node_names)
    node_index = pd.Index(inp.node_names)
    usage = snap.node_usage
    rows = node_index.get_indexer(usage["node"].astype(str))
    cols = _columns(usage["timestamp"], inp.start, inp.step, width)
    keep = (rows >= 0) & (cols >= 0)
    node: dict[str, FloatArray] = {}
    for resource in RESOURCES:
        matrix = np.full((n_nodes, width), np.nan)
        matrix[rows[keep], cols[keep]] = usage[resource].to_numpy(dtype=np.float64)[keep]
        node[resource] = matrix
    pod_usage = snap.pod_usage
    pods = _pod_positions(pd.Index(inp.pod_uids), pod_usage["uid"])
    pcols = _columns(pod_usage["timestamp"], inp.start, inp.step, width)
    keep = (pods >= 0) & (pcols >= 0)
    order = np.argsort(pcols[keep], kind="stable")
    pod_rows: dict[str, np.ndarray[Any, Any]] = {
        "pod": pods[keep][order].astype(np.int64),
        "col": pcols[keep][order].astype(np.int64),
    }
    for resource in RESOURCES:
        values = pod_usage[resource].to_numpy(dtype=np.float64)[keep][order]
        pod_rows[resource] = np.nan_to_num(values, nan=0.0)
    overhead: dict[str, FloatArray] = {}
    real = inp.real_node[pod_rows["pod"]]
    on_node = real >= 0
    flat = real[on_node] * width + pod_rows["col"][on_node]
    for resource in RESOURCES:
        sums = np.bincount(
            flat, weights=pod_rows[resource][on_node], minlength=n_nodes * width
        ).reshape(n_nodes, width)
        overhead[resource] = node[resource] - sums
    return UsageMatrices(times, node, pod_rows, overhead)


def attribute(inp: ReplayInput, result: ReplayResult, mats: UsageMatrices) -> Int64Array:
    """For every pod usage row, the index of the run (segment) it belongs to, or -1 (dropped)."""
    seg = result.segments
    pod_rows = mats.pod_rows["pod"]
    times = mats.times[mats.pod_rows["col"]]
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
    candidate = single[pod_rows]
    ok = candidate >= 0
    inside = ok.copy()
    inside[ok] = (lo[candidate[ok]] <= times[ok]) & (times[ok] < hi[candidate[ok]])
    owner[inside] = candidate[inside]
    for pod in np.flatnonzero(counts > 1):  # rare: pods evicted by a leaving node
        runs = np.flatnonzero(seg["pod"] == pod)
        mine = np.flatnonzero(pod_rows == pod)
        for run in runs:
            hit = mine[(lo[run] <= times[mine]) & (times[mine] < hi[run])]
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
    placed = owner >= 0
    nodes = result.segments["node"][owner[placed]]
    flat = nodes * width + mats.pod_rows["col"][placed]
    out: dict[str, FloatArray] = {}
    for resource in RESOURCES:
        sums = np.bincount(
            flat, weights=mats.pod_rows[resource][placed], minlength=n_nodes * width
        ).reshape(n_nodes, width)
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
