"""kube-scheduler ``NodeAffinity`` as filter and score plugin (research/kube-plugins.md §4).

- Filter: nodeSelector + required node affinity (``constraints.NodeAffinityFilter``) and, when
  ``NodeAffinityArgs.addedAffinity`` has required terms, those too (one term must match).
- Score: raw = Σ weights of the pod's preferred terms and ``addedAffinity``'s preferred terms whose
  node-selector term matches the node (expressions ANDed; ``matchFields`` on ``metadata.name``;
  an empty term matches nothing). No preferred term at all: PreScore Skip (the plugin adds
  nothing).
- NormalizeScore: ``DefaultNormalizeScore(100, reverse=false)``: ``100 · raw / max`` over the
  feasible nodes, all 0 when ``max`` is 0.

Vectorised: without ``matchFields`` a term depends only on the node's labels, so it is evaluated
once per distinct label set and gathered; the per-node sum is cached per term list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.core.structured import plain
from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.constraint_types import (
    PreferredTerm,
    Requirement,
    parse_preferred_terms,
    parse_required_terms,
)
from analyzer.scheduling.fields import mapping
from analyzer.scheduling.framework import ExplainRow, FilterResult
from analyzer.scheduling.plugins.helper.node_constraints import AFFINITY_REASON, NodeAffinityFilter
from analyzer.scheduling.plugins.helper.normalize_score import default_normalize
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.versions import KubeVersion

_CACHE_KEY = "node_affinity_score.labels"


@dataclass(frozen=True)
class NodeAffinityArgs:
    """``NodeAffinityArgs``: ``addedAffinity`` applied to every pod of the profile."""

    added_required: tuple[tuple[Requirement, ...], ...] | None = None  # None: no added filter
    added_preferred: tuple[PreferredTerm, ...] = ()


def parse_node_affinity_args(raw: Mapping[str, Any] | None, where: str) -> NodeAffinityArgs:
    """Parse ``NodeAffinityArgs`` (``addedAffinity``: a NodeAffinity, required and preferred)."""
    raw = mapping(raw, where)
    unknown = sorted(plain(k) for k in raw if k not in ("addedAffinity", "apiVersion", "kind"))
    if unknown:
        raise InputError(f"{where}.{unknown[0]}: unknown field (valid: addedAffinity)")
    added = mapping(raw.get("addedAffinity"), f"{where}.addedAffinity")
    at = f"{where}.addedAffinity"
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    preferred = "preferredDuringSchedulingIgnoredDuringExecution"
    return NodeAffinityArgs(
        parse_required_terms(added.get(required), f"{at}.{required}"),
        parse_preferred_terms(added.get(preferred), f"{at}.{preferred}"),
    )


class _Labels:
    """Distinct label sets of the nodes, and the raw sums per preferred-term list."""

    def __init__(self, state: ClusterState) -> None:
        labels = state.node_labels or [{} for _ in state.node_names]
        position: dict[tuple[tuple[str, str], ...], int] = {}
        self.ids = np.array(
            [position.setdefault(tuple(sorted(d.items())), len(position)) for d in labels],
            np.int64,
        )
        self.sets = [dict(k) for k in position]
        self.raw: dict[tuple[PreferredTerm, ...], Int64Array] = {}
        self.required: dict[object, BoolArray] = {}


def _labels(state: ClusterState) -> _Labels:
    cached = state.cache.get(_CACHE_KEY)
    if isinstance(cached, _Labels) and len(cached.ids) == state.node_count:
        return cached
    made = _Labels(state)
    state.cache[_CACHE_KEY] = made
    return made


def term_matches(state: ClusterState, term: PreferredTerm) -> BoolArray:
    """Per node: whether ``term`` matches (labels, and ``metadata.name`` for matchFields)."""
    index = _labels(state)
    if term.fields:
        labels = state.node_labels or [{} for _ in state.node_names]
        return np.array(
            [term.matches(labels[i], name) for i, name in enumerate(state.node_names)], bool
        )
    per_set = np.array([term.matches(s, "") for s in index.sets], dtype=bool)
    result: BoolArray = per_set[index.ids]
    return result


def preferred_sum(state: ClusterState, terms: tuple[PreferredTerm, ...]) -> Int64Array:
    """Per node: Σ weights of the matching ``terms``."""
    index = _labels(state)
    total = index.raw.get(terms)
    if total is None:
        total = np.zeros(state.node_count, dtype=np.int64)
        for term in terms:
            total += np.where(term_matches(state, term), term.weight, 0)
        index.raw[terms] = total
    return total


class NodeAffinity(NodeAffinityFilter):
    """The NodeAffinity plugin: the filter (with added required terms) and the preferred score."""

    static_score = True  # raw reads only node taints/labels: the replay caches it per shape

    def __init__(self, args: NodeAffinityArgs | None = None, version: Any = None) -> None:
        super().__init__(args, version)
        self.affinity_args = args if isinstance(args, NodeAffinityArgs) else NodeAffinityArgs()
        self.top = version.max_node_score if isinstance(version, KubeVersion) else 100

    def terms(self, pod: PodDemand) -> tuple[PreferredTerm, ...]:
        """The pod's preferred terms followed by the profile's added ones."""
        return (*pod.constraints.preferred_terms, *self.affinity_args.added_preferred)

    def filter(self, state: ClusterState, pod: PodDemand, now: float) -> FilterResult:
        """The pod's nodeSelector/required affinity, and ``addedAffinity``'s required terms."""
        result = super().filter(state, pod, now)
        required = self.affinity_args.added_required
        if required is None:
            return result
        index = _labels(state)
        added = index.required.get(required)
        if added is None:
            per_set = np.array(
                [any(t and all(r.matches(s) for r in t) for t in required) for s in index.sets],
                dtype=bool,
            )
            added = per_set[index.ids]
            index.required[required] = added
        feasible = result.feasible & added
        return FilterResult(feasible, lambda node: [] if feasible[node] else [AFFINITY_REASON])

    def score(self, state: ClusterState, pod: PodDemand, now: float) -> Int64Array | None:
        """Raw Σ matching weights per node; None (PreScore Skip) without preferred terms."""
        terms = self.terms(pod)
        if not terms:
            return None
        return preferred_sum(state, terms)

    def normalize(self, raw: Int64Array, feasible: BoolArray) -> Int64Array:
        """``DefaultNormalizeScore(MaxNodeScore, reverse=false)`` over the feasible nodes."""
        return default_normalize(raw, feasible, reverse=False, top=self.top)

    def explain(
        self, state: ClusterState, pod: PodDemand, node: int, now: float
    ) -> list[ExplainRow]:
        """One row per preferred term: its weight when it matches ``node``, else 0."""
        rows = []
        own = len(pod.constraints.preferred_terms)
        for i, term in enumerate(self.terms(pod)):
            matched = bool(term_matches(state, term)[node])
            source = f"pod term {i}" if i < own else f"addedAffinity term {i - own}"
            rows.append(
                ExplainRow(
                    plugin=self.name,
                    resource=f"{source} (w{term.weight})",
                    requested=None,
                    allocatable=None,
                    utilisation=None,
                    score=term.weight if matched else 0,
                    note="matches" if matched else "does not match",
                )
            )
        return rows
