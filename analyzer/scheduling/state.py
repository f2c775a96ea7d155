"""The cluster as the scheduling core sees it: numpy arrays over nodes × resources.

The replay engine keeps one ``ClusterState`` and calls ``bind``/``unbind`` as pods come and go, so
every array is updated in place (O(resources) per event) and every plugin reads whole columns.

Resource axis: a fixed tuple ``resources`` with ``cpu`` at index 0 and ``memory`` at index 1, then
every other resource name sorted. ``pods`` is not on the axis: pod counts live in ``pod_count`` and
``allowed_pods`` because kube-scheduler checks them separately (research/kube-scoring.md §8).
Units: cpu millicores, everything else base units (bytes, counts) — exact int64.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from analyzer.scheduling.affinity_types import PodAffinity
from analyzer.scheduling.arith import BoolArray, FloatArray, Int64Array
from analyzer.scheduling.constraint_types import NO_CONSTRAINTS, PodConstraints, Taint
from analyzer.scheduling.host_ports import HostPort, PortIndex
from analyzer.scheduling.kube_objects import KubeObjects
from analyzer.scheduling.pod_index import PlacedPod, PodIndex
from analyzer.scheduling.spread_types import OwnerRef, SpreadConstraint

CPU, MEMORY = 0, 1
NATIVE_SCORED = ("cpu", "memory", "ephemeral-storage")
_NATIVE_PREFIX = "kubernetes.io/"


def resource_axis(names: Iterable[str]) -> tuple[str, ...]:
    """The fixed resource order: cpu, memory, then the other names sorted (``pods`` excluded)."""
    others = sorted({n for n in names if n not in ("cpu", "memory", "pods")})
    return ("cpu", "memory", *others)


def is_extended_resource(name: str) -> bool:
    """Kubernetes ``IsExtendedResourceName``: a qualified ``vendor/name`` outside ``kubernetes.io/``."""
    return "/" in name and _NATIVE_PREFIX not in name and not name.startswith("requests.")


def is_scalar_resource(name: str) -> bool:
    """Kubernetes ``IsScalarResourceName``: extended, hugepages-*, kubernetes.io/-prefixed, volumes."""
    return (
        is_extended_resource(name)
        or name.startswith("hugepages-")
        or name.startswith(_NATIVE_PREFIX)
        or name.startswith("attachable-volumes-")
    )


def is_tracked_resource(name: str) -> bool:
    """Whether NodeInfo accounts the resource at all (cpu, memory, ephemeral-storage, scalars)."""
    return name in NATIVE_SCORED or is_scalar_resource(name)


@dataclass(frozen=True)
class PodDemand:
    """One pod's resource demand in the state's resource order, plus what plugins need to know.

    ``requests`` are real requests (component-helpers ``PodRequests``, no defaults); ``nonzero`` is
    ``[cpu, memory]`` with kube-scheduler's 100m/200Mi per container without a key; ``limits`` is
    ``PodLimits``. ``request_map``/``limit_map`` keep every resource the pod names (also those not on
    the axis, e.g. ``kubernetes.io/batch-cpu`` for the Koordinator estimator).
    """

    name: str
    namespace: str
    requests: Int64Array
    nonzero: Int64Array
    limits: Int64Array
    request_map: Mapping[str, int] = field(default_factory=dict)
    limit_map: Mapping[str, int] = field(default_factory=dict)
    daemonset: bool = False
    priority: int | None = None
    preemption_policy: str = "PreemptLowerPriority"  # the PriorityClass's (DefaultPreemption)
    koord_class: str = ""  # koord-prod | koord-mid | koord-batch | koord-free | "" (none)
    qos: str = "BestEffort"  # Kubernetes QoS class
    scheduler_name: str = "default-scheduler"
    annotations: Mapping[str, str] = field(default_factory=dict)
    constraints: PodConstraints = NO_CONSTRAINTS  # tolerations, nodeSelector, required affinity
    labels: Mapping[str, str] = field(default_factory=dict)  # e.g. alibaba.com/gpu-spec
    # topology spread and identity, for PodTopologySpread / InterPodAffinity (``pod_index``)
    spread: tuple[SpreadConstraint, ...] = ()  # spec.topologySpreadConstraints
    controller: OwnerRef | None = None  # the controller ownerReference
    terminating: bool = False  # metadata.deletionTimestamp set
    uid: str = ""
    affinity: PodAffinity | None = None  # spec.affinity podAffinity / podAntiAffinity terms
    # container images as the spec names them, for ImageLocality ("" = not known)
    images: tuple[str, ...] = ()  # spec.containers[].image
    init_images: tuple[str, ...] = ()  # spec.initContainers[].image
    # containers' (and sidecars') host ports, sanitised, for NodePorts (``host_ports``); () = none
    host_ports: tuple[HostPort, ...] = ()

    def placed(self) -> PlacedPod:
        """The identity ``PodIndex`` keeps for this pod once bound (built once: a replay binds
        and unbinds the same demand many times; not a field, so equality ignores it)."""
        held: PlacedPod | None = self.__dict__.get("_placed")
        if held is None:
            held = PlacedPod(
                self.name, self.namespace, self.labels, self.terminating, self.uid, self.affinity
            )
            object.__setattr__(self, "_placed", held)  # frozen: the memo bypasses __setattr__
        return held

    def request(self, name: str) -> int:
        """The real request of ``name`` (0 when the pod does not set it)."""
        return int(self.request_map.get(name, 0))

    def off_axis_requests(self, resources: Sequence[str]) -> dict[str, int]:
        """Positive requests for resources the state does not know (no node offers them)."""
        known = set(resources)
        return {
            k: v
            for k, v in self.request_map.items()
            if v > 0 and k not in known and k != "pods" and is_tracked_resource(k)
        }


def make_demand(
    resources: Sequence[str],
    requests: Mapping[str, int],
    nonzero: Mapping[str, int],
    limits: Mapping[str, int] | None = None,
    **info: Any,
) -> PodDemand:
    """Build a ``PodDemand`` from resource maps (``info`` fills the remaining fields)."""
    limits = limits or {}
    return PodDemand(
        requests=np.array([int(requests.get(r, 0)) for r in resources], dtype=np.int64),
        nonzero=np.array([int(nonzero.get("cpu", 0)), int(nonzero.get("memory", 0))], np.int64),
        limits=np.array([int(limits.get(r, 0)) for r in resources], dtype=np.int64),
        request_map=dict(requests),
        limit_map=dict(limits),
        **info,
    )


@dataclass
class LoadInputs:
    """Koordinator LoadAwareScheduling inputs per node, over the resource order ``resources``.

    What the plugin's pod-assign cache holds for each node (research/koordinator.md §1.5), as
    arrays a replay can fill from projected NodeMetrics. Times are unix seconds (float64); a NodeMetric
    without ``status.updateTime`` has ``update_time`` NaN. ``aggregated`` maps (type, duration
    seconds) → (present per node, usage); duration 0 holds the longest non-empty duration.
    """

    resources: tuple[str, ...]
    has_metric: BoolArray  # a NodeMetric object exists for the node
    metric_present: BoolArray  # status.nodeMetric is set
    update_time: FloatArray
    report_interval: Int64Array  # seconds
    node_usage: Int64Array  # [N, L]
    node_delta: Int64Array  # estimated extra of recently assigned pods
    node_estimated: Int64Array  # full estimates of every assigned pod
    prod_usage: Int64Array
    prod_delta: Int64Array
    aggregated: dict[tuple[str, int], tuple[BoolArray, Int64Array]] = field(default_factory=dict)

    @classmethod
    def empty(cls, nodes: int, resources: Sequence[str]) -> LoadInputs:
        """Inputs for ``nodes`` nodes with no NodeMetric at all."""
        shape = (nodes, len(resources))
        return cls(
            resources=tuple(resources),
            has_metric=np.zeros(nodes, dtype=bool),
            metric_present=np.zeros(nodes, dtype=bool),
            update_time=np.full(nodes, np.nan),
            report_interval=np.full(nodes, 60, dtype=np.int64),
            node_usage=np.zeros(shape, dtype=np.int64),
            node_delta=np.zeros(shape, dtype=np.int64),
            node_estimated=np.zeros(shape, dtype=np.int64),
            prod_usage=np.zeros(shape, dtype=np.int64),
            prod_delta=np.zeros(shape, dtype=np.int64),
        )

    def column(self, table: Int64Array, name: str) -> Int64Array:
        """One resource's column of ``table`` (zeros when the resource is not tracked)."""
        if name in self.resources:
            column: Int64Array = table[:, self.resources.index(name)]
            return column
        return np.zeros(table.shape[0], dtype=np.int64)


class DeviceTracker(Protocol):
    """Per-device bookkeeping a ``ClusterState`` keeps in step with its pods (the per-GPU state of
    ``analyzer.scheduling.gpu.devices.attach_devices``): ``bind``/``unbind`` call it for every pod."""

    def bind(self, node: int, pod: PodDemand, gpus: Sequence[int] | None = None) -> None:
        """Account ``pod`` on ``node``'s devices (``gpus``: the caller's choice, None = its own)."""

    def unbind(self, node: int, pod: PodDemand) -> None:
        """Free what ``pod`` held on ``node``."""


@dataclass
class ClusterState:
    """Nodes × resources arrays, updated in place by ``bind``/``unbind``.

    ``requested`` holds real requests (``NodeInfo.Requested``); ``nonzero_requested`` is
    ``[N, 2]`` cpu/memory with per-container defaults (``NodeInfo.NonZeroRequested``).
    """

    resources: tuple[str, ...]
    node_names: tuple[str, ...]
    allocatable: Int64Array
    requested: Int64Array
    nonzero_requested: Int64Array
    pod_count: Int64Array
    allowed_pods: Int64Array
    node_labels: list[dict[str, str]] = field(default_factory=list)
    node_annotations: list[dict[str, str]] = field(default_factory=list)
    node_taints: list[tuple[Taint, ...]] = field(default_factory=list)  # empty: no node tainted
    # spec.unschedulable (cordoned) per node; empty: no node cordoned. A replay with node-state
    # intervals changes it and node_taints in place (``analyzer.replay.node_state``)
    node_unschedulable: list[bool] = field(default_factory=list)
    load: LoadInputs | None = None
    # per-GPU device state, attached for GPU profiles (``analyzer.scheduling.gpu.devices``)
    devices: DeviceTracker | None = None
    # derived per-node data plugins keep between pods (e.g. LoadAware thresholds); call
    # ``invalidate()`` after changing allocatable, labels or annotations in place
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    # placed pods' labels/namespaces and per-selector counts (``attach_pod_index``), for the
    # spread/affinity plugins; None: not tracked (resource-only replays)
    pod_index: PodIndex | None = None
    # Services, ReplicaSets, StatefulSets, Namespaces, PDBs, PriorityClasses (``kube_objects``)
    objects: KubeObjects = field(default_factory=KubeObjects)
    # per node: image name -> size in bytes (Node status.images, every name of every image);
    # empty: no image data, ImageLocality scores 0 everywhere. Never changes during a replay.
    node_images: list[dict[str, int]] = field(default_factory=list)
    # the nodes that exist now (a replay's active nodes, updated in place; None: every node):
    # ImageLocality's spread counts only these, as upstream counts the snapshot's nodes
    present: BoolArray | None = None
    # host ports in use per node (NodePorts), kept by bind/unbind for pods with host ports
    ports: PortIndex = field(default_factory=PortIndex, repr=False, compare=False)

    def attach_pod_index(self) -> PodIndex:
        """Start tracking placed pods (call before the first ``bind``)."""
        if self.pod_index is None:
            self.pod_index = PodIndex(self.node_count)
        return self.pod_index

    def invalidate(self) -> None:
        """Forget plugin caches derived from allocatable/annotations (after editing them)."""
        self.cache.clear()

    @classmethod
    def from_nodes(
        cls,
        names: Sequence[str],
        allocatable: Sequence[Mapping[str, int]],
        extra_resources: Iterable[str] = (),
        annotations: Sequence[Mapping[str, str]] | None = None,
        labels: Sequence[Mapping[str, str]] | None = None,
        taints: Sequence[Sequence[Taint]] | None = None,
        images: Sequence[Mapping[str, int]] | None = None,
    ) -> ClusterState:
        """Empty nodes (nothing bound) with the given allocatable maps (``pods`` = allowed pods),
        tracking the pods bound from now on (``attach_pod_index``: the kube presets' spread and
        affinity plugins read it)."""
        names_seen = {r for alloc in allocatable for r in alloc} | set(extra_resources)
        resources = resource_axis(names_seen)
        count = len(names)
        table = np.zeros((count, len(resources)), dtype=np.int64)
        for i, alloc in enumerate(allocatable):
            for j, resource in enumerate(resources):
                table[i, j] = int(alloc.get(resource, 0))
        state = cls(
            resources=resources,
            node_names=tuple(names),
            allocatable=table,
            requested=np.zeros_like(table),
            nonzero_requested=np.zeros((count, 2), dtype=np.int64),
            pod_count=np.zeros(count, dtype=np.int64),
            allowed_pods=np.array([int(a.get("pods", 0)) for a in allocatable], dtype=np.int64),
            node_annotations=[dict(a) for a in (annotations or [{} for _ in names])],
            node_labels=[dict(a) for a in (labels or [{} for _ in names])],
            node_taints=[tuple(t) for t in (taints or [() for _ in names])],
            node_images=[dict(i) for i in images] if images and any(images) else [],
        )
        state.attach_pod_index()
        return state

    @property
    def node_count(self) -> int:
        """Number of nodes."""
        return len(self.node_names)

    def index_of(self, resource: str) -> int | None:
        """Position of ``resource`` on the axis, or None."""
        try:
            return self.resources.index(resource)
        except ValueError:
            return None

    def bind(self, node_index: int, pod: PodDemand, gpus: Sequence[int] | None = None) -> None:
        """Account ``pod`` on node ``node_index`` (NodeInfo.AddPod); with device state, on the
        GPU indices ``gpus`` (default: best-fit), remembered for ``unbind``."""
        self.requested[node_index] += pod.requests
        self.nonzero_requested[node_index] += pod.nonzero
        self.pod_count[node_index] += 1
        if self.devices is not None:
            self.devices.bind(node_index, pod, gpus)
        if self.pod_index is not None and self.pod_index.tracking:
            self.pod_index.add(node_index, pod.placed())
        if pod.host_ports:
            self.ports.add(node_index, pod.host_ports)

    def unbind(self, node_index: int, pod: PodDemand) -> None:
        """Remove ``pod`` from node ``node_index`` (NodeInfo.RemovePod), freeing its GPUs."""
        self.requested[node_index] -= pod.requests
        self.nonzero_requested[node_index] -= pod.nonzero
        self.pod_count[node_index] -= 1
        if self.devices is not None:
            self.devices.unbind(node_index, pod)
        if self.pod_index is not None and self.pod_index.tracking:
            self.pod_index.remove(node_index, pod.placed())
        if pod.host_ports:
            self.ports.remove(node_index, pod.host_ports)

    def reserve(self, node_index: int, pod: PodDemand) -> None:
        """Hold ``pod``'s requests and a pod slot on ``node_index`` while it is nominated there
        (a preemptor whose victims terminate): kube-scheduler's ``addNominatedPods`` counts such
        a pod in the filters of the pods of lower or equal priority. Not its labels (the pod
        index), host ports nor non-zero requests (the scores read those without nominated
        pods)."""
        self.requested[node_index] += pod.requests
        self.pod_count[node_index] += 1

    def release(self, node_index: int, pod: PodDemand) -> None:
        """Undo ``reserve``."""
        self.requested[node_index] -= pod.requests
        self.pod_count[node_index] -= 1

    def bind_many(self, node_index: int, pods: Sequence[PodDemand]) -> None:
        """``bind`` of each of ``pods`` on ``node_index`` in turn, the resource rows changed once
        (the same state: sums of int64 rows; with device state, pod by pod)."""
        if self.devices is not None or len(pods) < 2:
            for pod in pods:
                self.bind(node_index, pod)
            return
        self.requested[node_index] += np.sum([pod.requests for pod in pods], axis=0)
        self.nonzero_requested[node_index] += np.sum([pod.nonzero for pod in pods], axis=0)
        self.pod_count[node_index] += len(pods)
        index = self.pod_index
        if index is not None and index.tracking:
            for pod in pods:
                index.add(node_index, pod.placed())
        for pod in pods:
            if pod.host_ports:
                self.ports.add(node_index, pod.host_ports)

    @contextmanager
    def bound_for_now(self, node_index: int, pods: Sequence[PodDemand]) -> Iterator[None]:
        """``pods`` bound on ``node_index`` inside the block, unbound after it (the state as it
        was): a filter run that counts pods not placed, e.g. nominated ones."""
        self.bind_many(node_index, pods)
        try:
            yield
        finally:
            self.unbind_many(node_index, pods)

    def unbind_many(self, node_index: int, pods: Sequence[PodDemand]) -> None:
        """``unbind`` of each of ``pods`` from ``node_index`` in turn, the resource rows changed
        once and the pod index searched once (``PodIndex.remove_many``)."""
        if self.devices is not None or len(pods) < 2:
            for pod in pods:
                self.unbind(node_index, pod)
            return
        self.requested[node_index] -= np.sum([pod.requests for pod in pods], axis=0)
        self.nonzero_requested[node_index] -= np.sum([pod.nonzero for pod in pods], axis=0)
        self.pod_count[node_index] -= len(pods)
        index = self.pod_index
        if index is not None and index.tracking:
            index.remove_many(node_index, [pod.placed() for pod in pods])
        for pod in pods:
            if pod.host_ports:
                self.ports.remove(node_index, pod.host_ports)
