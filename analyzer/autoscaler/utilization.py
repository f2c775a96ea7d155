"""``utilization.Calculate`` (cluster-autoscaler/simulator/utilization/info.go).

Per resource: the sum of the node's pods' requests (``PodRequests``: containers, init containers
and overhead) divided by the node's allocatable. With ``ignore-daemonsets-utilization`` or
``ignore-mirror-pods-utilization`` those pods' requests are taken off the allocatable instead of
added to the requests; long-terminating pods count for nothing. The node's utilisation is the
higher of cpu and memory (memory on a tie); a GPU node's is its GPU ratio alone. Both quantities
enter as ``MilliValue()`` (memory bytes × 1000) and divide in float64, so the ratio is bit-equal
with upstream's. A missing or zero allocatable is an error upstream (``error`` says why): the
eligibility checker makes the node ``UnexpectedError`` (cluster-autoscaler 1.32+, commit
714ab661ca) or, before, logs it and carries on with utilisation 0. A GPU node
(``GetNodeGPUFromCloudProvider``) carries a cloud provider's GPU label or offers a non-zero GPU
allocatable: ``nvidia.com/gpu`` up to 1.34, any vendor's from 1.35 (commit 285c687421,
``GPUVendorResourceNames``, the first non-zero one named); an unready GPU (its resource missing
or 0) reads as 0 as upstream.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from analyzer.autoscaler.pods import POD_LEVEL, CAPod

GPU_RESOURCE = "nvidia.com/gpu"
# ``gpu.GPUVendorResourceNames`` (1.35+), in its order; 1.34.3 to 1.34.5 had it without Intel's
# xe (``GPU_VENDORS_1_34``); before, ``nvidia.com/gpu`` alone (``release.gpu_vendor_resources``)
GPU_VENDOR_RESOURCES = (
    GPU_RESOURCE,
    "habana.ai/gaudi",
    "gpu.intel.com/xe",
    "amd.com/gpu",
    "microsoft.com/directx",
)
GPU_VENDORS_1_34 = (GPU_RESOURCE, "habana.ai/gaudi", "amd.com/gpu", "microsoft.com/directx")
# the cloud providers' GPU node labels (each provider's ``GPULabel()``; the cloud provider is not
# modelled, so a node with any of them is a GPU node; the bare ``accelerator`` some providers use
# is left out as too generic to mean a GPU on another provider)
GPU_LABELS = (
    "cloud.google.com/gke-accelerator",  # GCE, and the providers modelled on it
    "k8s.amazonaws.com/accelerator",  # AWS
    "kubernetes.azure.com/accelerator",  # Azure
    "cluster-api/accelerator",  # Cluster API
    "aliyun.accelerator/nvidia_name",  # Alibaba Cloud
    "cloud.tencent.com/tke-accelerator",  # Tencent Cloud
)


@dataclass(frozen=True)
class UtilizationInfo:
    """``utilization.Info``: per-resource ratios, the highest one's name and value."""

    utilization: float
    resource: str
    by_resource: Mapping[str, float] = field(default_factory=dict)
    error: str = ""


def gpu_resource(
    allocatable: Mapping[str, int],
    labels: Mapping[str, str],
    vendors: Sequence[str] = GPU_VENDOR_RESOURCES,
) -> str | None:
    """``GetNodeGPUFromCloudProvider``: the node's GPU resource name, None for no GPU node. A
    GPU node offers a non-zero allocatable of one of ``vendors`` (the release's GPU resource
    names, in upstream's order: the first non-zero one) or carries a GPU label."""
    for name in vendors:
        if allocatable.get(name, 0):
            return name
    return GPU_RESOURCE if any(label in labels for label in GPU_LABELS) else None


def is_gpu_node(
    allocatable: Mapping[str, int],
    labels: Mapping[str, str],
    vendors: Sequence[str] = GPU_VENDOR_RESOURCES,
) -> bool:
    """``GetNodeGpuConfig`` != nil (``gpu_resource``)."""
    return gpu_resource(allocatable, labels, vendors) is not None


def _milli(resource: str, value: int) -> int:
    # analyzer keeps cpu in millicores and everything else in base units
    return value if resource == "cpu" else value * 1000


def resource_utilization(
    resource: str,
    allocatable: Mapping[str, int],
    pods: Sequence[CAPod],
    *,
    ignore_daemonsets: bool,
    ignore_mirror: bool,
    now: float,
    requests: str = POD_LEVEL,
) -> float | None:
    """``CalculateUtilizationOfResource``; None where upstream returns an error. ``requests``:
    how the version reads a pod's requests (``pods.request_mode``)."""
    if resource not in allocatable or allocatable[resource] == 0:
        return None
    requested = 0
    taken_off = 0
    for pod in pods:
        asked = pod.requests if requests == POD_LEVEL else pod.requests_by(requests)
        value = _milli(resource, asked.get(resource, 0))
        if (ignore_daemonsets and pod.daemonset) or (ignore_mirror and pod.mirror):
            taken_off += value
            continue
        if pod.long_terminating(now):
            continue
        requested += value
    denominator = float(_milli(resource, allocatable[resource]) - taken_off)
    if denominator == 0:
        # DaemonSet/mirror pods taking the whole allocatable: Go's float division gives +Inf,
        # or NaN for 0/0 (which is never ≥ a threshold, so such a node counts as underutilised)
        return math.inf if requested > 0 else math.nan
    return float(requested) / denominator


def calculate(
    allocatable: Mapping[str, int],
    labels: Mapping[str, str],
    pods: Sequence[CAPod],
    *,
    ignore_daemonsets: bool,
    ignore_mirror: bool,
    now: float,
    vendors: Sequence[str] = GPU_VENDOR_RESOURCES,
    requests: str = POD_LEVEL,
) -> UtilizationInfo:
    """The node's utilisation as the eligibility checker sees it (``vendors``: ``gpu_resource``;
    ``requests``: ``pods.request_mode``)."""

    def ratio(resource: str) -> float | None:
        return resource_utilization(
            resource,
            allocatable,
            pods,
            ignore_daemonsets=ignore_daemonsets,
            ignore_mirror=ignore_mirror,
            now=now,
            requests=requests,
        )

    name = gpu_resource(allocatable, labels, vendors)
    if name is not None:
        gpu = ratio(name)
        value = 0.0 if gpu is None else gpu  # an unready GPU reads as 0 upstream
        return UtilizationInfo(value, name, {name: value})
    cpu = ratio("cpu")
    mem = ratio("memory")
    if cpu is None or mem is None:
        missing = "cpu" if cpu is None else "memory"
        return UtilizationInfo(0.0, "", {}, error=f"{missing} allocatable is missing or 0")
    if cpu > mem:
        return UtilizationInfo(cpu, "cpu", {"cpu": cpu, "memory": mem})
    return UtilizationInfo(mem, "memory", {"cpu": cpu, "memory": mem})
