"""Scheduling-constraint objects: taints, tolerations, node-selector requirements; their parsing.

Kept apart from the filters (``analyzer.scheduling.plugins.helper.node_constraints``) so ``PodDemand`` can hold a pod's
``PodConstraints`` without an import cycle. Matching follows k8s.io/api core/v1 ``ToleratesTaint``
and the labels.Selector rules for NodeSelectorRequirement.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import describe_value, preview
from analyzer.scheduling.fields import listing, mapping, string_map, text

FILTERED_EFFECTS = ("NoSchedule", "NoExecute")
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
TOLERATION_OPERATORS = ("Equal", "Exists", "Gt", "Lt")  # Gt/Lt: TaintTolerationComparisonOperators
_INT64 = re.compile(r"[+-]?[0-9]+")


def go_int64(text: str) -> int | None:
    """Go ``strconv.ParseInt(text, 10, 64)``: the value, or None when it fails (no spaces, no ``_``)."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(1 << 63) <= value < (1 << 63) else None


@dataclass(frozen=True)
class Taint:
    """A node taint."""

    key: str
    value: str = ""
    effect: str = ""


# Taints cluster-autoscaler and Karpenter put on nodes they are about to remove or consolidate:
# transient by nature, never a property of the node (a replay applies them only while they held,
# from the snapshot's node_state_intervals; the collector keeps them out of nodes.taints).
AUTOSCALER_TAINT_KEYS = (
    "ToBeDeletedByClusterAutoscaler",
    "DeletionCandidateOfClusterAutoscaler",
    "karpenter.sh/disrupted",
    "karpenter.sh/disruption",
)


@dataclass(frozen=True)
class Toleration:
    """A pod toleration. ``seconds`` (``tolerationSeconds``) does not affect scheduling: it
    bounds how long a pod stays on a node that gets a NoExecute taint it tolerates (None: for
    ever; the replay's ``analyzer.replay.node_state``)."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """core/v1 ``ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        if self.operator in ("Gt", "Lt"):  # int64 comparison; either value unparsable: no match
            have, want = go_int64(taint.value), go_int64(self.value)
            if have is None or want is None:
                return False
            return have > want if self.operator == "Gt" else have < want
        return False


@dataclass(frozen=True)
class Requirement:
    """One NodeSelectorRequirement (``matchExpressions`` item)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether a node with ``labels`` satisfies the requirement (labels.Selector rules)."""
        present = self.key in labels
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if not present or len(self.values) != 1:
            return False
        try:  # Gt/Lt compare integers; an unparsable label never matches
            have, want = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return have > want if self.operator == "Gt" else have < want


@dataclass(frozen=True)
class PreferredTerm:
    """One ``preferredDuringSchedulingIgnoredDuringExecution`` entry: a weight and a node term.

    The term matches when every label expression and every field expression (``metadata.name``)
    holds; a term with neither matches no node (upstream ``NodeSelectorTerm`` rules).
    """

    weight: int
    expressions: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        """Whether a node with ``labels`` called ``node_name`` matches the term."""
        if not self.expressions and not self.fields:
            return False
        if not all(r.matches(labels) for r in self.expressions):
            return False
        names = {"metadata.name": node_name}
        return all(r.matches(names) for r in self.fields)


@dataclass(frozen=True)
class PodConstraints:
    """A pod's tolerations, nodeSelector and required node-affinity terms (hashable signature)."""

    tolerations: tuple[Toleration, ...] = ()
    node_selector: tuple[tuple[str, str], ...] = ()
    required_terms: tuple[tuple[Requirement, ...], ...] | None = None  # None: no required affinity
    preferred_terms: tuple[PreferredTerm, ...] = ()  # preferred node affinity (NodeAffinity score)

    def tolerates_all(self, taints: Sequence[Taint]) -> Taint | None:
        """The first filtering taint no toleration tolerates (None: all tolerated)."""
        for taint in taints:
            if taint.effect in FILTERED_EFFECTS and not any(
                t.tolerates(taint) for t in self.tolerations
            ):
                return taint
        return None

    def matches(self, labels: Mapping[str, str]) -> bool:
        """NodeAffinity: nodeSelector exact match and, if set, one required term matching."""
        if any(labels.get(k) != v for k, v in self.node_selector):
            return False
        if self.required_terms is None:
            return True
        return any(term and all(r.matches(labels) for r in term) for term in self.required_terms)


NO_CONSTRAINTS = PodConstraints()


def parse_taints(raw: Any, where: str) -> tuple[Taint, ...]:
    """``spec.taints`` (list of {key, value, effect})."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError(f"{where}: expected a list of taints")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or not item.get("key"):
            raise InputError(f"{where}[{i}].key: every taint needs a key")
        at = f"{where}[{i}]"
        out.append(
            Taint(
                text(item["key"], f"{at}.key"),
                text(item.get("value"), f"{at}.value"),
                text(item.get("effect"), f"{at}.effect"),
            )
        )
    return tuple(out)


def parse_tolerations(raw: Any, where: str) -> tuple[Toleration, ...]:
    """``spec.tolerations`` (list of {key, operator, value, effect})."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError(f"{where}: expected a list of tolerations")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise InputError(f"{where}[{i}]: expected a mapping")
        at = f"{where}[{i}]"
        operator = text(item.get("operator"), f"{at}.operator") or "Equal"
        if operator not in TOLERATION_OPERATORS:
            raise InputError(
                f"{at}.operator: {preview(operator)} is not one of "
                + ", ".join(TOLERATION_OPERATORS)
            )
        out.append(
            Toleration(
                text(item.get("key"), f"{at}.key"),
                operator,
                text(item.get("value"), f"{at}.value"),
                text(item.get("effect"), f"{at}.effect"),
                _seconds(item.get("tolerationSeconds"), f"{at}.tolerationSeconds"),
            )
        )
    return tuple(out)


def _seconds(raw: Any, where: str) -> int | None:
    """``tolerationSeconds``: an integer (a string of one, as kube-state-metrics' label holds
    it); absent or empty: None. Negative values mean "evict at once" upstream (kept as given)."""
    if raw is None or raw == "":
        return None
    if isinstance(raw, bool):
        raise InputError(f"{where}: expected an integer number of seconds, got {raw!r}")
    try:
        return int(str(raw).strip())
    except ValueError:
        raise InputError(
            f"{where}: expected an integer number of seconds, got {preview(str(raw))}"
        ) from None


def _requirements(raw: Any, where: str) -> tuple[Requirement, ...]:
    out = []
    for i, item in enumerate(listing(raw, where)):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping) or not item.get("key"):
            raise InputError(f"{at}.key: every requirement needs a key")
        operator = text(item.get("operator"), f"{at}.operator")
        if operator not in OPERATORS:
            raise InputError(
                f"{at}.operator: {preview(operator)} is not one of {', '.join(OPERATORS)}"
            )
        values = tuple(
            text(v, f"{at}.values[{j}]")
            for j, v in enumerate(listing(item.get("values"), f"{at}.values"))
        )
        out.append(Requirement(text(item["key"], f"{at}.key"), operator, values))
    return tuple(out)


def parse_requirements(raw: Any, where: str) -> tuple[Requirement, ...]:
    """A list of NodeSelectorRequirements (``matchExpressions``; a Karpenter NodePool's
    ``template.spec.requirements``)."""
    return _requirements(raw, where)


def parse_required_terms(required: Any, at: str) -> tuple[tuple[Requirement, ...], ...] | None:
    """``requiredDuringSchedulingIgnoredDuringExecution`` (a NodeSelector) → its terms, or None."""
    if required is None:
        return None
    terms = listing(mapping(required, at).get("nodeSelectorTerms"), f"{at}.nodeSelectorTerms")
    return tuple(
        _requirements(
            mapping(t, f"{at}.nodeSelectorTerms[{i}]").get("matchExpressions"),
            f"{at}.nodeSelectorTerms[{i}].matchExpressions",
        )
        for i, t in enumerate(terms)
    )


def parse_preferred_terms(raw: Any, where: str) -> tuple[PreferredTerm, ...]:
    """``preferredDuringSchedulingIgnoredDuringExecution``: [{weight 1..100, preference}]."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError(f"{where}: expected a list of {{weight, preference}}")
    out = []
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            raise InputError(f"{at}: expected a mapping with weight and preference")
        weight = item.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int) or not 1 <= weight <= 100:
            raise InputError(
                f"{at}.weight: Invalid value: {describe_value(weight)}: must be in the range 1-100"
            )
        preference = item.get("preference") or {}
        if not isinstance(preference, Mapping):
            raise InputError(f"{at}.preference: expected a node selector term")
        fields = _requirements(preference.get("matchFields"), f"{at}.preference.matchFields")
        for j, req in enumerate(fields):
            if req.key != "metadata.name":
                raise InputError(
                    f"{at}.preference.matchFields[{j}].key: {preview(req.key)} is not supported "
                    "(only metadata.name)"
                )
        out.append(
            PreferredTerm(
                weight,
                _requirements(
                    preference.get("matchExpressions"), f"{at}.preference.matchExpressions"
                ),
                fields,
            )
        )
    return tuple(out)


def parse_pod_constraints(spec: Mapping[str, Any], where: str) -> PodConstraints:
    """Tolerations, nodeSelector and required node affinity of a Pod ``spec``."""
    selector = spec.get("nodeSelector") or {}
    if not isinstance(selector, Mapping):
        raise InputError(
            f"{where}.nodeSelector: expected a mapping of label → value, "
            f"got {describe_value(selector)}"
        )
    body = spec.get("affinity") or {}
    if not isinstance(body, Mapping):
        raise InputError(f"{where}.affinity: expected a mapping, got {type(body).__name__}")
    affinity = mapping(body.get("nodeAffinity"), f"{where}.affinity.nodeAffinity")
    terms = parse_required_terms(
        affinity.get("requiredDuringSchedulingIgnoredDuringExecution"),
        f"{where}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
    )
    constraints = PodConstraints(
        parse_tolerations(spec.get("tolerations"), f"{where}.tolerations"),
        tuple(sorted(string_map(selector, f"{where}.nodeSelector").items())),
        terms,
        parse_preferred_terms(
            affinity.get("preferredDuringSchedulingIgnoredDuringExecution"),
            f"{where}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
        ),
    )
    return NO_CONSTRAINTS if constraints == NO_CONSTRAINTS else constraints


def taints_from_json(text: object, where: str = "nodes.taints") -> tuple[Taint, ...]:
    """A snapshot ``taints`` cell (JSON list; missing/empty = none)."""
    return parse_taints(json_cell(text, "[]", where), where)


def constraints_from_json(
    tolerations: object, selector: object, affinity: object = None
) -> PodConstraints:
    """A pod's constraints from the snapshot ``tolerations``, ``node_selector`` and ``affinity``
    cells (the last one's required node affinity; its pod terms are not constraints here)."""
    spec = {
        "tolerations": json_cell(tolerations, "[]", "pods.tolerations"),
        "nodeSelector": json_cell(selector, "{}", "pods.node_selector"),
    }
    raw = json_cell(affinity, "{}", "pods.affinity")
    node_affinity = raw.get("nodeAffinity") if isinstance(raw, dict) else None
    if node_affinity:
        spec["affinity"] = {"nodeAffinity": node_affinity}
    return parse_pod_constraints(spec, "pods")


def json_cell(text: object, default: str, where: str) -> Any:
    """A snapshot's JSON cell (``default`` when empty); bad JSON is an ``InputError`` naming it."""
    if not isinstance(text, str) or not text:
        text = default
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # a cell nested past the parser
        raise InputError(
            f"{where}: {text[:40]!r} is not valid JSON; re-create the snapshot"
        ) from None
