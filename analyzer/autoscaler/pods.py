"""What cluster-autoscaler reads of a Pod besides the scheduler's view (``CAPod``).

``PodObject`` (``scheduling/objects.py``) keeps what the scheduler needs; the drain rules also
read the volumes (hostPath, emptyDir and its medium), ``metadata.deletionTimestamp`` with
``spec.terminationGracePeriodSeconds``, ``spec.restartPolicy`` and ``status.phase``, which are
parsed here from the same raw object. ``RunningPods`` makes the CA pods of a replay's running
pods cheaply (equal to those its constructors would make).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from analyzer.core.durations import parse_time
from analyzer.core.errors import InputError
from analyzer.core.resources import Container, PodSpecResources, pod_requests
from analyzer.scheduling.fields import listing, mapping, optional_integer, text
from analyzer.scheduling.objects import PodObject, parse_pod
from analyzer.scheduling.spread_types import OwnerRef

DEFAULT_GRACE_SECONDS = 30  # apiv1.DefaultTerminationGracePeriodSeconds
LONG_TERMINATING_EXTRA = 30  # drain.PodLongTerminatingExtraThreshold (seconds)
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
DAEMONSET_POD_ANNOTATION = "cluster-autoscaler.kubernetes.io/daemonset-pod"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SAFE_TO_EVICT_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"


@dataclass(frozen=True)
class Volume:
    """A pod volume as the local-storage rule reads it."""

    name: str
    host_path: bool = False
    empty_dir: bool = False
    medium: str = ""  # emptyDir.medium ("Memory" is not local storage)


# how cluster-autoscaler's utilisation reads a pod's requests, by version (``request_mode``)
POD_LEVEL = "requests"  # 1.34+: ``CAPod.requests`` (pod-level spec.resources count)


def request_mode(version: tuple[int, int]) -> str:
    """The ``CAPod`` attribute CA ``version``'s utilisation reads (``CalculateUtilizationOfResource``
    at each tag): 1.28 the containers alone; 1.29-1.31 ``PodRequests``; 1.32
    ``GetResourceRequestQuantity`` (overhead only on a non-zero request); 1.33 ``PodRequests``
    with pod-level resources off; 1.34+ with them on (the gate's default from Kubernetes 1.34).
    Status resources (in-place resize, read from 1.33) are not modelled: a scenario's pods have
    none."""
    if version <= (1, 28):
        return "containers_requests"
    if version == (1, 32):
        return "overhead_if_requested"
    if version <= (1, 33):
        return "container_level_requests"
    return POD_LEVEL


@dataclass(frozen=True)
class CAPod:
    """A pod with the fields cluster-autoscaler's drain rules and utilisation read."""

    obj: PodObject
    volumes: tuple[Volume, ...] = ()
    deletion_time: float | None = None  # metadata.deletionTimestamp, unix seconds
    grace_seconds: int = DEFAULT_GRACE_SECONDS  # spec.terminationGracePeriodSeconds
    restart_policy: str = "Always"
    # metadata.creationTimestamp, unix seconds (None: not given, upstream's zero time; the
    # replay's pods carry none)
    creation_time: float | None = None

    @cached_property
    def requests(self) -> Mapping[str, int]:
        """``PodRequests`` of its spec, made once (the spec of a frozen pod object never
        changes; read only): pod-level ``spec.resources`` requests (PodLevelResources, on by
        default from Kubernetes 1.34) replace the containers' sum for cpu and memory, overhead
        still added, as the scheduler's ``PodObject.demand`` reads them."""
        requests = pod_requests(self.obj.spec)
        overhead = self.obj.spec.overhead
        for name, value in self.obj.pod_requests.items():
            requests[name] = value + overhead.get(name, 0)
        return requests

    @cached_property
    def containers_requests(self) -> Mapping[str, int]:
        """cluster-autoscaler 1.28's utilisation reads of a pod: its ``spec.containers``'
        requests summed, nothing else (``CalculateUtilizationOfResource`` before 54909eb9ff)."""
        out: dict[str, int] = {}
        for container in self.obj.spec.containers:
            for name, value in container.requests.items():
                out[name] = out.get(name, 0) + value
        return out

    @cached_property
    def container_level_requests(self) -> Mapping[str, int]:
        """``PodRequests`` with pod-level resources off (CA 1.29-1.31 and 1.33: the
        PodLevelResources gate is off in their Kubernetes libraries): containers, init
        containers, sidecars and overhead, no pod-level ``spec.resources``."""
        return pod_requests(self.obj.spec)

    @cached_property
    def overhead_if_requested(self) -> Mapping[str, int]:
        """CA 1.32's ``GetResourceRequestQuantity``: ``PodRequests`` without overhead, the
        overhead of a resource added only where that sum is not zero."""
        spec = self.obj.spec
        out = pod_requests(replace(spec, overhead={}))
        for name, value in spec.overhead.items():
            if out.get(name, 0):
                out[name] += value
        return out

    def requests_by(self, mode: str) -> Mapping[str, int]:
        """The requests CA's utilisation reads, by the version's ``mode`` (``request_mode``)."""
        if mode == POD_LEVEL:
            return self.requests
        return getattr(self, mode)  # type: ignore[no-any-return]

    @cached_property
    def key(self) -> str:
        """``namespace/name``, the form the output names pods by (made once, as are ``mirror``
        and ``daemonset``: what they read of a frozen pod object never changes)."""
        return f"{self.obj.namespace}/{self.obj.name}"

    @property
    def annotations(self) -> Mapping[str, str]:
        """The pod's annotations."""
        return self.obj.annotations

    @cached_property
    def mirror(self) -> bool:
        """``pod_util.IsMirrorPod``: a static pod's API mirror."""
        return MIRROR_ANNOTATION in self.obj.annotations

    @cached_property
    def daemonset(self) -> bool:
        """``pod_util.IsDaemonSetPod``: controlled by a DaemonSet, or annotated as one."""
        ref = self.obj.controller
        if ref is not None and ref.kind == "DaemonSet":
            return True
        return self.obj.annotations.get(DAEMONSET_POD_ANNOTATION) == "true"

    @property
    def terminal(self) -> bool:
        """``drain.IsPodTerminal``: will never run again (restartPolicy and phase)."""
        phase = self.obj.phase
        if self.restart_policy == "Never" and phase in ("Succeeded", "Failed"):
            return True
        if self.restart_policy == "OnFailure" and phase == "Succeeded":
            return True
        return phase == "Failed"

    def long_terminating(self, now: float) -> bool:
        """``drain.IsPodLongTerminating``: deleted more than grace period + 30 s before ``now``."""
        if self.deletion_time is None:
            return False
        return self.deletion_time + self.grace_seconds + LONG_TERMINATING_EXTRA < now

    @property
    def safe_to_evict(self) -> bool:
        """The ``safe-to-evict: "true"`` annotation."""
        return self.obj.annotations.get(SAFE_TO_EVICT) == "true"

    @property
    def on_completion(self) -> bool:
        """The ``safe-to-evict: "on-completion"`` annotation (``HasSafeToEvictOnCompletionAnnotation``,
        CA 1.36+): the pod is left to finish before its node goes."""
        return self.obj.annotations.get(SAFE_TO_EVICT) == "on-completion"

    @property
    def not_safe_to_evict(self) -> bool:
        """The ``safe-to-evict: "false"`` annotation."""
        return self.obj.annotations.get(SAFE_TO_EVICT) == "false"

    @property
    def blocking_local_storage(self) -> bool:
        """``drain.HasBlockingLocalStorage``: a hostPath or non-memory emptyDir volume not named in
        the ``safe-to-evict-local-volumes`` annotation (none without volumes: the replay's
        pods have none)."""
        if not self.volumes:
            return False
        named = self.obj.annotations.get(SAFE_TO_EVICT_LOCAL_VOLUMES, "")
        allowed = set(named.split(",")) if named else set()
        return any(
            (v.host_path or (v.empty_dir and v.medium != "Memory")) and v.name not in allowed
            for v in self.volumes
        )


def _volumes(raw: Any, where: str) -> tuple[Volume, ...]:
    out = []
    for i, item in enumerate(listing(raw, where)):
        at = f"{where}[{i}]"
        vol = mapping(item, at)
        empty = vol.get("emptyDir")
        medium = ""
        if empty is not None:
            medium = text(mapping(empty, f"{at}.emptyDir").get("medium"), f"{at}.emptyDir.medium")
        out.append(
            Volume(
                name=text(vol.get("name"), f"{at}.name"),
                host_path=vol.get("hostPath") is not None,
                empty_dir=empty is not None,
                medium=medium,
            )
        )
    return tuple(out)


def _timestamp(raw: Any, where: str) -> float | None:
    if raw is None:
        return None
    if hasattr(raw, "timestamp"):  # YAML turns an unquoted timestamp into a datetime
        return float(raw.timestamp())
    if not isinstance(raw, str) or len(raw) > 64:
        raise InputError(f"{where}: expected an RFC 3339 time like 2026-11-01T12:00:00Z")
    return parse_time(raw, field=where).timestamp()


def parse_ca_pod(raw: Any, where: str) -> CAPod:
    """Parse a v1 Pod for cluster-autoscaler (the scheduler's fields through ``parse_pod``)."""
    obj = parse_pod(raw, where)
    body = mapping(raw, where)
    meta = mapping(body.get("metadata"), f"{where}.metadata")
    spec = mapping(body.get("spec"), f"{where}.spec")
    grace = optional_integer(
        spec.get("terminationGracePeriodSeconds"), f"{where}.spec.terminationGracePeriodSeconds"
    )
    return CAPod(
        obj=obj,
        volumes=_volumes(spec.get("volumes"), f"{where}.spec.volumes"),
        deletion_time=_timestamp(
            meta.get("deletionTimestamp"), f"{where}.metadata.deletionTimestamp"
        ),
        grace_seconds=DEFAULT_GRACE_SECONDS if grace is None else grace,
        restart_policy=text(spec.get("restartPolicy"), f"{where}.spec.restartPolicy") or "Always",
        creation_time=_timestamp(
            meta.get("creationTimestamp"), f"{where}.metadata.creationTimestamp"
        ),
    )


class RunningPods:
    """CA pods of running pods with one container (``main``, the pod's requests), made without
    the dataclasses' ``__init__``: each equals, field for field,
    ``CAPod(PodObject(name, namespace, PodSpecResources((Container("main", dict(requests)),)),
    labels=labels, annotations=annotations, owner_kinds=owner_kinds, phase="Running",
    controller=controller, uid=uid))`` (tests/test_autoscale_capods.py). The other fields take
    the values a constructor gives them; what is the same for many pods is one object shared by
    them, as a pod's own fields are read only in CA: the defaults (the empty dicts among them),
    and per request map (its items in order) the spec and its ``requests`` (``CAPod.requests``,
    set here as its first read would, as are ``key``, ``mirror`` and ``daemonset``)."""

    def __init__(self) -> None:
        self.pod_fields = dict(vars(PodObject("", "", PodSpecResources(), phase="Running")))
        self.ca_fields = dict(vars(CAPod(PodObject("", "", PodSpecResources()))))
        self.specs: dict[tuple[tuple[str, int], ...], tuple[PodSpecResources, Mapping[str, int]]]
        self.specs = {}

    def make(
        self,
        name: str,
        namespace: str,
        requests: Mapping[str, int],
        labels: Mapping[str, str],
        annotations: Mapping[str, str],
        owner_kinds: tuple[str, ...],
        controller: OwnerRef | None,
        uid: str,
    ) -> CAPod:
        """The CA pod of a running pod (class docstring)."""
        items = tuple(requests.items())
        spec = self.specs.get(items)
        if spec is None:
            made = PodSpecResources((Container("main", dict(requests)),))
            spec = self.specs[items] = (made, pod_requests(made))
        obj = object.__new__(PodObject)
        fields = vars(obj)
        fields.update(self.pod_fields)
        fields["name"], fields["namespace"], fields["spec"] = name, namespace, spec[0]
        fields["labels"], fields["annotations"] = labels, annotations
        fields["owner_kinds"], fields["controller"], fields["uid"] = owner_kinds, controller, uid
        pod = object.__new__(CAPod)
        fields = vars(pod)
        fields.update(self.ca_fields)
        fields["obj"], fields["requests"] = obj, spec[1]
        fields["key"], fields["mirror"] = _KEY(pod), _MIRROR(pod)
        fields["daemonset"] = _DAEMONSET(pod)
        return pod


def _first_read(name: str) -> Callable[[CAPod], Any]:
    """What the first read of ``CAPod``'s cached property ``name`` computes."""
    prop: cached_property[Any] = vars(CAPod)[name]
    return prop.func


# what ``RunningPods`` sets as the first read of these ``CAPod`` properties would
_KEY, _MIRROR, _DAEMONSET = _first_read("key"), _first_read("mirror"), _first_read("daemonset")
