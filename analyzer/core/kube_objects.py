"""The Kubernetes objects a snapshot keeps besides its tables (``kube_objects.json``, optional):
the form they are written in (``kept_objects``: only what scheduling reads) and their reading
(``read_objects``, checked: one line naming the file when it is not such a file).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import load_json

_PDB_STATUS = ("currentHealthy", "desiredHealthy", "disruptionsAllowed", "expectedPods")


# kinds kept for PodTopologySpread's system default selector (helper.DefaultSelector): name,
# namespace and selector only (Service / ReplicationController: the map; ReplicaSet / StatefulSet:
# the LabelSelector), sorted by (namespace, name) so the file does not depend on input order
SELECTOR_KINDS = ("Service", "ReplicationController", "ReplicaSet", "StatefulSet")


def kept_objects(objects: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The ``kube_objects.json`` form of the objects scheduling reads (others are left out):
    kind -> ``[{namespace, name, spec, status}]`` for PDBs (status only the counts),
    ``[{name, value, globalDefault, preemptionPolicy}]`` for PriorityClasses,
    ``[{namespace, name, selector}]`` for ``SELECTOR_KINDS`` (a Service without a selector
    selects no pod and is left out) and ``[{name, labels}]`` for Namespaces."""
    out: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        meta = obj.get("metadata") or {}
        kind = obj.get("kind")
        if kind == "PodDisruptionBudget":
            status = obj.get("status") or {}
            out.setdefault("PodDisruptionBudget", []).append(
                {
                    "namespace": str(meta.get("namespace", "")),
                    "name": str(meta.get("name", "")),
                    "spec": obj.get("spec") or {},
                    "status": {k: v for k, v in status.items() if k in _PDB_STATUS},
                }
            )
        elif kind == "PriorityClass":
            out.setdefault("PriorityClass", []).append(
                {
                    "name": str(meta.get("name", "")),
                    "value": obj.get("value", 0),
                    "globalDefault": bool(obj.get("globalDefault", False)),
                    "preemptionPolicy": str(obj.get("preemptionPolicy") or "PreemptLowerPriority"),
                }
            )
        elif kind in SELECTOR_KINDS:
            selector = (obj.get("spec") or {}).get("selector")
            if selector is None and kind == "Service":
                continue
            out.setdefault(str(kind), []).append(
                {
                    "namespace": str(meta.get("namespace") or "default"),
                    "name": str(meta.get("name", "")),
                    "selector": selector,
                }
            )
        elif kind == "Namespace":
            out.setdefault("Namespace", []).append(
                {"name": str(meta.get("name", "")), "labels": dict(meta.get("labels") or {})}
            )
    for kind in (*SELECTOR_KINDS, "Namespace"):
        if kind in out:
            out[kind].sort(key=lambda o: (o.get("namespace", ""), o["name"]))
    return out


def read_objects(path: Path) -> dict[str, list[dict[str, Any]]]:
    """``kube_objects.json`` (kind -> list of objects); absent = none (older snapshots)."""
    if not path.is_file():
        return {}
    try:  # core.structured: nesting bounded, one line naming the file
        raw = load_json(path)
    except InputError as exc:
        raise InputError(f"{exc}; re-create the snapshot") from None
    if not isinstance(raw, dict) or not all(
        isinstance(v, list) and all(isinstance(o, dict) for o in v) for v in raw.values()
    ):
        raise InputError(
            f"{path}: expected an object of kind -> list of objects; re-create the snapshot"
        )
    return {str(k): list(v) for k, v in raw.items()}
