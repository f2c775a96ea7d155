"""``eligibility.Checker.unremovableReasonAndNodeUtilization``
(cluster-autoscaler/core/scaledown/eligibility/eligibility.go).

In upstream's order: a node CA is already deleting (``CurrentlyBeingDeleted``), the
``scale-down-disabled`` annotation (``ScaleDownDisabledAnnotation``), no node group
(``NotAutoscaled``), then utilisation (the group's ``ignore-daemonsets-utilization``) against the
group's threshold — the GPU threshold for GPU nodes — where utilisation above the threshold
is ``NotUnderutilized`` (cluster-autoscaler 1.35+, ``isNodeAtOrBelowUtilizationThreshold``; up
to 1.34 a node at the threshold was too: ``Rules.at_threshold``), and a utilisation upstream
cannot calculate (a missing or zero cpu or memory allocatable) is ``UnexpectedError`` (1.32+;
before, it read as 0). Unready nodes are not modelled (``scale-down-unready-enabled`` defaults
to true, so upstream does not skip them either).
"""

from __future__ import annotations

from dataclasses import dataclass

from analyzer.autoscaler.cluster import CANode, NodeGroup
from analyzer.autoscaler.options import CAOptions
from analyzer.autoscaler.pods import POD_LEVEL, CAPod, request_mode
from analyzer.autoscaler.release import AT_THRESHOLD, Release, gpu_vendor_resources, has
from analyzer.autoscaler.utilization import (
    GPU_VENDOR_RESOURCES,
    UtilizationInfo,
    calculate,
    is_gpu_node,
)
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.versions import or_default


@dataclass(frozen=True)
class Rules:
    """The rules of the eligibility check that changed between cluster-autoscaler versions
    (``rules_for``); the defaults are the default version's."""

    at_threshold: bool = True  # 1.35+ (and backports): a node at the threshold is a candidate
    # the resources that make a GPU node (``release.gpu_vendor_resources``)
    gpu_vendors: tuple[str, ...] = GPU_VENDOR_RESOURCES
    error_unremovable: bool = True  # 1.32+: a utilisation error is ``UnexpectedError``
    requests: str = POD_LEVEL  # how the utilisation reads a pod's requests (``request_mode``)


def rules_for(profile: Profile, release: Release) -> Rules:
    """The eligibility rules of cluster-autoscaler ``release`` for a cluster of ``profile``'s
    Kubernetes version (CA's minor follows Kubernetes'; a profile built by hand takes the
    default's): the threshold rule and the GPU vendors by release (``analyzer.autoscaler.release``),
    the others by minor."""
    version = or_default(profile.version)
    return Rules(
        has(release, AT_THRESHOLD),
        gpu_vendor_resources(release),
        (version.major, version.minor) >= (1, 32),
        request_mode((version.major, version.minor)),
    )


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
    rules: Rules = Rules(),
) -> Eligibility:
    """Whether ``node`` is a scale-down candidate, and its utilisation (shown in any case), by
    the version's ``rules``."""
    opts = group.options if group is not None and group.options is not None else options
    info = calculate(
        node.allocatable,
        node.labels,
        pods,
        ignore_daemonsets=opts.ignore_daemonsets_utilization,
        ignore_mirror=options.ignore_mirror_pods_utilization,  # a global flag upstream
        now=now,
        vendors=rules.gpu_vendors,
        requests=rules.requests,
    )
    if node.being_deleted(now):
        return Eligibility(info, "CurrentlyBeingDeleted")
    if node.scale_down_disabled:
        return Eligibility(info, "ScaleDownDisabledAnnotation")
    if group is None:
        return Eligibility(info, "NotAutoscaled")
    if info.error and rules.error_unremovable:
        return Eligibility(info, "UnexpectedError")
    if not options.scale_down_unready_enabled and node.readiness is False:
        return Eligibility(info, "ScaleDownUnreadyDisabled")
    gpu = is_gpu_node(node.allocatable, node.labels, rules.gpu_vendors)
    threshold = (
        opts.scale_down_gpu_utilization_threshold if gpu else opts.scale_down_utilization_threshold
    )
    if over_threshold(info.utilization, threshold, rules.at_threshold):
        return Eligibility(info, "NotUnderutilized")
    return Eligibility(info, "")


def over_threshold(utilization: float, threshold: float, at_threshold: bool) -> bool:
    """Whether ``utilization`` makes a node ``NotUnderutilized``: above ``threshold``, or at it
    too where ``at_threshold`` is False (CA 1.35 and before). NaN (a resource all taken off by
    ignored pods) is over neither way, as upstream's comparisons of NaN are false."""
    return utilization > threshold if at_threshold else utilization >= threshold


def eligible_at_threshold(release: Release) -> bool:
    """Whether a node at the threshold is a candidate for cluster-autoscaler ``release``
    (1.35+, and 1.32.6+, 1.33.4+, 1.34.3+: ``release.AT_THRESHOLD``)."""
    return has(release, AT_THRESHOLD)
