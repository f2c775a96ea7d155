"""kube-scheduler ``TaintToleration`` as filter and score plugin (research/kube-plugins.md §3).

- Filter: unchanged (``analyzer.scheduling.plugins.helper.node_constraints.TaintTolerationFilter``).
- Score: raw = the node's taints with effect ``PreferNoSchedule`` that none of the pod's
  tolerations with an empty or ``PreferNoSchedule`` effect tolerates (NoSchedule/NoExecute taints
  are the filter's business). Toleration matching is core/v1 ``ToleratesTaint``, including the
  numeric ``Gt``/``Lt`` operators (gate TaintTolerationComparisonOperators; an unparsable value
  tolerates nothing and is no error).
- NormalizeScore: ``DefaultNormalizeScore(100, reverse=true)`` — fewer intolerable taints, higher
  score; no such taint on any feasible node: every node 100.

Vectorised like the filter: nodes share few taint sets, so the raw count is computed once per
distinct set and per distinct toleration list, then gathered over nodes (cached in
``ClusterState.cache``; a replay's node-state intervals update it through ``retaint``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.constraint_types import Taint, Toleration
from analyzer.scheduling.framework import ExplainRow
from analyzer.scheduling.plugins.helper.node_constraints import (
    TaintTolerationFilter,
    reassign_taint_sets,
)
from analyzer.scheduling.plugins.helper.normalize_score import default_normalize
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.versions import KubeVersion

PREFER_NO_SCHEDULE = "PreferNoSchedule"
_CACHE_KEY = "taint_score.sets"


def scoring_tolerations(tolerations: Sequence[Toleration]) -> tuple[Toleration, ...]:
    """The tolerations PreScore keeps: effect empty or ``PreferNoSchedule``."""
    return tuple(t for t in tolerations if t.effect in ("", PREFER_NO_SCHEDULE))


def intolerable(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> list[Taint]:
    """The node's PreferNoSchedule taints that no toleration tolerates (in node order)."""
    kept = scoring_tolerations(tolerations)
    return [
        t
        for t in taints
        if t.effect == PREFER_NO_SCHEDULE and not any(tol.tolerates(t) for tol in kept)
    ]


class _Sets:
    """Distinct taint sets of the nodes and the raw count per toleration list."""

    def __init__(self, state: ClusterState) -> None:
        taints = state.node_taints or [() for _ in state.node_names]
        position: dict[tuple[Taint, ...], int] = {}
        self.ids = np.array(
            [position.setdefault(tuple(t), len(position)) for t in taints], np.int64
        )
        self.sets = list(position)
        self.any_prefer = any(t.effect == PREFER_NO_SCHEDULE for s in self.sets for t in s)
        self.raw: dict[tuple[Toleration, ...], Int64Array] = {}
        self.zeros = np.zeros(len(self.ids), dtype=np.int64)  # shared: callers never write it


def _sets(state: ClusterState) -> _Sets:
    cached = state.cache.get(_CACHE_KEY)
    if isinstance(cached, _Sets) and len(cached.ids) == state.node_count:
        return cached
    sets = _Sets(state)
    state.cache[_CACHE_KEY] = sets
    return sets


def retaint(state: ClusterState, nodes: list[int]) -> None:
    """``nodes``' taints changed (a replay's node-state intervals): their set ids in the cached
    sets are updated in place and the raw counts recomputed at their next use."""
    sets = state.cache.get(_CACHE_KEY)
    if not isinstance(sets, _Sets) or not nodes:
        return
    reassign_taint_sets(sets.sets, sets.ids, state, nodes)
    sets.any_prefer = any(t.effect == PREFER_NO_SCHEDULE for s in sets.sets for t in s)
    sets.raw = {}


def raw_counts(state: ClusterState, pod: PodDemand) -> Int64Array:
    """Per node: the number of PreferNoSchedule taints the pod does not tolerate."""
    sets = _sets(state)
    if not sets.any_prefer:
        return sets.zeros
    key = scoring_tolerations(pod.constraints.tolerations)
    counts = sets.raw.get(key)
    if counts is None:
        per_set = np.array([len(intolerable(s, key)) for s in sets.sets], dtype=np.int64)
        counts = per_set[sets.ids]
        sets.raw[key] = counts
    return counts


class TaintToleration(TaintTolerationFilter):
    """The TaintToleration plugin: the filter plus the PreferNoSchedule score."""

    static_score = True  # raw reads only node taints/labels: the replay caches it per shape

    def __init__(self, args: Any = None, version: KubeVersion | None = None) -> None:
        super().__init__(args, version)
        self.top = 100 if version is None else version.max_node_score

    def score(self, state: ClusterState, pod: PodDemand, now: float) -> Int64Array:
        """Raw score: intolerable PreferNoSchedule taints per node (before NormalizeScore)."""
        return raw_counts(state, pod)

    def normalize(self, raw: Int64Array, feasible: BoolArray) -> Int64Array:
        """``DefaultNormalizeScore(MaxNodeScore, reverse=true)`` over the feasible nodes."""
        return default_normalize(raw, feasible, reverse=True, top=self.top)

    def explain(
        self, state: ClusterState, pod: PodDemand, node: int, now: float
    ) -> list[ExplainRow]:
        """The intolerable PreferNoSchedule taints of ``node`` (raw count as the score)."""
        taints = state.node_taints[node] if state.node_taints else ()
        bad = intolerable(taints, pod.constraints.tolerations)
        listed = ", ".join(f"{t.key}={t.value}" for t in bad) or "none"
        return [
            ExplainRow(
                plugin=self.name,
                resource="PreferNoSchedule taints",
                requested=None,
                allocatable=None,
                utilisation=None,
                score=len(bad),
                note=f"raw = intolerable taints ({listed}); normalised 100 − 100·raw/max, reversed",
            )
        ]
