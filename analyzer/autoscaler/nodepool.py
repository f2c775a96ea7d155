"""A Karpenter NodePool as ``analyzer autoscale`` and the replay read it (``nodePool:`` of a
scenario, ``autoscaler.karpenter:`` of the config file).

``disruption.consolidationPolicy`` (WhenEmpty | WhenEmptyOrUnderutilized | Balanced, default
WhenEmptyOrUnderutilized; Balanced, Karpenter v1.14.0, scores each move:
``analyzer.autoscaler.karpenter.move_score``),
``disruption.consolidateAfter`` (a duration or ``Never``; default ``0s`` as upstream's v1 API),
``disruption.budgets[]``: ``nodes`` (a count or a percentage; default one budget of ``10%``),
optionally ``schedule`` (cron, UTC) with ``duration`` (the budget counts only in the window after
each trigger) and ``reasons`` (Empty, Underutilized, Drifted: the methods it limits), and
``instanceTypes``: the shapes the pool may launch, ``{name, cpu, memory, pods, price}``, cheapest
first; ``template``: ``metadata.labels``, ``spec.requirements`` and ``spec.taints`` of the nodes
it launches (a pod whose node selection no such node meets, or that does not tolerate a
``NoSchedule`` or ``NoExecute`` taint of them, is not launched for: ``new_node``; the
``startupTaints`` are not read, as Karpenter's scheduler does not). Parsed when read, so a bad field is one line naming the file and the field.

A scenario's ``nodePool:`` may also be a whole NodePool object as ``kubectl get nodepool NAME -o
yaml`` prints it: ``disruption`` and ``template`` are then read from its ``spec`` (giving them
both there and beside it is refused), ``instanceTypes`` beside ``spec`` (a NodePool has no such
field: the shapes come from its NodeClass and the cloud), and the fields read of neither (``limits``,
``weight``, ...) are noted as not modelled instead of passing unseen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from analyzer.autoscaler.cron import Cron, parse_cron
from analyzer.core.durations import parse_duration
from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.constraint_types import (
    Requirement,
    Taint,
    parse_requirements,
    parse_taints,
)
from analyzer.scheduling.fields import listing, mapping
from analyzer.scheduling.objects import resource_list
from analyzer.scheduling.pdb import scaled

POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
REASONS = ("Empty", "Underutilized", "Drifted")


@dataclass(frozen=True)
class Shape:
    """An instance type the pool may launch."""

    name: str
    allocatable: Mapping[str, int]
    price: float


@dataclass(frozen=True)
class BudgetRule:
    """One ``disruption.budgets[]`` entry (``pkg/apis/v1/nodepool.go`` ``Budget``)."""

    nodes: int | str
    schedule: Cron | None = None
    duration: int = 0  # seconds the budget is active after each trigger of ``schedule``
    reasons: tuple[str, ...] = ()  # empty: every reason

    def applies(self, reason: str) -> bool:
        """Whether the rule limits disruptions for ``reason`` (Empty | Underutilized)."""
        return not self.reasons or reason in self.reasons


@dataclass(frozen=True)
class NodePool:
    """What the consolidation decision reads of a NodePool."""

    policy: str = "WhenEmptyOrUnderutilized"
    never: bool = False  # consolidateAfter: Never
    budgets: tuple[int | str, ...] = ("10%",)  # the rules' ``nodes``, in order
    shapes: tuple[Shape, ...] = field(default_factory=tuple)
    consolidate_after: int = 0  # seconds
    rules: tuple[BudgetRule, ...] = (BudgetRule("10%"),)
    # ``template.metadata.labels`` and ``template.spec.requirements``: what a node it launches
    # carries (``analyzer.autoscaler.new_node``)
    labels: Mapping[str, str] = field(default_factory=dict)
    requirements: tuple[Requirement, ...] = ()
    # ``template.spec.taints``: a pod (a DaemonSet's too) goes on a new node only if it
    # tolerates them (``NodeClaim.CanAdd``, ``isDaemonPodCompatible``)
    taints: tuple[Taint, ...] = ()

    def allowed(
        self,
        count: int,
        reason: str = "",
        active: Callable[[BudgetRule], bool] | None = None,
    ) -> int:
        """``NodePool.GetAllowedDisruptionsByReason``: the smallest of the rules that apply to
        ``reason`` and are ``active`` now (default: every rule), percentages of ``count``
        rounded up; no such rule: every node."""
        values = [
            scaled(r.nodes, count)
            for r in self.rules
            if (not reason or r.applies(reason)) and (active is None or active(r))
        ]
        return min([count, *values])


def _budget(raw: Any, where: str) -> BudgetRule:
    body = mapping(raw, where)
    value = body.get("nodes", "10%")
    nodes: int | str
    if isinstance(value, str) and value.isdigit():
        nodes = int(value)
    elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        nodes = value
    elif isinstance(value, str) and value.endswith("%") and value[:-1].isdigit():
        if int(value[:-1]) > 100:
            raise InputError(f"{where}.nodes: {preview(value)} is above 100%")
        nodes = value
    else:
        raise InputError(
            f"{where}.nodes: {preview(value)} is not a count or a percentage like '10%'"
        )
    schedule, duration = body.get("schedule"), body.get("duration")
    if (schedule is None) != (duration is None):
        # upstream's CEL rule: 'schedule' must be set with 'duration'
        raise InputError(f"{where}: schedule and duration go together (e.g. '0 9 * * *' and 8h)")
    cron, seconds = None, 0
    if schedule is not None:
        cron = parse_cron(schedule, f"{where}.schedule")
        seconds = int(parse_duration(str(duration), field=f"{where}.duration").total_seconds())
        if seconds <= 0:
            raise InputError(f"{where}.duration: {preview(duration)} must be above 0 (e.g. 8h)")
    reasons = tuple(str(r) for r in listing(body.get("reasons"), f"{where}.reasons"))
    for r in reasons:
        if r not in REASONS:
            raise InputError(f"{where}.reasons: {preview(r)} is not one of {', '.join(REASONS)}")
    return BudgetRule(nodes, cron, seconds, reasons)


def _shape(raw: Any, where: str, i: int) -> Shape:
    body = mapping(raw, where)
    price = body.get("price")
    if isinstance(price, bool) or not isinstance(price, (int, float)) or not 0 <= price < 1e9:
        raise InputError(f"{where}.price: {preview(price)} is not a price ≥ 0 (per hour)")
    alloc = resource_list({k: body[k] for k in ("cpu", "memory", "pods") if k in body}, where)
    return Shape(str(body.get("name") or f"shape-{i}"), alloc, float(price))


def parse_disruption(raw: Any, where: str) -> tuple[str, bool, int, tuple[BudgetRule, ...]]:
    """A NodePool's ``disruption`` block: (policy, Never, consolidateAfter seconds, budgets)."""
    disruption = mapping(raw, where)
    policy = disruption.get("consolidationPolicy", "WhenEmptyOrUnderutilized")
    if policy not in POLICIES:
        raise InputError(
            f"{where}.consolidationPolicy: {preview(policy)} is not one of {', '.join(POLICIES)}"
        )
    after = disruption.get("consolidateAfter", "0s")
    never, seconds = after == "Never", 0
    if not never:
        if isinstance(after, bool) or not isinstance(after, (str, int)):
            raise InputError(
                f"{where}.consolidateAfter: {preview(after)} is not a duration like 30s or Never"
            )
        text = f"{after}s" if isinstance(after, int) else after
        try:
            seconds = int(parse_duration(text, field=f"{where}.consolidateAfter").total_seconds())
        except InputError:  # (its own message would not name Never)
            raise InputError(
                f"{where}.consolidateAfter: {preview(after)} is not a duration like 30s or Never"
            ) from None
    raw_budgets = listing(disruption.get("budgets"), f"{where}.budgets")
    rules = tuple(_budget(b, f"{where}.budgets[{i}]") for i, b in enumerate(raw_budgets))
    return str(policy), never, seconds, rules or (BudgetRule("10%"),)


# what ``parse_node_pool`` reads: of ``nodePool:`` (its spec's fields, or a whole object with
# ``spec``), of a whole object's metadata and of a node template; the rest is noted
READ = frozenset({"disruption", "instanceTypes", "template"})
OBJECT = frozenset({"apiVersion", "kind", "metadata", "spec", "status", "instanceTypes"})
TEMPLATE = frozenset({"metadata", "spec"})
TEMPLATE_SPEC = frozenset({"requirements", "taints", "startupTaints"})


def parse_node_pool(raw: Any, where: str = "nodePool", notes: list[str] | None = None) -> NodePool:
    """``nodePool:`` as a ``NodePool`` (absent: Karpenter's defaults, no instance types): its
    spec's fields, or a whole NodePool object (module docstring). Fields it does not read are
    added to ``notes`` (when given), one line each."""
    if raw is None:
        return NodePool()
    body = mapping(raw, where)
    fields, at, read = body, where, READ
    if "spec" in body:  # a whole NodePool object
        mixed = sorted(k for k in ("disruption", "template") if k in body)
        if mixed:
            raise InputError(
                f"{where}.{mixed[0]}: {where} is a NodePool object (it has spec), so give "
                f"{mixed[0]} in {where}.spec, not beside it"
            )
        kind = body.get("kind")
        if kind is not None and kind != "NodePool":
            raise InputError(f"{where}.kind: {preview(kind)} is not NodePool")
        fields, at = mapping(body.get("spec"), f"{where}.spec"), f"{where}.spec"
        read = READ - {"instanceTypes"}  # (beside spec: ``OBJECT``)
        _note(notes, where, body, OBJECT)
    _note(notes, at, fields, read)
    policy, never, after, rules = parse_disruption(fields.get("disruption"), f"{at}.disruption")
    shapes = [
        _shape(s, f"{where}.instanceTypes[{i}]", i)
        for i, s in enumerate(listing(body.get("instanceTypes"), f"{where}.instanceTypes"))
    ]
    template = mapping(fields.get("template"), f"{at}.template")
    _note(notes, f"{at}.template", template, TEMPLATE)
    meta = mapping(template.get("metadata"), f"{at}.template.metadata")
    labels = mapping(meta.get("labels"), f"{at}.template.metadata.labels")
    spec = mapping(template.get("spec"), f"{at}.template.spec")
    _note(notes, f"{at}.template.spec", spec, TEMPLATE_SPEC)
    requirements = parse_requirements(spec.get("requirements"), f"{at}.template.spec.requirements")
    taints = parse_taints(spec.get("taints"), f"{at}.template.spec.taints")
    return NodePool(
        policy,
        never,
        tuple(r.nodes for r in rules),
        tuple(sorted(shapes, key=lambda s: s.price)),
        after,
        rules,
        {str(k): str(v) for k, v in labels.items()},
        requirements,
        taints,
    )


def _note(
    notes: list[str] | None, where: str, body: Mapping[Any, Any], read: frozenset[str]
) -> None:
    """A note for each key of ``body`` not in ``read``: given, but not modelled."""
    if notes is None:
        return
    for key in body:
        if str(key) not in read:
            notes.append(f"{where}.{key}: not modelled; ignored")
