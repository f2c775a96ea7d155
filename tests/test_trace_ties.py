"""Tie-breaking and GPU choice as the FGD artifact does them (hand-built clusters, hand-worked).

The artifact's scheduler fork keeps the node with the smallest name among the top scores, and
the names carry a seed-random ``%04d-`` prefix, so ties go to a fixed per-run node rank.
Open-Gpu-Share's ``gpuSelMethod: best`` (DotProd, GpuClustering, BestFit, GpuPacking) takes the
tightest fitting GPU; FGD keeps the first GPU index among equal scores.
"""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.core.errors import InputError
from analyzer.scheduling.gpu.cluster import GpuState
from analyzer.scheduling.gpu.fragments import target_workload
from analyzer.scheduling.gpu.model import GpuDemand, GpuNodes
from analyzer.sources.alibaba import OpenbNodes, load_nodes, load_pods
from analyzer.trace.policies import pick_top
from analyzer.trace.protocol import RunSpec, artifact_node_rank, run_fgd
from analyzer.trace.registry import get_policy
from analyzer.trace.runner import TraceConfig, run_trace


def state_of(
    gpus: list[int],
    rank: list[int] | None,
    shapes: tuple[list[int], list[int], list[int]] = ([1000], [1], [1000]),
) -> GpuState:
    n = len(gpus)
    nodes = GpuNodes.create(
        [f"n{i}" for i in range(n)], [32000] * n, [100_000] * n, gpus, ["G2"] * n
    )
    c, k, r = shapes
    wl = target_workload(c, k, r, [None] * len(c), threshold_pct=100)
    ranks = None if rank is None else np.array(rank, dtype=np.int64)
    return GpuState(nodes, wl, node_rank=ranks)


def place(state: GpuState, name: str, demand: GpuDemand, seed: int = 0) -> tuple[int, ...]:
    """Place ``demand`` with policy ``name``; returns (node, *gpus) and binds it."""
    feasible = np.flatnonzero(state.nodes.feasible(demand))
    decision = get_policy(name)(state, demand, feasible, np.random.default_rng(seed))
    state.bind(decision.node, demand, decision.gpus)
    return (decision.node, *decision.gpus)


def test_pick_top_lowest_rank_among_ties_else_uniform() -> None:
    candidates = np.array([3, 5, 7])
    scores = np.array([10, 20, 20])
    rank = np.array([0, 0, 0, 9, 0, 4, 0, 1])  # node 5 has rank 4, node 7 rank 1
    assert pick_top(candidates, scores, np.random.default_rng(0), rank) == 7
    # a unique maximum ignores the rank
    assert pick_top(candidates, np.array([30, 20, 20]), np.random.default_rng(0), rank) == 3
    # without a rank both tied nodes occur over seeds, never the lower score
    seen = {pick_top(candidates, scores, np.random.default_rng(s)) for s in range(30)}
    assert seen == {5, 7}


@pytest.mark.parametrize("name", ["DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"])
def test_identical_nodes_go_to_the_lowest_rank(name: str) -> None:
    # three empty, identical nodes: every policy scores them equally; rank 2, 0, 1 -> node 1
    state = state_of([2, 2, 2], [2, 0, 1])
    assert place(state, name, GpuDemand(1000, 0, 1, 1000))[0] == 1


def test_fgd_packs_tied_whole_gpu_pods_on_the_lowest_rank_node() -> None:
    # target workload: one whole-GPU shape. On an empty 8-GPU node a 1-GPU pod leaves 7 fitting
    # GPUs and no GPU below 1000 free: F_n before = F_n after = 0, delta 0, score
    # int(sigmoid(0) * 100) = 50 on every node. After the first pod the used node still scores 50
    # (delta 0 again), so all eight pods tie every time and go to the rank-0 node (node 2).
    state = state_of([8, 8, 8], [1, 2, 0])
    placed = [place(state, "FGD", GpuDemand(1000, 0, 1, 1000)) for _ in range(8)]
    assert [p[0] for p in placed] == [2] * 8
    assert [p[1] for p in placed] == list(range(8))  # lowest-index free GPU each time
    # the ninth finds node 2 full; nodes 0 and 1 tie again, rank 1 (node 0) wins
    assert place(state, "FGD", GpuDemand(1000, 0, 1, 1000))[0] == 0


def test_fgd_takes_the_first_gpu_among_equal_scores() -> None:
    # shape 700 milli. Node GPUs free [1000, 1000, 400]: a 300-milli pod on GPU0 or GPU1 leaves
    # [700, 1000, 400] (fragment: the 400 GPU, unchanged) -> delta 0, score 50; on GPU2 it leaves
    # 100 on that GPU -> fragment 400 -> 100, delta -300, score int(sigmoid(0.3) * 100) = 57.
    state = state_of([3], [0], ([1000], [1], [700]))
    state.bind(0, GpuDemand(0, 0, 1, 600), (2,))
    assert place(state, "FGD", GpuDemand(1000, 0, 1, 300)) == (0, 2)
    # now [1000, 1000, 100]: GPU0 and GPU1 tie (delta 0, the 100 fragment stays) -> GPU0
    assert place(state, "FGD", GpuDemand(1000, 0, 1, 300)) == (0, 0)


@pytest.mark.parametrize("name", ["DotProd", "GpuClustering"])
def test_dot_product_and_clustering_take_the_best_fit_gpu(name: str) -> None:
    # one node, GPUs free [1000, 400]: best-fit for a 300-milli pod is GPU1 (first-fit would be 0)
    state = state_of([2], [0])
    state.bind(0, GpuDemand(0, 0, 1, 600), (1,))
    assert place(state, name, GpuDemand(1000, 0, 1, 300)) == (0, 1)


def test_artifact_node_rank_follows_the_names_not_the_positions() -> None:
    names = ["n2", "n0", "n1", "n3"]
    rank = artifact_node_rank(names, 42)
    assert sorted(rank.tolist()) == [0, 1, 2, 3]  # a permutation: one node per rank
    assert np.array_equal(rank, artifact_node_rank(names, 42))
    # listing the same nodes in another order gives each name the same rank
    again = artifact_node_rank(["n0", "n1", "n2", "n3"], 42)
    assert dict(zip(names, rank.tolist(), strict=True)) == dict(
        zip(["n0", "n1", "n2", "n3"], again.tolist(), strict=True)
    )
    ranks = {tuple(artifact_node_rank(names, seed).tolist()) for seed in range(42, 52)}
    assert len(ranks) > 1  # the priority changes with the seed


def test_run_spec_tie_break_modes() -> None:
    full = load_nodes()
    keep = slice(0, 60)
    nodes = OpenbNodes(
        full.names[keep],
        full.cpu_milli[keep],
        full.memory_mib[keep],
        full.gpus[keep],
        full.models[keep],
    )
    pods = load_pods()
    wl = target_workload(pods.cpu_milli, pods.num_gpu, pods.gpu_milli, pods.specs)
    for mode in ("artifact", "random"):
        rows = run_fgd(nodes, pods, wl, RunSpec("FGD", 7, tune=0.5, tie_break=mode))
        assert rows.alloc_pct[-1] <= rows.arrived_pct[-1] + 1e-9
    with pytest.raises(InputError, match="tie break"):
        run_fgd(nodes, pods, wl, RunSpec("FGD", 7, tune=0.5, tie_break="name"))


def test_trace_config_rejects_an_unknown_tie_break() -> None:
    with pytest.raises(InputError, match="tie break 'first'"):
        run_trace(TraceConfig(policies=("FGD",), seeds=(42,), tie_break="first", workers=1))
