"""The PriorityClass object (``scheduling.k8s.io/v1``) and the pod preemption policies.

A leaf module: the scenario's object list (``kube_objects``), pod parsing (``objects``) and the
queue order (``plugins.queuesort``) all read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.fields import integer, mapping

PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


@dataclass(frozen=True)
class PriorityClass:
    """A ``scheduling.k8s.io/v1`` PriorityClass."""

    name: str
    value: int
    global_default: bool = False
    preemption_policy: str = "PreemptLowerPriority"


def parse_priority_class(obj: Any, where: str) -> PriorityClass:
    """Parse a PriorityClass object (``metadata.name``, ``value``, ``globalDefault``, …)."""
    obj = mapping(obj, where)
    name = mapping(obj.get("metadata"), f"{where}.metadata").get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}.metadata.name: every PriorityClass needs a name")
    value = integer(obj.get("value"), f"{where}.value")
    if not -(1 << 31) <= value < (1 << 31):
        raise InputError(f"{where}.value: {value} does not fit an int32")
    policy = obj.get("preemptionPolicy") or "PreemptLowerPriority"
    if policy not in PREEMPTION_POLICIES:
        raise InputError(
            f"{where}.preemptionPolicy: {preview(policy)} is not one of {', '.join(PREEMPTION_POLICIES)}"
        )
    return PriorityClass(name, value, bool(obj.get("globalDefault")), str(policy))
