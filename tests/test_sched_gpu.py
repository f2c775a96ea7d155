"""GPU sharing in the scheduling core: demand parsing, the device filter, bind/unbind, presets."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pytest

from analyzer.core.errors import InputError
from analyzer.scheduling import ClusterState, load_strategy, make_demand, select
from analyzer.scheduling.gpu.devices import attach_devices
from analyzer.scheduling.gpu.fragments import target_workload
from analyzer.scheduling.gpu.requests import pod_gpu_demand
from analyzer.scheduling.state import PodDemand

GPU = "nvidia.com/gpu"
MILLI = "alibaba.com/gpu-milli"
CORE = "koordinator.sh/gpu-core"
MODEL = "alibaba.com/gpu-model"
SPEC = "alibaba.com/gpu-spec"
GIB = 1 << 30


def shape(requests: Mapping[str, int], labels: Mapping[str, str] | None = None) -> tuple:
    d = pod_gpu_demand(requests, labels)
    return d.num_gpu, d.gpu_milli, d.models


@pytest.mark.parametrize(
    ("requests", "expected"),
    [
        ({GPU: 2}, (2, 1000)),  # whole GPUs
        ({GPU: 1, MILLI: 500}, (1, 500)),  # gpushare: per-GPU milli = total / count
        ({GPU: 2, MILLI: 1600}, (2, 800)),
        ({MILLI: 300}, (1, 300)),  # milli alone below one GPU: one shared GPU
        ({MILLI: 2000}, (2, 1000)),  # milli alone, whole GPUs
        ({CORE: 50}, (1, 500)),  # Koordinator: percent of one GPU, 1 % = 10 milli
        ({CORE: 100}, (1, 1000)),
        ({CORE: 300}, (3, 1000)),  # > 100: multiples of 100 = whole GPUs
        ({CORE: 100, "koordinator.sh/gpu.shared": 2}, (2, 500)),  # 50 % on each of 2 GPUs
        ({"koordinator.sh/gpu": 25}, (1, 250)),
        ({"cpu": 4000}, (0, 0)),
    ],
)
def test_pod_gpu_demand_from_requests(requests: dict[str, int], expected: tuple) -> None:
    assert shape(requests)[:2] == expected


@pytest.mark.parametrize(
    "requests",
    [
        {CORE: 150},
        {MILLI: 1500},
        {GPU: 2, MILLI: 1001},
        {CORE: 300, "koordinator.sh/gpu.shared": 2},
    ],
)
def test_invalid_gpu_requests_name_the_resource(requests: dict[str, int]) -> None:
    with pytest.raises(InputError, match=r"koordinator\.sh|alibaba\.com"):
        pod_gpu_demand(requests, what="pod ns/p")


def test_gpu_spec_label_constrains_models_only_for_gpu_pods() -> None:
    assert shape({GPU: 1}, {SPEC: "V100M16|V100M32"})[2] == frozenset({"V100M16", "V100M32"})
    assert shape({"cpu": 1000}, {SPEC: "V100M16"})[2] is None


def cluster(
    gpus: list[int], models: list[str], cpu: list[int] | None = None, workload: object = None
) -> ClusterState:
    """Nodes with 32 cores (unless given), 256 GiB, ``gpus`` GPUs of ``models``."""
    n = len(gpus)
    cpu = cpu or [32_000] * n
    state = ClusterState.from_nodes(
        [f"n{i}" for i in range(n)],
        [
            {"cpu": c, "memory": 256 * GIB, GPU: g, MILLI: 1000 * g, "pods": 110}
            for c, g in zip(cpu, gpus, strict=True)
        ],
        labels=[{MODEL: m} for m in models],
    )
    attach_devices(state, workload)
    return state


def pod(
    state: ClusterState, num: int, milli: int, cpu: int = 1000, spec: str = "", name: str = "p"
) -> PodDemand:
    requests = {"cpu": cpu, "memory": GIB, GPU: num, MILLI: num * milli}
    return make_demand(
        state.resources,
        requests,
        {"cpu": cpu, "memory": GIB},
        name=name,
        namespace="t",
        labels={SPEC: spec} if spec else {},
    )


def feasible_nodes(state: ClusterState, demand: PodDemand, preset: str = "bestfit") -> list[int]:
    evaluation = load_strategy(preset).evaluate(state, demand)
    return np.flatnonzero(evaluation.feasible).tolist()


def test_device_filter_shared_whole_and_model() -> None:
    # n0: 1 A10 GPU with 600 milli used (400 free); n1: 2 T4 GPUs free; n2: 2 A10, GPU0 300 used
    state = cluster([1, 2, 2], ["A10", "T4", "A10"])
    state.bind(0, pod(state, 1, 600, name="a"), (0,))
    state.bind(2, pod(state, 1, 300, name="b"), (0,))
    # a 400-milli pod fits a GPU with exactly 400 free, and any partly or fully free one
    assert feasible_nodes(state, pod(state, 1, 400)) == [0, 1, 2]
    assert feasible_nodes(state, pod(state, 1, 401)) == [1, 2]
    # two whole GPUs need two fully free GPUs: n2 has one only
    assert feasible_nodes(state, pod(state, 2, 1000)) == [1]
    # a whole A10 GPU: n1 is the wrong model, n0 has none fully free
    assert feasible_nodes(state, pod(state, 1, 1000, spec="A10")) == [2]
    evaluation = load_strategy("bestfit").evaluate(state, pod(state, 2, 1000, spec="A10"))
    assert "fewer than 2 GPU(s) of model A10" in evaluation.reasons(1)[0]


def test_bind_unbind_restores_every_array_and_frees_the_taken_gpus() -> None:
    workload = target_workload([1000, 0], [1, 0], [500, 0], [None, None], threshold_pct=100)
    state = cluster([2, 4], ["A10", "A10"], workload=workload)
    assert state.devices is not None
    gpu = state.devices.gpu
    before = {
        name: np.array(getattr(gpu, name), copy=True)
        for name in ("small_sum", "fitting", "weighted_frag", "tags", "nz_cpu_used")
    }
    free_before = gpu.nodes.gpu_free.copy()
    totals = (gpu.weighted_frag_total, gpu.idle_total, gpu.used_gpu_milli)
    pods = [pod(state, 1, 300, name="s1"), pod(state, 2, 1000, name="w2"), pod(state, 1, 700)]
    state.bind(1, pods[0], (3,))  # explicit GPU 3
    state.bind(1, pods[1])  # default: best-fit = lowest-index fully free GPUs 0, 1
    state.bind(0, pods[2])
    assert gpu.nodes.gpu_free[1].tolist() == [0, 0, 1000, 700]
    assert state.devices.gpus_of(pods[0]) == [(1, (3,))]
    state.unbind(1, pods[0])  # frees exactly GPU 3
    assert gpu.nodes.gpu_free[1].tolist() == [0, 0, 1000, 1000]
    state.unbind(0, pods[2])
    state.unbind(1, pods[1])
    assert (gpu.nodes.gpu_free == free_before).all()
    for name, array in before.items():
        assert (getattr(gpu, name) == array).all(), name
    assert (gpu.weighted_frag_total, gpu.idle_total, gpu.used_gpu_milli) == totals
    assert not state.requested.any() and not state.pod_count.any()


def choose(
    state: ClusterState, preset: str, demand: PodDemand, seed: int = 0
) -> tuple[int | None, tuple[int, ...] | None]:
    profile = load_strategy(preset)
    rng = np.random.default_rng(seed)
    node = select(profile.evaluate(state, demand), rng)
    if node is None:
        return None, None
    return node, profile.choose_gpus(state, demand, node, rng)


def test_bestfit_picks_the_tightest_node_and_the_best_fit_gpu() -> None:
    # n0: 32 cores; n1: 8 cores and GPU1 at 400 free -> n1 is tighter in CPU and GPU
    state = cluster([2, 2], ["A10", "A10"], cpu=[32_000, 8_000])
    state.bind(1, pod(state, 1, 600, cpu=0, name="x"), (1,))
    assert choose(state, "bestfit", pod(state, 1, 300, cpu=4000)) == (1, (1,))


def test_fgd_prefers_the_node_that_keeps_the_target_shape_fitting() -> None:
    # target: one shape, 1 GPU × 600 milli. n0 GPU has 700 free, n1 a free GPU. A 400-milli pod
    # on n0 leaves 300 (the shape no longer fits: F_n0 grows 0 -> 300, score int(100·σ(−0.3))
    # = 42); on n1 it leaves 600 (still fits, F stays 0, score 50). BestFit takes n0.
    workload = target_workload([0], [1], [600], [None], threshold_pct=100)
    state = cluster([1, 1], ["A10", "A10"], workload=workload)
    state.bind(0, pod(state, 1, 300, cpu=0, name="x"))
    incoming = pod(state, 1, 400, cpu=0)
    scores = load_strategy("fgd").evaluate(state, incoming).scores["FGDScore"]
    assert scores.tolist() == [int(100 / (1 + math.exp(0.3))), 50] == [42, 50]
    assert choose(state, "fgd", incoming) == (1, (0,))
    assert choose(state, "bestfit", incoming)[0] == 0


def test_fgd_without_target_workload_is_a_clear_error() -> None:
    state = cluster([1], ["A10"])
    with pytest.raises(InputError, match="target workload"):
        load_strategy("fgd").evaluate(state, pod(state, 1, 500))


def test_gpu_packing_prefers_shared_gpu_then_used_node_then_idle() -> None:
    state = cluster([2, 2, 2], ["A10"] * 3)
    state.bind(1, pod(state, 1, 1000, name="w"), (0,))  # n1 used, no shared GPU
    state.bind(2, pod(state, 1, 600, name="s"), (0,))  # n2 has a shared GPU with 400 free
    # bands for a 300-milli pod: n0 idle max(33 − 2, 2) = 31; n1 needs a free GPU on a used
    # node max(50 − 1, 33) = 49; n2 uses its shared GPU: max(100 − 40/10, 50) = 96
    scores = load_strategy("gpu-packing").evaluate(state, pod(state, 1, 300)).scores
    assert scores["GpuPackingScore"].tolist() == [31, 49, 96]
    assert choose(state, "gpu-packing", pod(state, 1, 300)) == (2, (0,))


def test_gpu_clustering_prefers_nodes_with_the_same_tag() -> None:
    state = cluster([2, 2, 2], ["A10"] * 3)
    state.bind(0, pod(state, 1, 500, name="s"), (0,))  # n0: share tag, 500 milli used
    state.bind(1, pod(state, 1, 1000, name="w"), (0,))  # n1: 1-GPU tag
    # shared pod: n0 only its tag 75 + 25·(8000 − 1500)//8000 = 95; n2 idle 25 + 25·6000//8000 =
    # 43; n1 other tag only 0 + 25·7000//8000 = 21
    scores = load_strategy("gpu-clustering").evaluate(state, pod(state, 1, 200)).scores
    assert scores["GpuClusteringScore"].tolist() == [95, 21, 43]


def test_dotprod_prefers_the_smaller_alignment() -> None:
    # CPU-only pod of 16 cores; free CPU 64 vs 16 cores. n0: 100·(1 − (0.5 · 0.125)/2) = 96.875
    # -> 96; n1: 100·(1 − (0.125 · 0.125)/2) = 99.2 -> 99, so n1 wins.
    state = cluster([1, 1], ["A10", "A10"], cpu=[64_000, 16_000])
    cpu_pod = make_demand(
        state.resources, {"cpu": 16_000}, {"cpu": 16_000, "memory": 0}, name="c", namespace="t"
    )
    scores = load_strategy("dotprod").evaluate(state, cpu_pod).scores["DotProductScore"]
    assert scores.tolist() == [96, 99]
    assert choose(state, "dotprod", cpu_pod) == (1, ())


def test_random_is_uniform_over_feasible_nodes_and_deterministic_per_seed() -> None:
    state = cluster([1, 1, 1], ["A10", "T4", "A10"])
    demand = pod(state, 1, 500, spec="A10")
    picks = [choose(state, "random", demand, seed)[0] for seed in range(40)]
    assert set(picks) == {0, 2}  # never the T4 node
    assert picks == [choose(state, "random", demand, seed)[0] for seed in range(40)]
