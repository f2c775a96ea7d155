"""A pod's ``topologySpreadConstraints`` and controller reference, parsed and hashable.

Kept apart from the plugin (``podtopologyspread``) so ``PodDemand`` can carry them without an
import cycle. Field defaults follow core/v1: ``minDomains`` 1 (only meaningful with
DoNotSchedule), ``nodeAffinityPolicy`` Honor, ``nodeTaintsPolicy`` Ignore; an absent
``labelSelector`` is the nil selector (matches nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.fields import listing, mapping
from analyzer.scheduling.label_selectors import LabelSelector, parse_label_selector

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR, IGNORE = "Honor", "Ignore"


@dataclass(frozen=True)
class SpreadConstraint:
    """One ``TopologySpreadConstraint`` as written (matchLabelKeys not yet merged)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str | None = None  # None: field absent (Honor)
    node_taints_policy: str | None = None  # None: field absent (Ignore)
    match_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class OwnerRef:
    """The pod's controller ``ownerReference`` (``controller: true``)."""

    api_version: str
    kind: str
    name: str


def _policy(raw: Any, where: str) -> str | None:
    if raw is None:
        return None
    if raw not in (HONOR, IGNORE):
        raise InputError(f"{where}: {preview(raw)} is not Honor or Ignore")
    return str(raw)


def _positive(raw: Any, where: str, default: int | None = None) -> int:
    if raw is None and default is not None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int) or raw <= 0:
        raise InputError(f"{where}: {preview(raw)} must be an integer greater than zero")
    return raw


def parse_spread_constraint(raw: Any, where: str, *, default: bool = False) -> SpreadConstraint:
    """One constraint; ``default``: a ``defaultConstraints`` entry (no labelSelector allowed)."""
    item = mapping(raw, where)
    key = item.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise InputError(f"{where}.topologyKey: Required value")
    when = item.get("whenUnsatisfiable")
    if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        raise InputError(
            f"{where}.whenUnsatisfiable: {preview(when)} is not {DO_NOT_SCHEDULE} or {SCHEDULE_ANYWAY}"
        )
    if default and item.get("labelSelector") is not None:
        raise InputError(
            f"{where}.labelSelector: Forbidden: constraint must not define a selector, as they "
            "deduced for each pod"
        )
    keys = listing(item.get("matchLabelKeys"), f"{where}.matchLabelKeys")
    return SpreadConstraint(
        max_skew=_positive(item.get("maxSkew"), f"{where}.maxSkew"),
        topology_key=key,
        when_unsatisfiable=str(when),
        selector=parse_label_selector(item.get("labelSelector"), f"{where}.labelSelector"),
        min_domains=_positive(item.get("minDomains"), f"{where}.minDomains", default=1),
        node_affinity_policy=_policy(item.get("nodeAffinityPolicy"), f"{where}.nodeAffinityPolicy"),
        node_taints_policy=_policy(item.get("nodeTaintsPolicy"), f"{where}.nodeTaintsPolicy"),
        match_label_keys=tuple(str(k) for k in keys),
    )


def parse_spread_constraints(spec: Mapping[str, Any], where: str) -> tuple[SpreadConstraint, ...]:
    """``spec.topologySpreadConstraints`` of a Pod spec."""
    at = f"{where}.topologySpreadConstraints"
    return tuple(
        parse_spread_constraint(c, f"{at}[{i}]")
        for i, c in enumerate(listing(spec.get("topologySpreadConstraints"), at))
    )


def controller_of(meta: Mapping[str, Any], where: str) -> OwnerRef | None:
    """``metav1.GetControllerOf``: the ownerReference with ``controller: true``, if any."""
    for i, ref in enumerate(listing(meta.get("ownerReferences"), f"{where}.ownerReferences")):
        ref = mapping(ref, f"{where}.ownerReferences[{i}]")
        if ref.get("controller") is True:
            return OwnerRef(
                str(ref.get("apiVersion") or ""),
                str(ref.get("kind") or ""),
                str(ref.get("name") or ""),
            )
    return None
