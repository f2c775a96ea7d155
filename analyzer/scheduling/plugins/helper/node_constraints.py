"""kube-scheduler ``TaintToleration`` and ``NodeAffinity`` filters, vectorised over nodes.

Upstream rules (k8s.io/api core/v1 ``ToleratesTaint``, kube-scheduler plugins):

- TaintToleration filter: every taint with effect NoSchedule or NoExecute must be tolerated;
  PreferNoSchedule never filters. A toleration matches a taint when its effect is empty or equal,
  its key is empty or equal, and operator Exists, or operator Equal/"" with equal values. The
  refusal names the first untolerated taint: "node(s) had untolerated taint {key: value}".
- NodeAffinity filter: every ``nodeSelector`` label must be present with the exact value, and when
  ``requiredDuringSchedulingIgnoredDuringExecution`` is set, at least one nodeSelectorTerm must
  match (requirements within a term are ANDed; In/NotIn/Exists/DoesNotExist/Gt/Lt; a term with no
  requirement matches nothing). Refusal: "node(s) didn't match Pod's node affinity/selector".

Speed: nodes share few distinct taint sets and label sets, so each node gets an integer id of its
set; a pod's constraints (hashable, the pod's *signature*) are checked once per distinct set and
the per-node mask is one numpy gather, cached per signature in ``ClusterState.cache``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.constraint_types import PodConstraints, Taint, Toleration
from analyzer.scheduling.framework import FilterResult
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.versions import KubeVersion

TAINT_NAME = "TaintToleration"
AFFINITY_NAME = "NodeAffinity"
AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
_CACHE_KEY = "constraints.index"


@dataclass
class _Index:
    """Distinct taint sets / label sets of the nodes and per-signature masks."""

    taint_sets: list[tuple[Taint, ...]]
    taint_ids: Int64Array
    label_sets: list[dict[str, str]]
    label_ids: Int64Array
    taint_masks: dict[tuple[Toleration, ...], tuple[BoolArray, list[Taint | None]]] = field(
        default_factory=dict
    )
    label_masks: dict[tuple[object, object], BoolArray] = field(default_factory=dict)


def _index(state: ClusterState) -> _Index:
    cached = state.cache.get(_CACHE_KEY)
    if isinstance(cached, _Index):
        return cached
    taints = state.node_taints or [() for _ in state.node_names]
    taint_pos: dict[tuple[Taint, ...], int] = {}
    taint_ids = np.array([taint_pos.setdefault(tuple(t), len(taint_pos)) for t in taints], np.int64)
    label_pos: dict[tuple[tuple[str, str], ...], int] = {}
    labels = state.node_labels or [{} for _ in state.node_names]
    label_ids = np.array(
        [label_pos.setdefault(tuple(sorted(d.items())), len(label_pos)) for d in labels], np.int64
    )
    index = _Index(list(taint_pos), taint_ids, [dict(k) for k in label_pos], label_ids)
    state.cache[_CACHE_KEY] = index
    return index


def reassign_taint_sets(
    taint_sets: list[tuple[Taint, ...]], ids: Int64Array, state: ClusterState, nodes: list[int]
) -> None:
    """``nodes``' taints changed: point each at its taint set's id in ``ids`` (in place),
    appending a set to ``taint_sets`` when it was not seen before. Shared by the filter's index
    and TaintToleration's score sets, which both number the distinct taint sets of the nodes."""
    position = {taints: i for i, taints in enumerate(taint_sets)}
    for node in nodes:
        taints = tuple(state.node_taints[node])
        at = position.get(taints)
        if at is None:
            at = position[taints] = len(taint_sets)
            taint_sets.append(taints)
        ids[node] = at


def retaint(state: ClusterState, nodes: list[int]) -> None:
    """``nodes``' taints changed in ``state.node_taints`` (a replay's node-state intervals):
    update the cached index in place — their taint-set ids, a new set appended when unseen, and
    each toleration signature's mask on those nodes (a new array: masks already handed out stay
    as they were). The label part is untouched (labels never change)."""
    index = state.cache.get(_CACHE_KEY)
    if not isinstance(index, _Index) or not nodes:
        return
    reassign_taint_sets(index.taint_sets, index.taint_ids, state, nodes)
    rows = np.array(nodes, dtype=np.int64)
    for key, (mask, first) in list(index.taint_masks.items()):
        who = PodConstraints(tolerations=key)
        first.extend(who.tolerates_all(s) for s in index.taint_sets[len(first) :])
        ok = np.array([f is None for f in first], dtype=bool)
        fresh = mask.copy()
        fresh[rows] = ok[index.taint_ids[rows]]
        index.taint_masks[key] = (fresh, first)


def taint_mask(state: ClusterState, pod: PodDemand) -> tuple[BoolArray, list[Taint | None]]:
    """Per node: all filtering taints tolerated; and per distinct taint set the refusing taint."""
    index = _index(state)
    key = pod.constraints.tolerations
    if key not in index.taint_masks:
        first = [pod.constraints.tolerates_all(s) for s in index.taint_sets]
        ok = np.array([f is None for f in first], dtype=bool)
        index.taint_masks[key] = (ok[index.taint_ids], first)
    return index.taint_masks[key]


def affinity_mask(state: ClusterState, pod: PodDemand) -> BoolArray:
    """Per node: the pod's nodeSelector and required node affinity match the node's labels."""
    index = _index(state)
    constraints = pod.constraints
    key = (constraints.node_selector, constraints.required_terms)  # tolerations do not matter
    if key not in index.label_masks:
        ok = np.array([constraints.matches(s) for s in index.label_sets], dtype=bool)
        index.label_masks[key] = ok[index.label_ids]
    return index.label_masks[key]


class TaintTolerationFilter:
    """The TaintToleration filter (the score: ``taint_score.TaintToleration``)."""

    name = TAINT_NAME

    def __init__(self, args: Any = None, version: KubeVersion | None = None) -> None:
        self.args = args

    def filter(self, state: ClusterState, pod: PodDemand, now: float) -> FilterResult:
        """Nodes whose NoSchedule/NoExecute taints the pod tolerates."""
        feasible, first = taint_mask(state, pod)
        ids = _index(state).taint_ids

        def reasons(node: int) -> list[str]:
            taint = first[int(ids[node])]
            return [] if taint is None else [_taint_reason(taint)]

        return FilterResult(feasible, reasons, unresolvable=~feasible)


class NodeAffinityFilter:
    """The NodeAffinity filter (nodeSelector + required affinity; the score and addedAffinity:
    ``node_affinity_score.NodeAffinity``)."""

    name = AFFINITY_NAME

    def __init__(self, args: Any = None, version: KubeVersion | None = None) -> None:
        self.args = args

    def filter(self, state: ClusterState, pod: PodDemand, now: float) -> FilterResult:
        """Nodes matching the pod's nodeSelector and required node affinity."""
        feasible = affinity_mask(state, pod)
        return FilterResult(
            feasible,
            lambda node: [] if feasible[node] else [AFFINITY_REASON],
            unresolvable=~feasible,
        )


def _taint_reason(taint: Taint) -> str:
    return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"


def parse_args(raw: Mapping[str, Any] | None, where: str) -> None:
    """TaintToleration takes no args (NodeAffinity's ``addedAffinity``: ``node_affinity_score``)."""
    if raw and raw.get("addedAffinity"):
        raise InputError(f"{where}.addedAffinity: not modelled; remove it to use NodeAffinity")
