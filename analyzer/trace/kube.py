"""kube-scheduler scoring strategies on trace data, GPUs counted as an extended resource.

Resources, each weight 1: ``cpu`` and ``memory`` (non-zero requests: 100m / 200 MiB when a pod
sets none) and the GPU as the extended resource ``alibaba.com/gpu-milli`` (allocatable = GPUs ×
1000, requested = Σ num_gpu × gpu_milli), so a shared pod counts its fraction. Upstream rules
(``research/kube-scoring.md`` §4–§7): a scalar resource the pod does not request is skipped, a
resource with allocatable 0 is skipped; integer arithmetic as upstream. Each strategy runs alone
as the only score plugin (like the paper's runs); the GPU inside the node is chosen best-fit, as
the gpushare device plugin does. H3's ``analyzer/scheduling`` plugins were not available when this
was written, so the formulas are restated here; swap them in when the registry exists.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from analyzer.scheduling.gpu.cluster import GpuState, nonzero_cpu, nonzero_memory
from analyzer.scheduling.gpu.model import GpuDemand
from analyzer.trace.policies import Decision, PolicyFn, pick_top

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


def _resources(
    state: GpuState, demand: GpuDemand, feasible: IntArray, nonzero: bool
) -> list[tuple[IntArray, IntArray, int]]:
    """Per resource: (allocatable, used before, pod request) over the feasible nodes."""
    nodes = state.nodes
    if nonzero:
        cpu_used, mem_used = state.nz_cpu_used[feasible], state.nz_mem_used[feasible]
        cpu_req, mem_req = nonzero_cpu(demand), nonzero_memory(demand)
    else:
        cpu_used = (nodes.cpu_alloc - nodes.cpu_free)[feasible]
        mem_used = (nodes.mem_alloc - nodes.mem_free)[feasible]
        cpu_req, mem_req = demand.cpu, demand.memory
    out = [
        (nodes.cpu_alloc[feasible], cpu_used, cpu_req),
        (nodes.mem_alloc[feasible], mem_used, mem_req),
    ]
    if demand.total_gpu_milli > 0:  # scalar resources the pod does not request are skipped
        gpu_alloc = nodes.gpu_count[feasible] * 1000
        gpu_used = gpu_alloc - nodes.gpu_free[feasible].sum(axis=1)
        out.append((gpu_alloc, gpu_used, demand.total_gpu_milli))
    return out


def _weighted_mean(parts: list[tuple[IntArray, BoolArray]], size: int) -> IntArray:
    """Σ score·w // Σ w over resources that are not skipped (weights 1)."""
    total = np.zeros(size, dtype=np.int64)
    weight = np.zeros(size, dtype=np.int64)
    for score, counted in parts:
        total += np.where(counted, score, 0)
        weight += counted
    return np.where(weight > 0, total // np.maximum(weight, 1), 0)


def least_allocated_scores(state: GpuState, demand: GpuDemand, feasible: IntArray) -> IntArray:
    """LeastAllocated: (alloc − requested)·100 // alloc, 0 if over, weighted mean."""
    parts: list[tuple[IntArray, BoolArray]] = []
    for alloc, used, req in _resources(state, demand, feasible, nonzero=True):
        requested = used + req
        safe = np.maximum(alloc, 1)
        score = np.where(requested > alloc, 0, (alloc - requested) * 100 // safe)
        parts.append((score, alloc > 0))
    return _weighted_mean(parts, len(feasible))


def most_allocated_scores(state: GpuState, demand: GpuDemand, feasible: IntArray) -> IntArray:
    """MostAllocated: min(requested, alloc)·100 // alloc, weighted mean."""
    parts: list[tuple[IntArray, BoolArray]] = []
    for alloc, used, req in _resources(state, demand, feasible, nonzero=True):
        score = np.minimum(used + req, alloc) * 100 // np.maximum(alloc, 1)
        parts.append((score, alloc > 0))
    return _weighted_mean(parts, len(feasible))


def rtcr_binpack_scores(state: GpuState, demand: GpuDemand, feasible: IntArray) -> IntArray:
    """RequestedToCapacityRatio, shape {0: 0, 100: 10} (×10 → raw = utilisation).

    Resources with raw 0 are dropped from numerator and weight; node = Go math.Round of the
    weighted mean = (2n + w) // (2w) for non-negative integers.
    """
    total = np.zeros(len(feasible), dtype=np.int64)
    weight = np.zeros(len(feasible), dtype=np.int64)
    for alloc, used, req in _resources(state, demand, feasible, nonzero=True):
        requested = used + req
        util = np.where(requested > alloc, 100, requested * 100 // np.maximum(alloc, 1))
        raw = util  # BrokenLinear over (0,0),(100,100) is the identity on 0..100
        counted = (alloc > 0) & (raw > 0)
        total += np.where(counted, raw, 0)
        weight += counted
    return np.where(weight > 0, (2 * total + weight) // np.maximum(2 * weight, 1), 0)


def _balance(fractions: list[NDArray[np.float64]]) -> IntArray:
    """int((1 − std)·100) with the upstream std (n == 2: |f0 − f1| / 2; population std above)."""
    n = len(fractions)
    if n < 2:
        return np.full(len(fractions[0]) if fractions else 0, 100, dtype=np.int64)
    if n == 2:
        std = np.abs((fractions[0] - fractions[1]) / 2)
    else:
        mean = sum(fractions[1:], fractions[0]) / n
        std = np.sqrt(sum(((f - mean) ** 2 for f in fractions[1:]), (fractions[0] - mean) ** 2) / n)
    return ((1 - std) * 100).astype(np.int64)


def balanced_allocation_scores(state: GpuState, demand: GpuDemand, feasible: IntArray) -> IntArray:
    """BalancedAllocation (v1.36+ delta form): 50 + (50 + s_with − s_without) // 2, real requests."""
    with_pod, without = [], []
    for alloc, used, req in _resources(state, demand, feasible, nonzero=False):
        safe = np.maximum(alloc, 1).astype(float)
        with_pod.append(np.minimum((used + req) / safe, 1.0))
        without.append(np.minimum(used / safe, 1.0))
    # alloc == 0 (a node without GPUs for a GPU pod) cannot pass the filter, so no skip is needed.
    return 50 + (50 + _balance(with_pod) - _balance(without)) // 2


ScoreFn = Callable[[GpuState, GpuDemand, IntArray], IntArray]


def _strategy(score_fn: ScoreFn) -> PolicyFn:
    def policy(
        state: GpuState, demand: GpuDemand, feasible: IntArray, rng: np.random.Generator
    ) -> Decision:
        scores = score_fn(state, demand, feasible)
        node = pick_top(feasible, scores, rng)
        return Decision(node, state.nodes.pick_gpus(node, demand, "best-fit"))

    policy.__doc__ = getattr(score_fn, "__doc__", None)
    return policy


KUBE_STRATEGIES: dict[str, PolicyFn] = {
    "LeastAllocated": _strategy(least_allocated_scores),
    "MostAllocated": _strategy(most_allocated_scores),
    "RTCR": _strategy(rtcr_binpack_scores),
    "Balanced": _strategy(balanced_allocation_scores),
}
