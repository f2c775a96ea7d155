"""kube-state-metrics v2 series of a synthetic cluster (research/prometheus.md §1).

A sample at grid time ``t`` shows the object's state at ``t``. Pod series exist while the pod
object does (``created``..``deleted``; Job pods linger an hour after they finish). Series with
the ``node`` label (``kube_pod_info``, container requests/limits) lack it while the pod is
pending, so scheduling starts a new series, as in Prometheus. ``resource`` is sanitised
(``nvidia_com_gpu``), ``unit`` is core/byte/integer, cpu is in cores.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from analyzer.core.quantity import sanitize_resource_name
from analyzer.core.resources import Container, qos_class
from analyzer.sources.catalog import (
    CONTAINER_RUNTIME,
    KERNEL_VERSION,
    OS_IMAGE,
    pool_taints,
    template_constraints,
)
from analyzer.sources.lifecycle import Pod
from analyzer.sources.node_events import NodeEvent, node_events
from analyzer.sources.omtext import SeriesWriter, cores, series_head
from analyzer.sources.spec import Grid
from analyzer.sources.synthetic import SyntheticCluster, node_labels, open_nodes

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
QOS_CLASSES = ("BestEffort", "Burstable", "Guaranteed")


def unit(resource: str) -> str:
    """KSM's ``unit`` label for a resource (``pkg/constant/resource_unit.go``)."""
    if resource == "cpu":
        return "core"
    if resource in ("memory", "storage", "ephemeral-storage") or resource.startswith("hugepages-"):
        return "byte"
    return "integer"


def value_text(resource: str, amount: int) -> str:
    """A quantity as KSM exports it: cpu in cores, everything else in base units."""
    return cores(amount) if resource == "cpu" else str(amount)


def pod_ip(cluster: SyntheticCluster, index: int) -> str:
    """The pod's IP: the node's IP for hostNetwork pods, else one from the node's pod CIDR."""
    pod = cluster.pods[index]
    if pod.node < 0:
        return ""
    if pod.template.host_network:
        return cluster.nodes[pod.node].host_ip
    return f"10.{64 + pod.node // 256}.{pod.node % 256}.{index % 250 + 2}"


@dataclass(frozen=True)
class KsmTarget:
    """Target labels the scrape adds to every KSM series (unless the series has them)."""

    labels: Mapping[str, str]
    honor: bool = True  # honor_labels: the exporter's own labels win over the target's

    def head(self, name: str, own: Mapping[str, str]) -> str:
        """The series head: the metric's own labels merged with the target's."""
        if self.honor:
            merged = dict(own)
            for key, value in self.labels.items():
                merged.setdefault(key, value)
        else:  # Prometheus renames the exporter's clashing labels to exported_<name>
            merged = {
                (f"exported_{k}" if k in self.labels and v != "" else k): v for k, v in own.items()
            }
            merged |= self.labels
        return series_head(name, merged)


def write_nodes(
    out: SeriesWriter, cluster: SyntheticCluster, target: KsmTarget, opt_in: tuple[bool, bool]
) -> None:
    """``kube_node_info``, ``kube_node_status_allocatable``/``_capacity``; labels/annotations
    only when ``opt_in`` asks (they are off by default since KSM 2.10)."""
    with_labels, with_annotations = opt_in
    last = cluster.grid.size - 1
    events: dict[int, list[NodeEvent]] = {}
    for event in node_events(cluster.spec, open_nodes(cluster.nodes), cluster.grid):
        events.setdefault(event.node, []).append(event)
    for i, node in enumerate(cluster.nodes):
        info = {
            "node": node.name,
            "container_runtime_version": CONTAINER_RUNTIME,
            "internal_ip": node.host_ip,
            "kernel_version": KERNEL_VERSION,
            "kubelet_version": cluster.spec.kubelet_version,
            "kubeproxy_version": "deprecated",
            "os_image": OS_IMAGE,
            "pod_cidr": f"10.{64 + i // 256}.{i % 256}.0/24",
            "provider_id": f"gce://analyzer-demo/europe-west1-b/{node.name}",
            "system_uuid": _hex(node.name, 32),
        }
        out.const(target.head("kube_node_info", info), "1", 0, last)
        for metric, values in (
            ("kube_node_status_allocatable", node.allocatable),
            ("kube_node_status_capacity", node.capacity),
        ):
            for resource, amount in values.items():
                own = {
                    "node": node.name,
                    "resource": sanitize_resource_name(resource),
                    "unit": unit(resource),
                }
                out.const(target.head(metric, own), value_text(resource, amount), 0, last)
        for taint in pool_taints(node.pool):
            own = {"node": node.name} | taint  # key, value, effect
            out.const(target.head("kube_node_spec_taint", own), "1", 0, last)
        if cluster.spec.node_events:
            _node_event_series(out, target, node.name, events.get(i, []), last)
        if with_labels:
            own = {"node": node.name} | {
                "label_" + sanitize_resource_name(k): v for k, v in node_labels(node).items()
            }
            out.const(target.head("kube_node_labels", own), "1", 0, last)
        if with_annotations:
            own = {"node": node.name} | {
                "annotation_" + sanitize_resource_name(k): v
                for k, v in node.pool.annotations.items()
            }
            out.const(target.head("kube_node_annotations", own), "1", 0, last)


def _node_event_series(
    out: SeriesWriter, target: KsmTarget, name: str, events: list[NodeEvent], last: int
) -> None:
    """A node's event taints, and its spec.unschedulable and Ready condition at every point (KSM
    exports both for every node)."""
    cordoned = np.zeros(last + 1, dtype=np.int64)
    ready = np.ones(last + 1, dtype=np.int64)
    for e in events:
        if e.kind == "taint":
            own = {"node": name, "key": e.key, "value": e.value, "effect": e.effect}
            out.const(target.head("kube_node_spec_taint", own), "1", e.lo, e.hi)
        elif e.kind == "cordon":
            cordoned[e.lo : e.hi + 1] = 1
        else:
            ready[e.lo : e.hi + 1] = 0
    out.runs(target.head("kube_node_spec_unschedulable", {"node": name}), cordoned, 0)
    for status, values in (("true", ready), ("false", 1 - ready), ("unknown", 0 * ready)):
        own = {"node": name, "condition": "Ready", "status": status}
        out.runs(target.head("kube_node_status_condition", own), values, 0)


def container_id(uid: str, name: str) -> str:
    """The container's runtime id (64 hex digits), derived from the pod uid and its name."""
    return _hex(f"{uid}/{name}", 64)


def container_image(pod: Pod, index: int, *, init: bool) -> str:
    """The image of app (or init) container ``index``: the template lists app images first."""
    images = pod.template.images
    k = index + (len(pod.spec.containers) if init else 0)
    return images[k] if k < len(images) else "registry.example.com/app:latest"


def _hex(text: str, length: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:length]


@dataclass(frozen=True)
class _Window:
    """Grid indices of a pod object's life: first, scheduled, started, terminal, last."""

    first: int
    scheduled: int
    started: int
    terminal: int
    last: int


def pod_window(pod: Pod, grid: Grid) -> _Window:
    """Where the pod's KSM series live on the grid (``last < first``: never observed)."""
    first = grid.first_at_or_after(pod.created)
    last = grid.last_at_or_before(pod.deleted) if pod.deleted is not None else grid.size - 1
    after = last + 1

    def at(t: int | None) -> int:
        return after if t is None else min(max(grid.first_at_or_after(t), first), after)

    terminal = at(pod.finished) if pod.phase in ("Succeeded", "Failed") else after
    return _Window(first, at(pod.scheduled), at(pod.started), terminal, last)


def _resource_series(
    out: SeriesWriter,
    target: KsmTarget,
    base: dict[str, str],
    containers: tuple[Container, ...],
    spans: tuple[tuple[str, int, int], ...],
    init: bool,
) -> None:
    prefix = "kube_pod_init_container_resource_" if init else "kube_pod_container_resource_"
    for kind in ("requests", "limits"):
        for container in containers:
            for resource, amount in getattr(container, kind).items():
                for node, lo, hi in spans:
                    own = base | {
                        "container": container.name,
                        "node": node,
                        "resource": sanitize_resource_name(resource),
                        "unit": unit(resource),
                    }
                    out.const(target.head(prefix + kind, own), value_text(resource, amount), lo, hi)


def _constraint_series(
    out: SeriesWriter,
    target: KsmTarget,
    base: Mapping[str, str],
    pod: Pod,
    w: _Window,
    dedicated: tuple[str, ...] = (),
) -> None:
    """``kube_pod_tolerations`` (one series per toleration; KSM omits unset fields) and
    ``kube_pod_nodeselectors`` (one series, ``nodeselector_<sanitised label>``)."""
    tolerations, selector = template_constraints(pod.template, dedicated)
    for toleration in tolerations:
        own = dict(base) | {k: v for k, v in toleration.items() if v}
        out.const(target.head("kube_pod_tolerations", own), "1", w.first, w.last)
    if selector:
        own = dict(base) | {
            "nodeselector_" + sanitize_resource_name(k): v for k, v in selector.items()
        }
        out.const(target.head("kube_pod_nodeselectors", own), "1", w.first, w.last)


def write_pod(out: SeriesWriter, cluster: SyntheticCluster, index: int, target: KsmTarget) -> None:
    """Every KSM series of one pod."""
    pod = cluster.pods[index]
    w = pod_window(pod, cluster.grid)
    if w.last < w.first:
        return
    base = {"namespace": pod.template.namespace, "pod": pod.name, "uid": pod.uid}
    node = cluster.nodes[pod.node] if pod.node >= 0 else None
    spans = (("", w.first, w.scheduled - 1), (node.name if node else "", w.scheduled, w.last))
    info = base | {
        "created_by_kind": pod.owner_kind,
        "created_by_name": pod.owner_name,
        "host_network": "true" if pod.template.host_network else "false",
        "priority_class": pod.template.priority_class,
    }
    out.const(target.head("kube_pod_info", info), "1", w.first, w.scheduled - 1)
    if node is not None:
        placed = info | {
            "host_ip": node.host_ip,
            "node": node.name,
            "pod_ip": pod_ip(cluster, index),
        }
        out.const(target.head("kube_pod_info", placed), "1", w.scheduled, w.last)
    owner = base | {
        "owner_is_controller": "true",
        "owner_kind": pod.owner_kind,
        "owner_name": pod.owner_name,
    }
    out.const(target.head("kube_pod_owner", owner), "1", w.first, w.last)
    _constraint_series(out, target, base, pod, w, cluster.spec.dedicated_pools)
    out.const(target.head("kube_pod_created", base), str(pod.created), w.first, w.last)
    if pod.scheduled is not None:
        head = target.head("kube_pod_status_scheduled_time", base)
        out.const(head, str(pod.scheduled), w.scheduled, w.last)
    if pod.started is not None:
        out.const(target.head("kube_pod_start_time", base), str(pod.started), w.started, w.last)
    if pod.finished is not None and w.terminal <= w.last:
        head = target.head("kube_pod_completion_time", base)
        out.const(head, str(pod.finished), w.terminal, w.last)
    length = w.last - w.first + 1
    phase_at = np.full(length, PHASES.index("Pending"))
    phase_at[w.started - w.first :] = PHASES.index("Running")
    if w.terminal <= w.last:
        phase_at[w.terminal - w.first :] = PHASES.index(pod.phase)
    for k, phase in enumerate(PHASES):
        head = target.head("kube_pod_status_phase", base | {"phase": phase})
        out.runs(head, (phase_at == k).astype(np.int64), w.first)
    qos = qos_class(pod.spec.containers + pod.spec.init_containers)
    for name in QOS_CLASSES:
        head = target.head("kube_pod_status_qos_class", base | {"qos_class": name})
        out.const(head, "1" if name == qos else "0", w.first, w.last)
    _resource_series(out, target, base, pod.spec.containers, spans, init=False)
    _resource_series(out, target, base, pod.spec.init_containers, spans, init=True)
    # Container statuses exist once the kubelet runs the pod: one series per container, also for
    # containers with no requests or limits (a collector needs them for the non-zero defaults).
    for init, containers in ((False, pod.spec.containers), (True, pod.spec.init_containers)):
        metric = "kube_pod_init_container_info" if init else "kube_pod_container_info"
        for k, container in enumerate(containers):
            image = container_image(pod, k, init=init)
            cid = container_id(pod.uid, container.name)
            own = base | {
                "container": container.name,
                "container_id": f"containerd://{cid}",
                "image": image,
                "image_id": f"{image.split(':')[0]}@sha256:{_hex(image, 64)}",
                "image_spec": image,
            }
            out.const(target.head(metric, own), "1", w.started, w.last)
    overhead = pod.spec.overhead
    if "cpu" in overhead:
        head = target.head("kube_pod_overhead_cpu_cores", base)
        out.const(head, cores(overhead["cpu"]), w.first, w.last)
    if "memory" in overhead:
        head = target.head("kube_pod_overhead_memory_bytes", base)
        out.const(head, str(overhead["memory"]), w.first, w.last)
