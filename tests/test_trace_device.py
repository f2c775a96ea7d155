"""GPU device model (analyzer.scheduling.gpu.model) and FGD measure (analyzer.scheduling.gpu.fragments) on hand-built nodes."""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.core.errors import InputError
from analyzer.fragmentation.gpu import cluster_fragmentation
from analyzer.scheduling.gpu.fragments import shape_fragments, target_workload
from analyzer.scheduling.gpu.model import GpuDemand, GpuNodes, validate_demand


def two_nodes() -> GpuNodes:
    # node a: 4 x T4, 32 cores, 64 GiB; node b: 2 x V100M16, 16 cores, 32 GiB
    return GpuNodes.create(["a", "b"], [32000, 16000], [65536, 32768], [4, 2], ["T4", "V100M16"])


def test_padding_gpus_never_fit_and_never_count_as_idle() -> None:
    nodes = two_nodes()
    assert nodes.gpu_free.tolist() == [[1000, 1000, 1000, 1000], [1000, 1000, 0, 0]]
    assert nodes.idle_gpu_milli().tolist() == [4000, 2000]
    assert nodes.gpu_capacity_milli() == 6000


def test_shared_pod_takes_milli_on_one_gpu_and_unbind_restores() -> None:
    nodes = two_nodes()
    pod = GpuDemand(cpu=4000, memory=1024, num_gpu=1, gpu_milli=300)
    assert pod.shared
    gpus = nodes.pick_gpus(0, pod)
    assert gpus == (0,)  # first-fit: lowest index
    nodes.bind(0, pod, gpus)
    assert nodes.gpu_free[0].tolist() == [700, 1000, 1000, 1000]
    assert nodes.cpu_free[0] == 28000 and nodes.mem_free[0] == 64512
    # best-fit picks the GPU with the least free milli that still fits: GPU 0 (700)
    assert nodes.pick_gpus(0, GpuDemand(1000, 0, 1, 500), rule="best-fit") == (0,)
    # 800 milli does not fit on GPU 0 any more
    assert nodes.pick_gpus(0, GpuDemand(1000, 0, 1, 800), rule="best-fit") == (1,)
    nodes.unbind(0, pod, gpus)
    assert nodes.gpu_free[0].tolist() == [1000] * 4 and nodes.cpu_free[0] == 32000


def test_whole_gpu_pod_takes_lowest_index_free_gpus() -> None:
    nodes = two_nodes()
    nodes.bind(0, GpuDemand(0, 0, 1, 500), (1,))
    pod = GpuDemand(cpu=1000, memory=0, num_gpu=2, gpu_milli=1000)
    assert nodes.pick_gpus(0, pod, rule="best-fit") == (0, 2)


def test_filter_checks_count_milli_model_cpu_memory() -> None:
    nodes = two_nodes()
    assert nodes.feasible(GpuDemand(1000, 0, 3, 1000)).tolist() == [True, False]  # count
    assert nodes.feasible(GpuDemand(20000, 0, 1, 100)).tolist() == [True, False]  # cpu
    assert nodes.feasible(GpuDemand(0, 40000, 0, 0)).tolist() == [True, False]  # memory
    assert nodes.feasible(GpuDemand(0, 0, 1, 100, frozenset({"V100M16"}))).tolist() == [False, True]
    nodes.bind(1, GpuDemand(0, 0, 1, 600), (0,))
    nodes.bind(1, GpuDemand(0, 0, 1, 600), (1,))
    # node b has 800 milli idle in total but no single GPU with 500 free
    assert nodes.feasible(GpuDemand(0, 0, 1, 500, frozenset({"V100M16"}))).tolist() == [
        False,
        False,
    ]


def test_invalid_demands_are_input_errors() -> None:
    with pytest.raises(InputError, match="gpu_milli"):
        validate_demand(GpuDemand(0, 0, 1, 1500))
    with pytest.raises(InputError, match="num_gpu=0"):
        validate_demand(GpuDemand(0, 0, 0, 100))


def test_fragment_quadrants_by_hand() -> None:
    # one node: 10 cores free, GPUs free [1000, 300, 0, 0] (I_n = 1300)
    cpu = np.array([10000])
    gpu = np.array([[1000, 300, 0, 0]])
    wl = target_workload(
        cpu=[2000, 2000, 20000, 0, 2000],
        num_gpu=[1, 1, 1, 0, 2],
        gpu_milli=[500, 1000, 500, 0, 1000],
        specs=[None] * 5,
        threshold_pct=100,
    )
    access = np.ones((1, len(wl.weights)), dtype=bool)
    frag = dict(
        zip(
            zip(wl.cpu.tolist(), wl.gpu_milli.tolist(), wl.num_gpu.tolist(), strict=True),
            shape_fragments(cpu, gpu, access, wl)[0].tolist(),
            strict=True,
        )
    )
    assert frag[(2000, 500, 1)] == 300  # Q3: only the 300-milli GPU is too small
    assert frag[(2000, 1000, 1)] == 300  # Q3: the 300 GPU is too small for a whole GPU
    assert frag[(20000, 500, 1)] == 1300  # Q4: lacks CPU -> all idle
    assert frag[(0, 0, 0)] == 1300  # x-axis: CPU-only task -> all idle
    assert frag[(2000, 1000, 2)] == 1300  # Q2: only one whole GPU free


def test_no_access_model_counts_all_idle() -> None:
    nodes = two_nodes()
    wl = target_workload([1000], [1], [500], [frozenset({"T4"})])
    frag = cluster_fragmentation(nodes, wl)
    # node a (T4) satisfies the task: 0 fragment; node b (V100M16) is no-access: its 2000 idle
    assert frag.amount_milli == 2000.0
    assert frag.ratio_pct == pytest.approx(100 * 2000 / 6000)
    assert frag.amount_pct == pytest.approx(100 * 2000 / 6000)


def test_target_workload_cut_at_threshold() -> None:
    # 10 pods: shape A x6, B x3, C x1 -> 90 % threshold keeps A and B (exactly 90 %)
    cpu = [1] * 6 + [2] * 3 + [3]
    wl = target_workload(cpu, [0] * 10, [0] * 10, [None] * 10, threshold_pct=90)
    assert wl.cpu.tolist() == [1, 2] and wl.weights.tolist() == [6, 3]
    assert wl.coverage == pytest.approx(0.9) and wl.distinct_shapes == 3
    with pytest.raises(InputError):
        target_workload([], [], [], [])
