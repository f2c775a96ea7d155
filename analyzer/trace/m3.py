"""Pack ByteDance M3 under each strategy and compare with the real production assignment.

Containers arrive one at a time in an order shuffled per seed (M3 has no timestamps); a container
that fits nowhere fails (no retry). Metrics for a placement: containers placed, machines used,
mean / max CPU allocation of used machines, and stranded capacity: free CPU on machines whose
free memory cannot hold a typical container (the median request), and free memory on machines
whose free CPU cannot, each as % of the cluster; headroom = how many more typical containers fit.

The per-machine allocation distribution (``machine_alloc_pct``): each machine's CPU and memory
allocation %, sorted from the most to the least allocated machine; for a strategy the k-th value is
the mean over seeds of each seed's k-th highest (the mean of the sorted curves).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from analyzer.scheduling.gpu.cluster import GpuState
from analyzer.scheduling.gpu.fragments import target_workload
from analyzer.scheduling.gpu.model import GpuDemand, GpuNodes
from analyzer.sources.bytedance import M3Cluster, load_m3
from analyzer.trace.registry import canonical_name, get_policy

M3_DEFAULT_POLICIES = (
    "LeastAllocated",
    "MostAllocated",
    "RTCR",
    "Balanced",
    "BestFit",
    "DotProd",
    "Random",
)


def _nodes(cluster: M3Cluster) -> GpuNodes:
    count = len(cluster.machines)
    return GpuNodes.create(
        cluster.machines, cluster.machine_cpu, cluster.machine_memory, [0] * count, [""] * count
    )


def placement_metrics(
    cluster: M3Cluster, cpu_free: NDArray[np.int64], mem_free: NDArray[np.int64], placed: int
) -> dict[str, Any]:
    """Metrics of one placement given the machines' free CPU and memory."""
    typical_cpu = float(np.median(cluster.container_cpu))
    typical_mem = float(np.median(cluster.container_memory))
    used_cpu = cluster.machine_cpu - cpu_free
    used = (used_cpu > 0) | (cluster.machine_memory - mem_free > 0)
    alloc = used_cpu / cluster.machine_cpu
    headroom = np.minimum(cpu_free // max(typical_cpu, 1), mem_free // max(typical_mem, 1)).sum()
    return {
        "containers_placed": placed,
        "containers_failed": len(cluster.containers) - placed,
        "nodes_used": int(used.sum()),
        "cpu_alloc_mean_pct_used_nodes": round(100 * float(alloc[used].mean()), 2)
        if used.any()
        else 0.0,
        "cpu_alloc_max_pct": round(100 * float(alloc.max()), 2),
        "stranded_cpu_pct": round(
            100 * float(cpu_free[mem_free < typical_mem].sum() / cluster.machine_cpu.sum()), 3
        ),
        "stranded_memory_pct": round(
            100 * float(mem_free[cpu_free < typical_cpu].sum() / cluster.machine_memory.sum()), 3
        ),
        "headroom_typical_containers": int(headroom),
    }


@dataclass(frozen=True)
class Placement:
    """Free CPU and memory per machine after placing containers, and how many were placed."""

    cpu_free: NDArray[np.int64]
    mem_free: NDArray[np.int64]
    placed: int


def production_placement(cluster: M3Cluster) -> Placement:
    """The recorded production assignment."""
    placed = cluster.production >= 0
    count = len(cluster.machines)
    cpu_used = np.bincount(
        cluster.production[placed], weights=cluster.container_cpu[placed], minlength=count
    )
    mem_used = np.bincount(
        cluster.production[placed], weights=cluster.container_memory[placed], minlength=count
    )
    return Placement(
        cluster.machine_cpu - cpu_used.astype(np.int64),
        cluster.machine_memory - mem_used.astype(np.int64),
        int(placed.sum()),
    )


def production_metrics(cluster: M3Cluster) -> dict[str, Any]:
    """Metrics of the recorded production assignment."""
    prod = production_placement(cluster)
    return placement_metrics(cluster, prod.cpu_free, prod.mem_free, prod.placed)


def pack_placement(cluster: M3Cluster, policy_name: str, seed: int) -> Placement:
    """Place every container in a seed-shuffled order under one policy."""
    policy = get_policy(policy_name)
    zeros = np.zeros(len(cluster.containers), dtype=np.int64)
    workload = target_workload(cluster.container_cpu, zeros, zeros, [None] * len(zeros))
    state = GpuState(_nodes(cluster), workload)
    rng = np.random.default_rng(seed)
    tie_rng = np.random.default_rng([seed, 1])
    placed = 0
    for i in rng.permutation(len(cluster.containers)):
        demand = GpuDemand(
            cpu=int(cluster.container_cpu[i]), memory=int(cluster.container_memory[i])
        )
        feasible = np.flatnonzero(state.nodes.feasible(demand))
        if len(feasible):
            decision = policy(state, demand, feasible, tie_rng)
            state.bind(decision.node, demand, decision.gpus)
            placed += 1
    return Placement(state.nodes.cpu_free.copy(), state.nodes.mem_free.copy(), placed)


def pack(cluster: M3Cluster, policy_name: str, seed: int) -> dict[str, Any]:
    """The metrics of ``pack_placement``."""
    result = pack_placement(cluster, policy_name, seed)
    return placement_metrics(cluster, result.cpu_free, result.mem_free, result.placed)


def machine_alloc_pct(cluster: M3Cluster, placement: Placement) -> dict[str, NDArray[np.float64]]:
    """Per machine CPU and memory allocation %, each sorted from the highest to the lowest."""
    cpu = 100 * (cluster.machine_cpu - placement.cpu_free) / cluster.machine_cpu
    memory = 100 * (cluster.machine_memory - placement.mem_free) / cluster.machine_memory
    return {"cpu": -np.sort(-cpu), "memory": -np.sort(-memory)}


def _rounded(values: NDArray[np.float64]) -> list[float]:
    return [round(float(v), 2) for v in values]


def run_m3(
    policies: tuple[str, ...], seeds: tuple[int, ...], path: Path | None = None
) -> dict[str, Any]:
    """The JSON result of ``analyzer trace bytedance-m3``: production vs each policy (mean over seeds)."""
    cluster = load_m3(path)
    out: dict[str, Any] = {
        "trace": {
            "machines": len(cluster.machines),
            "containers": len(cluster.containers),
            "cluster_cpu_cores": round(float(cluster.machine_cpu.sum()) / 1000, 1),
            "cluster_memory_gib": round(float(cluster.machine_memory.sum()) / 1024, 1),
            "scaling": "most common machine shape = 96 cores / 384 GiB; all values scaled by the same factors",
        },
        "order": "containers shuffled per seed; no retry",
        "seeds": list(seeds),
        "production": production_metrics(cluster),
        "policies": {},
    }
    production = machine_alloc_pct(cluster, production_placement(cluster))
    distribution: dict[str, Any] = {
        "sorted": "per placement, machines from the most to the least allocated; strategies: "
        "the mean over seeds of each seed's k-th highest",
        "production": {k: _rounded(v) for k, v in production.items()},
        "policies": {},
    }
    for name in policies:
        policy = canonical_name(name)
        placements = [pack_placement(cluster, policy, seed) for seed in seeds]
        runs = [placement_metrics(cluster, p.cpu_free, p.mem_free, p.placed) for p in placements]
        out["policies"][policy] = {
            key: round(float(np.mean([r[key] for r in runs])), 3) for key in runs[0]
        }
        curves = [machine_alloc_pct(cluster, p) for p in placements]
        distribution["policies"][policy] = {
            key: _rounded(np.mean([c[key] for c in curves], axis=0)) for key in ("cpu", "memory")
        }
    out["machine_alloc_pct"] = distribution
    return out


def m3_table(data: dict[str, Any]) -> str:
    """A readable table of ``run_m3`` output: one row per metric, one column per placement."""
    columns = {"production": data["production"], **data["policies"]}
    width = max(14, *(len(name) + 2 for name in columns))
    rows = [f"{'metric':<30}" + "".join(f"{name:>{width}}" for name in columns)]
    for key in data["production"]:
        rows.append(f"{key:<30}" + "".join(f"{m[key]:>{width}}" for m in columns.values()))
    scale = data["trace"]
    rows.append(
        f"({scale['machines']} machines, {scale['containers']} containers, "
        f"{scale['cluster_cpu_cores']} cores; policies: mean over seeds {data['seeds']})"
    )
    return "\n".join(rows)
