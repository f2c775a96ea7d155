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

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.snapshot import Snapshot, make_snapshot
from analyzer.core.snapshot_schema import NODE_USAGE_COLUMNS, empty_table
from analyzer.replay import podrows
from analyzer.replay.input import NEVER, ReplayInput
from analyzer.replay.podrows import PodRows, Rows, grid_columns, pod_rows_for
from analyzer.replay.result import ReplayResult

RESOURCES = ("cpu", "memory")
FloatArray = np.ndarray[Any, np.dtype[np.float64]]
Int64Array = np.ndarray[Any, np.dtype[np.int64]]


@dataclass
class UsageMatrices:
    """Observed usage on the snapshot's step grid.

    ``times``: grid times (ns, ``start + k·step``). ``node``: resource → nodes × times (NaN = no
    sample). ``rows``: the pod usage as grid rows, in chunks of whole columns
    (``analyzer.replay.podrows``: one chunk in memory, or one day at a time from disk).
    ``overhead``: resource → nodes × times.
    """

    times: Int64Array
    node: dict[str, FloatArray]  # empty when the usage is streamed (``Snapshot.usage_dir``)
    rows: PodRows
    overhead: dict[str, FloatArray]

    @property
    def pod_rows(self) -> Rows:
        """Every grid row at once (the whole range in memory: small snapshots and tests)."""
        return self.rows.whole()


def _node_matrices(inp: ReplayInput, width: int) -> dict[str, FloatArray]:
    """Observed node usage: resource -> nodes x times (NaN = no sample)."""
    node = {r: np.full((len(inp.node_names), width), np.nan) for r in RESOURCES}
    directory = inp.snapshot.usage_dir
    if directory is None:
        _fill_nodes(node, inp, inp.snapshot.node_usage, 0, width)
        return node
    times = inp.start + inp.step * np.arange(width, dtype=np.int64)
    for c0, c1 in podrows.day_chunks(times):  # one day's node usage in memory at a time
        parts = podrows.group_blocks(directory, "node_usage", times, inp.step, c0, c1)
        for group in parts(["node", "timestamp", *RESOURCES]):  # a row group at a time
            _fill_nodes(node, inp, group.to_pandas(self_destruct=True), c0, c1)
    return node


def _fill_nodes(
    node: dict[str, FloatArray], inp: ReplayInput, usage: pd.DataFrame, c0: int, c1: int
) -> None:
    """Put ``usage``'s samples of grid columns ``[c0, c1)`` into the ``node`` matrices, in table
    order (a later sample of the same node and column wins, as in one assignment)."""
    width = node["cpu"].shape[1]
    # each distinct node name looked up once (a week of 5,000 nodes is 50 M rows: turning every
    # row's name into a Python string to look it up took gigabytes)
    codes, names = pd.factorize(usage["node"])
    found = pd.Index(inp.node_names).get_indexer(pd.Index(names).astype(str))
    for a in range(0, len(usage), podrows.BLOCK_ROWS):  # temporaries of one block, in order
        b = min(a + podrows.BLOCK_ROWS, len(usage))
        block = codes[a:b]
        rows = np.where(block >= 0, found[block] if len(found) else -1, -1)
        cols = grid_columns(usage["timestamp"].iloc[a:b], inp.start, inp.step, width)
        keep = (rows >= 0) & (cols >= c0) & (cols < c1)
        for resource in RESOURCES:
            values = usage[resource].iloc[a:b].to_numpy(dtype=np.float64)[keep]
            node[resource][rows[keep], cols[keep]] = values


def usage_matrices(inp: ReplayInput) -> UsageMatrices:
    """Observed node and pod usage on the grid, and each node's overhead (one pass over the pod
    usage, a chunk of grid columns at a time)."""
    width = int((inp.end - inp.start) // inp.step) + 1
    times = inp.start + inp.step * np.arange(width, dtype=np.int64)
    n_nodes = len(inp.node_names)
    node = _node_matrices(inp, width)
    rows = pod_rows_for(inp, times)
    real: Int64Array = inp.real_node
    sums = stream_sums(rows, lambda part: real[part["pod"]], n_nodes, width)
    overhead = {r: node[r] - sums.pop(r) for r in RESOURCES}
    if inp.snapshot.usage_dir is not None:
        # streamed (a large range): only the overhead is read later, keep it alone (a
        # 5,000-node week: 0.8 GB less for the whole run)
        node = {}
    return UsageMatrices(times, node, rows, overhead)


def stream_sums(
    rows: PodRows, node_of: Callable[[Rows], Int64Array], n_nodes: int, width: int
) -> dict[str, FloatArray]:
    """Per resource, the sum of every grid row's value per (node, column), the node of each row
    given by ``node_of(block)`` (-1: skipped). One pass over the rows in table order, a block at
    a time: ``np.add.at`` adds each cell's values one by one in that order, from 0 — the same
    floats as ``np.bincount`` over the column-sorted rows (a stable sort keeps table order
    within a cell), bit for bit."""
    sums = {r: np.zeros(n_nodes * width, dtype=np.float64) for r in RESOURCES}
    for part in rows.stream():
        node = node_of(part)
        on = node >= 0
        flat = node[on] * width + part["col"][on]
        for resource in RESOURCES:
            np.add.at(sums[resource], flat, part[resource][on])
        del part, node, on, flat
    return {r: sums[r].reshape(n_nodes, width) for r in RESOURCES}


@dataclass
class Attribution:
    """Which run (segment) of a replay each pod usage row belongs to (``attribute``); applied
    to a chunk of grid rows at a time by ``owners``."""

    lo: Int64Array  # per run: first instant it takes samples (min int: since the pod's start)
    hi: Int64Array  # per run: the instant it stops taking samples (NEVER: until the end)
    single: Int64Array  # per pod: its only run, -1 when it has none or several
    several: list[tuple[int, Int64Array]]  # (pod, its runs) of pods with more than one run
    node: Int64Array  # per run: its node, then -1 (the node of owner -1: not placed)

    def owners(self, rows: Rows, times: Int64Array) -> Int64Array:
        """For every row of ``rows``, the index of its run, or -1 (dropped)."""
        pods = rows["pod"]
        owner = np.full(len(pods), -1, dtype=np.int64)
        if len(self.node) == 1:  # no run at all
            return owner
        lo, hi = self.lo, self.hi
        for a in range(0, len(pods), podrows.BLOCK_ROWS):  # block by block: small temporaries
            b = min(a + podrows.BLOCK_ROWS, len(pods))
            candidate = self.single[pods[a:b]]
            ok = np.flatnonzero(candidate >= 0)
            when = times[rows["col"][a:b][ok]]
            run = candidate[ok]
            inside = ok[(lo[run] <= when) & (when < hi[run])]
            owner[a + inside] = candidate[inside]
        for pod, runs in self.several:  # rare: pods evicted by a leaving node
            mine = np.flatnonzero(pods == pod)
            when = times[rows["col"][mine]]
            for run in runs:
                hit = mine[(lo[run] <= when) & (when < hi[run])]
                owner[hit] = run
        return owner


def attribute(inp: ReplayInput, result: ReplayResult, mats: UsageMatrices) -> Attribution:
    """The rule that gives every pod usage row its run (``Attribution.owners``)."""
    seg = result.segments
    natural = seg["end"] >= inp.departure[seg["pod"]]  # ended with the pod's real departure
    lo = np.where(seg["first"], np.iinfo(np.int64).min, seg["start"]).astype(np.int64)
    hi = np.where(natural, NEVER, seg["end"]).astype(np.int64)
    counts = np.bincount(seg["pod"], minlength=inp.pod_count)
    single = np.full(inp.pod_count, -1, dtype=np.int64)
    ones = np.flatnonzero(counts == 1)
    seg_of_pod = np.full(inp.pod_count, -1, dtype=np.int64)
    seg_of_pod[seg["pod"]] = np.arange(len(seg["pod"]))  # the last run of each pod
    single[ones] = seg_of_pod[ones]
    several = [(int(p), np.flatnonzero(seg["pod"] == p)) for p in np.flatnonzero(counts > 1)]
    node = np.append(seg["node"].astype(np.int64), -1)
    del mats  # the rule depends on the runs only; rows are attributed chunk by chunk
    return Attribution(lo, hi, single, several, node)


def project(
    inp: ReplayInput,
    result: ReplayResult,
    mats: UsageMatrices,
    owner: Attribution | None = None,
) -> dict[str, FloatArray]:
    """Projected node usage (resource → nodes × times) under ``result``'s placement.

    ``owner``: ``attribute(inp, result, mats)`` when the caller already has it.
    """
    owner = attribute(inp, result, mats) if owner is None else owner
    n_nodes = len(inp.node_names)
    # the node of each row's run; owner -1 -> the appended -1: not placed
    sums = stream_sums(
        mats.rows, lambda part: owner.node[owner.owners(part, mats.times)], n_nodes, len(mats.times)
    )
    out: dict[str, FloatArray] = {}
    for resource in RESOURCES:
        projected = mats.overhead[resource] + sums.pop(resource)
        out[resource] = np.where(np.isnan(projected), np.nan, np.maximum(projected, 0.0))
    return out


def _stamp(values: Int64Array) -> pd.Series:
    """ns (NEVER → NaT) as a UTC datetime series."""
    series = pd.Series(pd.to_datetime(np.where(values == NEVER, 0, values), utc=True))
    series[values == NEVER] = pd.NaT
    return series


def _projected_node_usage(
    inp: ReplayInput, times: Int64Array, usage: dict[str, FloatArray]
) -> pd.DataFrame:
    """The projected matrices as a node usage table (samples where either resource has one,
    node by node, time by time), built in the snapshot's dtypes so that ``make_snapshot`` keeps
    it as is; one temporary at a time (a 5,000-node week is 50 M rows: each column 0.4 GB)."""
    width = len(times)
    flat = np.flatnonzero(~np.isnan(usage["cpu"]) | ~np.isnan(usage["memory"]))
    rows, cols = np.divmod(flat, width)  # row-major: the order of np.nonzero
    names = pd.array(np.array(inp.node_names, dtype=object), dtype=NODE_USAGE_COLUMNS["node"])
    columns: dict[str, Any] = {"node": names.take(rows)}
    del rows
    # ns as UTC instants without pd.to_datetime's per-value parse (~75 bytes a row at its peak)
    stamps = pd.DatetimeIndex(times[cols].view("datetime64[ns]")).tz_localize("UTC")
    columns["timestamp"] = stamps.astype(NODE_USAGE_COLUMNS["timestamp"]).array
    del cols, stamps
    for resource in RESOURCES:
        columns[resource] = usage[resource].ravel()[flat]
    del flat
    return pd.DataFrame(columns, copy=False)


def _projected_pod_usage(
    mats: UsageMatrices, owner: Attribution, run_uid: np.ndarray[Any, Any], wanted: bool
) -> pd.DataFrame:
    """The placed rows as pod usage of their runs (empty when not ``wanted``), chunk by chunk."""
    parts: dict[str, list[np.ndarray[Any, Any]]] = {k: [] for k in ("uid", "col", *RESOURCES)}
    for _c0, _c1, part in mats.rows.each() if wanted else iter(()):
        runs = owner.owners(part, mats.times)
        placed = runs >= 0
        parts["uid"].append(run_uid[runs[placed]] if len(run_uid) else np.zeros(0, object))
        parts["col"].append(part["col"][placed])
        for resource in RESOURCES:
            parts[resource].append(part[resource][placed])
    if not parts["col"]:
        parts = {"uid": [np.zeros(0, object)], "col": [np.zeros(0, np.int64)],
                 "cpu": [np.zeros(0)], "memory": [np.zeros(0)]}  # fmt: skip
    joined = {k: np.concatenate(v) for k, v in parts.items()}
    return pd.DataFrame(
        {
            "uid": joined["uid"],
            "timestamp": pd.DatetimeIndex(
                mats.times[joined["col"].astype(np.int64)].view("datetime64[ns]")
            ).tz_localize("UTC"),
            "cpu": joined["cpu"],
            "memory": joined["memory"],
        }
    )


def projected_snapshot(
    inp: ReplayInput,
    result: ReplayResult,
    mats: UsageMatrices,
    usage: dict[str, FloatArray],
    *,
    owner: Attribution | None = None,
    with_pod_usage: bool = True,
    with_node_usage: bool = True,
) -> Snapshot:
    """The snapshot as it would have been under ``result``: pods' nodes and usage re-attributed.

    ``with_pod_usage=False`` leaves ``pod_usage`` empty (only prod thresholds read it);
    ``with_node_usage=False`` leaves ``node_usage`` empty (a caller that reads the projected
    node usage from ``usage`` itself: the what-if's violations, ``usage.grid.matrix_grid``).
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
    node_usage = (
        _projected_node_usage(inp, mats.times, usage)
        if with_node_usage
        else empty_table("node_usage")
    )
    owner = attribute(inp, result, mats) if owner is None else owner
    pod_usage = _projected_pod_usage(mats, owner, run_uid, with_pod_usage)
    meta = replace(
        snap.meta, source=f"{snap.meta.source} | replay {result.strategy} seed {result.seed}"
    )
    return make_snapshot(meta, snap.nodes, all_pods, node_usage, pod_usage)
