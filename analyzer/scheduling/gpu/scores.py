"""The FGD paper's six placement policies as node scores and GPU choices over a ``GpuState``.

One implementation for both users: the trace replays (``analyzer.trace.policies`` add the
artifact's tie rule) and the scheduling core's GPU score plugins (``plugins``) call these
functions. Each ``*_scores`` function scores the nodes ``nodes`` (indices, ascending) for one pod
with integer scores; the GPU inside the chosen node is the policy's own choice (``choose_gpus``).
Formulas: ``research/real-data.md`` §3; constants: the largest openb node spec, 128 cores and 8
GPUs, normalises CPU and GPU (``MAX_CPU``, ``MAX_GPU_MILLI``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from analyzer.core.errors import InputError
from analyzer.scheduling.gpu.cluster import GpuState, affinity_tag
from analyzer.scheduling.gpu.fgd_score import fgd_candidates
from analyzer.scheduling.gpu.model import MILLI, GpuDemand

IntArray = NDArray[np.int64]
MAX_CPU = 128_000.0
MAX_GPU_MILLI = 8_000.0
MAX_SCORE = 100
# GPU choice inside the chosen node, per policy (Open-Gpu-Share's ``gpuSelMethod: best`` is the
# artifact's default; FGD and Random choose their own GPUs).
GPU_RULES = {
    "Random": "random",
    "DotProd": "best-fit",
    "GpuClustering": "best-fit",
    "GpuPacking": "best-fit",
    "BestFit": "best-fit",
    "FGD": "fgd",
}


def normalize(raw: IntArray) -> IntArray:
    """Integer min-max normalisation to 0..100; all-equal scores become 0."""
    low, high = raw.min(), raw.max()
    if high == low:
        return np.zeros_like(raw)
    scaled: IntArray = (raw - low) * MAX_SCORE // (high - low)
    return scaled


def best_fit_raw(state: GpuState, demand: GpuDemand, nodes: IntArray) -> IntArray:
    """BestFit before normalisation: int(100·(1 − ½(C_free − c)/128000 − ½(G_free − k·r)/8000)).

    The artifact then min-max normalises over the feasible nodes (``normalize``), which can merge
    close raw scores into one tie.
    """
    gpu = state.nodes
    cpu_left = (gpu.cpu_free[nodes] - demand.cpu) / MAX_CPU * 0.5
    gpu_left = (gpu.gpu_free[nodes].sum(axis=1) - demand.total_gpu_milli) / MAX_GPU_MILLI * 0.5
    raw: IntArray = ((1.0 - (cpu_left + gpu_left)) * MAX_SCORE).astype(np.int64)
    return raw


def dot_product_scores(state: GpuState, demand: GpuDemand, nodes: IntArray) -> IntArray:
    """DotProd (Tetris-like): 100·(1 − free·req/2) over (CPU, total GPU) divided by the max spec.

    ``free`` is the node's free vector before the placement (the artifact's ``merge`` dimension
    extension with ``max`` normalisation, as its run scripts configure DotProd).
    """
    gpu = state.nodes
    cpu_term = gpu.cpu_free[nodes] / MAX_CPU * (demand.cpu / MAX_CPU)
    gpu_term = (
        gpu.gpu_free[nodes].sum(axis=1) / MAX_GPU_MILLI * (demand.total_gpu_milli / MAX_GPU_MILLI)
    )
    scores: IntArray = ((1.0 - (cpu_term + gpu_term) / 2.0) * MAX_SCORE).astype(np.int64)
    return scores


def gpu_packing_scores(state: GpuState, demand: GpuDemand, nodes: IntArray) -> IntArray:
    """GpuPacking bands, GPUs taken least-free first (best-fit).

    Entirely idle node: max(33 − free GPUs, free GPUs); fully free GPUs needed on a used node:
    max(50 − fully free GPUs used, 33); only already-shared GPUs used: max(100 − Σ(free% of those
    GPUs before placement)/10, 50). CPU-only pods score 0 everywhere.
    """
    if demand.num_gpu == 0:
        return np.zeros(len(nodes), dtype=np.int64)
    free = state.nodes.gpu_free[nodes]
    count = state.nodes.gpu_count[nodes]
    fully_free = (free == MILLI).sum(axis=1)
    # GPUs the best-fit order would use: sort each row by free milli, keep fitting ones.
    masked = np.where(free >= demand.gpu_milli, free, MILLI + 1)
    chosen = np.sort(masked, axis=1, kind="stable")[:, : demand.num_gpu]
    use_fully_free = (chosen == MILLI).sum(axis=1)
    shared_pct = (chosen * 100 // MILLI).sum(axis=1)
    scores: IntArray = np.where(
        fully_free == count,
        np.maximum(MAX_SCORE // 3 - fully_free, fully_free),
        np.where(
            use_fully_free > 0,
            np.maximum(MAX_SCORE // 2 - use_fully_free, MAX_SCORE // 3),
            np.maximum(MAX_SCORE - shared_pct // 10, MAX_SCORE // 2),
        ),
    ).astype(np.int64)
    return scores


def gpu_clustering_scores(state: GpuState, demand: GpuDemand, nodes: IntArray) -> IntArray:
    """GpuClustering: band by the node's GPU affinity tags, fuller nodes higher within a band.

    Bands: only this tag (75, 100]; this tag among others (50, 75]; no GPU pod yet (25, 50];
    other tags only (0, 25]; within a band + 25·(8000 − free GPU milli)//8000. CPU-only pods 0.
    """
    tag = affinity_tag(demand)
    if tag < 0:
        return np.zeros(len(nodes), dtype=np.int64)
    tags = state.tags[nodes]
    present = tags > 0
    has_tag = present[:, min(tag, tags.shape[1] - 1)]
    kinds = present.sum(axis=1)
    base = np.where(has_tag, np.where(kinds == 1, 75, 50), np.where(kinds == 0, 25, 0)).astype(
        np.int64
    )
    left = state.nodes.gpu_free[nodes].sum(axis=1)
    scores: IntArray = base + (MAX_SCORE // 4) * (int(MAX_GPU_MILLI) - left) // int(MAX_GPU_MILLI)
    return scores


def fgd_node_scores(
    state: GpuState, demand: GpuDemand, nodes: IntArray
) -> tuple[IntArray, IntArray]:
    """FGD per node: (score, GPU for a shared pod or −1), aligned with ``nodes`` (ascending).

    score = int(100·sigmoid(−Δ/1000)), Δ = F_n(M) after − before the placement (milli). A shared
    pod is tried on every fitting GPU and each node keeps its best GPU, the lowest index among
    equal scores (the artifact's strict ``>`` over GPUs in index order); every node in ``nodes``
    must pass the device filter. No NormalizeScore step (the artifact's plugin has none).
    """
    if state.workload.total == 0:
        raise InputError("FGD needs a target workload with at least one pod shape")
    cand_node, cand_gpu, scores = fgd_candidates(state, demand, nodes)
    if not demand.shared:  # one candidate per node, in ``nodes`` order
        return scores, cand_gpu
    # Shared pods: candidates come grouped by node in ``nodes`` order (row-major).
    starts = np.flatnonzero(np.r_[True, cand_node[1:] != cand_node[:-1]])
    best = np.maximum.reduceat(scores, starts)
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(scores)]))
    at_best = np.where(scores == best[group], cand_gpu, np.iinfo(np.int64).max)
    gpus: IntArray = np.minimum.reduceat(at_best, starts)
    if len(starts) != len(nodes):
        raise InputError("FGD: a node without a fitting GPU was scored; run the GPU filter first")
    return best.astype(np.int64), gpus


def random_gpus(
    state: GpuState, demand: GpuDemand, node: int, rng: np.random.Generator
) -> tuple[int, ...]:
    """Random fitting GPUs on ``node`` (the Random policy's GPU choice)."""
    if demand.num_gpu == 0:
        return ()
    fits = np.flatnonzero(state.nodes.gpu_free[node] >= demand.gpu_milli)
    chosen = np.sort(rng.choice(fits, size=demand.num_gpu, replace=False))
    return tuple(int(g) for g in chosen)


def choose_gpus(
    rule: str, state: GpuState, demand: GpuDemand, node: int, rng: np.random.Generator
) -> tuple[int, ...]:
    """The GPUs a policy with GPU rule ``rule`` (``GPU_RULES``) takes on ``node``."""
    if demand.num_gpu == 0:
        return ()
    if rule == "random":
        return random_gpus(state, demand, node, rng)
    if rule == "fgd":
        if demand.shared:
            _, gpus = fgd_node_scores(state, demand, np.array([node], dtype=np.int64))
            return (int(gpus[0]),)
        return state.nodes.pick_gpus(node, demand, "first-fit")
    return state.nodes.pick_gpus(node, demand, rule)
