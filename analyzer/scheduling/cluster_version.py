"""The Kubernetes version a replay of collected data uses, read from the data itself.

The scheduler's arithmetic depends on the version (``scheduling/versions.py``: BalancedAllocation
changed in 1.36, older changes before), so a replay of a 1.33 cluster with the default 1.36
formulas moves node counts by −6 % to +22 % (research/scheduler-fidelity.md). The data says which
version runs: ``kube_node_info{kubelet_version}`` per node (the snapshot's ``nodes.kubelet_version``).

The rule, in order:

1. ``--kubernetes-version`` (or a scenario's ``kubernetesVersion``) when given: the user knows best;
2. the control plane's own ``kubernetes_build_info`` where Prometheus scrapes it (``collect`` keeps
   it in ``meta.json``'s ``extra["control_plane"]``): the kube-scheduler's version, else the API
   server's (the scheduler is upgraded with it, and is never newer);
3. the nodes' kubelet versions: the **newest** minor any node runs. The version skew policy
   forbids a kubelet newer than the API server, and kube-scheduler runs with the control plane,
   which is upgraded before the nodes: while nodes differ (an upgrade in progress, or node pools
   left behind) the scheduler already runs the newest kubelet's minor or a later one. The most
   common minor would replay a cluster whose control plane is on 1.36 with 1.35's formulas for as
   long as most node pools lag. The note says how many nodes run which minor;
4. the default (``versions.DEFAULT_VERSION``), with a note asking for ``--kubernetes-version``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot
from analyzer.scheduling.versions import DEFAULT_VERSION, KubeVersion, parse_version

FROM_DATA = "data"
FROM_OPTION = "--kubernetes-version"
FROM_DEFAULT = "default"
SCHEDULER = "kube-scheduler"
APISERVER = "kube-apiserver"
_RELEASE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+][0-9A-Za-z.+-]*)?$")


@dataclass(frozen=True)
class ClusterVersion:
    """The version a replay uses, where it came from, and what the data said."""

    version: str  # "1.33": the minor whose formulas apply
    source: str  # FROM_DATA | FROM_OPTION | FROM_DEFAULT
    detail: str  # why this version, for the page and the notes

    @property
    def sentence(self) -> str:
        """What the pages say: ``Replayed as Kubernetes 1.33 (the kubelet version of 200 nodes).``"""
        return f"Replayed as Kubernetes {self.version} ({self.detail})."

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{"version", "source", "detail", "sentence"}``."""
        return {
            "version": self.version,
            "source": self.source,
            "detail": self.detail,
            "sentence": self.sentence,
        }


def release_key(text: str) -> tuple[int, int, int] | None:
    """``(major, minor, patch)`` of a kubelet version such as ``v1.33.4-gke.100``; None if not one."""
    match = _RELEASE.match(text.strip()) if text else None
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def newer_version(current: str, seen: str) -> str:
    """The newer of two kubelet version strings (a node upgraded within the range reports both);
    an unparseable or empty one never wins over a parseable one."""
    key_current, key_seen = release_key(current), release_key(seen)
    if key_seen is None:
        return current
    if key_current is None or key_seen > key_current:
        return seen
    return current


def cluster_version(
    kubelet_versions: Iterable[str],
    override: str | None = None,
    control_plane: Mapping[str, str] | None = None,
) -> ClusterVersion:
    """The version to replay with: the override, else the control plane's, else the newest
    kubelet minor, else the default.

    ``kubelet_versions`` is one entry per node (``nodes.kubelet_version``; "" = unknown);
    ``control_plane`` maps ``SCHEDULER`` / ``APISERVER`` to their ``git_version``.
    """
    if override is not None:
        version = parse_version(override, field=FROM_OPTION)
        return ClusterVersion(str(version), FROM_OPTION, f"given with {FROM_OPTION}")
    for component in (SCHEDULER, APISERVER):
        minor = _known_minor(str((control_plane or {}).get(component, "")))
        if minor is not None:
            what = "the kube-scheduler's" if component == SCHEDULER else "the API server's"
            return ClusterVersion(
                str(minor),
                FROM_DATA,
                f"from the data: {what} kubernetes_build_info {(control_plane or {})[component]}",
            )
    versions = list(kubelet_versions)
    minors: Counter[KubeVersion] = Counter()
    for text in versions:
        # unparseable, or a minor this analyzer has no formulas for (< 1.10, 2.x): not a vote
        minor = _known_minor(text) if isinstance(text, str) else None
        if minor is not None:
            minors[minor] += 1
    if not minors:
        return ClusterVersion(
            DEFAULT_VERSION,
            FROM_DEFAULT,
            "the default: the data names no kubelet version (kube_node_info{kubelet_version}); "
            "pass --kubernetes-version to replay with the cluster's own",
        )
    chosen = max(minors)  # the control plane is never older than a kubelet (skew policy)
    known = sum(minors.values())
    if len(minors) == 1:
        detail = f"from the data: the kubelet version of {_nodes(known)}"
        if known < len(versions):
            detail += f" ({_nodes(len(versions) - known)} without one)"
    else:
        counts = ", ".join(f"{_nodes(n)} on {v}" for v, n in sorted(minors.items(), reverse=True))
        detail = (
            f"from the data: the newest kubelet version; the nodes differ ({counts}), and the "
            "control plane, never older than a kubelet, runs at least that one; pass "
            "--kubernetes-version if it runs a later one"
        )
    return ClusterVersion(str(chosen), FROM_DATA, detail)


def _known_minor(text: str) -> KubeVersion | None:
    """The minor of a version string when this analyzer has formulas for it."""
    key = release_key(text)
    if key is None:
        return None
    try:
        return parse_version(f"{key[0]}.{key[1]}")
    except InputError:
        return None


def _nodes(count: int) -> str:
    return f"{count:,} node{'s' if count != 1 else ''}"


def snapshot_version(snapshot: Snapshot, override: str | None = None) -> ClusterVersion:
    """:func:`cluster_version` of a snapshot's nodes (old snapshots have no kubelet versions)."""
    nodes = snapshot.nodes
    versions = nodes["kubelet_version"] if "kubelet_version" in nodes.columns else []
    plane = snapshot.meta.extra.get("control_plane") if snapshot.meta.extra else None
    control_plane = (
        {str(k): str(v) for k, v in plane.items() if isinstance(v, str)}
        if isinstance(plane, dict)
        else None
    )
    return cluster_version(
        [v if isinstance(v, str) else "" for v in versions], override, control_plane
    )
