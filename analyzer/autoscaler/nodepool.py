"""A Karpenter NodePool as ``analyzer autoscale`` reads it (``nodePool:`` of a scenario).

``disruption.consolidationPolicy`` (WhenEmpty | WhenEmptyOrUnderutilized, default the latter),
``disruption.consolidateAfter`` (only ``Never`` changes an instant's decision),
``disruption.budgets[].nodes`` (a count or a percentage; default one budget of ``10%``), and
``instanceTypes``: the shapes the pool may launch, ``{name, cpu, memory, pods, price}``, cheapest
first. Parsed when the scenario is loaded, so a bad field is one line naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.fields import listing, mapping
from analyzer.scheduling.objects import resource_list
from analyzer.scheduling.pdb import scaled

POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized")


@dataclass(frozen=True)
class Shape:
    """An instance type the pool may launch."""

    name: str
    allocatable: Mapping[str, int]
    price: float


@dataclass(frozen=True)
class NodePool:
    """What the consolidation decision reads of a NodePool."""

    policy: str = "WhenEmptyOrUnderutilized"
    never: bool = False  # consolidateAfter: Never
    budgets: tuple[int | str, ...] = ("10%",)
    shapes: tuple[Shape, ...] = field(default_factory=tuple)

    def allowed(self, count: int) -> int:
        """``Budget.GetAllowedDisruptions``: the smallest budget, percentages of ``count``
        rounded up."""
        return min([count, *(scaled(b, count) for b in self.budgets)])


def _budget(raw: Any, where: str) -> int | str:
    value = mapping(raw, where).get("nodes", "10%")
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        return value
    raise InputError(f"{where}.nodes: {preview(value)} is not a count or a percentage like '10%'")


def _shape(raw: Any, where: str, i: int) -> Shape:
    body = mapping(raw, where)
    price = body.get("price")
    if isinstance(price, bool) or not isinstance(price, (int, float)) or not 0 <= price < 1e9:
        raise InputError(f"{where}.price: {preview(price)} is not a price ≥ 0 (per hour)")
    alloc = resource_list({k: body[k] for k in ("cpu", "memory", "pods") if k in body}, where)
    return Shape(str(body.get("name") or f"shape-{i}"), alloc, float(price))


def parse_node_pool(raw: Any, where: str = "nodePool") -> NodePool:
    """``nodePool:`` as a ``NodePool`` (absent: Karpenter's defaults, no instance types)."""
    if raw is None:
        return NodePool()
    body = mapping(raw, where)
    disruption = mapping(body.get("disruption"), f"{where}.disruption")
    policy = disruption.get("consolidationPolicy", "WhenEmptyOrUnderutilized")
    if policy not in POLICIES:
        raise InputError(
            f"{where}.disruption.consolidationPolicy: {preview(policy)} is not one of "
            f"{', '.join(POLICIES)}"
        )
    raw_budgets = listing(disruption.get("budgets"), f"{where}.disruption.budgets")
    budgets = tuple(
        _budget(b, f"{where}.disruption.budgets[{i}]") for i, b in enumerate(raw_budgets)
    )
    shapes = [
        _shape(s, f"{where}.instanceTypes[{i}]", i)
        for i, s in enumerate(listing(body.get("instanceTypes"), f"{where}.instanceTypes"))
    ]
    return NodePool(
        str(policy),
        disruption.get("consolidateAfter") == "Never",
        budgets or ("10%",),
        tuple(sorted(shapes, key=lambda s: s.price)),
    )
