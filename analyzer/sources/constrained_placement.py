"""The generator's crowding placement, made to honour the pods' required scheduling constraints.

``crowding_place`` (``placement.py``) fills a few named nodes first and otherwise picks the least
allocated node; on its own it checks only resources and the pool mask (``PlacementRequest.allowed``:
nodeSelector, taints/tolerations). ``RequiredFilters`` adds, for the pods that carry them, the
constraints a real kube-scheduler would never break: required pod affinity and anti-affinity
(also another placed pod's required anti-affinity that matches this pod), DoNotSchedule topology
spread constraints and required node affinity. It runs the filters of a scheduling core profile
(``kube-default``'s: InterPodAffinity, PodTopologySpread, NodeAffinity, TaintToleration, …) over a
core state that follows the generator's (``kube_placement.CoreMirror``), and the crowding choice
is then made among the nodes that pass.

A pod with none of these constraints, that no placed pod's required anti-affinity term selects,
is placed exactly as before and costs nothing more: the core state catches up with the bind log
only when a constrained pod comes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from analyzer.scheduling import Profile, load_strategy
from analyzer.scheduling.affinity_types import AffinityTerm
from analyzer.scheduling.label_selectors import NOTHING
from analyzer.scheduling.pod_cells import labels_from_cell, topology_from_cells
from analyzer.scheduling.spread_types import DO_NOT_SCHEDULE
from analyzer.sources.kube_placement import CoreMirror
from analyzer.sources.placement import ClusterState, PlacementRequest, Placer, crowding_place

_EMPTY = ("", "{}", "[]", "null")


def _required_node_affinity(affinity: str) -> bool:
    data = json.loads(affinity) if affinity not in _EMPTY else {}
    node = data.get("nodeAffinity") if isinstance(data, dict) else None
    return bool(
        isinstance(node, dict) and node.get("requiredDuringSchedulingIgnoredDuringExecution")
    )


@dataclass
class RequiredFilters:
    """Which nodes a pod's required constraints allow (None: the pod has none to check).

    ``profile``'s filters decide; its scorers are never run (the placer chooses)."""

    profile: Profile
    mirror: CoreMirror = field(default_factory=CoreMirror, repr=False)
    # (namespace, affinity cell, spread cell) -> the pod's required anti-affinity terms, or None
    # when the pod carries no required constraint (templates share their cells: a small cache)
    _kinds: dict[tuple[str, str, str], tuple[AffinityTerm, ...] | None] = field(
        default_factory=dict, repr=False
    )
    # required anti-affinity terms of the constrained pods seen so far (they bind other pods too),
    # as a set and in the order they came (a term is only ever added)
    _anti: set[AffinityTerm] = field(default_factory=set, repr=False)
    _anti_order: list[AffinityTerm] = field(default_factory=list, repr=False)
    # (namespace, labels cell) -> (whether a term of ``_anti`` selects it, how many terms of
    # ``_anti_order`` were checked): a "no" is extended to the terms added since, never redone
    _selects: dict[tuple[str, str], tuple[bool, int]] = field(default_factory=dict, repr=False)

    def _required(self, pod: PlacementRequest) -> tuple[AffinityTerm, ...] | None:
        cells = pod.cells
        affinity = cells.get("affinity") or ""
        spread = cells.get("topology_spread") or ""
        key = (pod.namespace, affinity, spread)
        if key in self._kinds:
            return self._kinds[key]
        found: tuple[AffinityTerm, ...] | None = None
        if affinity not in _EMPTY or spread not in _EMPTY:
            # the selectors' own labels do not matter here: only whether required terms exist
            constraints, terms = topology_from_cells(affinity, spread, pod.namespace, {}, "pod")
            hard = terms is not None and bool(terms.required or terms.required_anti)
            hard = hard or any(c.when_unsatisfiable == DO_NOT_SCHEDULE for c in constraints)
            if hard or _required_node_affinity(affinity):
                found = terms.required_anti if terms is not None else ()
        self._kinds[key] = found
        return found

    def _selected(self, pod: PlacementRequest) -> bool:
        """Whether a seen required anti-affinity term may select ``pod`` (a namespace selector
        is not resolved here: such a term counts as selecting)."""
        terms = self._anti_order
        if not terms:
            return False
        key = (pod.namespace, pod.cells.get("labels", "{}"))
        found, checked = self._selects.get(key, (False, 0))
        if found or checked == len(terms):
            return found
        labels = labels_from_cell(key[1])
        found = any(
            t.namespace_selector is not NOTHING or t.matches(pod.namespace, labels, None)
            for t in terms[checked:]
        )
        self._selects[key] = (found, len(terms))
        return found

    def _add_anti(self, terms: tuple[AffinityTerm, ...]) -> None:
        for term in terms:
            if term not in self._anti:
                self._anti.add(term)
                self._anti_order.append(term)

    def __call__(self, pod: PlacementRequest, state: ClusterState) -> np.ndarray | None:
        if pod.daemonset:  # a DaemonSet pod keeps its one node
            return None
        anti = self._required(pod)
        if anti is None and not self._selected(pod):
            return None
        if anti:
            self._add_anti(anti)
        core = self.mirror.state(state)
        demand = self.mirror.demand(pod, core)
        feasible = np.ones(core.node_count, dtype=bool)
        for plugin in self.profile.filters:
            feasible &= plugin.filter(core, demand, float(pod.time)).feasible
        return feasible


def constrained_crowding_place(crowded: frozenset[str], strategy: str = "kube-default") -> Placer:
    """``crowding_place(crowded)`` among the nodes ``strategy``'s filters allow for the pods
    with required constraints (``RequiredFilters``)."""
    return crowding_place(crowded, RequiredFilters(load_strategy(strategy)))
