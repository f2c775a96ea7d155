"""The snapshot's ``node_state_intervals`` table from the node-state range queries.

``node_taint_intervals`` (kube_node_spec_taint), ``node_unschedulable``
(kube_node_spec_unschedulable) and ``node_ready`` (kube_node_status_condition Ready=true) are
range queries at the collect step, each point saying whether a sample lay within the last step.
A run of consecutive points where a taint was present, the node cordoned (value 1) or not ready
(value 0) becomes one interval ``[first point, last point + step)``: the state was seen at the
first point and no longer one step after the last (an interval reaching the last point of the
range is open: ``end`` NaT, held until the data ends). A node's time before its first Ready
sample (from its first sample in any of the three, or its ``first_seen``) is not-ready too: a node
that just joined is tainted ``node.kubernetes.io/not-ready`` until the kubelet reports Ready.

None of the three answering (older kube-state-metrics, or a query profile without them) gives no
table at all, so the snapshot reads as one collected before intervals existed.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from analyzer.collect.common import label
from analyzer.prom.fetch import QueryResult
from analyzer.prom.folds import ValueRuns, value_runs
from analyzer.prom.series import Series
from analyzer.prom.time_grid import TimeGrid

TAINT_QUERY = "node_taint_intervals"
CORDON_QUERY = "node_unschedulable"
READY_QUERY = "node_ready"
NODE_STATE_QUERIES = (TAINT_QUERY, CORDON_QUERY, READY_QUERY)


def _runs(series: ValueRuns, held: np.ndarray, step: int) -> list[tuple[float, float]]:
    """The grid points of the runs marked ``held`` in stretches of consecutive points (gaps of
    one step) as (first, last) pairs: consecutive held runs at most 1.5 steps apart are one."""
    firsts, lasts = series.firsts[held], series.lasts[held]
    if len(firsts) == 0:
        return []
    breaks = np.flatnonzero(firsts[1:] - lasts[:-1] > step * 1.5)
    starts = [firsts[0], *firsts[breaks + 1]]
    ends = [*lasts[breaks], lasts[-1]]
    return [(float(a), float(b)) for a, b in zip(starts, ends, strict=True)]


def _exported(results: Iterable[QueryResult | None]) -> set[str]:
    names: set[str] = set()
    for result in results:
        if result is None:
            continue
        items: Iterable[ValueRuns | Series] = result.series if result.runs is None else result.runs
        for item in items:
            names.update(k[len("exported_") :] for k in item.labels if k.startswith("exported_"))
    return names


def _answered(result: QueryResult | None, step: int) -> list[ValueRuns]:
    """The result's series as runs (``run_profile(as_runs=NODE_STATE_QUERIES)`` folded them
    on arrival; series built elsewhere, e.g. by tests, are turned into runs here)."""
    if result is None or result.error is not None:
        return []
    if result.runs is not None:
        return result.runs
    return [value_runs(series, step) for series in result.series]


def build_node_state(
    results: dict[str, QueryResult], nodes: pd.DataFrame, grid: TimeGrid
) -> pd.DataFrame | None:
    """The node_state_intervals rows (None: none of the three queries returned a series)."""
    taints, cordons, ready = (_answered(results.get(n), grid.step) for n in NODE_STATE_QUERIES)
    if not (taints or cordons or ready):
        return None
    exported = _exported(results.get(n) for n in NODE_STATE_QUERIES)
    last = float(grid.end)
    rows: list[tuple[str, str, str, str, str, float, float | None]] = []

    def add(
        node: str, kind: str, key: str, value: str, effect: str, runs: ValueRuns, held: np.ndarray
    ) -> None:
        for first, final in _runs(runs, held, grid.step):
            end = None if final >= last else final + grid.step
            rows.append((node, kind, key, value, effect, first, end))

    for series in taints:
        node = label(series.labels, "node", exported)
        key = series.labels.get("key", "")
        if node and key:
            add(node, "taint", key, series.labels.get("value", ""),
                series.labels.get("effect", ""), series, ~np.isnan(series.values))  # fmt: skip
    for series in cordons:
        node = label(series.labels, "node", exported)
        if node:
            add(node, "cordon", "", "", "", series, series.values == 1)
    first_ready: dict[str, float] = {}
    for series in ready:
        node = label(series.labels, "node", exported)
        if not node:
            continue
        add(node, "not-ready", "", "", "", series, series.values == 0)
        if (series.values == 1).any():
            seen = float(series.firsts[series.values == 1].min())
            first_ready[node] = min(seen, first_ready.get(node, seen))
    joined = _first_seen(nodes)
    for node, seen in sorted(first_ready.items()):
        since = joined.get(node)
        if since is not None:
            since = max(since, float(grid.start))  # first_seen may be in the look-back
        if since is not None and since < seen:  # joined before it was Ready: not-ready meanwhile
            rows.append((node, "not-ready", "", "", "", since, seen))
    frame = pd.DataFrame(rows, columns=["node", "kind", "key", "value", "effect", "start", "end"])
    frame["start"] = pd.to_datetime(frame["start"], unit="s", utc=True)
    frame["end"] = pd.to_datetime(frame["end"], unit="s", utc=True)
    return _merged(frame).sort_values(["node", "start", "kind", "key"], kind="stable")


def _first_seen(nodes: pd.DataFrame) -> dict[str, float]:
    """Node → its first_seen as unix seconds (nodes without one left out)."""
    if nodes.empty or "first_seen" not in nodes.columns:
        return {}
    seen = pd.to_datetime(nodes["first_seen"], utc=True)
    return {
        str(n): t.timestamp() for n, t in zip(nodes["node"], seen, strict=True) if not pd.isna(t)
    }


def _merged(frame: pd.DataFrame) -> pd.DataFrame:
    """Overlapping not-ready rows of one node (a run of Ready=0 inside the join period) as one."""
    if frame.empty:
        return frame.reset_index(drop=True)
    out = []
    for _, group in frame.groupby(["node", "kind", "key", "value", "effect"], sort=True):
        group = group.sort_values("start")
        current = None
        for row in group.itertuples(index=False):
            if current is not None and (pd.isna(current[6]) or row.start <= current[6]):
                if pd.isna(current[6]) or pd.isna(row.end):
                    current = (*current[:6], pd.NaT)
                else:
                    current = (*current[:6], max(current[6], row.end))
                continue
            if current is not None:
                out.append(current)
            current = tuple(row)
        if current is not None:
            out.append(current)
    return pd.DataFrame(out, columns=frame.columns).reset_index(drop=True)
