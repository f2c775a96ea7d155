"""Usage tables the nightly report shows, built from the snapshot with pandas/numpy (no jinja).

Definitions (stated in the report too):

- *requested* on a node = Σ effective pod requests (``requests:<r>``) of the pods bound to it,
  time-averaged over the day (``analyzer.usage.aggregate.daily_rollups``).
- a usage sample at t covers ``(t - step, t]`` (as the aggregates count it), so a day holds the
  samples in ``(midnight, next midnight]``.
- *used* = node usage from the snapshot (node-exporter busy CPU; MemTotal − MemAvailable).
- *idle requests* = requested − average used, clipped at 0: capacity reserved but not used.
- *over-committed* node = its p95 usage exceeds what its pods requested (pods lean on limits).
- pool figures sum their nodes at each timestamp first, then take the stat over time, so a pool
  p95 is the p95 of the pool's total, not a mean of node p95s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyzer.core.snapshot_schema import ALLOCATABLE, resource_column
from analyzer.usage.percentiles import grouped_stats

RESOURCES = ("cpu", "memory")
STATS = ("avg", "p50", "p90", "p95", "p99")


def hourly_points(start: pd.Timestamp, end: pd.Timestamp) -> list[pd.Timestamp]:
    """The hour marks in ``[start, end)`` (where hourly series are evaluated)."""
    return list(pd.date_range(start, end, freq="1h", inclusive="left"))


def node_pools(nodes: pd.DataFrame) -> pd.Series:
    """Node → pool name ("(none)" when the node has no pool)."""
    pools = nodes["pool"].astype("string").fillna("").replace("", "(none)")
    return pd.Series(pools.to_numpy(), index=nodes["node"].astype(str).to_numpy())


def _offsets_ns(timestamps: pd.Series, start: pd.Timestamp) -> np.ndarray:
    """Nanoseconds since ``start`` (whatever the column's time unit)."""
    delta = (timestamps - start).to_numpy().astype("timedelta64[ns]")
    offsets: np.ndarray = delta.astype(np.int64)
    return offsets


def _group_means(group: np.ndarray, values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-group sum and count of the non-NaN ``values`` (vectorised ``groupby().sum()``)."""
    valid = ~np.isnan(values)
    sums = np.bincount(group[valid], weights=values[valid], minlength=size)
    counts = np.bincount(group[valid], minlength=size)
    return sums, counts


def hourly_usage(
    node_usage: pd.DataFrame, nodes: pd.DataFrame, start: pd.Timestamp, end: pd.Timestamp
) -> pd.DataFrame:
    """Mean usage % of allocatable per node and hour: ``node, pool, hour, cpu, memory``.

    The hour of a sample at t is the hour holding ``(t - step, t]``, i.e. floor(t − 1 ns).
    """
    usage = node_usage[in_period(node_usage["timestamp"], start, end)]
    names = pd.Index(nodes["node"].astype(str))
    hours = max(int(np.ceil((end - start) / pd.Timedelta(hours=1))), 1)
    node_idx = names.get_indexer(usage["node"])
    keep = node_idx >= 0
    hour_idx = (_offsets_ns(usage["timestamp"], start) - 1) // 3_600_000_000_000
    group = (node_idx * hours + hour_idx)[keep]
    size = len(names) * hours
    means: dict[str, np.ndarray] = {}
    seen = np.zeros(size, dtype=bool)
    for resource in RESOURCES:
        sums, counts = _group_means(group, usage[resource].to_numpy(dtype=np.float64)[keep], size)
        alloc = nodes[resource_column(ALLOCATABLE, resource)].to_numpy(dtype=np.float64)
        alloc = np.where(alloc > 0, alloc, np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[resource] = sums / counts / np.repeat(alloc, hours) * 100.0
        seen |= counts > 0
    rows = np.flatnonzero(seen)
    pools = node_pools(nodes).to_numpy()
    return pd.DataFrame(
        {
            "node": names.to_numpy()[rows // hours],
            "pool": pools[rows // hours],
            "hour": start + pd.to_timedelta(rows % hours, unit="h"),
            **{resource: means[resource][rows] for resource in RESOURCES},
        }
    )


def in_period(timestamps: pd.Series, start: pd.Timestamp, end: pd.Timestamp) -> pd.Series:
    """Samples that belong to ``(start, end]`` (a sample at t covers the step ending at t)."""
    return (timestamps > start) & (timestamps <= end)


def node_table(rollups: pd.DataFrame, nodes: pd.DataFrame) -> pd.DataFrame:
    """Per node: pool, allocatable, requested, used stats and their % of allocatable.

    Columns: ``node, pool, <r>_allocatable, <r>_requested, <r>_requested_pct, <r>_<stat>,
    <r>_<stat>_pct`` for r in cpu/memory and each stat, plus ``<r>_idle_requested`` and
    ``<r>_overcommitted`` (p95 used > requested).
    """
    table = pd.DataFrame({"node": nodes["node"].astype(str).to_numpy()})
    table["pool"] = table["node"].map(node_pools(nodes))
    for resource in RESOURCES:
        alloc = nodes[resource_column(ALLOCATABLE, resource)].to_numpy(dtype=np.float64)
        table[f"{resource}_allocatable"] = alloc
        part = rollups[rollups["resource"] == resource]
        requested = part.groupby("node")["requested"].first()
        table[f"{resource}_requested"] = table["node"].map(requested).astype("float64").fillna(0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            table[f"{resource}_requested_pct"] = table[f"{resource}_requested"] / alloc * 100.0
        wide = part.pivot_table(index="node", columns="stat", values="value", aggfunc="first")
        for stat in STATS:
            values = table["node"].map(wide[stat]) if stat in wide else np.nan
            table[f"{resource}_{stat}"] = pd.Series(values, index=table.index).astype("float64")
            with np.errstate(invalid="ignore", divide="ignore"):
                table[f"{resource}_{stat}_pct"] = table[f"{resource}_{stat}"] / alloc * 100.0
        table[f"{resource}_idle_requested"] = (
            table[f"{resource}_requested"] - table[f"{resource}_avg"]
        ).clip(lower=0)
        table[f"{resource}_overcommitted"] = (
            table[f"{resource}_p95"] > table[f"{resource}_requested"]
        )
    return table


@dataclass(frozen=True)
class PoolUsage:
    """Per pool (``pools``, sorted) and resource: stats over the day's sample times of the pool's
    total usage (``grouped_stats``: count, avg, p50 … p99, max). Computed once per nightly run
    (``pool_usage``) for both the report's pool table and the history's pool rows."""

    pools: list[str]
    stats: dict[str, dict[str, np.ndarray]]


def pool_usage(
    node_usage: pd.DataFrame,
    nodes: pd.DataFrame,
    *,
    start: pd.Timestamp,
    end: pd.Timestamp,
    method: str,
) -> PoolUsage:
    """Each pool's total usage at each sample time in ``(start, end]`` (NaN samples skipped; a
    pool with no sample at t has no total), then its stats over those times (``PoolUsage``)."""
    pool_of = node_pools(nodes)
    pools = sorted(pool_of.unique())
    pool_of_node = pd.Index(pools).get_indexer(pool_of.to_numpy())
    usage = node_usage[in_period(node_usage["timestamp"], start, end)]
    node_idx = pd.Index(pool_of.index).get_indexer(usage["node"].astype(str))
    keep = node_idx >= 0
    stamps, time_idx = np.unique(_offsets_ns(usage["timestamp"], start)[keep], return_inverse=True)
    group = pool_of_node[node_idx[keep]] * len(stamps) + time_idx
    size = len(pools) * len(stamps)
    stats = {}
    for resource in RESOURCES:
        sums, counts = _group_means(group, usage[resource].to_numpy(dtype=np.float64)[keep], size)
        present = np.flatnonzero(counts > 0)
        ids = (present // max(len(stamps), 1)).astype(np.int64)
        stats[resource] = grouped_stats(ids, sums[present], len(pools), method)
    return PoolUsage(pools, stats)


def pool_table(
    node_usage: pd.DataFrame,
    nodes_table: pd.DataFrame,
    *,
    start: pd.Timestamp,
    end: pd.Timestamp,
    method: str,
    usage: PoolUsage | None = None,
) -> pd.DataFrame:
    """Per pool: nodes, allocatable, requested, stats of the pool's total usage over time, idle.

    ``nodes_table`` is :func:`node_table`'s output; ``usage`` the pools' usage stats when the
    caller has them already (else computed here). Columns: ``pool, nodes, <r>_allocatable,
    <r>_requested, <r>_requested_pct, <r>_<stat>, <r>_<stat>_pct, <r>_idle_requested,
    overcommitted_nodes`` (nodes over-committed on cpu or memory).
    """
    pools = sorted(nodes_table["pool"].unique())
    if usage is None:
        usage = pool_usage(node_usage, nodes_table, start=start, end=end, method=method)
    assert usage.pools == pools, (usage.pools, pools)
    grouped = nodes_table.groupby("pool")
    table = pd.DataFrame({"pool": pools})
    table["nodes"] = table["pool"].map(grouped.size()).astype("int64")
    either = nodes_table["cpu_overcommitted"] | nodes_table["memory_overcommitted"]
    overcommitted = either.groupby(nodes_table["pool"]).sum()
    for resource in RESOURCES:
        alloc = table["pool"].map(grouped[f"{resource}_allocatable"].sum())
        table[f"{resource}_allocatable"] = alloc
        table[f"{resource}_requested"] = table["pool"].map(grouped[f"{resource}_requested"].sum())
        table[f"{resource}_requested_pct"] = table[f"{resource}_requested"] / alloc * 100.0
        stats = usage.stats[resource]
        for stat in STATS:
            table[f"{resource}_{stat}"] = stats[stat]
            table[f"{resource}_{stat}_pct"] = stats[stat] / alloc.to_numpy(dtype=np.float64) * 100
        table[f"{resource}_idle_requested"] = table["pool"].map(
            grouped[f"{resource}_idle_requested"].sum()
        )
    table["overcommitted_nodes"] = table["pool"].map(overcommitted).astype("int64")
    return table


def sample_coverage(
    node_usage: pd.DataFrame,
    nodes: pd.DataFrame,
    *,
    start: pd.Timestamp,
    end: pd.Timestamp,
    step_seconds: int,
) -> pd.DataFrame:
    """Per node: expected and observed usage samples in ``[start, end)`` and their ratio.

    A node counts only for the part of the day it existed (``first_seen``..``last_seen`` when
    known), so a node added at noon is not "half missing". Columns: ``node, pool, expected,
    observed, coverage`` (observed counts samples with a CPU value).
    """
    step = pd.Timedelta(seconds=max(step_seconds, 1))
    # An all-NaT column can come back from parquet without its timezone: normalise first.
    first = pd.to_datetime(nodes["first_seen"], utc=True).fillna(start).clip(lower=start)
    last = (pd.to_datetime(nodes["last_seen"], utc=True).fillna(end) + step).clip(upper=end)
    span = (last - first).dt.total_seconds().clip(lower=0)
    expected = np.floor(span / step.total_seconds()).astype("int64")
    usage = node_usage[in_period(node_usage["timestamp"], start, end)]
    observed = usage[usage["cpu"].notna()].groupby(usage["node"].astype(str)).size()
    table = pd.DataFrame({"node": nodes["node"].astype(str).to_numpy()})
    table["pool"] = table["node"].map(node_pools(nodes))
    table["expected"] = expected.to_numpy()
    table["observed"] = table["node"].map(observed).fillna(0).astype("int64")
    table["observed"] = np.minimum(table["observed"], table["expected"])
    with np.errstate(invalid="ignore", divide="ignore"):
        table["coverage"] = np.where(
            table["expected"] > 0, table["observed"] / table["expected"].clip(lower=1), np.nan
        )
    return table
