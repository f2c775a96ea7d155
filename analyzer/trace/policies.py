"""The FGD paper's six placement policies for trace replays: shared math, the artifact's ties.

The scores and GPU choices are the scheduling core's (``analyzer.scheduling.gpu.scores``, also
behind the core's GPU presets ``fgd``, ``bestfit``, ...); this module adds the node choice.
Each policy scores every feasible node for one pod (integer scores, like a kube-scheduler score
plugin), the highest score wins, and the policy chooses the GPUs inside the chosen node.

Ties between nodes: the artifact runs a fork of kube-scheduler 1.20.5 (``go.mod`` replaces
``k8s.io/kubernetes`` with ``mental2008/kubernetes v1.20.5-minor``) whose ``selectHost`` keeps the
node with the lexicographically smallest name among the top scores ("for reproducibility")
instead of upstream's uniform reservoir sampling, and the simulator prefixes every node name with
``%04d-`` taken from a seeded permutation. So a run breaks ties by a fixed, seed-random node
priority: ``GpuState.node_rank``, lowest wins. Without a rank, ties are uniform (upstream).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from analyzer.scheduling.gpu.cluster import GpuState
from analyzer.scheduling.gpu.model import GpuDemand
from analyzer.scheduling.gpu.scores import (
    GPU_RULES,
    best_fit_raw,
    choose_gpus,
    dot_product_scores,
    fgd_node_scores,
    gpu_clustering_scores,
    gpu_packing_scores,
    normalize,
    random_gpus,
)

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class Decision:
    """Where a pod goes: node index and GPU indices on it."""

    node: int
    gpus: tuple[int, ...]


PolicyFn = Callable[[GpuState, GpuDemand, IntArray, np.random.Generator], Decision]
ScoreFn = Callable[[GpuState, GpuDemand, IntArray], IntArray]


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


def random_policy(
    state: GpuState, demand: GpuDemand, feasible: IntArray, rng: np.random.Generator
) -> Decision:
    """Random: a uniformly random feasible node (no tie rule), then random fitting GPUs on it."""
    node = int(feasible[rng.integers(len(feasible))])
    return Decision(node, random_gpus(state, demand, node, rng))


def _scored(name: str, score_fn: ScoreFn) -> PolicyFn:
    """A policy: ``score_fn`` on the feasible nodes, the artifact's ties, the policy's GPUs."""

    def policy(
        state: GpuState, demand: GpuDemand, feasible: IntArray, rng: np.random.Generator
    ) -> Decision:
        node = pick_top(feasible, score_fn(state, demand, feasible), rng, state.node_rank)
        return Decision(node, choose_gpus(GPU_RULES[name], state, demand, node, rng))

    policy.__name__ = f"{name}_policy"
    policy.__doc__ = score_fn.__doc__
    return policy


def _best_fit_scores(state: GpuState, demand: GpuDemand, feasible: IntArray) -> IntArray:
    """BestFit: 100·(1 − ½(C_free − c)/128000 − ½(G_free − k·r)/8000), min-max normalised."""
    return normalize(best_fit_raw(state, demand, feasible))


def _fgd_scores(state: GpuState, demand: GpuDemand, feasible: IntArray) -> IntArray:
    """FGD: int(100·sigmoid(−Δ/1000)) per node, its best GPU for shared pods."""
    return fgd_node_scores(state, demand, feasible)[0]


def fgd_policy(
    state: GpuState, demand: GpuDemand, feasible: IntArray, rng: np.random.Generator
) -> Decision:
    """FGD: the best node by ``fgd_node_scores`` (artifact ties); a shared pod takes the node's
    best GPU, a whole-GPU pod the lowest-index free GPUs."""
    scores, gpus = fgd_node_scores(state, demand, feasible)
    node = pick_top(feasible, scores, rng, state.node_rank)
    if demand.shared:
        return Decision(node, (int(gpus[np.searchsorted(feasible, node)]),))
    return Decision(node, choose_gpus("fgd", state, demand, node, rng))


best_fit_policy = _scored("BestFit", _best_fit_scores)
dot_product_policy = _scored("DotProd", dot_product_scores)
gpu_packing_policy = _scored("GpuPacking", gpu_packing_scores)
gpu_clustering_policy = _scored("GpuClustering", gpu_clustering_scores)

POLICIES: dict[str, PolicyFn] = {
    "Random": random_policy,
    "DotProd": dot_product_policy,
    "GpuClustering": gpu_clustering_policy,
    "GpuPacking": gpu_packing_policy,
    "BestFit": best_fit_policy,
    "FGD": fgd_policy,
}
