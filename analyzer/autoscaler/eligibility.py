"""``eligibility.Checker.unremovableReasonAndNodeUtilization``
(cluster-autoscaler/core/scaledown/eligibility/eligibility.go).

In upstream's order: a node CA is already deleting (``CurrentlyBeingDeleted``), the
``scale-down-disabled`` annotation (``ScaleDownDisabledAnnotation``), no node group
(``NotAutoscaled``), then utilisation (the group's ``ignore-daemonsets-utilization``) against the
group's threshold — the GPU threshold for GPU nodes — where utilisation ≥ threshold is
``NotUnderutilized``. Unready nodes are not modelled (``scale-down-unready-enabled`` defaults to
true, so upstream does not skip them either).
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.autoscaler.cluster import CANode, NodeGroup
from analyzer.autoscaler.options import CAOptions
from analyzer.autoscaler.pods import CAPod
from analyzer.autoscaler.utilization import UtilizationInfo, calculate, is_gpu_node


@dataclass(frozen=True)
class Eligibility:
    """A node's utilisation and the reason it cannot be a candidate ("" when it can)."""

    utilization: UtilizationInfo
    reason: str


def check(
    node: CANode,
    pods: list[CAPod],
    group: NodeGroup | None,
    options: CAOptions,
    now: float,
) -> Eligibility:
    """Whether ``node`` is a scale-down candidate, and its utilisation (shown in any case)."""
    opts = group.options if group is not None and group.options is not None else options
    info = calculate(
        node.allocatable,
        node.labels,
        pods,
        ignore_daemonsets=opts.ignore_daemonsets_utilization,
        ignore_mirror=options.ignore_mirror_pods_utilization,  # a global flag upstream
        now=now,
    )
    if node.being_deleted(now):
        return Eligibility(info, "CurrentlyBeingDeleted")
    if node.scale_down_disabled:
        return Eligibility(info, "ScaleDownDisabledAnnotation")
    if group is None:
        return Eligibility(info, "NotAutoscaled")
    gpu = is_gpu_node(node.allocatable, node.labels)
    threshold = (
        opts.scale_down_gpu_utilization_threshold if gpu else opts.scale_down_utilization_threshold
    )
    if info.utilization >= threshold:
        return Eligibility(info, "NotUnderutilized")
    return Eligibility(info, "")
