"""Synthetic fleet histories written straight to parquet, for the fleet page's tests and bench.

Each cluster gets ``OUT/cluster=NAME/history/`` with, per day, the files a nightly run records —
``pools/DAY.parquet`` and ``rollups/DAY.parquet`` and ``summary/DAY.json`` — written by the
history store's own writers (``history/capacity.py``, ``history/store.py``), and ``cluster.json``.
The numbers are synthetic (no scheduling, no usage grid): each node has a fixed allocatable, the
pool's requests and usage drift by a seeded random walk. Nothing here is a measurement of a real
cluster; ``bench/fleet.py`` and docs/benchmarks.md say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from analyzer.core.atomic import atomic_write_text
from analyzer.history.capacity import POOL_SCHEMA, write_tables
from analyzer.history.fleet_source import cluster_dir
from analyzer.history.identity import IDENTITY_FILE, ClusterIdentity
from analyzer.history.store import HistoryStore

NODE_CPU = 16_000  # millicores
NODE_MEMORY = 64 * 2**30  # bytes
_STATS = ("avg", "p50", "p90", "p95", "p99")  # usage/grid.py STATS


@dataclass(frozen=True)
class FleetSpec:
    """How big a synthetic fleet is."""

    clusters: int = 3
    nodes: int = 20  # per cluster
    pools: int = 2  # per cluster; nodes split evenly
    days: int = 10
    first_day: date = date(2026, 10, 1)
    seed: int = 7
    rollups: bool = True


def cluster_names(spec: FleetSpec) -> list[str]:
    """``cluster-00``, ``cluster-01``, …"""
    return [f"cluster-{i:02d}" for i in range(spec.clusters)]


def write_fleet(root: Path, spec: FleetSpec) -> list[Path]:
    """Write every cluster's history under ``root``; returns the history folders."""
    rng = np.random.default_rng(spec.seed)
    out = []
    for name in cluster_names(spec):
        history = Path(root) / cluster_dir(name) / "history"
        history.mkdir(parents=True, exist_ok=True)
        atomic_write_text(history / IDENTITY_FILE, ClusterIdentity(name, None, True).to_json())
        write_cluster(history, spec, rng)
        out.append(history)
    return out


def write_cluster(history: Path, spec: FleetSpec, rng: np.random.Generator) -> None:
    """One cluster's days: same node names in every cluster (``node-0000``…), pools ``pool-a``…"""
    per_pool = max(spec.nodes // spec.pools, 1)
    pools = [f"pool-{chr(ord('a') + i)}" for i in range(spec.pools)]
    nodes = [f"node-{i:04d}" for i in range(per_pool * spec.pools)]
    node_pool = np.repeat(pools, per_pool)
    level = rng.uniform(0.3, 0.7, size=len(nodes))  # requested share of each node
    store = HistoryStore(history)
    for offset in range(spec.days):
        day = spec.first_day + timedelta(days=offset)
        level = np.clip(level + rng.normal(0.0, 0.02, size=len(nodes)), 0.05, 0.95)
        used = level * rng.uniform(0.4, 1.3, size=len(nodes))
        stamp = pd.Timestamp(day, tz="UTC")
        write_tables(history, day, {"pools": _pools(stamp, pools, node_pool, level, used),
                                    "workloads": pd.DataFrame()})  # fmt: skip
        rollups = _rollups(stamp, nodes, node_pool, level, used) if spec.rollups else None
        breaches = int((used > 0.85).sum())  # over an 85 % threshold of allocatable
        summary = {
            "nodes": len(nodes), "pods": 10 * len(nodes), "breaches": breaches,
            "nodes_with_breaches": breaches, "breach_node_seconds": 600.0 * breaches,
        }  # fmt: skip
        if rollups is not None:
            store.write_day(day, rollups, summary)


def memory_share(cpu_share: np.ndarray) -> np.ndarray:
    """Memory used as a share of allocatable: steadier than cpu (a cache does not idle)."""
    return np.clip(0.25 + 0.6 * cpu_share, 0.0, 1.0)


def _pools(
    stamp: pd.Timestamp, pools: list[str], node_pool: np.ndarray, level: np.ndarray,
    used: np.ndarray,
) -> pd.DataFrame:  # fmt: skip
    rows = []
    for pool in pools:
        mask = node_pool == pool
        n = int(mask.sum())
        row: dict[str, object] = dict.fromkeys(POOL_SCHEMA.names, np.nan)
        row.update(day=stamp, pool=pool, nodes_mean=float(n), nodes_max=n, used_samples=288,
                   largest_node=None, largest_node_cpu_allocatable_millicores=NODE_CPU,
                   largest_node_memory_allocatable_bytes=NODE_MEMORY)  # fmt: skip
        for r, size, unit in (("cpu", NODE_CPU, "millicores"), ("memory", NODE_MEMORY, "bytes")):
            share = used if r == "cpu" else memory_share(used)
            requested = float(level[mask].sum()) * size
            use = float(share[mask].sum()) * size
            row.update({
                f"{r}_allocatable_mean_{unit}": float(n * size),
                f"{r}_allocatable_peak_{unit}": float(n * size),
                f"{r}_requested_mean_{unit}": requested,
                f"{r}_requested_peak_{unit}": requested * 1.1,
                f"{r}_used_avg_{unit}": use * 0.8,
                f"{r}_used_p95_{unit}": use,
                f"{r}_used_p99_{unit}": use * 1.02,
                f"{r}_used_max_{unit}": use * 1.05,
                f"{r}_daemonset_requested_mean_{unit}": 0.02 * n * size,
                f"{r}_daemonset_requested_peak_{unit}": 0.02 * n * size,
            })  # fmt: skip
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame["largest_node"] = frame["largest_node"].astype(object)
    return frame


def _rollups(
    stamp: pd.Timestamp, nodes: list[str], node_pool: np.ndarray, level: np.ndarray,
    used: np.ndarray,
) -> pd.DataFrame:  # fmt: skip
    """Node × resource × stat rows, built as whole columns (a 500-node day is 5,000 rows)."""
    n, k = len(nodes), len(_STATS)
    sizes = {"cpu": NODE_CPU, "memory": NODE_MEMORY}
    shares = {"cpu": used, "memory": memory_share(used)}
    factors = np.array([0.8, 0.8, 0.95, 1.0, 1.02])
    value = np.concatenate(
        [np.outer(factors, shares[r] * sizes[r]).ravel() for r in sizes]
    )  # resource-major, then stat, then node
    allocatable = np.repeat(np.array(list(sizes.values()), dtype=np.int64), k * n)
    return pd.DataFrame({
        "node": np.tile(np.asarray(nodes, dtype=object), 2 * k),
        "pool": np.tile(node_pool.astype(object), 2 * k),
        "day": pd.DatetimeIndex([stamp]).as_unit("ns").repeat(2 * k * n),
        "resource": np.repeat(np.array(list(sizes), dtype=object), k * n),
        "stat": np.tile(np.repeat(np.array(_STATS, dtype=object), n), 2),
        "value": value,
        "allocatable": allocatable,
        "requested": np.concatenate([level * sizes[r] for r in sizes for _ in _STATS]),
        "samples": np.full(2 * k * n, 288, dtype=np.int64),
        "missing": np.zeros(2 * k * n, dtype=bool),
    })  # fmt: skip
