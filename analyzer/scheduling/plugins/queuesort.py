"""Pod priority (PriorityClass resolution) and kube-scheduler's ``PrioritySort`` queue order.

- Priority (``corev1helpers.PodPriority``): ``spec.priority`` when set. The Priority admission
  plugin fills it from ``spec.priorityClassName`` (a PriorityClass object, or the built-in
  ``system-cluster-critical`` 2000000000 / ``system-node-critical`` 2000001000), else from the
  PriorityClass with ``globalDefault: true``, else 0; objects read from a cluster already carry it,
  scenarios written by hand may give only the class name, so both are resolved here.
- ``preemptionPolicy``: the pod's, else its class's, else ``PreemptLowerPriority``.
- ``PrioritySort.Less(p1, p2)`` (research/kube-plugins.md §5): higher priority first; equal
  priorities by queue timestamp, earlier first (strictly before).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.objects import PodObject
from analyzer.scheduling.priority_class import PriorityClass, parse_priority_class

NAME = "PrioritySort"
SYSTEM_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
HIGHEST_USER_PRIORITY = 1000000000


def priority_classes(objects: Iterable[Any], where: str) -> dict[str, PriorityClass]:
    """The PriorityClass objects of a list of Kubernetes objects, by name (others ignored)."""
    out: dict[str, PriorityClass] = {}
    for i, obj in enumerate(objects):
        if isinstance(obj, Mapping) and obj.get("kind") == "PriorityClass":
            parsed = parse_priority_class(obj, f"{where}[{i}]")
            out[parsed.name] = parsed
    return out


def _class_of(pod: PodObject, classes: Mapping[str, PriorityClass]) -> PriorityClass | None:
    if pod.priority_class:
        if pod.priority_class in classes:
            return classes[pod.priority_class]
        if pod.priority_class in SYSTEM_CLASSES:
            return PriorityClass(pod.priority_class, SYSTEM_CLASSES[pod.priority_class])
        raise InputError(
            f"pod {pod.namespace}/{pod.name}: priorityClassName {preview(pod.priority_class)} has no "
            "PriorityClass object; add it to the scenario or set spec.priority"
        )
    defaults = [c for c in classes.values() if c.global_default]
    return defaults[0] if defaults else None


def resolve_priority(pod: PodObject, classes: Mapping[str, PriorityClass] | None = None) -> int:
    """The pod's priority: ``spec.priority``, else its class's value, else the global default, 0."""
    if pod.priority is not None:
        return pod.priority
    cls = _class_of(pod, classes or {})
    return 0 if cls is None else cls.value


def resolve_preemption_policy(
    pod: PodObject, classes: Mapping[str, PriorityClass] | None = None
) -> str:
    """The pod's ``preemptionPolicy``, else its class's, else ``PreemptLowerPriority``."""
    if pod.preemption_policy:
        return pod.preemption_policy
    cls = _class_of(pod, classes or {})
    return "PreemptLowerPriority" if cls is None else cls.preemption_policy


def less(priority1: int, timestamp1: float, priority2: int, timestamp2: float) -> bool:
    """``PrioritySort.Less``: p1 is popped before p2 (higher priority, then earlier timestamp)."""
    return priority1 > priority2 or (priority1 == priority2 and timestamp1 < timestamp2)


def queue_order(priorities: Sequence[int], timestamps: Sequence[float]) -> list[int]:
    """Indices in PrioritySort order; equal (priority, timestamp) keep their input order.

    Upstream's heap pops equal pods in no promised order; the stable order here makes replays
    reproducible.
    """
    return sorted(range(len(priorities)), key=lambda i: (-priorities[i], timestamps[i]))
