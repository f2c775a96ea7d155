"""Synthetic history for the monthly review tests: pool and workload day rows with known truth.

Each pool's daily values are given as functions of the day number ``t`` (0 = the first day), so a
test states the truth (a line, a weekly cycle, a constant) and computes what the review must say
by hand. Rows are written through ``analyzer.history.capacity.write_tables``, the store's own
writer, one file per day as the nightly run does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import pandas as pd

from analyzer.history.capacity import write_tables

GIB = 2**30
Line = Callable[[int], float]


def const(value: float) -> Line:
    return lambda t: value


def line(start: float, slope: float, weekly: float = 0.0) -> Line:
    """``start + slope·t + weekly·sin(2πt/7)``."""
    return lambda t: start + slope * t + weekly * math.sin(2 * math.pi * t / 7)


_C0_5 = const(0.5)
_C100_0 = const(100.0)
_C1_0 = const(1.0)
_C20_0 = const(20.0)
_C2_0 = const(2.0)
_C40_0 = const(40.0)
_C80_0 = const(80.0)


@dataclass(frozen=True)
class PoolTruth:
    """A pool of identical nodes; values in cores and GiB as functions of the day number."""

    name: str
    nodes: int = 10
    node_cpu: float = 8.0
    node_memory: float = 32.0
    requested_cpu: Line = _C40_0  # time-weighted mean of the day
    requested_cpu_peak: Line | None = None  # default: the mean
    requested_memory: Line = _C100_0
    requested_memory_peak: Line | None = None
    used_cpu_p95: Line = _C20_0
    used_memory_p95: Line = _C80_0
    node_count: Line | None = None  # nodes by day number (default: ``nodes`` every day)


@dataclass(frozen=True)
class WorkloadTruth:
    """A Deployment: per-pod requests (cores, GiB), replicas and per-pod usage by day number."""

    name: str
    pool: str
    namespace: str = "team"
    cpu_request: Line = _C1_0
    memory_request: Line = _C2_0
    replicas: Line = _C2_0
    cpu_p95: Line = _C0_5
    memory_max: Line = _C1_0


def pool_row(truth: PoolTruth, day: date, t: int) -> dict[str, object]:
    peak_cpu = (truth.requested_cpu_peak or truth.requested_cpu)(t)
    peak_mem = (truth.requested_memory_peak or truth.requested_memory)(t)
    nodes = truth.nodes if truth.node_count is None else truth.node_count(t)
    alloc_cpu = nodes * truth.node_cpu * 1000
    alloc_mem = nodes * truth.node_memory * GIB
    used_cpu = truth.used_cpu_p95(t) * 1000
    used_mem = truth.used_memory_p95(t) * GIB
    return {
        "day": pd.Timestamp(day, tz="UTC"),
        "pool": truth.name,
        "nodes_mean": float(nodes),
        "nodes_max": math.ceil(nodes),
        "cpu_allocatable_mean_millicores": alloc_cpu,
        "cpu_allocatable_peak_millicores": alloc_cpu,
        "memory_allocatable_mean_bytes": alloc_mem,
        "memory_allocatable_peak_bytes": alloc_mem,
        "cpu_requested_mean_millicores": truth.requested_cpu(t) * 1000,
        "cpu_requested_peak_millicores": peak_cpu * 1000,
        "memory_requested_mean_bytes": truth.requested_memory(t) * GIB,
        "memory_requested_peak_bytes": peak_mem * GIB,
        "cpu_used_avg_millicores": used_cpu * 0.6,
        "cpu_used_p95_millicores": used_cpu,
        "cpu_used_p99_millicores": used_cpu * 1.05,
        "cpu_used_max_millicores": used_cpu * 1.1,
        "memory_used_avg_bytes": used_mem * 0.9,
        "memory_used_p95_bytes": used_mem,
        "memory_used_p99_bytes": used_mem,
        "memory_used_max_bytes": used_mem,
        "used_samples": 288,
        "cpu_daemonset_requested_mean_millicores": 100.0 * nodes,
        "cpu_daemonset_requested_peak_millicores": 100.0 * nodes,
        "memory_daemonset_requested_mean_bytes": 0.125 * GIB * nodes,
        "memory_daemonset_requested_peak_bytes": 0.125 * GIB * nodes,
        "largest_node": f"{truth.name}-0",
        "largest_node_cpu_allocatable_millicores": int(truth.node_cpu * 1000),
        "largest_node_memory_allocatable_bytes": int(truth.node_memory * GIB),
    }


def workload_row(truth: WorkloadTruth, day: date, t: int) -> dict[str, object]:
    replicas = truth.replicas(t)
    p95 = truth.cpu_p95(t) * 1000
    return {
        "day": pd.Timestamp(day, tz="UTC"),
        "namespace": truth.namespace,
        "owner_kind": "Deployment",
        "owner_name": truth.name,
        "pool": truth.pool,
        "pods": math.ceil(replicas),
        "replicas_mean": replicas,
        "replicas_max": math.ceil(replicas),
        "cpu_request_millicores": truth.cpu_request(t) * 1000,
        "cpu_limit_millicores": 0.0,
        "memory_request_bytes": truth.memory_request(t) * GIB,
        "memory_limit_bytes": 0.0,
        "cpu_used_p50_millicores": p95 * 0.5,
        "cpu_used_p90_millicores": p95 * 0.9,
        "cpu_used_p95_millicores": p95,
        "cpu_used_p99_millicores": p95 * 1.1,
        "cpu_used_max_millicores": p95 * 1.2,
        "memory_used_p99_bytes": truth.memory_max(t) * GIB * 0.9,
        "memory_used_max_bytes": truth.memory_max(t) * GIB,
        "cpu_samples": 288,
        "restarts": None,
        "oom_kills": None,
    }


@dataclass
class History:
    root: Path
    start: date
    days: int
    pools: list[PoolTruth]
    workloads: list[WorkloadTruth] = field(default_factory=list)

    def day(self, t: int) -> date:
        return self.start + timedelta(days=t)


def write_history(
    root: Path,
    start: date,
    days: int,
    pools: list[PoolTruth],
    workloads: list[WorkloadTruth] | None = None,
) -> History:
    """Write ``days`` days from ``start`` under ``root`` (an ``OUT/history`` folder)."""
    workloads = workloads or []
    for t in range(days):
        day = start + timedelta(days=t)
        write_tables(
            root,
            day,
            {
                "pools": pd.DataFrame([pool_row(p, day, t) for p in pools]),
                "workloads": pd.DataFrame([workload_row(w, day, t) for w in workloads]),
            },
        )
    return History(root, start, days, pools, workloads)
