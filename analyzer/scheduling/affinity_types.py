"""A pod's inter-pod affinity terms (``spec.affinity.podAffinity`` / ``podAntiAffinity``), parsed.

Kept apart from the plugin (``interpodaffinity``) so ``PodDemand`` and ``PlacedPod`` can carry
them without an import cycle. What kube-scheduler's ``framework.AffinityTerm`` holds:

- ``selector``: the term's ``labelSelector`` (absent → matches no pod, ``{}`` → every pod);
- ``namespaces``: the listed ``namespaces`` ("" read as ``default``, like a pod without one); when the term lists none and has no
  ``namespaceSelector``, the namespace of the pod that owns the term;
- ``namespace_selector``: ``namespaceSelector`` over Namespace labels (absent → matches none,
  ``{}`` → every namespace).

A pod matches a term when its namespace is listed or its namespace's labels match the namespace
selector, and its labels match the selector (``AffinityTerm.Matches``). ``matchLabelKeys`` /
``mismatchLabelKeys`` are merged as the API server does at pod creation: each key the owning pod
carries adds ``key In [value]`` / ``key NotIn [value]`` to the selector.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.constraint_types import Requirement
from analyzer.scheduling.fields import listing, mapping
from analyzer.scheduling.kube_objects import DEFAULT_NAMESPACE
from analyzer.scheduling.label_selectors import NOTHING, LabelSelector, parse_label_selector

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


@dataclass(frozen=True)
class AffinityTerm:
    """One PodAffinityTerm, ready to match pods."""

    selector: LabelSelector
    topology_key: str
    namespaces: frozenset[str]
    namespace_selector: LabelSelector = NOTHING

    def matches(
        self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str] | None
    ) -> bool:
        """``AffinityTerm.Matches``: namespace listed or selected, then the label selector."""
        if namespace in self.namespaces or self.namespace_selector.matches(ns_labels or {}):
            return self.selector.matches(labels)
        return False


@dataclass(frozen=True)
class WeightedTerm:
    """A preferred term and its weight (1–100)."""

    weight: int
    term: AffinityTerm


@dataclass(frozen=True)
class PodAffinity:
    """Required and preferred pod affinity and anti-affinity terms of one pod."""

    required: tuple[AffinityTerm, ...] = ()
    required_anti: tuple[AffinityTerm, ...] = ()
    preferred: tuple[WeightedTerm, ...] = ()
    preferred_anti: tuple[WeightedTerm, ...] = ()

    def __post_init__(self) -> None:
        # hashed once: the pod index and the plugin's memo key on it for every scored pod
        fields = (self.required, self.required_anti, self.preferred, self.preferred_anti)
        object.__setattr__(self, "_hash", hash(fields))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[no-any-return,attr-defined]


def _term(raw: Any, where: str, namespace: str, labels: Mapping[str, str]) -> AffinityTerm:
    body = mapping(raw, where)
    selector = parse_label_selector(body.get("labelSelector"), f"{where}.labelSelector")
    extra: list[Requirement] = []
    for field, operator in (("matchLabelKeys", "In"), ("mismatchLabelKeys", "NotIn")):
        for key in listing(body.get(field), f"{where}.{field}"):
            if str(key) in labels:
                extra.append(Requirement(str(key), operator, (labels[str(key)],)))
    if extra and not selector.nothing:
        selector = LabelSelector(selector.requirements + tuple(extra))
    key = body.get("topologyKey", "")
    if not isinstance(key, str):
        raise InputError(f"{where}.topologyKey: {preview(key)} is not a label key")
    # "" is the namespace of objects written without one, which the loader calls "default"
    listed = frozenset(
        str(n) or DEFAULT_NAMESPACE for n in listing(body.get("namespaces"), f"{where}.namespaces")
    )
    raw_ns_selector = body.get("namespaceSelector")
    if not listed and raw_ns_selector is None:
        listed = frozenset({namespace})
    ns_selector = parse_label_selector(raw_ns_selector, f"{where}.namespaceSelector")
    return AffinityTerm(selector, key, listed, ns_selector)


def _weighted(raw: Any, where: str, namespace: str, labels: Mapping[str, str]) -> WeightedTerm:
    body = mapping(raw, where)
    weight = body.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
        raise InputError(
            f"{where}.weight: Invalid value: {preview(weight)}: must be in the range 1-100"
        )
    return WeightedTerm(weight, _term(body.get("podAffinityTerm"), f"{where}.podAffinityTerm",
                                      namespace, labels))  # fmt: skip


def parse_pod_affinity(
    spec: Mapping[str, Any], where: str, namespace: str, labels: Mapping[str, str]
) -> PodAffinity | None:
    """``spec.affinity.podAffinity`` / ``podAntiAffinity`` of a pod (None: neither is set)."""
    affinity = mapping(spec.get("affinity"), f"{where}.affinity")
    found: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        at = f"{where}.affinity.{kind}"
        body = mapping(affinity.get(kind), at)
        found[kind] = (
            tuple(
                _term(t, f"{at}.{REQUIRED}[{i}]", namespace, labels)
                for i, t in enumerate(listing(body.get(REQUIRED), f"{at}.{REQUIRED}"))
            ),
            tuple(
                _weighted(t, f"{at}.{PREFERRED}[{i}]", namespace, labels)
                for i, t in enumerate(listing(body.get(PREFERRED), f"{at}.{PREFERRED}"))
            ),
        )
    if affinity.get("podAffinity") is None and affinity.get("podAntiAffinity") is None:
        return None
    (required, preferred), (required_anti, preferred_anti) = (
        found["podAffinity"],
        found["podAntiAffinity"],
    )
    return PodAffinity(required, required_anti, preferred, preferred_anti)
