"""PodDisruptionBudgets as preemption reads them, and metav1 label selectors.

DefaultPreemption (research/kube-plugins.md §6, ``filterPodsWithPDBViolation``) reads of a PDB only
its namespace, ``spec.selector``, ``status.disruptionsAllowed`` and the names in
``status.disruptedPods``. A selector with neither ``matchLabels`` nor ``matchExpressions`` matches
nothing (``selector.Empty()``); an invalid one is refused here with the field named.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from analyzer.core.errors import InputError
from analyzer.scheduling.constraint_types import Requirement
from analyzer.scheduling.fields import integer, listing, mapping

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True)
class LabelSelector:
    """A metav1.LabelSelector: matchLabels and matchExpressions, ANDed."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        """No requirement at all (a PDB with it selects no pod)."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Every requirement holds for ``labels``."""
        return all(r.matches(labels) for r in self.requirements)


def parse_label_selector(raw: Any, where: str) -> LabelSelector:
    """Parse ``{matchLabels: {k: v}, matchExpressions: [{key, operator, values}]}``."""
    raw = mapping(raw, where)
    reqs = [
        Requirement(str(k), "In", (str(v),))
        for k, v in mapping(raw.get("matchLabels"), f"{where}.matchLabels").items()
    ]
    for i, item in enumerate(listing(raw.get("matchExpressions"), f"{where}.matchExpressions")):
        at = f"{where}.matchExpressions[{i}]"
        item = mapping(item, at)
        key, operator = item.get("key"), item.get("operator")
        if not isinstance(key, str) or not key:
            raise InputError(f"{at}.key: every requirement needs a key")
        if operator not in SELECTOR_OPERATORS:
            raise InputError(
                f"{at}.operator: {operator!r} is not one of {', '.join(SELECTOR_OPERATORS)}"
            )
        values = tuple(str(v) for v in listing(item.get("values"), f"{at}.values"))
        if operator in ("In", "NotIn") and not values:
            raise InputError(f"{at}.values: Required value: {operator} needs at least one value")
        reqs.append(Requirement(key, str(operator), values))
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True)
class DisruptionBudget:
    """What preemption reads of a PodDisruptionBudget."""

    name: str
    namespace: str
    selector: LabelSelector
    disruptions_allowed: int
    disrupted_pods: frozenset[str] = frozenset()

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
    return DisruptionBudget(
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or "default"),
        selector=parse_label_selector(spec.get("selector"), f"{where}.spec.selector"),
        disruptions_allowed=allowed,
        disrupted_pods=frozenset(str(k) for k in disrupted),
    )


def disruption_budgets(objects: Iterable[Any], where: str) -> list[DisruptionBudget]:
    """The PodDisruptionBudget objects of a list of Kubernetes objects (others ignored)."""
    return [
        parse_pdb(obj, f"{where}[{i}]")
        for i, obj in enumerate(objects)
        if isinstance(obj, Mapping) and obj.get("kind") == "PodDisruptionBudget"
    ]
