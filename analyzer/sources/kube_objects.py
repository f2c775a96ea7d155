"""The synthetic cluster as Kubernetes objects (``analyzer generate --kube-objects``).

``kube_objects(cluster)`` renders what ``kubectl get deploy,sts,ds,rs,job,cronjob,svc,ns,nodes,
pdb,priorityclass -A -o json`` would print for the cluster at the end of the range (it has no
Services and no Namespace objects): Nodes, one object
per Deployment, ReplicaSet (owned by its Deployment), StatefulSet, DaemonSet, Job (owned by its
CronJob) and CronJob, PodDisruptionBudgets for the replicated services and the PriorityClasses.
Pod templates carry the workloads' tolerations, nodeSelector, priorityClassName and, with
``SyntheticSpec(pod_constraints=True)``, their affinity and topologySpreadConstraints
(``sources/pod_constraints.py``). Every ReplicaSet and Job of the range is listed (a real cluster
keeps some history and deletes finished Jobs; ``collect`` then falls back to the Deployment or
CronJob).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from analyzer.core.quantity import format_quantity
from analyzer.core.resources import Container
from analyzer.sources.catalog import Template, pool_taints, template_constraints
from analyzer.sources.pod_constraints import (
    APP_LABEL,
    pdb_objects,
    priority_class_objects,
    selector,
    workload_constraints,
)
from analyzer.sources.synthetic import SyntheticCluster, node_labels


def _resources(values: Mapping[str, int]) -> dict[str, str]:
    return {r: format_quantity(r, v) for r, v in values.items()}


def _container(container: Container, image: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": container.name, "image": image}
    resources = {}
    if container.requests:
        resources["requests"] = _resources(container.requests)
    if container.limits:
        resources["limits"] = _resources(container.limits)
    out["resources"] = resources
    if container.sidecar:
        out["restartPolicy"] = "Always"
    return out


def pod_template(
    template: Template, app: str, spec_zones: int, constraints: bool, dedicated: tuple[str, ...]
) -> dict[str, Any]:
    """The ``spec.template`` of workload ``app``: labels, containers and scheduling fields."""
    images = [*template.images, *[""] * 8]
    pod: dict[str, Any] = {
        "containers": [_container(c, images[i]) for i, c in enumerate(template.containers)],
    }
    if template.init_containers:
        offset = len(template.containers)
        pod["initContainers"] = [
            _container(c, images[offset + i]) for i, c in enumerate(template.init_containers)
        ]
    if template.overhead:
        pod["runtimeClassName"] = "kata"
        pod["overhead"] = _resources(template.overhead)
    tolerations, selector = template_constraints(template, dedicated)
    if tolerations:
        pod["tolerations"] = tolerations
    if selector:
        pod["nodeSelector"] = selector
    if template.priority_class:
        pod["priorityClassName"] = template.priority_class
    if template.host_network:
        pod["hostNetwork"] = True
    if constraints:
        pod.update(workload_constraints(template, app, spec_zones))
    return {"metadata": {"labels": {APP_LABEL: app}}, "spec": pod}


def _meta(name: str, namespace: str = "", owner: tuple[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if owner is not None:
        api = "apps/v1" if owner[0] in ("Deployment", "StatefulSet", "DaemonSet") else "batch/v1"
        meta["ownerReferences"] = [
            {
                "apiVersion": api,
                "kind": owner[0],
                "name": owner[1],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    return meta


_API = {
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "Job": "batch/v1",
    "CronJob": "batch/v1",
}


def _workload(
    kind: str,
    name: str,
    namespace: str,
    app: str,
    template: dict[str, Any],
    replicas: int,
    owner: tuple[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": selector(app), "template": template}
    if kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        spec["replicas"] = replicas
    if kind in ("Job", "CronJob"):
        spec = {"template": template}
    if kind == "CronJob":
        spec = {"schedule": "0 * * * *", "jobTemplate": {"spec": {"template": template}}}
    return {
        "apiVersion": _API[kind],
        "kind": kind,
        "metadata": _meta(name, namespace, owner),
        "spec": spec,
    }


def node_objects(cluster: SyntheticCluster) -> list[dict[str, Any]]:
    """The Node objects: labels, taints, capacity and allocatable."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": n.name, "labels": node_labels(n)},
            "spec": {"taints": pool_taints(n.pool)} if pool_taints(n.pool) else {},
            "status": {
                "capacity": _resources(n.capacity),
                "allocatable": _resources(n.allocatable),
                "addresses": [{"type": "InternalIP", "address": n.host_ip}],
            },
        }
        for n in cluster.nodes
    ]


def kube_objects(cluster: SyntheticCluster) -> dict[str, Any]:
    """The cluster's objects as one ``List`` (``kubectl get ... -o json`` shape)."""
    spec = cluster.spec
    dedicated = spec.dedicated_pools
    items: list[dict[str, Any]] = node_objects(cluster)
    seen: set[tuple[str, str, str]] = set()
    replicas: dict[tuple[str, str, str], int] = {}
    for pod in cluster.pods:
        ns = pod.template.namespace
        for kind, name in {
            (pod.owner_kind, pod.owner_name),
            (pod.workload_kind, pod.workload_name),
        }:
            if pod.deleted is None and pod.finished is None:
                replicas[(kind, ns, name)] = replicas.get((kind, ns, name), 0) + 1
    workloads: list[tuple[str, str, str, int]] = []
    for pod in cluster.pods:
        ns, app = pod.template.namespace, pod.workload_name
        template = pod_template(pod.template, app, spec.zones, spec.pod_constraints, dedicated)
        chain: list[tuple[str, str, tuple[str, str] | None]] = [
            (pod.workload_kind, pod.workload_name, None)
        ]
        if (pod.owner_kind, pod.owner_name) != (pod.workload_kind, pod.workload_name):
            chain.append((pod.owner_kind, pod.owner_name, (pod.workload_kind, pod.workload_name)))
        for kind, name, owner in chain:
            if (kind, ns, name) in seen or kind not in _API:
                continue
            seen.add((kind, ns, name))
            count = replicas.get((kind, ns, name), 0)
            items.append(_workload(kind, name, ns, app, template, count, owner))
            workloads.append((kind, ns, name, count))
    kept = cluster.snapshot.objects.get("PodDisruptionBudget")
    if kept:  # the budgets the generator's preemption honoured, as its snapshot keeps them
        items += [
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": b["name"], "namespace": b["namespace"]},
                "spec": b["spec"],
            }
            for b in kept
        ]
    else:
        items += pdb_objects(workloads)
    items += priority_class_objects()
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}
