"""Pod resource rules shared by the collector, the generator and the scheduler.

The effective pod request follows component-helpers ``PodRequests`` (research/kube-scoring.md §3):

- running sum = Σ regular containers + Σ restartable init containers (sidecars);
- init phase i = regular init container i + Σ sidecars declared before it; a sidecar's own phase is
  the cumulative sidecars up to and including it;
- request = max(running sum, max over init phases), per resource, then + ``spec.overhead``.

The **non-zero** variant (kube-scheduler ``NonZeroRequested``, used only by NodeResourcesFit scoring)
counts 100m cpu / 200Mi memory for every container and init container with *no key* for that
resource; an explicit ``0`` stays 0; a pod with no containers adds nothing.

``PodLimits`` aggregates limits the same way, adding overhead only where a limit is set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

DEFAULT_MILLI_CPU_REQUEST = 100  # kube-scheduler DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # kube-scheduler DefaultMemoryRequest (200Mi)
NON_ZERO_DEFAULTS = {"cpu": DEFAULT_MILLI_CPU_REQUEST, "memory": DEFAULT_MEMORY_REQUEST}

ResourceMap = Mapping[str, int]


@dataclass(frozen=True)
class Container:
    """One container's explicit requests and limits (a key absent = not set), analyzer units."""

    name: str
    requests: ResourceMap = field(default_factory=dict)
    limits: ResourceMap = field(default_factory=dict)
    sidecar: bool = False  # init container with restartPolicy: Always


@dataclass(frozen=True)
class PodSpecResources:
    """What the scheduler reads of a pod's resources."""

    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: ResourceMap = field(default_factory=dict)


def _add(total: dict[str, int], items: ResourceMap) -> None:
    for name, value in items.items():
        total[name] = total.get(name, 0) + value


def _max_into(total: dict[str, int], items: ResourceMap) -> None:
    for name, value in items.items():
        total[name] = max(total[name], value) if name in total else value


def _with_defaults(values: ResourceMap, non_zero: bool) -> dict[str, int]:
    result = dict(values)
    if non_zero:
        for name, default in NON_ZERO_DEFAULTS.items():
            if name not in result:
                result[name] = default
    return result


def _aggregate(
    pod: PodSpecResources, pick: str, non_zero: bool
) -> tuple[dict[str, int], dict[str, int]]:
    """Return (max(running sum, init phases), the overhead to add) for requests or limits."""
    running: dict[str, int] = {}
    for container in pod.containers:
        _add(running, _with_defaults(getattr(container, pick), non_zero))
    init_peak: dict[str, int] = {}
    sidecars: dict[str, int] = {}
    for container in pod.init_containers:
        values = _with_defaults(getattr(container, pick), non_zero)
        if container.sidecar:
            _add(sidecars, values)
            _add(running, values)
            _max_into(init_peak, sidecars)
        else:
            phase = dict(sidecars)
            _add(phase, values)
            _max_into(init_peak, phase)
    result = dict(running)
    _max_into(result, init_peak)
    return result, dict(pod.overhead)


def pod_requests(pod: PodSpecResources, *, non_zero: bool = False) -> dict[str, int]:
    """Effective pod requests (``PodRequests``); ``non_zero`` applies the 100m/200Mi defaults.

    With ``non_zero`` only cpu and memory are returned, as kube-scheduler keeps them.
    """
    result, overhead = _aggregate(pod, "requests", non_zero)
    _add(result, overhead)
    if non_zero:
        return {name: result.get(name, 0) for name in NON_ZERO_DEFAULTS}
    return result


def pod_limits(pod: PodSpecResources) -> dict[str, int]:
    """Effective pod limits (``PodLimits``): overhead is added only where a limit is set."""
    result, overhead = _aggregate(pod, "limits", False)
    for name, value in overhead.items():
        if name in result:
            result[name] += value
    return result


_QOS_RESOURCES = ("cpu", "memory")


def qos_class(containers: Iterable[Container]) -> str:
    """Kubernetes QoS class from all containers (app and init): Guaranteed, Burstable, BestEffort.

    Only cpu and memory count. Guaranteed: every container sets cpu and memory limits and its
    requests (defaulted to the limits when absent) equal them. BestEffort: no container sets any
    non-zero cpu/memory request or limit.
    """
    all_containers = list(containers)
    any_set = False
    guaranteed = bool(all_containers)
    for container in all_containers:
        for resource in _QOS_RESOURCES:
            request = container.requests.get(resource)
            limit = container.limits.get(resource)
            if (request or 0) > 0 or (limit or 0) > 0:
                any_set = True
            if limit is None or (request if request is not None else limit) != limit:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"
