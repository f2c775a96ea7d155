"""Which cluster-autoscaler release a cluster runs, and the scale-down rules that changed within
a minor version.

CA's minor follows Kubernetes' (CA 1.33 for Kubernetes 1.33); its patch releases come on their
own schedule and carry backports of fixes, so a rule that changed in minor X may already hold
in late patches of X-1 and X-2. A release is ``(1, minor, patch)``; without one given
(``analyzer autoscale``'s ``clusterAutoscalerVersion``, the replay's
``autoscaler.cluster-autoscaler-version``) it is the newest patch of the minor known here
(``NEWEST_PATCH``: the tags of kubernetes/autoscaler read for this table, up to
cluster-autoscaler-1.36.1), as a cluster that takes its patch releases runs. The rules whose
patch matters, each with the first release of each minor that has it (found by the subject of
the upstream commit among each release branch's tags):

| rule | from minor | backported to |
|---|---|---|
| a node at the threshold is a candidate (8704d355, ``isNodeAtOrBelowUtilizationThreshold``) | 1.35 | 1.32.6, 1.33.4, 1.34.3 |
| a StatefulSet owner outside the ``apps`` group is not looked up (cc3a9f5d10) | 1.33 | 1.30.5, 1.31.3, 1.32.2 |
| the candidate out of the removal simulation's snapshot (ea1c308130) | 1.33 | 1.32.3 |
| its tainted ghost instead (55f5bc2199) | 1.36 | 1.33.5, 1.34.4, 1.35.1 |
| an expendable pod must not have preemptionPolicy ``Never`` (6632bab4c8, reverted by 6f0f000a20) | 1.30.0 to 1.33.0 | reverted in 1.30.5, 1.31.3, 1.32.2, 1.33.1 |
| other vendors' GPU resources make a GPU node (285c687421; ``gpu_vendor_resources``) | 1.35 (five vendors) | 1.34.3 (all but Intel's xe) |

The other version rules (drain order, DaemonSet group, kube-system timeout, ``UnexpectedError``,
the requests the utilisation reads, on-completion pods, expander and frequent-loop defaults)
came in a minor's .0 release and were not backported: they follow the minor.
"""

from __future__ import annotations

import re

from analyzer.autoscaler.utilization import (
    GPU_RESOURCE,
    GPU_VENDOR_RESOURCES,
    GPU_VENDORS_1_34,
)
from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.versions import KubeVersion

Release = tuple[int, int, int]
# the newest patch of each minor among kubernetes/autoscaler's tags read for this module
NEWEST_PATCH = {28: 7, 29: 5, 30: 7, 31: 5, 32: 7, 33: 6, 34: 5, 35: 2, 36: 1}
_RELEASE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")

# rule -> (the minor from which every release has it, {older minor: its first patch with it})
AT_THRESHOLD = (35, {32: 6, 33: 4, 34: 3})
STATEFULSET_ANY_GROUP = (33, {30: 5, 31: 3, 32: 2})
CANDIDATE_GONE = (33, {32: 3})
GHOST = (36, {33: 5, 34: 4, 35: 1})
# minor -> the first patch that dropped the preemptionPolicy condition of expendable pods
_EXPENDABLE_REVERTED = {30: 5, 31: 3, 32: 2, 33: 1}


def newest(kube: KubeVersion) -> Release:
    """The newest release of CA for Kubernetes ``kube``'s minor known here (an unknown minor:
    patch 0, whose rules are the minor's own)."""
    return (kube.major, kube.minor, NEWEST_PATCH.get(kube.minor, 0))


def release_of(raw: object, where: str) -> Release:
    """``raw`` (``"1.33.4"``, a leading ``v`` allowed) as a release; ``InputError`` naming
    ``where`` for anything else."""
    match = _RELEASE.match(raw.strip()) if isinstance(raw, str) else None
    if match is None:
        raise InputError(
            f'{where}: {preview(raw)} is not a cluster-autoscaler release (expected e.g. "1.33.4")'
        )
    return (int(match.group(1)), int(match.group(2)), int(match.group(3)))


def parse_release(raw: object, kube: KubeVersion, where: str) -> Release:
    """``raw`` (``release_of``; None: ``newest``) as a release of CA for Kubernetes ``kube``:
    its minor must be ``kube``'s (CA's minor follows Kubernetes')."""
    if raw is None:
        return newest(kube)
    release = release_of(raw, where)
    if release[:2] != (kube.major, kube.minor):
        raise InputError(
            f"{where}: {raw} does not go with Kubernetes {kube} (cluster-autoscaler's minor "
            f"follows Kubernetes'); give a {kube}.x release or change the Kubernetes version"
        )
    return release


def gpu_vendor_resources(release: Release) -> tuple[str, ...]:
    """The resources that make a GPU node (``gpu.GPUVendorResourceNames``, in upstream's order):
    every vendor's from 1.35 (285c687421 and the vendors added after it), all but Intel's xe
    from 1.34.3 (189594e95f, 53b9917efd), ``nvidia.com/gpu`` alone before."""
    if release[1] >= 35:
        return GPU_VENDOR_RESOURCES
    if release[1] == 34 and release[2] >= 3:
        return GPU_VENDORS_1_34
    return (GPU_RESOURCE,)


def has(release: Release, rule: tuple[int, dict[int, int]]) -> bool:
    """Whether ``release`` has ``rule`` (one of the tuples above)."""
    since, backports = rule
    minor, patch = release[1], release[2]
    if minor >= since:
        return True
    first = backports.get(minor)
    return first is not None and patch >= first


def expendable_needs_preemption(release: Release) -> bool:
    """Whether ``IsExpendablePod`` also asks for a preemptionPolicy other than ``Never``:
    from 1.30.0 until the revert reached each minor (1.30.5, 1.31.3, 1.32.2, 1.33.1; 1.34 on
    never)."""
    minor, patch = release[1], release[2]
    if not 30 <= minor <= 33:
        return False
    return patch < _EXPENDABLE_REVERTED[minor]
