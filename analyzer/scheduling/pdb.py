"""PodDisruptionBudgets as preemption reads them (selectors: ``label_selectors``).

DefaultPreemption (research/kube-plugins.md §6, ``filterPodsWithPDBViolation``) reads of a PDB only
its namespace, ``spec.selector``, ``status.disruptionsAllowed`` and the names in
``status.disruptedPods``. An absent selector, and one with neither ``matchLabels`` nor
``matchExpressions`` (``selector.Empty()``), select no pod; an invalid one is refused with the
field named.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

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
