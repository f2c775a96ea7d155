"""A pod's topology fields from a snapshot's cells: spread constraints, pod affinity, controller.

Snapshots (``collect --kube-objects``, the generator with ``--pod-constraints``) keep the pod
spec's ``affinity`` (JSON object) and ``topologySpreadConstraints`` (JSON list) as text, and the
controller owner as ``owner_kind``/``owner_name``. The replay (``analyzer.replay.input``) and the
generator's exact placer (``analyzer.sources.kube_placement``) read them the same way here, so both
hand PodTopologySpread and InterPodAffinity identical pods.

The controller's ``apiVersion`` is the one its kind has in the core API groups (ReplicaSet,
StatefulSet, DaemonSet: ``apps/v1``; Job: ``batch/v1``; ReplicationController: ``v1``);
``helper.DefaultSelector`` compares both. Other owner kinds (``Node`` for static pods, empty)
are no controller.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from analyzer.scheduling.affinity_types import PodAffinity, parse_pod_affinity
from analyzer.scheduling.constraint_types import json_cell
from analyzer.scheduling.spread_types import OwnerRef, SpreadConstraint, parse_spread_constraints

OWNER_API_VERSIONS = {
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Job": "batch/v1",
    "ReplicationController": "v1",
}


def labels_from_cell(text: object) -> dict[str, str]:
    """A labels (or annotations) cell — a JSON object as text — as a str -> str mapping; empty
    for a missing, empty or malformed cell."""
    if not isinstance(text, str) or not text:
        return {}
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # a cell nested past the parser
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def topology_from_cells(
    affinity: object, spread: object, namespace: str, labels: Mapping[str, str], where: str
) -> tuple[tuple[SpreadConstraint, ...], PodAffinity | None]:
    """The pod's spread constraints and pod (anti-)affinity terms from its ``affinity`` and
    ``topology_spread`` cells (missing/empty = none)."""
    spec = {
        "affinity": json_cell(affinity, "{}", f"{where}.affinity"),
        "topologySpreadConstraints": json_cell(spread, "[]", f"{where}.topology_spread"),
    }
    return (
        parse_spread_constraints(spec, where),
        parse_pod_affinity(spec, where, namespace or "default", labels),
    )


def controller_from_owner(kind: object, name: object) -> OwnerRef | None:
    """The controller ``OwnerRef`` of a pod whose snapshot owner is ``kind``/``name``."""
    if not isinstance(kind, str) or not isinstance(name, str) or not name:
        return None
    api = OWNER_API_VERSIONS.get(kind)
    return None if api is None else OwnerRef(api, kind, name)
