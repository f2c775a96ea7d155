"""Build the snapshot's ``pods`` table from the profile's kube-state-metrics window queries.

Pods are keyed by ``uid`` (names are reused by StatefulSets and Job retries). Effective requests
follow the Kubernetes rule through ``analyzer.core.resources`` from per-container data: app containers,
init containers and overhead. kube-state-metrics cannot tell a sidecar (an init container with
``restartPolicy: Always``) from a regular init container unless ``kube_pod_init_container_info``
carries ``restart_policy``; without it every init container counts as a regular one (a pod with
sidecars then gets max(app, init) instead of app + sidecars). Sidecars are assumed to be declared
before regular init containers, since KSM does not export the declaration order either.
Containers with neither requests nor limits are only visible through ``kube_pod_container_info``;
without it they are missing from the non-zero requests (100m / 200Mi each).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analyzer.collect.common import exported_names, label, resource_names, to_units, window_values
from analyzer.core.resources import Container, PodSpecResources, pod_limits, pod_requests, qos_class
from analyzer.core.snapshot_schema import (
    LIMITS,
    NONZERO_REQUESTS,
    POD_COLUMNS,
    REQUESTS,
    resource_column,
)
from analyzer.prom.fetch import QueryResult
from analyzer.scheduling.plugins.imagelocality import pod_images_json

# kube-controller-manager names a Deployment's ReplicaSets <deployment>-<pod-template-hash>.
_RS_HASH = re.compile(r"^(?P<name>.+)-[a-z0-9]{5,10}$")
# The CronJob controller names Jobs <cronjob>-<scheduled time in minutes since the epoch>.
_CRONJOB_SUFFIX = re.compile(r"^(?P<name>.+)-\d{8,}$")
# Built-in PriorityClasses have fixed values and a pod without a class gets 0 (with no global
# default class); values of other classes are not exported by kube-state-metrics (NA).
BUILTIN_PRIORITIES = {
    "": 0,
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}


@dataclass
class _Pod:
    uid: str
    namespace: str = ""
    name: str = ""
    node: str | None = None
    created_by_kind: str = ""
    created_by_name: str = ""
    priority_class: str = ""
    times: dict[str, float] = field(default_factory=dict)
    phase: tuple[float, str] | None = None
    qos: str = ""
    owner: tuple[str, str] | None = None
    containers: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    init_containers: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    sidecars: set[str] = field(default_factory=set)
    overhead: dict[str, int] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    images: dict[str, str] = field(default_factory=dict)  # container -> spec image (ImageLocality)


_TIME_QUERIES = {
    "pod_first_seen": "first_seen",
    "pod_last_seen": "last_seen",
    "pod_created": "created",
    "pod_scheduled_time": "scheduled",
    "pod_start_time": "started",
    "pod_completion_time": "completion",
    "pod_deletion_time": "deletion",
}
_CONTAINER_QUERIES = {
    "pod_container_requests": ("containers", "requests"),
    "pod_container_limits": ("containers", "limits"),
    "pod_init_container_requests": ("init_containers", "requests"),
    "pod_init_container_limits": ("init_containers", "limits"),
}


def _collect_pods(results: dict[str, QueryResult]) -> dict[str, _Pod]:
    pods: dict[str, _Pod] = {}
    infos = window_values(results.get("pod_info"))
    exported = exported_names(infos)
    for item in infos:
        uid = item.labels.get("uid", "")
        if not uid:
            continue
        pod = pods.setdefault(uid, _Pod(uid))
        node = label(item.labels, "node", exported)
        # A pending pod's series lacks node; the scheduled series (with node) wins.
        if pod.name and not node:
            continue
        pod.namespace = label(item.labels, "namespace", exported)
        pod.name = label(item.labels, "pod", exported)
        pod.node = node or None
        pod.created_by_kind = item.labels.get("created_by_kind", "")
        pod.created_by_name = item.labels.get("created_by_name", "")
        pod.priority_class = item.labels.get("priority_class", "")
    for query, key in _TIME_QUERIES.items():
        for item in window_values(results.get(query)):
            pod_or_none = pods.get(item.labels.get("uid", ""))
            if pod_or_none is not None and np.isfinite(item.value) and item.value > 0:
                pod_or_none.times[key] = item.value
    return pods


def _add_details(
    pods: dict[str, _Pod], results: dict[str, QueryResult], extra: Iterable[str]
) -> None:
    names = resource_names(extra)
    for item in window_values(results.get("pod_phase")):
        pod = pods.get(item.labels.get("uid", ""))
        if pod is not None and (pod.phase is None or item.time >= pod.phase[0]):
            pod.phase = (item.time, item.labels.get("phase", ""))
    for item in window_values(results.get("pod_qos_class")):
        pod = pods.get(item.labels.get("uid", ""))
        if pod is not None:
            pod.qos = item.labels.get("qos_class", "")
    for item in window_values(results.get("pod_owner")):
        pod = pods.get(item.labels.get("uid", ""))
        kind = item.labels.get("owner_kind", "")
        controller = item.labels.get("owner_is_controller") == "true"
        if pod is not None and kind and kind != "<none>" and (controller or pod.owner is None):
            pod.owner = (kind, item.labels.get("owner_name", ""))
    for query, (group, pick) in _CONTAINER_QUERIES.items():
        items = window_values(results.get(query))
        exported = exported_names(items)
        for item in items:
            pod = pods.get(item.labels.get("uid", ""))
            if pod is None or not np.isfinite(item.value):
                continue
            sanitised = item.labels.get("resource", "")
            resource = names.get(sanitised, sanitised)
            name = label(item.labels, "container", exported)
            container = getattr(pod, group).setdefault(name, {})
            container.setdefault(pick, {})[resource] = to_units(resource, item.value)
    for query, group in (
        ("pod_container_info", "containers"),
        ("pod_init_container_info", "init_containers"),
    ):
        items = window_values(results.get(query))
        exported = exported_names(items)
        for item in items:
            pod = pods.get(item.labels.get("uid", ""))
            if pod is None:
                continue
            name = label(item.labels, "container", exported)
            getattr(pod, group).setdefault(name, {})
            image = item.labels.get("image_spec") or item.labels.get("image") or ""
            if image and (name not in pod.images or image < pod.images[name]):
                pod.images[name] = image  # several series (an image changed): the first by name
            if item.labels.get("restart_policy") == "Always":
                pod.sidecars.add(name)
    if not window_values(results.get("pod_container_info")):
        _cadvisor_containers(pods, results)
    for item in window_values(results.get("pod_labels")):
        pod = pods.get(item.labels.get("uid", ""))
        if pod is not None:
            pod.labels.update(
                {k[6:]: v for k, v in item.labels.items() if k.startswith("label_") and v}
            )
    for query, resource in (("pod_overhead_cpu", "cpu"), ("pod_overhead_memory", "memory")):
        for item in window_values(results.get(query)):
            pod = pods.get(item.labels.get("uid", ""))
            if pod is not None and np.isfinite(item.value):
                pod.overhead[resource] = to_units(resource, item.value)


def cadvisor_containers(results: dict[str, QueryResult]) -> list[dict[str, str]]:
    """(namespace, pod, container) label sets of the app containers cAdvisor reports.

    The raw samples of ``pod_memory_working_set`` (``max by (namespace, pod, container)``, app
    containers only) carry exactly these, so the collector takes them from its table; a profile
    with a ``pod_cadvisor_containers`` query (the former window query) still works.
    """
    if (result := results.get("pod_cadvisor_containers")) is not None:
        return [item.labels for item in window_values(result)]
    for name in ("pod_memory_working_set", "pod_cpu_usage"):
        result = results.get(name)
        table = result.table if result is not None else None
        if table is not None and name in table.dedupe_keys:
            return table.dedupe_keys[name]
    return []


def _cadvisor_containers(pods: dict[str, _Pod], results: dict[str, QueryResult]) -> None:
    """Add app containers seen by cAdvisor (by namespace/pod name) that KSM shows no resources for.

    Without ``kube_pod_container_info`` a container with neither requests nor limits is invisible
    to KSM, yet it counts 100m / 200Mi in the non-zero requests. A name reused by several uids
    gives each of them the containers (same controller, same template, in practice).
    """
    by_name: dict[tuple[str, str], list[_Pod]] = {}
    for pod in pods.values():
        by_name.setdefault((pod.namespace, pod.name), []).append(pod)
    for labels in cadvisor_containers(results):
        key = (label(labels, "namespace"), label(labels, "pod"))
        name = labels.get("container", "")
        for pod in by_name.get(key, []):
            if name and name not in pod.init_containers:
                pod.containers.setdefault(name, {})


def _spec(pod: _Pod) -> PodSpecResources:
    def build(
        entries: dict[str, dict[str, dict[str, int]]], sidecars: set[str]
    ) -> tuple[Container, ...]:
        ordered = sorted(entries, key=lambda n: (n not in sidecars, n))
        return tuple(
            Container(
                name=name,
                requests=entries[name].get("requests", {}),
                limits=entries[name].get("limits", {}),
                sidecar=name in sidecars,
            )
            for name in ordered
        )

    app = {k: v for k, v in pod.containers.items() if k not in pod.init_containers}
    return PodSpecResources(
        containers=build(app, set()),
        init_containers=build(pod.init_containers, pod.sidecars),
        overhead=pod.overhead,
    )


def workload_of(
    owner_kind: str, owner_name: str, owners: dict[tuple[str, str], tuple[str, str]]
) -> tuple[str, str]:
    """Resolve ReplicaSet → Deployment and Job → CronJob: owner metrics first, then naming conventions.

    ``owners`` maps (kind, name) of a ReplicaSet or Job in the pod's namespace to its owner.
    """
    if (owner_kind, owner_name) in owners:
        return owners[(owner_kind, owner_name)]
    if owner_kind == "ReplicaSet":
        match = _RS_HASH.match(owner_name)
        return ("Deployment", match.group("name")) if match else (owner_kind, owner_name)
    if owner_kind == "Job":
        match = _CRONJOB_SUFFIX.match(owner_name)
        return ("CronJob", match.group("name")) if match else (owner_kind, owner_name)
    return owner_kind, owner_name


def _finished(times: dict[str, float], end: float, step: int) -> float | None:
    """Completion, else deletion, else the last sample when the pod vanished before the end."""
    for key in ("completion", "deletion"):
        if key in times:
            return times[key]
    last = times.get("last_seen")
    if last is not None and last < end - step:
        return last
    return None


def empty_pods() -> pd.DataFrame:
    """A pods table without rows, with its typed columns and cpu/memory requests and limits."""
    columns = {name: pd.Series(dtype=dtype) for name, dtype in POD_COLUMNS.items()}
    for kind in (REQUESTS, NONZERO_REQUESTS, LIMITS):
        for resource in ("cpu", "memory"):
            columns[resource_column(kind, resource)] = pd.Series(dtype="int64")
    return pd.DataFrame(columns)


def build_pods(
    results: dict[str, QueryResult],
    end: float,
    step: int,
    extra_resources: Iterable[str] = (),
    priorities: Mapping[str, int] | None = None,
) -> pd.DataFrame:
    """The ``pods`` table (schema in ``analyzer.core.snapshot``) from the profile's results.

    ``priorities`` maps PriorityClass names to values (KSM does not export them; built-in classes
    and "no class" = 0 are known).
    """
    known_priorities = {**BUILTIN_PRIORITIES, **(priorities or {})}
    pods = _collect_pods(results)
    _add_details(pods, results, extra_resources)
    owners: dict[str, dict[tuple[str, str], tuple[str, str]]] = {}
    for query, kind, key in (
        ("replicaset_owner", "ReplicaSet", "replicaset"),
        ("job_owner", "Job", "job_name"),
    ):
        for item in window_values(results.get(query)):
            namespace = owners.setdefault(label(item.labels, "namespace"), {})
            owner = (item.labels.get("owner_kind", ""), item.labels.get("owner_name", ""))
            if owner[0] and owner[0] != "<none>":
                namespace[(kind, item.labels.get(key, ""))] = owner
    rows = []
    for pod in pods.values():
        spec = _spec(pod)
        owner_kind, owner_name = pod.owner or (pod.created_by_kind, pod.created_by_name)
        workload = workload_of(owner_kind, owner_name, owners.get(pod.namespace, {}))
        all_containers = [*spec.containers, *spec.init_containers]
        row: dict[str, object] = {
            "uid": pod.uid,
            "namespace": pod.namespace,
            "name": pod.name,
            "node": pod.node,
            "owner_kind": owner_kind,
            "owner_name": owner_name,
            "workload_kind": workload[0],
            "workload_name": workload[1],
            "priority_class": pod.priority_class,
            "priority": known_priorities.get(pod.priority_class),
            "qos_class": pod.qos or qos_class(all_containers),
            "phase": pod.phase[1] if pod.phase else None,
            "labels": json.dumps(pod.labels, sort_keys=True),
            "container_images": pod_images_json(
                [pod.images.get(c.name, "") for c in spec.containers],
                [pod.images.get(c.name, "") for c in spec.init_containers],
            ),
        }
        finished = _finished(pod.times, end, step)
        for column, key in (
            ("created", "created"),
            ("scheduled", "scheduled"),
            ("started", "started"),
            ("first_seen", "first_seen"),
            ("last_seen", "last_seen"),
        ):
            row[column] = pod.times.get(key)
        row["finished"] = finished
        for resource, value in pod_requests(spec).items():
            row[resource_column(REQUESTS, resource)] = value
        for resource, value in pod_requests(spec, non_zero=True).items():
            row[resource_column(NONZERO_REQUESTS, resource)] = value
        for resource, value in pod_limits(spec).items():
            row[resource_column(LIMITS, resource)] = value
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        # No pod (kube_pod_info empty, e.g. a partial answer): still the table's columns, so
        # that the caller can say what is missing instead of the schema check failing.
        return empty_pods()
    for column in ("created", "scheduled", "started", "finished", "first_seen", "last_seen"):
        frame[column] = pd.to_datetime(frame[column].astype("float64"), unit="s", utc=True)
    for kind in (REQUESTS, LIMITS):
        for resource in ("cpu", "memory"):
            column = resource_column(kind, resource)
            if column not in frame.columns:
                frame[column] = 0
    resource_cols = [c for c in frame.columns if ":" in c]
    frame[resource_cols] = frame[resource_cols].fillna(0).astype("int64")
    return frame.sort_values("uid", kind="stable").reset_index(drop=True)
