"""The FGD paper's cluster fragmentation over per-GPU state (Weng et al., USENIX ATC 2023).

The node measure F_n(M) is the scheduling core's (``analyzer.scheduling.gpu.fragments``: the FGD
score is its change, so it sits below the plugins); this sums it over the cluster and reports it
as the paper does: the amount in GPU milli, its ratio to idle GPU milli, its share of capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.scheduling.gpu.fragments import TargetWorkload, weighted_node_fragments
from analyzer.scheduling.gpu.model import GpuNodes


@dataclass(frozen=True)
class Fragmentation:
    """Cluster fragmentation: amount (GPU milli), ratio to idle, amount as % of capacity."""

    amount_milli: float
    idle_milli: int
    capacity_milli: int

    @property
    def ratio_pct(self) -> float:
        """F(M) / Σ I_n × 100 (``analysis_frag_ratio_discrete``); 0 when nothing is idle."""
        return 100.0 * self.amount_milli / self.idle_milli if self.idle_milli else 0.0

    @property
    def amount_pct(self) -> float:
        """F(M) / GPU capacity × 100 (``analysis_frag_discrete``)."""
        return 100.0 * self.amount_milli / self.capacity_milli if self.capacity_milli else 0.0


def cluster_fragmentation(nodes: GpuNodes, workload: TargetWorkload) -> Fragmentation:
    """F(M), Σ I_n and the capacity for the nodes' current state."""
    access = workload.access(nodes)
    weighted = weighted_node_fragments(nodes.cpu_free, nodes.gpu_free, access, workload)
    return Fragmentation(
        amount_milli=float(weighted.sum()) / workload.total,
        idle_milli=int(nodes.gpu_free.sum()),
        capacity_milli=nodes.gpu_capacity_milli(),
    )
