"""Run the scheduling core's strategy presets (``analyzer.scheduling``) on trace data.

The presets ``kube-default``, ``most-allocated`` and ``rtcr-binpack`` are evaluated by the core's
own plugins (``Profile.evaluate``) over a core ``ClusterState`` mirrored from the trace state before
every pod: cpu, memory (MiB — every formula divides requested by allocatable, so the unit cancels)
and the GPU as the extended resource ``alibaba.com/gpu-milli``. The GPU device filter (count,
per-GPU milli, model) stays ours; the core adds its own filters and the weighted score. GPUs inside
the chosen node are taken best-fit. ``koord-loadaware`` is not offered: the traces have no usage.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from analyzer.scheduling import ClusterState as CoreState
from analyzer.scheduling import load_strategy, make_demand
from analyzer.scheduling.gpu.cluster import GpuState, nonzero_cpu, nonzero_memory
from analyzer.scheduling.gpu.model import MILLI, GpuDemand
from analyzer.trace.policies import Decision, PolicyFn, pick_top

GPU_MILLI = "alibaba.com/gpu-milli"
CORE_PRESETS = ("kube-default", "most-allocated", "rtcr-binpack")
IntArray = NDArray[np.int64]


def _core_state(state: GpuState) -> CoreState:
    """The core state for ``state``'s nodes, cached on the trace state (built once per run)."""
    core = state.extras.get("core")
    if core is None:
        nodes = state.nodes
        core = CoreState.from_nodes(
            nodes.names,
            [
                {"cpu": int(c), "memory": int(m), GPU_MILLI: int(g) * MILLI, "pods": 1_000_000}
                for c, m, g in zip(nodes.cpu_alloc, nodes.mem_alloc, nodes.gpu_count, strict=True)
            ],
        )
        state.extras["core"] = core
    # Mirror the requested amounts (the trace state is the source of truth).
    nodes = state.nodes
    axis = core.resources
    core.requested[:, axis.index("cpu")] = nodes.cpu_alloc - nodes.cpu_free
    core.requested[:, axis.index("memory")] = nodes.mem_alloc - nodes.mem_free
    core.requested[:, axis.index(GPU_MILLI)] = nodes.gpu_count * MILLI - nodes.gpu_free.sum(axis=1)
    core.nonzero_requested[:, 0] = state.nz_cpu_used
    core.nonzero_requested[:, 1] = state.nz_mem_used
    return core


def core_policy(preset: str) -> PolicyFn:
    """A trace policy that scores with the core preset ``preset``."""
    profile: Any = load_strategy(preset)

    def policy(
        state: GpuState, demand: GpuDemand, feasible: IntArray, rng: np.random.Generator
    ) -> Decision:
        core = _core_state(state)
        pod = make_demand(
            core.resources,
            {"cpu": demand.cpu, "memory": demand.memory, GPU_MILLI: demand.total_gpu_milli},
            {"cpu": nonzero_cpu(demand), "memory": nonzero_memory(demand)},
            name="trace-pod",
            namespace="trace",
        )
        evaluation = profile.evaluate(core, pod)
        allowed = feasible[evaluation.feasible[feasible]]
        # The core's filters (cpu, memory, pods) never refuse a node our device filter accepted.
        candidates = allowed if len(allowed) else feasible
        node = pick_top(candidates, evaluation.total[candidates], rng)
        return Decision(node, state.nodes.pick_gpus(node, demand, "best-fit"))

    policy.__doc__ = f"The scheduling core's preset {preset!r} (GPU device filter ours)."
    return policy
