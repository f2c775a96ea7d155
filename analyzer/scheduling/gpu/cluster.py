"""Per-GPU cluster state: the GPU device model plus the per-node bookkeeping GPU policies need.

Shared by the trace replays (``analyzer.trace``) and the scheduling core (``ClusterState.devices``,
``analyzer.scheduling.gpu.devices``), so both run the same policy math on the same state.

Beyond ``GpuNodes`` (free CPU, memory, milli per GPU) it keeps, updated incrementally on every
bind/unbind of one node:

- the FGD fragmentation caches per node × target shape: the milli on GPUs too small for the shape
  (``small_sum``) and the number of GPUs that fit it (``fitting``), and the node's weighted
  fragment ``W·F_n(M)`` as an exact integer, with their cluster totals;
- non-zero requested CPU/memory (kube-scheduler scores with 100m / 200 MiB defaults);
- per-node counts of GPU "affinity" tags (GpuClustering).

``node_rank`` (optional) is the fixed per-run node priority the artifact's scheduler uses to break
ties between equal scores (``analyzer.trace.policies.pick_top``); None = uniform random ties (the
scheduling core always keeps None). An empty target workload (no shapes) is allowed: the FGD
caches are then empty and only FGD itself refuses to run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from analyzer.scheduling.gpu.fragments import TargetWorkload, weighted_node_fragments
from analyzer.scheduling.gpu.model import MILLI, GpuDemand, GpuNodes

IntArray = NDArray[np.int64]
NONZERO_CPU = 100  # kube-scheduler DefaultMilliCPURequest
NONZERO_MEMORY_MIB = 200  # DefaultMemoryRequest, 200 MiB (memory here is in MiB)
SHARE_TAG = 0  # column 0 = "share"; column k = "k whole GPUs"


def affinity_tag(demand: GpuDemand) -> int:
    """GpuClustering tag column: 0 for a shared GPU, k for k whole GPUs, -1 for no GPU."""
    if demand.num_gpu == 0:
        return -1
    return SHARE_TAG if demand.gpu_milli < MILLI else demand.num_gpu


def nonzero_cpu(demand: GpuDemand) -> int:
    """CPU request as kube-scheduler scores it (100m when the pod sets none)."""
    return demand.cpu if demand.cpu > 0 else NONZERO_CPU


def nonzero_memory(demand: GpuDemand) -> int:
    """Memory request (MiB) as kube-scheduler scores it (200 MiB when the pod sets none)."""
    return demand.memory if demand.memory > 0 else NONZERO_MEMORY_MIB


@dataclass
class GpuState:
    """Nodes, target workload and the incremental caches; mutate only via ``bind``/``unbind``."""

    nodes: GpuNodes
    workload: TargetWorkload
    node_rank: IntArray | None = None  # tie-break priority, lowest wins; None = random ties
    access: NDArray[np.bool_] = field(init=False)
    # Caches over the GPU shapes only (r_m > 0): a CPU-only shape always sees the whole idle milli.
    gpu_shapes: IntArray = field(init=False)  # column → shape index
    small_sum: IntArray = field(init=False)  # nodes × GPU shapes
    fitting: IntArray = field(init=False)  # nodes × GPU shapes
    all_access: bool = field(init=False)  # no model constraint anywhere: skip the access mask
    weighted_frag: IntArray = field(init=False)  # nodes, W·F_n(M)
    weighted_frag_total: int = field(init=False)
    idle_total: int = field(init=False)
    used_gpu_milli: int = 0
    nz_cpu_used: IntArray = field(init=False)
    nz_mem_used: IntArray = field(init=False)
    tags: IntArray = field(init=False)  # nodes × (1 + max GPUs)
    extras: dict[str, Any] = field(default_factory=dict)  # per-run caches of adapters

    def __post_init__(self) -> None:
        n = self.nodes.size
        self.access = self.workload.access(self.nodes)
        self.gpu_shapes = np.flatnonzero(self.workload.gpu_milli > 0).astype(np.int64)
        self.all_access = bool(self.access.all())
        self.small_sum = np.zeros((n, len(self.gpu_shapes)), dtype=np.int64)
        self.fitting = np.zeros_like(self.small_sum)
        self.weighted_frag = np.zeros(n, dtype=np.int64)
        self._refresh(np.arange(n))
        self.weighted_frag_total = int(self.weighted_frag.sum())
        self.idle_total = int(self.nodes.gpu_free.sum())
        self.nz_cpu_used = np.zeros(n, dtype=np.int64)
        self.nz_mem_used = np.zeros(n, dtype=np.int64)
        self.tags = np.zeros((n, self.nodes.gpu_free.shape[1] + 1), dtype=np.int64)

    def _refresh(self, rows: IntArray) -> None:
        gpu = self.nodes.gpu_free[rows]
        r = self.workload.gpu_milli[self.gpu_shapes]
        too_small = gpu[:, None, :] < r[None, :, None]
        self.small_sum[rows] = (gpu[:, None, :] * too_small).sum(axis=2)
        self.fitting[rows] = gpu.shape[1] - too_small.sum(axis=2)
        self.weighted_frag[rows] = weighted_node_fragments(
            self.nodes.cpu_free[rows], gpu, self.access[rows], self.workload
        )

    def _apply(self, node: int, demand: GpuDemand, gpus: Sequence[int], sign: int) -> None:
        before = int(self.weighted_frag[node])
        if sign > 0:
            self.nodes.bind(node, demand, gpus)
        else:
            self.nodes.unbind(node, demand, gpus)
        self._refresh(np.array([node]))
        self.weighted_frag_total += int(self.weighted_frag[node]) - before
        self.idle_total -= sign * demand.total_gpu_milli
        self.used_gpu_milli += sign * demand.total_gpu_milli
        self.nz_cpu_used[node] += sign * nonzero_cpu(demand)
        self.nz_mem_used[node] += sign * nonzero_memory(demand)
        tag = affinity_tag(demand)
        if tag >= 0:
            self.tags[node, min(tag, self.tags.shape[1] - 1)] += sign

    def bind(self, node: int, demand: GpuDemand, gpus: Sequence[int]) -> None:
        """Place a pod on ``node`` with GPU indices ``gpus`` and update every cache."""
        self._apply(node, demand, gpus, +1)

    def unbind(self, node: int, demand: GpuDemand, gpus: Sequence[int]) -> None:
        """Remove a pod placed earlier with the same ``gpus``."""
        self._apply(node, demand, gpus, -1)

    def frag_amount_milli(self) -> float:
        """Cluster F(M) in GPU milli (0 for an empty target workload)."""
        total = self.workload.total
        return self.weighted_frag_total / total if total else 0.0

    def frag_ratio_pct(self) -> float:
        """F(M) / idle GPU milli × 100."""
        return 100.0 * self.frag_amount_milli() / self.idle_total if self.idle_total else 0.0
