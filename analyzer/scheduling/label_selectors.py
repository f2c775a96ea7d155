"""Label selectors over pod labels (apimachinery ``metav1.LabelSelector`` → ``labels.Selector``).

Three selectors matter and are kept apart because kube-scheduler treats them differently:

- ``NOTHING`` — what ``LabelSelectorAsSelector(nil)`` gives (an absent ``labelSelector``): matches
  no pod;
- ``EVERYTHING`` — an empty selector ``{}``: ``Matches`` is true for every pod, but
  ``Selector.Empty()`` is true too, and PodTopologySpread's ``countPodsMatchSelector`` counts 0 for
  an empty selector (the incoming pod still "matches itself" in its Filter);
- a list of requirements (``matchLabels`` k: v = ``k In [v]``, ``matchExpressions`` with In, NotIn,
  Exists, DoesNotExist), all ANDed. Values must be valid label values, as
  ``LabelSelectorAsSelector`` demands (kube-scheduler fails PreFilter/PreScore otherwise).

Selectors are frozen and hashable so plugins can cache per-selector results (``pod_index``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import plain, preview
from analyzer.scheduling.constraint_types import Requirement
from analyzer.scheduling.fields import listing, mapping

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
# apimachinery validation.IsValidLabelValue: empty, or ≤ 63 alphanumerics, '-', '_', '.' with an
# alphanumeric at both ends (LabelSelectorAsSelector refuses other values)
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_LABEL_VALUE_HELP = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (at most 63 characters)"
)


def check_label_value(value: str, where: str) -> str:
    """``value`` if it is a valid label value, else an ``InputError`` in apimachinery's words."""
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        shown = plain(value)  # a value holding a line break stays on the one line
        raise InputError(f'{where}: Invalid value: "{shown}": {_LABEL_VALUE_HELP}')
    return value


@dataclass(frozen=True)
class LabelSelector:
    """ANDed requirements over labels; ``nothing`` = the nil selector that matches no object."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def __post_init__(self) -> None:
        # hashed once: the pod index looks kept counts up by selector for every scored pod
        object.__setattr__(self, "_hash", hash((self.requirements, self.nothing)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[no-any-return,attr-defined]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """``labels.Selector.Matches``."""
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    @property
    def empty(self) -> bool:
        """``labels.Selector.Empty()``: no requirement at all (the nil selector is not empty)."""
        return not self.nothing and not self.requirements

    def with_labels(self, extra: Mapping[str, str]) -> LabelSelector:
        """``extra`` as ``k In [v]`` requirements ANDed with this selector (``nothing`` stays)."""
        if self.nothing or not extra:
            return self
        added = tuple(Requirement(k, "In", (v,)) for k, v in sorted(extra.items()))
        return LabelSelector(added + self.requirements)

    def text(self) -> str:
        """A short human-readable form for ``--explain``."""
        if self.nothing:
            return "<none>"
        if not self.requirements:
            return "<everything>"
        parts = []
        for r in self.requirements:
            if r.operator in ("Exists", "DoesNotExist"):
                parts.append(r.key if r.operator == "Exists" else f"!{r.key}")
            else:
                op = "in" if r.operator == "In" else "notin"
                parts.append(f"{r.key} {op} ({','.join(r.values)})")
        return ",".join(parts)


NOTHING = LabelSelector(nothing=True)
EVERYTHING = LabelSelector()


def selector_from_map(raw: Any, where: str) -> LabelSelector:
    """A map selector (Service / ReplicationController ``spec.selector``): each k: v is k In [v]."""
    labels = mapping(raw, where)
    return LabelSelector(
        tuple(Requirement(str(k), "In", (str(v),)) for k, v in sorted(labels.items()))
    )


def _checked_map(raw: Any, where: str) -> LabelSelector:
    """``matchLabels``: a map selector whose values must be valid label values."""
    for key, value in mapping(raw, where).items():
        check_label_value(str(value), f"{where}.{plain(key)}")
    return selector_from_map(raw, where)


def parse_label_selector(raw: Any, where: str) -> LabelSelector:
    """A ``metav1.LabelSelector``; None → ``NOTHING``, ``{}`` → ``EVERYTHING``."""
    if raw is None:
        return NOTHING
    body = mapping(raw, where)
    requirements = list(_checked_map(body.get("matchLabels"), f"{where}.matchLabels").requirements)
    for i, item in enumerate(listing(body.get("matchExpressions"), f"{where}.matchExpressions")):
        at = f"{where}.matchExpressions[{i}]"
        item = mapping(item, at)
        key = item.get("key")
        if not isinstance(key, str) or not key:
            raise InputError(f"{at}.key: every requirement needs a key")
        operator = str(item.get("operator") or "")
        if operator not in SELECTOR_OPERATORS:
            raise InputError(
                f"{at}.operator: {preview(operator)} is not one of {', '.join(SELECTOR_OPERATORS)}"
            )
        values = tuple(
            check_label_value(str(v), f"{at}.values[{j}]")
            for j, v in enumerate(listing(item.get("values"), f"{at}.values"))
        )
        if operator in ("In", "NotIn") and not values:
            raise InputError(f"{at}.values: {operator} needs at least one value")
        if operator in ("Exists", "DoesNotExist") and values:
            raise InputError(f"{at}.values: {operator} takes no values")
        requirements.append(Requirement(key, operator, values))
    return LabelSelector(tuple(requirements))
