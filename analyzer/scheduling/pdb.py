"""PodDisruptionBudgets as preemption reads them (selectors: ``label_selectors``).

DefaultPreemption (research/kube-plugins.md §6, ``filterPodsWithPDBViolation``) reads of a PDB only
its namespace, ``spec.selector``, ``status.disruptionsAllowed`` and the names in
``status.disruptedPods``. An absent selector, and one with neither ``matchLabels`` nor
``matchExpressions`` (``selector.Empty()``), select no pod; an invalid one is refused with the
field named.

``disruptions_allowed_for`` is the disruption controller's arithmetic (``getExpectedPodCount``,
``updatePdbStatus``), for a replay that derives the status from the pods of the moment:

- ``maxUnavailable`` (integer or percentage of the expected pods, rounded up): desired healthy =
  max(0, expected − maxUnavailable);
- ``minAvailable``: an integer is the desired healthy count itself; a percentage of the expected
  pods, rounded up;
- neither: no expected pods, so no disruption allowed;
- ``disruptionsAllowed`` = healthy − desired healthy, 0 when that is negative or nothing is
  expected. (Upstream's expected count is the pods the selector matches for an integer
  ``minAvailable`` and the controllers' scale otherwise; the caller says what it counts.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.fields import integer, mapping
from analyzer.scheduling.label_selectors import LabelSelector, parse_label_selector


@dataclass(frozen=True)
class DisruptionBudget:
    """What preemption reads of a PodDisruptionBudget."""

    name: str
    namespace: str
    selector: LabelSelector
    disruptions_allowed: int
    disrupted_pods: frozenset[str] = frozenset()
    min_available: int | str | None = None  # spec.minAvailable: an integer or "N%"
    max_unavailable: int | str | None = None  # spec.maxUnavailable: an integer or "N%"
    # spec.unhealthyPodEvictionPolicy is AlwaysAllow: a pod not Ready may always be evicted
    always_allow_unhealthy: bool = False

    def selects(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Whether the budget covers a pod of ``namespace`` with ``labels``."""
        return (
            namespace == self.namespace
            and not self.selector.empty
            and self.selector.matches(labels)
        )


def parse_pdb(obj: Any, where: str) -> DisruptionBudget:
    """Parse a ``policy/v1`` PodDisruptionBudget (namespace omitted = ``default``)."""
    obj = mapping(obj, where)
    meta = mapping(obj.get("metadata"), f"{where}.metadata")
    spec = mapping(obj.get("spec"), f"{where}.spec")
    status = mapping(obj.get("status"), f"{where}.status")
    allowed = integer(status.get("disruptionsAllowed", 0), f"{where}.status.disruptionsAllowed")
    disrupted = mapping(status.get("disruptedPods"), f"{where}.status.disruptedPods")
    minimum = _int_or_percent(spec.get("minAvailable"), f"{where}.spec.minAvailable")
    maximum = _int_or_percent(spec.get("maxUnavailable"), f"{where}.spec.maxUnavailable")
    if minimum is not None and maximum is not None:
        raise InputError(f"{where}.spec: minAvailable and maxUnavailable cannot be both set")
    return DisruptionBudget(
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or "default"),
        selector=parse_label_selector(spec.get("selector"), f"{where}.spec.selector"),
        disruptions_allowed=allowed,
        disrupted_pods=frozenset(str(k) for k in disrupted),
        min_available=minimum,
        max_unavailable=maximum,
        always_allow_unhealthy=spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow",
    )


_PERCENT = re.compile(r"[0-9]+%")


def _int_or_percent(raw: Any, where: str) -> int | str | None:
    """An IntOrString field as the API validates it: an integer ≥ 0 or "N%" with N ≤ 100."""
    if raw is None:
        return None
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
        return raw
    if isinstance(raw, str) and _PERCENT.fullmatch(raw) and int(raw[:-1]) <= 100:
        return raw
    raise InputError(f"{where}: {preview(raw)} is not an integer ≥ 0 or a percentage like '50%'")


def scaled(value: int | str, total: int) -> int:
    """``intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)``."""
    if isinstance(value, int):
        return value
    return -(-int(value[:-1]) * total // 100)


def disruptions_allowed_for(budget: DisruptionBudget, expected: int, healthy: int) -> int:
    """``status.disruptionsAllowed`` with ``expected`` pods and ``healthy`` of them healthy."""
    if budget.max_unavailable is not None:
        desired = max(0, expected - scaled(budget.max_unavailable, expected))
    elif budget.min_available is not None:
        desired = scaled(budget.min_available, expected)
    else:
        return 0  # upstream leaves the expected count at 0
    allowed = healthy - desired
    return allowed if expected > 0 and allowed > 0 else 0


def with_status(budget: DisruptionBudget, expected: int, healthy: int) -> DisruptionBudget:
    """``budget`` with the status the disruption controller would write for ``expected`` pods,
    ``healthy`` of them healthy, and no ``disruptedPods`` (a scheduler deletes its victims
    directly, not through the eviction API that fills it). What the replay's and the synthetic
    generator's preemption read (``analyzer.replay.budgets``, ``sources.lifecycle_loop``)."""
    allowed = disruptions_allowed_for(budget, expected, healthy)
    return replace(budget, disruptions_allowed=allowed, disrupted_pods=frozenset())


def disruption_budgets(objects: Iterable[Any], where: str) -> list[DisruptionBudget]:
    """The PodDisruptionBudget objects of a list of Kubernetes objects (others ignored)."""
    return [
        parse_pdb(obj, f"{where}[{i}]")
        for i, obj in enumerate(objects)
        if isinstance(obj, Mapping) and obj.get("kind") == "PodDisruptionBudget"
    ]
