"""Cluster state for trace replays: the scheduling core's per-GPU state (``GpuState``).

The state and its incremental caches live in ``analyzer.scheduling.gpu_state`` so the trace
policies and the core's GPU plugins share one implementation; ``ClusterState`` is its trace name.
"""

from __future__ import annotations

from analyzer.scheduling.gpu_state import (
    NONZERO_CPU,
    NONZERO_MEMORY_MIB,
    SHARE_TAG,
    GpuState,
    affinity_tag,
    nonzero_cpu,
    nonzero_memory,
)

ClusterState = GpuState

__all__ = [
    "NONZERO_CPU",
    "NONZERO_MEMORY_MIB",
    "SHARE_TAG",
    "ClusterState",
    "GpuState",
    "affinity_tag",
    "nonzero_cpu",
    "nonzero_memory",
]
