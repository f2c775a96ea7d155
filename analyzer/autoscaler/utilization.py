"""``utilization.Calculate`` (cluster-autoscaler/simulator/utilization/info.go).

Per resource: the sum of the node's pods' requests (``PodRequests``: containers, init containers
and overhead) divided by the node's allocatable. With ``ignore-daemonsets-utilization`` or
``ignore-mirror-pods-utilization`` those pods' requests are taken off the allocatable instead of
added to the requests; long-terminating pods count for nothing. The node's utilisation is the
higher of cpu and memory (memory on a tie); a GPU node's is its GPU ratio alone. Both quantities
enter as ``MilliValue()`` (memory bytes × 1000) and divide in float64, so the ratio is bit-equal
with upstream's. A missing or zero allocatable is an error upstream: the eligibility checker logs
it and carries on with utilisation 0, and so does this (``error`` says why); an unready GPU
(allocatable 0) reads as 0 as upstream.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from analyzer.autoscaler.pods import CAPod

GPU_RESOURCE = "nvidia.com/gpu"
# the cloud providers' GPU node labels (GetNodeGpuConfig: a node with the provider's GPU label)
GPU_LABELS = (
    "cloud.google.com/gke-accelerator",
    "k8s.amazonaws.com/accelerator",
    "cloud.google.com/gke-gpu",
)


@dataclass(frozen=True)
class UtilizationInfo:
    """``utilization.Info``: per-resource ratios, the highest one's name and value."""

    utilization: float
    resource: str
    by_resource: Mapping[str, float] = field(default_factory=dict)
    error: str = ""


def is_gpu_node(allocatable: Mapping[str, int], labels: Mapping[str, str]) -> bool:
    """``GetNodeGpuConfig`` != nil: the node advertises a GPU resource or carries a GPU label."""
    return GPU_RESOURCE in allocatable or any(label in labels for label in GPU_LABELS)


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
) -> float | None:
    """``CalculateUtilizationOfResource``; None where upstream returns an error."""
    if resource not in allocatable or allocatable[resource] == 0:
        return None
    requested = 0
    taken_off = 0
    for pod in pods:
        value = _milli(resource, pod.requests.get(resource, 0))
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
) -> UtilizationInfo:
    """The node's utilisation as the eligibility checker sees it."""

    def ratio(resource: str) -> float | None:
        return resource_utilization(
            resource,
            allocatable,
            pods,
            ignore_daemonsets=ignore_daemonsets,
            ignore_mirror=ignore_mirror,
            now=now,
        )

    if is_gpu_node(allocatable, labels):
        gpu = ratio(GPU_RESOURCE)
        value = 0.0 if gpu is None else gpu  # an unready GPU reads as 0 upstream
        return UtilizationInfo(value, GPU_RESOURCE, {GPU_RESOURCE: value})
    cpu = ratio("cpu")
    mem = ratio("memory")
    if cpu is None or mem is None:
        missing = "cpu" if cpu is None else "memory"
        return UtilizationInfo(0.0, "", {}, error=f"{missing} allocatable is missing or 0")
    if cpu > mem:
        return UtilizationInfo(cpu, "cpu", {"cpu": cpu, "memory": mem})
    return UtilizationInfo(mem, "memory", {"cpu": cpu, "memory": mem})
