"""GPU device model: every node's GPUs tracked one by one (free milli per GPU, GPU model).

This is the model GPU-sharing schedulers use (Alibaba's gpushare device plugin and the
Open-Gpu-Share filter of the FGD artifact, Koordinator's DeviceShare): a GPU is 1000 milli; a
*shared* pod (one GPU, milli below 1000) takes its milli on a single GPU; a *whole-GPU* pod takes
``num_gpu`` GPUs that are completely free, lowest index first. The filter checks CPU, memory,
the GPU model, and that enough GPUs each have at least the per-GPU milli free.

State is held as numpy int64 arrays over all nodes (``gpu_free`` is nodes × max GPUs; GPUs a node
does not have are padded with 0 free milli, so they never fit a request and never count as idle)
so one pod is checked against every node in a few vectorised operations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from analyzer.core.errors import InputError
from analyzer.core.structured import preview

MILLI = 1000  # milli per GPU
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class GpuDemand:
    """What one pod asks for: CPU milli, memory (node units), GPU count, milli per GPU, models."""

    cpu: int
    memory: int
    num_gpu: int = 0
    gpu_milli: int = 0  # per requested GPU, 1..1000; 0 when num_gpu == 0
    models: frozenset[str] | None = None  # allowed GPU models; None = any

    @property
    def total_gpu_milli(self) -> int:
        """GPU demand in milli over all requested GPUs."""
        return self.num_gpu * self.gpu_milli

    @property
    def shared(self) -> bool:
        """True for a pod that shares one GPU (a fraction of a single GPU)."""
        return self.num_gpu == 1 and 0 < self.gpu_milli < MILLI


def validate_demand(demand: GpuDemand, what: str = "pod") -> None:
    """Raise ``InputError`` if the GPU request cannot be expressed in this model."""
    if demand.num_gpu < 0 or demand.cpu < 0 or demand.memory < 0:
        raise InputError(f"{what}: negative request; cpu, memory and num_gpu must be >= 0")
    if demand.num_gpu == 0 and demand.gpu_milli != 0:
        raise InputError(
            f"{what}: gpu_milli={demand.gpu_milli} with num_gpu=0; set both or neither"
        )
    if demand.num_gpu > 0 and not 0 < demand.gpu_milli <= MILLI:
        raise InputError(f"{what}: gpu_milli must be 1..1000 per GPU, got {demand.gpu_milli}")


@dataclass
class GpuNodes:
    """Mutable cluster state: capacities and free amounts per node, free milli per GPU."""

    names: list[str]
    cpu_alloc: IntArray
    mem_alloc: IntArray
    gpu_count: IntArray
    model: IntArray  # index into model_names; -1 = no GPU model
    model_names: tuple[str, ...]
    cpu_free: IntArray = field(init=False)
    mem_free: IntArray = field(init=False)
    gpu_free: IntArray = field(init=False)  # nodes × max GPUs

    def __post_init__(self) -> None:
        self.cpu_free = self.cpu_alloc.copy()
        self.mem_free = self.mem_alloc.copy()
        width = max(int(self.gpu_count.max(initial=0)), 1)
        slots = np.arange(width)[None, :]
        self.gpu_free = np.where(slots < self.gpu_count[:, None], MILLI, 0).astype(np.int64)

    @classmethod
    def create(
        cls,
        names: Sequence[str],
        cpu: Sequence[int] | IntArray,
        memory: Sequence[int] | IntArray,
        gpus: Sequence[int] | IntArray,
        models: Sequence[str],
    ) -> GpuNodes:
        """Empty nodes from per-node capacities; ``models`` holds "" for nodes without GPUs."""
        model_names = tuple(sorted({m for m in models if m}))
        code = {name: i for i, name in enumerate(model_names)}
        return cls(
            names=list(names),
            cpu_alloc=np.asarray(cpu, dtype=np.int64),
            mem_alloc=np.asarray(memory, dtype=np.int64),
            gpu_count=np.asarray(gpus, dtype=np.int64),
            model=np.array([code.get(m, -1) for m in models], dtype=np.int64),
            model_names=model_names,
        )

    def copy(self) -> GpuNodes:
        """An independent copy (the current free amounts included)."""
        clone = GpuNodes(
            self.names,
            self.cpu_alloc,
            self.mem_alloc,
            self.gpu_count,
            self.model,
            self.model_names,
        )
        clone.cpu_free = self.cpu_free.copy()
        clone.mem_free = self.mem_free.copy()
        clone.gpu_free = self.gpu_free.copy()
        return clone

    @property
    def size(self) -> int:
        """Number of nodes."""
        return len(self.names)

    def model_mask(self, models: frozenset[str] | None) -> BoolArray:
        """Nodes whose GPU model is allowed (all nodes when ``models`` is None)."""
        if models is None:
            return np.ones(self.size, dtype=bool)
        codes = [i for i, name in enumerate(self.model_names) if name in models]
        return np.isin(self.model, codes)

    def fitting_gpus(self, gpu_milli: int) -> IntArray:
        """Per node, how many GPUs have at least ``gpu_milli`` free."""
        counts: IntArray = (self.gpu_free >= gpu_milli).sum(axis=1).astype(np.int64)
        return counts

    def device_fit(self, demand: GpuDemand) -> BoolArray:
        """The GPU part of the filter: model, and enough GPUs with the per-GPU milli free."""
        ok = np.ones(self.size, dtype=bool)
        if demand.num_gpu > 0:
            ok &= self.fitting_gpus(demand.gpu_milli) >= demand.num_gpu
            if demand.models is not None:
                ok &= self.model_mask(demand.models)
        return ok

    def feasible(self, demand: GpuDemand) -> BoolArray:
        """The filter: CPU, memory, GPU model, and enough GPUs with the per-GPU milli free."""
        ok = (self.cpu_free >= demand.cpu) & (self.mem_free >= demand.memory)
        if demand.num_gpu > 0:
            ok &= self.device_fit(demand)
        return ok

    def pick_gpus(self, node: int, demand: GpuDemand, rule: str = "first-fit") -> tuple[int, ...]:
        """GPU indices for ``demand`` on ``node``.

        Whole-GPU pods always take the lowest-index fully free GPUs. For other pods ``rule``
        decides: ``first-fit`` (lowest index that fits) or ``best-fit`` (least free milli that
        still fits, lowest index on ties).
        """
        if demand.num_gpu == 0:
            return ()
        free = self.gpu_free[node]
        fits = np.flatnonzero(free >= demand.gpu_milli)
        if len(fits) < demand.num_gpu:
            raise InputError(f"node {self.names[node]}: not enough GPUs for the pod")
        if rule == "best-fit" and demand.gpu_milli < MILLI:
            fits = fits[np.argsort(free[fits], kind="stable")]
        elif rule != "first-fit" and rule != "best-fit":
            raise InputError(f"GPU choice rule {preview(rule)}: use first-fit or best-fit")
        return tuple(int(i) for i in fits[: demand.num_gpu])

    def bind(self, node: int, demand: GpuDemand, gpus: Sequence[int]) -> None:
        """Place ``demand`` on ``node`` using GPU indices ``gpus``."""
        self.cpu_free[node] -= demand.cpu
        self.mem_free[node] -= demand.memory
        for gpu in gpus:
            self.gpu_free[node, gpu] -= demand.gpu_milli

    def unbind(self, node: int, demand: GpuDemand, gpus: Sequence[int]) -> None:
        """Remove a pod bound earlier with the same ``gpus``."""
        self.cpu_free[node] += demand.cpu
        self.mem_free[node] += demand.memory
        for gpu in gpus:
            self.gpu_free[node, gpu] += demand.gpu_milli

    def idle_gpu_milli(self) -> IntArray:
        """Per node, the free GPU milli summed over its GPUs (I_n)."""
        idle: IntArray = self.gpu_free.sum(axis=1).astype(np.int64)
        return idle

    def gpu_capacity_milli(self) -> int:
        """Total GPU milli of the cluster."""
        return int(self.gpu_count.sum()) * MILLI
