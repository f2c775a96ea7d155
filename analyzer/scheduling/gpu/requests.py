"""GPU demand of a pod and GPU inventory of a node, read from Kubernetes resource names and labels.

Pods (first rule that applies; ``docs/scheduling.md`` "GPU sharing" cites the sources):

- ``alibaba.com/gpu-milli`` T (the gpushare convention of the openb trace snapshots): with
  ``nvidia.com/gpu`` N > 0, N GPUs of T / N milli each; alone, T < 1000 is one shared GPU and a
  multiple of 1000 is T / 1000 whole GPUs;
- Koordinator DeviceShare ``koordinator.sh/gpu-core`` (else ``koordinator.sh/gpu``) P, percent of
  one GPU: with ``koordinator.sh/gpu.shared`` S > 0, S GPUs of P / S percent each; alone,
  P ≤ 100 is one GPU of P percent and P > 100 must be a multiple of 100 (P / 100 whole GPUs);
  1 % = 10 milli;
- ``nvidia.com/gpu`` N: N whole GPUs.

The allowed GPU models come from the pod label ``alibaba.com/gpu-spec`` (``|``-separated, as in
the trace). A node's GPUs: ``nvidia.com/gpu`` allocatable, else ``alibaba.com/gpu-milli`` / 1000,
else ``koordinator.sh/gpu-core`` / 100; its model from the first label of ``MODEL_LABELS``.
"""

from __future__ import annotations

from collections.abc import Mapping

from analyzer.core.errors import InputError
from analyzer.scheduling.gpu.model import MILLI, GpuDemand, validate_demand

NVIDIA_GPU = "nvidia.com/gpu"
GPU_MILLI = "alibaba.com/gpu-milli"
KOORD_GPU_CORE = "koordinator.sh/gpu-core"
KOORD_GPU = "koordinator.sh/gpu"
KOORD_GPU_SHARED = "koordinator.sh/gpu.shared"
KOORD_GPU_MEMORY_RATIO = "koordinator.sh/gpu-memory-ratio"
KOORD_GPU_MEMORY = "koordinator.sh/gpu-memory"
GPU_RESOURCES = (
    NVIDIA_GPU,
    GPU_MILLI,
    KOORD_GPU_CORE,
    KOORD_GPU,
    KOORD_GPU_SHARED,
    KOORD_GPU_MEMORY_RATIO,
    KOORD_GPU_MEMORY,
)
GPU_SPEC_LABEL = "alibaba.com/gpu-spec"
MODEL_LABELS = ("alibaba.com/gpu-model", "node.koordinator.sh/gpu-model", "nvidia.com/gpu.product")
PERCENT_MILLI = MILLI // 100  # 1 % of a GPU in milli


def _split(total: int, count: int, unit: int, what: str) -> GpuDemand:
    """``count`` GPUs sharing ``total`` (in ``unit`` per whole GPU) equally."""
    if total % count:
        raise InputError(f"{what}: {total} is not a multiple of the GPU count {count}")
    return GpuDemand(0, 0, count, total // count * (MILLI // unit))


def _alone(total: int, unit: int, what: str) -> GpuDemand:
    """A GPU amount without a count: below one GPU is one shared GPU, above whole GPUs only."""
    if total <= unit:
        return GpuDemand(0, 0, 1, total * (MILLI // unit))
    if total % unit:
        raise InputError(
            f"{what}: {total} is above one GPU ({unit}) and not a multiple of it; "
            f"request whole GPUs as multiples of {unit}"
        )
    return GpuDemand(0, 0, total // unit, MILLI)


def _gpu_part(requests: Mapping[str, int], what: str) -> GpuDemand:
    count = int(requests.get(NVIDIA_GPU, 0))
    milli = int(requests.get(GPU_MILLI, 0))
    if milli > 0:
        return (
            _split(milli, count, MILLI, f"{what} {GPU_MILLI}")
            if count > 0
            else _alone(milli, MILLI, f"{what} {GPU_MILLI}")
        )
    core_name = KOORD_GPU_CORE if requests.get(KOORD_GPU_CORE, 0) > 0 else KOORD_GPU
    core = int(requests.get(core_name, 0))
    if core > 0:
        shared = int(requests.get(KOORD_GPU_SHARED, 0))
        label = f"{what} {core_name}"
        if shared > 0:
            part = _split(core, shared, 100, label)
            if part.gpu_milli > MILLI:
                raise InputError(f"{label}: {core} over {shared} GPUs is above 100 % per GPU")
            return part
        return _alone(core, 100, label)
    if count > 0:
        return GpuDemand(0, 0, count, MILLI)
    return GpuDemand(0, 0)


def pod_gpu_demand(
    requests: Mapping[str, int], labels: Mapping[str, str] | None = None, what: str = "pod"
) -> GpuDemand:
    """The pod's ``GpuDemand`` (cpu milli and memory as requested); ``InputError`` if invalid."""
    part = _gpu_part(requests, what)
    models = None
    spec = (labels or {}).get(GPU_SPEC_LABEL, "")
    if part.num_gpu > 0 and spec.strip():
        models = frozenset(m.strip() for m in spec.split("|") if m.strip())
    demand = GpuDemand(
        cpu=int(requests.get("cpu", 0)),
        memory=int(requests.get("memory", 0)),
        num_gpu=part.num_gpu,
        gpu_milli=part.gpu_milli,
        models=models,
    )
    validate_demand(demand, what)
    return demand


def node_gpu_count(allocatable: Mapping[str, int]) -> int:
    """Whole GPUs on a node from its allocatable resources (0 = no GPU)."""
    if allocatable.get(NVIDIA_GPU, 0) > 0:
        return int(allocatable[NVIDIA_GPU])
    if allocatable.get(GPU_MILLI, 0) > 0:
        return int(allocatable[GPU_MILLI]) // MILLI
    return int(allocatable.get(KOORD_GPU_CORE, 0)) // 100


def node_gpu_model(labels: Mapping[str, str]) -> str:
    """The node's GPU model from its labels ("" when none is set)."""
    for key in MODEL_LABELS:
        if labels.get(key):
            return str(labels[key])
    return ""


def has_gpus(allocatable_maps: list[Mapping[str, int]]) -> bool:
    """Whether any node offers GPUs under one of the recognised resource names."""
    return any(node_gpu_count(a) > 0 for a in allocatable_maps)
