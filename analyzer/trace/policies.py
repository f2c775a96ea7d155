"""The FGD paper's six placement policies as vectorised score functions over all nodes.

Each policy scores every feasible node for one pod (integer scores, like a kube-scheduler score
plugin), the highest score wins, and the policy chooses the GPUs inside the chosen node.

Ties between nodes: the artifact runs a fork of kube-scheduler 1.20.5 (``go.mod`` replaces
``k8s.io/kubernetes`` with ``mental2008/kubernetes v1.20.5-minor``) whose ``selectHost`` keeps the
node with the lexicographically smallest name among the top scores ("for reproducibility")
instead of upstream's uniform reservoir sampling, and the simulator prefixes every node name with
``%04d-`` taken from a seeded permutation. So a run breaks ties by a fixed, seed-random node
priority: ``ClusterState.node_rank``, lowest wins. Without a rank, ties are uniform (upstream). Formulas: ``research/real-data.md`` §3 (our own code; where the table is
ambiguous the reading is stated in the docstring). Constants: the largest node spec, 128 cores and
8 GPUs, normalises CPU and GPU (``MAX_CPU``, ``MAX_GPU_MILLI``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from analyzer.scheduling.gpu import MILLI, GpuDemand
from analyzer.trace.state import ClusterState, affinity_tag

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]
MAX_CPU = 128_000.0
MAX_GPU_MILLI = 8_000.0
MAX_SCORE = 100


@dataclass(frozen=True)
class Decision:
    """Where a pod goes: node index and GPU indices on it."""

    node: int
    gpus: tuple[int, ...]


PolicyFn = Callable[[ClusterState, GpuDemand, IntArray, np.random.Generator], Decision]


def pick_top(
    candidates: IntArray,
    scores: IntArray,
    rng: np.random.Generator,
    rank: IntArray | None = None,
) -> int:
    """The candidate with the highest score; ties go to the lowest ``rank`` (the artifact's
    scheduler), or uniformly at random when ``rank`` is None (upstream kube-scheduler)."""
    top = candidates[scores == scores.max()]
    if len(top) == 1:
        return int(top[0])
    if rank is not None:
        return int(top[np.argmin(rank[top])])
    return int(top[rng.integers(len(top))])


def _decide(
    state: ClusterState,
    demand: GpuDemand,
    feasible: IntArray,
    scores: IntArray,
    rng: np.random.Generator,
    rule: str,
) -> Decision:
    node = pick_top(feasible, scores, rng, state.node_rank)
    return Decision(node, state.nodes.pick_gpus(node, demand, rule))


def random_policy(
    state: ClusterState, demand: GpuDemand, feasible: IntArray, rng: np.random.Generator
) -> Decision:
    """Random: a uniformly random feasible node, then random fitting GPUs on it."""
    node = int(feasible[rng.integers(len(feasible))])
    if demand.num_gpu == 0:
        return Decision(node, ())
    fits = np.flatnonzero(state.nodes.gpu_free[node] >= demand.gpu_milli)
    chosen = np.sort(rng.choice(fits, size=demand.num_gpu, replace=False))
    return Decision(node, tuple(int(g) for g in chosen))


def best_fit_policy(
    state: ClusterState, demand: GpuDemand, feasible: IntArray, rng: np.random.Generator
) -> Decision:
    """BestFit: 100·(1 − ½(C_free − c)/128000 − ½(G_free − k·r)/8000), min-max normalised.

    Integer truncation then the artifact's integer min-max normalisation to 0..100 (which can
    merge close raw scores into one tie); the GPU inside the node is the best-fit GPU.
    """
    nodes = state.nodes
    cpu_left = (nodes.cpu_free[feasible] - demand.cpu) / MAX_CPU * 0.5
    gpu_left = (nodes.gpu_free[feasible].sum(axis=1) - demand.total_gpu_milli) / MAX_GPU_MILLI * 0.5
    raw = ((1.0 - (cpu_left + gpu_left)) * MAX_SCORE).astype(np.int64)
    return _decide(state, demand, feasible, normalize(raw), rng, "best-fit")


def normalize(raw: IntArray) -> IntArray:
    """Integer min-max normalisation to 0..100; all-equal scores become 0."""
    low, high = raw.min(), raw.max()
    if high == low:
        return np.zeros_like(raw)
    scaled: IntArray = (raw - low) * MAX_SCORE // (high - low)
    return scaled


def dot_product_policy(
    state: ClusterState, demand: GpuDemand, feasible: IntArray, rng: np.random.Generator
) -> Decision:
    """DotProd (Tetris-like): 100·(1 − free·req/2) over (CPU, total GPU) divided by the max spec.

    ``free`` is the node's free vector before the placement (the artifact's ``merge`` dimension
    extension with ``max`` normalisation, as its run scripts configure DotProd). With ``merge``
    the score names no GPU, so Open-Gpu-Share's configured ``gpuSelMethod: best`` picks it:
    the tightest fitting GPU (best-fit), lowest index on ties.
    """
    nodes = state.nodes
    cpu_term = nodes.cpu_free[feasible] / MAX_CPU * (demand.cpu / MAX_CPU)
    gpu_term = (
        nodes.gpu_free[feasible].sum(axis=1)
        / MAX_GPU_MILLI
        * (demand.total_gpu_milli / MAX_GPU_MILLI)
    )
    scores = ((1.0 - (cpu_term + gpu_term) / 2.0) * MAX_SCORE).astype(np.int64)
    return _decide(state, demand, feasible, scores, rng, "best-fit")


def gpu_packing_policy(
    state: ClusterState, demand: GpuDemand, feasible: IntArray, rng: np.random.Generator
) -> Decision:
    """GpuPacking bands, GPUs taken least-free first (best-fit).

    Entirely idle node: max(33 − free GPUs, free GPUs); fully free GPUs needed on a used node:
    max(50 − fully free GPUs used, 33); only already-shared GPUs used: max(100 − Σ(free% of those
    GPUs before placement)/10, 50). CPU-only pods score 0 everywhere.
    """
    if demand.num_gpu == 0:
        return _decide(
            state, demand, feasible, np.zeros(len(feasible), dtype=np.int64), rng, "first-fit"
        )
    free = state.nodes.gpu_free[feasible]
    count = state.nodes.gpu_count[feasible]
    fully_free = (free == MILLI).sum(axis=1)
    # GPUs the best-fit order would use: sort each row by free milli, keep fitting ones.
    masked = np.where(free >= demand.gpu_milli, free, MILLI + 1)
    chosen = np.sort(masked, axis=1, kind="stable")[:, : demand.num_gpu]
    use_fully_free = (chosen == MILLI).sum(axis=1)
    shared_pct = (chosen * 100 // MILLI).sum(axis=1)
    scores = np.where(
        fully_free == count,
        np.maximum(MAX_SCORE // 3 - fully_free, fully_free),
        np.where(
            use_fully_free > 0,
            np.maximum(MAX_SCORE // 2 - use_fully_free, MAX_SCORE // 3),
            np.maximum(MAX_SCORE - shared_pct // 10, MAX_SCORE // 2),
        ),
    ).astype(np.int64)
    return _decide(state, demand, feasible, scores, rng, "best-fit")


def gpu_clustering_policy(
    state: ClusterState, demand: GpuDemand, feasible: IntArray, rng: np.random.Generator
) -> Decision:
    """GpuClustering: band by the node's GPU affinity tags, fuller nodes higher within a band.

    Bands: only this tag (75, 100]; this tag among others (50, 75]; no GPU pod yet (25, 50];
    other tags only (0, 25]; within a band + 25·(8000 − free GPU milli)//8000. CPU-only pods 0.
    The GPU is Open-Gpu-Share's default ``gpuSelMethod: best`` (best-fit), as for BestFit.
    """
    tag = affinity_tag(demand)
    if tag < 0:
        return _decide(
            state, demand, feasible, np.zeros(len(feasible), dtype=np.int64), rng, "first-fit"
        )
    tags = state.tags[feasible]
    present = tags > 0
    has_tag = present[:, min(tag, tags.shape[1] - 1)]
    kinds = present.sum(axis=1)
    base = np.where(has_tag, np.where(kinds == 1, 75, 50), np.where(kinds == 0, 25, 0)).astype(
        np.int64
    )
    left = state.nodes.gpu_free[feasible].sum(axis=1)
    scores = base + (MAX_SCORE // 4) * (int(MAX_GPU_MILLI) - left) // int(MAX_GPU_MILLI)
    return _decide(state, demand, feasible, scores, rng, "best-fit")


def fgd_policy(
    state: ClusterState, demand: GpuDemand, feasible: IntArray, rng: np.random.Generator
) -> Decision:
    """FGD: score = int(100·sigmoid(−Δ/1000)), Δ = F_n(M) after − before the placement (milli).

    A shared-GPU pod is tried on every fitting GPU of every feasible node (one candidate per
    distinct free value per node, lowest index first) and each node keeps its best GPU, the
    lowest index among equal scores (the artifact's strict ``>`` over GPUs in index order); a
    whole-GPU pod takes the lowest-index free GPUs; a CPU-only pod changes only the free CPU.
    No NormalizeScore step (the artifact's FGD plugin has no score extensions).
    """
    from analyzer.trace.fgd_score import fgd_candidates

    cand_node, cand_gpu, scores = fgd_candidates(state, demand, feasible)
    best = scores.max()
    winners = np.flatnonzero(scores == best)
    # Per node keep its best candidate with the lowest GPU index, then tie-break across nodes.
    winners = winners[np.lexsort((cand_gpu[winners], cand_node[winners]))]
    _, first = np.unique(cand_node[winners], return_index=True)
    winners = winners[first]
    node = pick_top(cand_node[winners], scores[winners], rng, state.node_rank)
    pick = int(winners[np.flatnonzero(cand_node[winners] == node)[0]])
    if demand.shared:
        return Decision(node, (int(cand_gpu[pick]),))
    return Decision(node, state.nodes.pick_gpus(node, demand, "first-fit"))


POLICIES: dict[str, PolicyFn] = {
    "Random": random_policy,
    "DotProd": dot_product_policy,
    "GpuClustering": gpu_clustering_policy,
    "GpuPacking": gpu_packing_policy,
    "BestFit": best_fit_policy,
    "FGD": fgd_policy,
}
