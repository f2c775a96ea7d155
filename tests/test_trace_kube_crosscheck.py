"""The trace's kube strategies score exactly like the scheduling core's plugins (analyzer.scheduling).

Random GPU-cluster states are mirrored into the core's ``ClusterState`` (memory in MiB on both
sides: every formula divides requested by allocatable, so the unit cancels exactly) and each
strategy is configured in the core as the only score plugin with resources cpu, memory and the
extended resource alibaba.com/gpu-milli, weight 1 each.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from analyzer.scheduling import ClusterState as CoreState
from analyzer.scheduling import make_demand, parse_version
from analyzer.scheduling.config import build_profile, parse_kube_scheduler_configuration
from analyzer.scheduling.gpu.cluster import GpuState, nonzero_cpu, nonzero_memory
from analyzer.scheduling.gpu.fragments import target_workload
from analyzer.scheduling.gpu.model import GpuDemand, GpuNodes
from analyzer.trace.kube import (
    balanced_allocation_scores,
    least_allocated_scores,
    most_allocated_scores,
    rtcr_binpack_scores,
)

GPU = "alibaba.com/gpu-milli"
RESOURCES = [
    {"name": "cpu", "weight": 1},
    {"name": "memory", "weight": 1},
    {"name": GPU, "weight": 1},
]


def profile(plugin: str, args: dict[str, Any]) -> Any:
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {
                    "score": {
                        "disabled": [{"name": "*"}],
                        "enabled": [{"name": plugin, "weight": 1}],
                    }
                },
                "pluginConfig": [{"name": plugin, "args": args}],
            }
        ],
    }
    spec = parse_kube_scheduler_configuration(doc, "test").profile(None)
    return build_profile(spec, parse_version(None))


FIT = "NodeResourcesFit"
CASES = {
    "least": (
        least_allocated_scores,
        FIT,
        {"scoringStrategy": {"type": "LeastAllocated", "resources": RESOURCES}},
    ),
    "most": (
        most_allocated_scores,
        FIT,
        {"scoringStrategy": {"type": "MostAllocated", "resources": RESOURCES}},
    ),
    "rtcr": (
        rtcr_binpack_scores,
        FIT,
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": RESOURCES,
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                },
            }
        },
    ),
    "balanced": (
        balanced_allocation_scores,
        "NodeResourcesBalancedAllocation",
        {"resources": RESOURCES},
    ),
}


def demand_of(rng: np.random.Generator) -> GpuDemand:
    kind = rng.integers(4)
    cpu = int(rng.choice([0, 500, 3152, 8000, 16000]))
    memory = int(rng.choice([0, 1024, 16384, 65536]))
    if kind == 0:
        return GpuDemand(cpu, memory)
    if kind == 1:
        return GpuDemand(cpu, memory, 1, int(rng.integers(50, 1000)))
    return GpuDemand(cpu, memory, int(rng.choice([1, 2])), 1000)


@pytest.mark.parametrize("case", sorted(CASES))
def test_kube_scores_match_scheduling_core(case: str) -> None:
    ours, plugin, args = CASES[case]
    core_profile = profile(plugin, args)
    rng = np.random.default_rng(5)
    n = 24
    cpu = rng.choice([32000, 64000, 96000], size=n)
    mem = rng.choice([131072, 262144, 524288], size=n)
    gpus = rng.choice([1, 2, 4, 8], size=n)
    nodes = GpuNodes.create([f"n{i}" for i in range(n)], cpu, mem, gpus, ["G2"] * n)
    state = GpuState(nodes, target_workload([1000], [1], [500], [None]))
    core = CoreState.from_nodes(
        state.nodes.names,
        [
            {"cpu": int(c), "memory": int(m), GPU: int(g) * 1000, "pods": 1000}
            for c, m, g in zip(cpu, mem, gpus, strict=True)
        ],
    )

    def core_demand(d: GpuDemand) -> Any:
        return make_demand(
            core.resources,
            {"cpu": d.cpu, "memory": d.memory, GPU: d.total_gpu_milli},
            {"cpu": nonzero_cpu(d), "memory": nonzero_memory(d)},
            name="p",
            namespace="t",
        )

    compared = 0
    for _ in range(60):
        pod = demand_of(rng)
        feasible = np.flatnonzero(state.nodes.feasible(pod))
        if len(feasible):
            evaluation = core_profile.evaluate(core, core_demand(pod))
            theirs = evaluation.scores.get(plugin)
            mine = ours(state, pod, feasible)
            if theirs is not None:
                assert mine.tolist() == theirs[feasible].tolist(), (case, pod)
                compared += 1
            node = int(rng.choice(feasible))
            state.bind(node, pod, state.nodes.pick_gpus(node, pod, "best-fit"))
            core.bind(node, core_demand(pod))
    assert compared > 30
