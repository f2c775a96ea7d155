"""The FGD fragmentation measure (Weng et al., USENIX ATC 2023), vectorised over nodes.

Definitions (``research/real-data.md`` §3): for a task shape m = (CPU c_m, per-GPU milli r_m,
GPU count k_m, allowed models T_m) and a node n with free CPU C_n and free milli g_{n,j} per GPU,
the fragment F_n(m) is the node's whole idle GPU milli I_n unless the task fits (Q3), in which
case only the GPUs with less than r_m free count. A CPU-only task (r_m = 0) sees every idle GPU as
a fragment. With the target workload M (shapes covering 95 % of the original pods, popularity
p_m) F_n(M) = Σ p_m F_n(m). The cluster sums are ``analyzer.fragmentation.gpu``'s.

Popularities are kept as integer pod counts w_m (p_m = w_m / W), so node values are exact
integers ``Σ w_m F_n(m)`` and only the final division is floating point.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from analyzer.core.errors import InputError
from analyzer.scheduling.gpu.model import GpuNodes

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class TargetWorkload:
    """The target workload M: task shapes and their pod counts (popularity numerators)."""

    cpu: IntArray  # c_m, milli
    gpu_milli: IntArray  # r_m, per GPU
    num_gpu: IntArray  # k_m
    specs: tuple[frozenset[str] | None, ...]  # T_m; None = any model
    weights: IntArray  # pods of each shape (p_m = weights / total)
    distinct_shapes: int  # shapes in the original list, before the cut
    pods: int  # pods in the original list

    @property
    def total(self) -> int:
        """Pods covered by the kept shapes (the normaliser W)."""
        return int(self.weights.sum())

    @property
    def coverage(self) -> float:
        """Fraction of the original pods whose shape is kept."""
        return self.total / self.pods

    def popularity(self) -> NDArray[np.float64]:
        """p_m, summing to 1."""
        return self.weights / self.total

    def access(self, nodes: GpuNodes) -> BoolArray:
        """nodes × shapes: may the node's GPU model serve the shape (T_m)?"""
        out = np.ones((nodes.size, len(self.specs)), dtype=bool)
        for m, spec in enumerate(self.specs):
            if spec is not None:
                out[:, m] = nodes.model_mask(spec)
        return out


def target_workload(
    cpu: Sequence[int] | IntArray,
    num_gpu: Sequence[int] | IntArray,
    gpu_milli: Sequence[int] | IntArray,
    specs: Sequence[frozenset[str] | None],
    threshold_pct: int = 95,
) -> TargetWorkload:
    """Build M from the original pod list: group by shape (memory ignored), most common first,
    keep shapes until they cover at least ``threshold_pct`` % of pods.

    Ties in count are ordered by the shape itself so the cut is deterministic.
    """
    if not 0 < threshold_pct <= 100:
        raise InputError(f"popularity threshold {threshold_pct}: use 1..100")
    keys = [
        (int(c), int(r), int(k), tuple(sorted(s)) if s is not None else ())
        for c, k, r, s in zip(cpu, num_gpu, gpu_milli, specs, strict=True)
    ]
    if not keys:
        raise InputError("pod list is empty; the target workload needs at least one pod")
    counts = sorted(Counter(keys).items(), key=lambda item: (-item[1], item[0]))
    kept: list[tuple[tuple[int, int, int, tuple[str, ...]], int]] = []
    covered = 0
    for key, count in counts:
        kept.append((key, count))
        covered += count
        # integer comparison: covered / pods >= threshold / 100
        if covered * 100 >= threshold_pct * len(keys):
            break
    return TargetWorkload(
        cpu=np.array([k[0] for k, _ in kept], dtype=np.int64),
        gpu_milli=np.array([k[1] for k, _ in kept], dtype=np.int64),
        num_gpu=np.array([k[2] for k, _ in kept], dtype=np.int64),
        specs=tuple(frozenset(k[3]) if k[3] else None for k, _ in kept),
        weights=np.array([c for _, c in kept], dtype=np.int64),
        distinct_shapes=len(counts),
        pods=len(keys),
    )


def shape_fragments(
    cpu_free: IntArray, gpu_free: IntArray, access: BoolArray, workload: TargetWorkload
) -> IntArray:
    """F_n(m) for every node × shape, in GPU milli (rows of ``gpu_free`` are nodes)."""
    idle = gpu_free.sum(axis=1)
    r = workload.gpu_milli
    too_small = gpu_free[:, None, :] < r[None, :, None]  # nodes × shapes × GPUs
    small_sum = (gpu_free[:, None, :] * too_small).sum(axis=2)
    fitting = gpu_free.shape[1] - too_small.sum(axis=2)
    satisfied = (
        access
        & (cpu_free[:, None] >= workload.cpu[None, :])
        & (fitting >= workload.num_gpu[None, :])
        & (r[None, :] > 0)
    )
    fragments: IntArray = np.where(satisfied, small_sum, idle[:, None]).astype(np.int64)
    return fragments


def weighted_node_fragments(
    cpu_free: IntArray, gpu_free: IntArray, access: BoolArray, workload: TargetWorkload
) -> IntArray:
    """W · F_n(M) per node as exact integers (divide by ``workload.total`` for milli)."""
    return shape_fragments(cpu_free, gpu_free, access, workload) @ workload.weights
