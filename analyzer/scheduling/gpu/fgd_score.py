"""FGD scores for every (feasible node, GPU choice) candidate, from the incremental caches.

Only one node changes per placement, and on it only the GPUs the pod takes, so the node's
fragment after the placement follows from the cached per-shape sums without touching the other
GPUs: for a shared pod moving GPU j from g to g − r,

    small_sum'(m) = small_sum(m) − g·[g < r_m] + (g − r)·[g − r < r_m]
    fitting'(m)   = fitting(m)   − [g ≥ r_m]   + [g − r ≥ r_m]

and a whole-GPU pod turns fully free GPUs (which fit every shape and are never "too small") into
empty ones: small_sum unchanged, fitting − k. Work is candidates × shapes, not × GPUs.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from analyzer.scheduling.gpu.cluster import GpuState
from analyzer.scheduling.gpu.fragments import weighted_node_fragments
from analyzer.scheduling.gpu.model import MILLI, GpuDemand

IntArray = NDArray[np.int64]


def _shared_candidates(
    state: GpuState, demand: GpuDemand, feasible: IntArray
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """(node, gpu, small_sum', fitting') for each distinct fitting GPU value per node."""
    free = state.nodes.gpu_free[feasible]
    # GPUs with the same free milli on one node give the same score: keep the lowest index of each
    # distinct fitting value (a stable sort puts it first in its run of equal values).
    masked = np.where(free >= demand.gpu_milli, free, -1)
    order = np.argsort(masked, axis=1, kind="stable")
    values = np.take_along_axis(masked, order, axis=1)
    first = np.ones(values.shape, dtype=bool)
    first[:, 1:] = values[:, 1:] != values[:, :-1]
    row, col = np.nonzero(first & (values >= 0))
    gpu = order[row, col]
    node = feasible[row]
    old = values[row, col][:, None]
    new = old - demand.gpu_milli
    r = state.workload.gpu_milli[state.gpu_shapes][None, :]
    small = state.small_sum[node] - old * (old < r) + new * (new < r)
    fitting = state.fitting[node] - (old >= r) + (new >= r)
    return node, gpu.astype(np.int64), small, fitting


def fgd_candidates(
    state: GpuState, demand: GpuDemand, feasible: IntArray
) -> tuple[IntArray, IntArray, IntArray]:
    """Arrays (node, gpu index or −1, integer FGD score) over all placement candidates."""
    workload = state.workload
    if demand.shared:
        node, gpu, small, fitting = _shared_candidates(state, demand, feasible)
    elif demand.num_gpu == 0 or demand.gpu_milli == MILLI:
        node = feasible
        gpu = np.full(len(node), -1, dtype=np.int64)
        small = state.small_sum[node]
        fitting = state.fitting[node] - demand.num_gpu
    else:  # k > 1 GPUs each partly used: not in the openb data; recompute the rows directly.
        node = feasible
        gpu = np.full(len(node), -1, dtype=np.int64)
        after = state.nodes.gpu_free[node].copy()
        for i, n in enumerate(node):
            for j in state.nodes.pick_gpus(int(n), demand, "first-fit"):
                after[i, j] -= demand.gpu_milli
        weighted_after = weighted_node_fragments(
            state.nodes.cpu_free[node] - demand.cpu, after, state.access[node], workload
        )
        return node, gpu, _scores(weighted_after - state.weighted_frag[node], workload.total)
    cols = state.gpu_shapes
    cpu_after = state.nodes.cpu_free[node] - demand.cpu
    idle_after = state.nodes.gpu_free[node].sum(axis=1) - demand.total_gpu_milli
    satisfied = (cpu_after[:, None] >= workload.cpu[cols][None, :]) & (
        fitting >= workload.num_gpu[cols][None, :]
    )
    if not state.all_access:
        satisfied &= state.access[node][:, cols]
    # float64 matmul (BLAS) is exact here: every partial sum is an integer far below 2**53.
    fragments = np.where(satisfied, small, idle_after[:, None]).astype(np.float64)
    cpu_only_weight = int(workload.weights.sum() - workload.weights[cols].sum())
    weighted_after = (
        fragments @ workload.weights[cols].astype(np.float64) + cpu_only_weight * idle_after
    )
    return node, gpu, _scores(weighted_after - state.weighted_frag[node], workload.total)


def _scores(weighted_delta: NDArray[np.float64] | IntArray, total: int) -> IntArray:
    """int(sigmoid(−Δ/1000)·100) with Δ = weighted_delta / total in GPU milli.

    Same operation order as the artifact (sigmoid, then × MaxNodeScore, then truncation), so a
    value on an integer boundary truncates the same way; no NormalizeScore follows.
    """
    delta = weighted_delta / total
    return (1.0 / (1.0 + np.exp(delta / 1000.0)) * 100.0).astype(np.int64)
