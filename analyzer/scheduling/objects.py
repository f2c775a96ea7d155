"""Kubernetes Node and Pod objects (as ``kubectl get -o yaml`` prints them) → scheduler inputs.

Missing vs explicit-zero requests matter (kube-scheduler's non-zero rule defaults only *missing*
keys), so container resources are kept as given; ``analyzer.core.resources`` applies the rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from analyzer.core.durations import parse_time
from analyzer.core.errors import InputError
from analyzer.core.quantity import resource_value
from analyzer.core.resources import Container, PodSpecResources, pod_limits, pod_requests, qos_class
from analyzer.core.structured import describe_value, plain, preview
from analyzer.scheduling.affinity_types import PodAffinity, parse_pod_affinity
from analyzer.scheduling.constraint_types import (
    NO_CONSTRAINTS,
    PodConstraints,
    Taint,
    parse_pod_constraints,
    parse_taints,
)
from analyzer.scheduling.fields import listing, mapping, optional_integer, string_map, text
from analyzer.scheduling.host_ports import HostPort, pod_host_ports
from analyzer.scheduling.plugins.imagelocality import container_images, image_lists
from analyzer.scheduling.plugins.loadaware.args import koord_priority_class
from analyzer.scheduling.priority_class import PREEMPTION_POLICIES
from analyzer.scheduling.spread_types import (
    OwnerRef,
    SpreadConstraint,
    controller_of,
    parse_spread_constraints,
)
from analyzer.scheduling.state import PodDemand, make_demand

POD_LEVEL_RESOURCES = ("cpu", "memory")  # IsSupportedPodLevelResource


@dataclass(frozen=True)
class NodeObject:
    """What the scheduler reads of a Node."""

    name: str
    allocatable: Mapping[str, int]
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()  # spec.taints
    images: Mapping[str, int] = field(default_factory=dict)  # status.images: name -> sizeBytes


@dataclass(frozen=True)
class PodObject:
    """What the scheduler reads of a Pod."""

    name: str
    namespace: str
    spec: PodSpecResources
    node_name: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    priority: int | None = None
    owner_kinds: tuple[str, ...] = ()
    phase: str = ""
    scheduler_name: str = "default-scheduler"
    scheduled_time: float | None = None  # PodScheduled=True lastTransitionTime (unix s)
    initialized_time: float | None = None  # Initialized=True lastTransitionTime
    pod_requests: Mapping[str, int] = field(default_factory=dict)  # spec.resources (cpu, memory)
    pod_limits: Mapping[str, int] = field(default_factory=dict)
    constraints: PodConstraints = NO_CONSTRAINTS  # tolerations, nodeSelector, required affinity
    spread: tuple[SpreadConstraint, ...] = ()  # spec.topologySpreadConstraints
    controller: OwnerRef | None = None  # ownerReference with controller: true
    terminating: bool = False  # metadata.deletionTimestamp is set
    uid: str = ""
    # preemption inputs (analyzer.scheduling.plugins.defaultpreemption)
    priority_class: str = ""  # spec.priorityClassName
    preemption_policy: str = (
        ""  # spec.preemptionPolicy ("" = the class's, else PreemptLowerPriority)
    )
    start_time_ns: int | None = None  # status.startTime, integer unix nanoseconds
    affinity: PodAffinity | None = None  # spec.affinity podAffinity / podAntiAffinity
    images: tuple[str, ...] = ()  # spec.containers[].image
    init_images: tuple[str, ...] = ()  # spec.initContainers[].image
    host_ports: tuple[HostPort, ...] = ()  # containers' and sidecars' host ports (NodePorts)
    not_ready: bool = False  # a Ready condition with status False
    # status.nominatedNodeName: the node an earlier preemption nominated ("" = none)
    nominated_node_name: str = ""
    # a DisruptionTarget condition True with reason PreemptionByScheduler (a preemption victim)
    preempted: bool = False

    @property
    def terminated(self) -> bool:
        """Succeeded or Failed pods hold no resources."""
        return self.phase in ("Succeeded", "Failed")

    @property
    def qos(self) -> str:
        """Kubernetes QoS class (app and init containers)."""
        return qos_class((*self.spec.containers, *self.spec.init_containers))

    def demand(self, resources: Sequence[str]) -> PodDemand:
        """The pod's demand over the state's resource order.

        Pod-level ``spec.resources`` (PodLevelResources) replaces the container aggregate for cpu
        and memory, overhead still added; where it sets a resource, no 100m/200Mi default applies.
        """
        requests = pod_requests(self.spec)
        nonzero = pod_requests(self.spec, non_zero=True)
        limits = pod_limits(self.spec)
        overhead = self.spec.overhead
        for name, value in self.pod_requests.items():
            requests[name] = value + overhead.get(name, 0)
            nonzero[name] = value + overhead.get(name, 0)
        for name, value in self.pod_limits.items():
            limits[name] = value + overhead.get(name, 0)
        return make_demand(
            resources,
            requests,
            nonzero,
            limits,
            name=self.name,
            namespace=self.namespace,
            daemonset="DaemonSet" in self.owner_kinds,
            priority=self.priority,
            koord_class=koord_priority_class(self.labels, self.priority, self.qos),
            qos=self.qos,
            scheduler_name=self.scheduler_name,
            annotations=dict(self.annotations),
            constraints=self.constraints,
            labels=dict(self.labels),
            spread=self.spread,
            controller=self.controller,
            terminating=self.terminating,
            uid=self.uid,
            affinity=self.affinity,
            images=self.images,
            init_images=self.init_images,
            host_ports=self.host_ports,
        )


# kube-scheduler adds quantities in int64; a single one past 2^53 units (8 PiB, 9e12 cores)
# belongs to no real node or pod, and sums of such would overflow the scheduler's arithmetic
MAX_QUANTITY = 2**53


def resource_list(raw: Any, where: str) -> dict[str, int]:
    """A ResourceList (``{cpu: 500m, memory: 1Gi}``) in analyzer units, each at most
    ``MAX_QUANTITY``."""
    out = {}
    for key, value in mapping(raw, where).items():
        field = f"{where}.{plain(key)}"
        amount = resource_value(str(key), value, field=field)
        if amount > MAX_QUANTITY:
            raise InputError(
                f"{field}: {preview(value)} is more than any node or pod holds "
                f"(at most {MAX_QUANTITY:,} {'millicores' if key == 'cpu' else 'units'})"
            )
        out[str(key)] = amount
    return out


def parse_node(obj: Any, where: str) -> NodeObject:
    """Parse a v1 Node (``metadata.name``, ``status.allocatable``)."""
    obj = mapping(obj, where)
    meta = mapping(obj.get("metadata"), f"{where}.metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}.metadata.name: every node needs a name")
    status = mapping(obj.get("status"), f"{where}.status")
    # the API server's defaulting (``SetDefaults_NodeStatus``): no allocatable, its capacity
    field = "allocatable" if status.get("allocatable") is not None else "capacity"
    if status.get(field) is None:
        raise InputError(
            f"{where}.status.allocatable: node {name} has no allocatable resources (nor a capacity)"
        )
    return NodeObject(
        name=name,
        allocatable=resource_list(status.get(field), f"{where}.status.{field}"),
        labels=string_map(meta.get("labels"), f"{where}.metadata.labels"),
        annotations=string_map(meta.get("annotations"), f"{where}.metadata.annotations"),
        taints=parse_taints(
            mapping(obj.get("spec"), f"{where}.spec").get("taints"), f"{where}.spec.taints"
        ),
        images=image_lists(status.get("images"), f"{where}.status.images"),
    )


def _containers(raw: Any, where: str, init: bool) -> tuple[Container, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError(f"{where}: expected a list of containers")
    out = []
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        item = mapping(item, at)
        resources = mapping(item.get("resources"), f"{at}.resources")
        requests = resource_list(resources.get("requests"), f"{at}.resources.requests")
        limits = resource_list(resources.get("limits"), f"{at}.resources.limits")
        out.append(
            Container(
                name=text(item.get("name", f"c{i}"), f"{at}.name"),
                # the API server's defaulting (``SetDefaults_Pod``): a resource with a limit and
                # no request is requested at its limit, as every pod a cluster holds
                requests={**limits, **requests},
                limits=limits,
                sidecar=init and item.get("restartPolicy") == "Always",
            )
        )
    return tuple(out)


def _not_ready(conditions: Any) -> bool:
    """Whether the pod's ``Ready`` condition has status False (the conditions are a list of
    mappings where ``_condition_time`` read them)."""
    for cond in conditions if isinstance(conditions, list) else []:
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return cond.get("status") == "False"
    return False


def _preempted(conditions: Any) -> bool:
    """Whether the pod's ``DisruptionTarget`` condition says the scheduler preempted it
    (upstream's ``podTerminatingByPreemption``: the first such condition decides)."""
    for cond in conditions if isinstance(conditions, list) else []:
        if isinstance(cond, Mapping) and cond.get("type") == "DisruptionTarget":
            return cond.get("status") == "True" and cond.get("reason") == "PreemptionByScheduler"
    return False


def _condition_time(conditions: Any, kind: str, where: str) -> float | None:
    for i, cond in enumerate(conditions or []):
        cond = mapping(cond, f"{where}[{i}]")
        if cond.get("type") == kind and str(cond.get("status")) == "True":
            stamp = cond.get("lastTransitionTime")
            if stamp:
                return parse_time(str(stamp), field=f"{where}[{i}].lastTransitionTime").timestamp()
    return None


def parse_pod(obj: Any, where: str) -> PodObject:
    """Parse a v1 Pod: containers, init containers (sidecars), overhead, priority, owners, conditions."""
    obj = mapping(obj, where)
    meta = mapping(obj.get("metadata"), f"{where}.metadata")
    spec = mapping(obj.get("spec"), f"{where}.spec")
    status = mapping(obj.get("status"), f"{where}.status")
    priority = optional_integer(spec.get("priority"), f"{where}.spec.priority")
    namespace = text(meta.get("namespace"), f"{where}.metadata.namespace") or "default"
    owners = tuple(
        text(
            mapping(o, f"{where}.metadata.ownerReferences[{i}]").get("kind"),
            f"{where}.metadata.ownerReferences[{i}].kind",
        )
        for i, o in enumerate(
            listing(meta.get("ownerReferences"), f"{where}.metadata.ownerReferences")
        )
    )
    conditions = status.get("conditions")
    pod_level = mapping(spec.get("resources"), f"{where}.spec.resources")
    level_requests = resource_list(pod_level.get("requests"), f"{where}.spec.resources.requests")
    level_limits = resource_list(pod_level.get("limits"), f"{where}.spec.resources.limits")
    return PodObject(
        name=text(meta.get("name"), f"{where}.metadata.name"),
        namespace=namespace,
        spec=PodSpecResources(
            containers=_containers(spec.get("containers"), f"{where}.spec.containers", False),
            init_containers=_containers(
                spec.get("initContainers"), f"{where}.spec.initContainers", True
            ),
            overhead=resource_list(spec.get("overhead"), f"{where}.spec.overhead"),
        ),
        node_name=text(spec.get("nodeName"), f"{where}.spec.nodeName"),
        labels=string_map(meta.get("labels"), f"{where}.metadata.labels"),
        annotations=string_map(meta.get("annotations"), f"{where}.metadata.annotations"),
        priority=priority,
        owner_kinds=owners,
        phase=text(status.get("phase"), f"{where}.status.phase"),
        scheduler_name=text(spec.get("schedulerName"), f"{where}.spec.schedulerName")
        or "default-scheduler",
        scheduled_time=_condition_time(conditions, "PodScheduled", f"{where}.status.conditions"),
        not_ready=_not_ready(conditions),
        initialized_time=_condition_time(conditions, "Initialized", f"{where}.status.conditions"),
        pod_requests={k: v for k, v in level_requests.items() if k in POD_LEVEL_RESOURCES},
        pod_limits={k: v for k, v in level_limits.items() if k in POD_LEVEL_RESOURCES},
        constraints=parse_pod_constraints(spec, f"{where}.spec"),
        spread=parse_spread_constraints(spec, f"{where}.spec"),
        controller=controller_of(meta, f"{where}.metadata"),
        terminating=meta.get("deletionTimestamp") is not None,
        uid=text(meta.get("uid"), f"{where}.metadata.uid"),
        priority_class=text(spec.get("priorityClassName"), f"{where}.spec.priorityClassName"),
        preemption_policy=_preemption_policy(spec.get("preemptionPolicy"), f"{where}.spec"),
        start_time_ns=time_ns(status.get("startTime"), f"{where}.status.startTime"),
        affinity=parse_pod_affinity(
            spec,
            f"{where}.spec",
            namespace,
            string_map(meta.get("labels"), f"{where}.metadata.labels"),
        ),
        images=container_images(spec.get("containers"), f"{where}.spec.containers"),
        init_images=container_images(spec.get("initContainers"), f"{where}.spec.initContainers"),
        host_ports=pod_host_ports(spec, f"{where}.spec"),
        nominated_node_name=text(
            status.get("nominatedNodeName"), f"{where}.status.nominatedNodeName"
        ),
        preempted=_preempted(conditions),
    )


_RFC3339 = re.compile(
    r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)", re.IGNORECASE
)


def _preemption_policy(raw: Any, where: str) -> str:
    if raw is None or raw == "":
        return ""
    if raw not in PREEMPTION_POLICIES:
        raise InputError(
            f"{where}.preemptionPolicy: {preview(raw)} is not one of "
            f"{', '.join(PREEMPTION_POLICIES)}"
        )
    return str(raw)


def time_ns(raw: Any, where: str) -> int | None:
    """An RFC 3339 time (nanosecond fractions kept, as metav1.Time orders them) in unix ns."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, datetime):  # YAML loaders turn unquoted timestamps into datetimes
        stamp = raw if raw.tzinfo else raw.replace(tzinfo=UTC)
        return int(stamp.timestamp()) * 10**9 + stamp.microsecond * 1000
    match = _RFC3339.fullmatch(str(raw).strip())
    if match is None:
        raise InputError(
            f"{where}: {describe_value(raw)} is not an RFC 3339 time like 2026-11-01T12:00:00Z"
        )
    whole, fraction, zone = match.groups()
    seconds = int(
        parse_time(whole + ("Z" if zone.upper() == "Z" else zone), field=where).timestamp()
    )
    return seconds * 10**9 + int((fraction or "0").ljust(9, "0"))
