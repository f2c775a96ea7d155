"""Each placement policy on tiny hand-built clusters picks the node its definition says."""

from __future__ import annotations

import math

import numpy as np
import pytest

from analyzer.core.errors import InputError
from analyzer.scheduling.gpu.cluster import GpuState
from analyzer.scheduling.gpu.fgd_score import fgd_candidates
from analyzer.scheduling.gpu.fragments import target_workload
from analyzer.scheduling.gpu.model import GpuDemand, GpuNodes
from analyzer.trace.kube import balanced_allocation_scores, least_allocated_scores
from analyzer.trace.registry import available, get_policy


def state_of(
    cpu: list[int], gpus: list[int], shapes: tuple[list[int], list[int], list[int]] | None = None
) -> GpuState:
    n = len(cpu)
    nodes = GpuNodes.create([f"n{i}" for i in range(n)], cpu, [100_000] * n, gpus, ["G2"] * n)
    c, k, r = shapes or ([1000], [1], [1000])
    return GpuState(nodes, target_workload(c, k, r, [None] * len(c), threshold_pct=100))


def choose(
    state: GpuState, name: str, demand: GpuDemand, seed: int = 0
) -> tuple[int, tuple[int, ...]]:
    feasible = np.flatnonzero(state.nodes.feasible(demand))
    decision = get_policy(name)(state, demand, feasible, np.random.default_rng(seed))
    return decision.node, decision.gpus


def test_registry_lists_paper_and_kube_policies_and_rejects_unknown() -> None:
    assert available()[:6] == ["Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD"]
    assert {"LeastAllocated", "MostAllocated", "RTCR", "Balanced"} <= set(available())
    with pytest.raises(InputError, match="choose from"):
        get_policy("WorstFit")


def test_best_fit_picks_the_tightest_node_and_best_fit_gpu() -> None:
    # n0: 32 cores, 2 GPUs; n1: 8 cores, 2 GPUs with GPU1 at 400 free -> tighter on both axes
    state = state_of([32000, 8000], [2, 2])
    state.bind(1, GpuDemand(0, 0, 1, 600), (1,))
    node, gpus = choose(state, "BestFit", GpuDemand(4000, 0, 1, 300))
    assert node == 1 and gpus == (1,)  # best-fit GPU: the 400-milli one


def test_dot_product_prefers_smaller_alignment() -> None:
    # CPU-only pod of 32 cores; free CPU 128 vs 64 cores (of the 128-core max spec):
    # n0: int(100 * (1 - (1.0 * 0.25) / 2)) = 87, n1: int(100 * (1 - (0.5 * 0.25) / 2)) = 93
    # -> the smaller dot product on n1 wins outright (no tie for the seed to break)
    state = state_of([128000, 64000], [1, 1])
    for seed in range(5):
        node, _ = choose(state, "DotProd", GpuDemand(32000, 0), seed=seed)
        assert node == 1


def test_gpu_packing_prefers_already_shared_gpu_then_used_node_then_idle() -> None:
    state = state_of([32000] * 3, [2, 2, 2])
    state.bind(1, GpuDemand(0, 0, 1, 1000), (0,))  # n1 used, no shared GPU
    state.bind(2, GpuDemand(0, 0, 1, 500), (1,))  # n2 has a shared GPU with 500 free
    assert choose(state, "GpuPacking", GpuDemand(1000, 0, 1, 200)) == (2, (1,))
    # a whole-GPU pod cannot use the shared GPU: used node n1 (band 50 - 1) beats idle n0 (33 - 2)
    assert choose(state, "GpuPacking", GpuDemand(1000, 0, 1, 1000))[0] in (1, 2)
    state.bind(2, GpuDemand(0, 0, 1, 500), (0,))
    assert choose(state, "GpuPacking", GpuDemand(1000, 0, 1, 1000)) == (1, (1,))


def test_gpu_clustering_prefers_node_with_same_tag() -> None:
    state = state_of([32000] * 3, [4, 4, 4])
    state.bind(0, GpuDemand(0, 0, 2, 1000), (0, 1))  # tag "2-gpu"
    state.bind(1, GpuDemand(0, 0, 1, 300), (0,))  # tag "share"
    assert choose(state, "GpuClustering", GpuDemand(1000, 0, 1, 200))[0] == 1
    assert choose(state, "GpuClustering", GpuDemand(1000, 0, 2, 1000))[0] == 0
    # a 1-GPU whole pod: no node has its tag; the idle node n2 is in band (25, 50] and wins
    assert choose(state, "GpuClustering", GpuDemand(1000, 0, 1, 1000))[0] == 2


def test_fgd_picks_the_placement_that_reduces_fragmentation() -> None:
    # workload: one shape needing 700 milli on one GPU. n0 idle [1000, 1000];
    # n1 has GPU0 at 400 free (a 400-milli fragment for the 700 shape).
    state = state_of([32000, 32000], [2, 2], ([1000], [1], [700]))
    state.bind(1, GpuDemand(0, 0, 1, 600), (0,))
    pod = GpuDemand(1000, 0, 1, 300)
    nodes, gpus, scores = fgd_candidates(state, pod, np.array([0, 1]))
    got = {(int(n), int(g)): int(s) for n, g, s in zip(nodes, gpus, scores, strict=True)}
    # n0 GPU0 -> [700, 1000]: no fragment before or after, delta 0 -> int(100 * sigmoid(0)) = 50
    assert got[(0, 0)] == 50
    # n1 GPU0 -> [100, 1000]: fragment 400 -> 100, delta -300 -> int(100 * sigmoid(0.3)) = 57
    assert got[(1, 0)] == int(100 / (1 + math.exp(-0.3))) == 57
    # n1 GPU1 -> [400, 700]: fragment stays 400 -> 50
    assert got[(1, 1)] == 50
    assert choose(state, "FGD", pod) == (1, (0,))


def test_random_only_picks_feasible_nodes_and_is_deterministic_per_seed() -> None:
    state = state_of([32000, 32000, 1000], [2, 2, 2])
    picks = [choose(state, "Random", GpuDemand(2000, 0, 1, 500), seed=s)[0] for s in range(20)]
    assert set(picks) <= {0, 1} and len(set(picks)) == 2
    assert picks == [
        choose(state, "Random", GpuDemand(2000, 0, 1, 500), seed=s)[0] for s in range(20)
    ]


def test_least_and_most_allocated() -> None:
    state = state_of([32000, 32000], [2, 2])
    state.bind(1, GpuDemand(16000, 50_000, 1, 1000), (0,))
    pod = GpuDemand(8000, 10_000, 1, 1000)
    # n0: cpu (32-8)/32 -> 75, mem 90, gpu 50 -> (75+90+50)//3 = 71; n1: 25, 40, 0 -> 21
    assert least_allocated_scores(state, pod, np.array([0, 1])).tolist() == [71, 21]
    assert choose(state, "LeastAllocated", pod)[0] == 0
    assert choose(state, "MostAllocated", pod)[0] == 1
    assert choose(state, "RTCR", pod)[0] == 1


def test_balanced_allocation_delta_formula() -> None:
    state = state_of([10000], [1])
    pod = GpuDemand(5000, 10_000)  # cpu 50 %, memory 10 % of 100,000 MiB; no GPU -> 2 resources
    # with: std = |0.5 - 0.1| / 2 = 0.2 -> 80; without: 100; 50 + (50 + 80 - 100) // 2 = 65
    assert balanced_allocation_scores(state, pod, np.array([0])).tolist() == [65]


def test_scheduling_core_presets_run_on_trace_state() -> None:
    state = state_of([32000, 32000], [2, 2])
    state.bind(1, GpuDemand(16000, 50_000, 1, 1000), (0,))
    pod = GpuDemand(8000, 10_000, 1, 1000)
    # the core's presets score cpu and memory: n1 is fuller on both, n0 emptier on both
    assert choose(state, "most-allocated", pod)[0] == 1
    assert choose(state, "rtcr-binpack", pod)[0] == 1
    assert choose(state, "kube-default", pod)[0] == 0
    # the adapter mirrors the trace state on every call: after filling n1's GPUs it cannot be chosen
    state.bind(1, GpuDemand(0, 0, 1, 1000), (1,))
    assert choose(state, "most-allocated", pod) == (0, (0,))
