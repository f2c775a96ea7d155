"""Opt-in pod scheduling constraints and node zones of the synthetic cluster.

``SyntheticSpec(zones=N)`` labels nodes with ``topology.kubernetes.io/zone`` (and ``region``);
``SyntheticSpec(pod_constraints=True)`` gives some workloads what kube-state-metrics cannot
export, so ``collect --kube-objects`` has something to add (``workload_constraints``):

- ``web-frontend``: spread over zones (maxSkew 1) and hostnames (maxSkew 2), ScheduleAnyway;
- ``checkout-api``: required pod anti-affinity per hostname, spread over zones (DoNotSchedule);
- ``search``: preferred pod anti-affinity per hostname (weight 100);
- ``session-cache`` (StatefulSet): required anti-affinity per hostname, spread over zones;
- ``coredns``: preferred anti-affinity per hostname, spread over hostnames (ScheduleAnyway);
- ``renderer``: preferred pod affinity to ``web-frontend`` in the same zone (weight 50).

Zone terms appear only with zones. Selectors match the pod label ``app=<workload>``. The
generator's simple placers (``sources/placement.py``: least-allocated, crowding) do not apply
these constraints, so their ground truth may violate the required ones; the exact placer
(``kube_placement``) and the demo's constrained crowding (``constrained_placement``) honour them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from analyzer.sources.catalog import PRIORITY_CLASSES, Template

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
HOSTNAME_LABEL = "kubernetes.io/hostname"
REGION = "europe-west4"
APP_LABEL = "app"
BUILTIN_CLASSES = ("system-node-critical", "system-cluster-critical")


def zone_of(index_in_pool: int, zones: int) -> str:
    """The zone of the ``index_in_pool``-th node of a pool: round robin over ``zones`` zones."""
    return f"{REGION}-{'abcdefghijklmnopqrstuvwxyz'[index_in_pool % zones]}" if zones else ""


def zone_labels(zone: str) -> dict[str, str]:
    """Node labels for ``zone`` (none when the cluster has no zones)."""
    return {ZONE_LABEL: zone, REGION_LABEL: REGION} if zone else {}


def selector(app: str) -> dict[str, Any]:
    """A label selector for the pods of workload ``app``."""
    return {"matchLabels": {APP_LABEL: app}}


def _spread(app: str, key: str, skew: int, hard: bool) -> dict[str, Any]:
    return {
        "labelSelector": selector(app),
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
    }


def _term(app: str, key: str) -> dict[str, Any]:
    return {"labelSelector": selector(app), "topologyKey": key}


def workload_constraints(template: Template, app: str, zones: int) -> dict[str, Any]:
    """``{"affinity": ..., "topologySpreadConstraints": [...]}`` of workload ``app`` (from
    ``template``); empty for the templates without constraints."""
    name = template.name
    spread: list[dict[str, Any]] = []
    affinity: dict[str, Any] = {}
    if name == "web-frontend":
        if zones:
            spread.append(_spread(app, ZONE_LABEL, 1, hard=False))
        spread.append(_spread(app, HOSTNAME_LABEL, 2, hard=False))
    elif name in ("checkout-api", "session-cache"):
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [_term(app, HOSTNAME_LABEL)]
        }
        if zones:
            spread.append(_spread(app, ZONE_LABEL, 1, hard=True))
    elif name in ("search", "coredns"):
        affinity["podAntiAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": _term(app, HOSTNAME_LABEL)}
            ]
        }
        if name == "coredns":
            spread.append(_spread(app, HOSTNAME_LABEL, 1, hard=False))
    elif name == "renderer" and zones:
        affinity["podAffinity"] = {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 50, "podAffinityTerm": _term("web-frontend", ZONE_LABEL)}
            ]
        }
    out: dict[str, Any] = {}
    if affinity:
        out["affinity"] = affinity
    if spread:
        out["topologySpreadConstraints"] = spread
    return out


def constraint_columns(template: Template, app: str, zones: int) -> tuple[str, str]:
    """The snapshot's ``affinity`` and ``topology_spread`` cells of a pod of workload ``app``."""
    found = workload_constraints(template, app, zones)
    return (
        json.dumps(found.get("affinity", {}), sort_keys=True),
        json.dumps(found.get("topologySpreadConstraints", []), sort_keys=True),
    )


def pdb_objects(workloads: Sequence[tuple[str, str, str, int]]) -> list[dict[str, Any]]:
    """PodDisruptionBudgets of the replicated services (``(kind, namespace, name, replicas)``)."""
    out = []
    for kind, namespace, name, replicas in workloads:
        base = name.rsplit("-", 1)[0] if name.rsplit("-", 1)[-1].isdigit() else name
        if base not in ("checkout-api", "session-cache", "coredns") or kind == "ReplicaSet":
            continue
        spec: dict[str, Any] = {"selector": selector(name)}
        if kind == "StatefulSet":
            spec["maxUnavailable"] = 1
        else:
            spec["minAvailable"] = max(1, replicas // 2)
        out.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": f"{name}-pdb", "namespace": namespace},
                "spec": spec,
            }
        )
    return out


def priority_class_objects() -> list[dict[str, Any]]:
    """The cluster's PriorityClasses (built-in ones included, as ``kubectl get`` lists them)."""
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "globalDefault": False,
            "preemptionPolicy": "Never" if value < 0 else "PreemptLowerPriority",
        }
        for name, value in PRIORITY_CLASSES.items()
        if name
    ]
