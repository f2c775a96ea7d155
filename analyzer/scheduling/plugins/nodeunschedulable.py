"""kube-scheduler ``NodeUnschedulable`` filter (upstream pkg/scheduler/framework/plugins/
nodeunschedulable).

A node whose ``spec.unschedulable`` is true (``kubectl cordon``, a drain, an autoscaler scaling it
down) refuses every pod that does not tolerate the taint
``node.kubernetes.io/unschedulable:NoSchedule`` (core/v1 ``ToleratesTaint``: a toleration with
an empty or equal key and effect, operator Exists or an equal value). The refusal is
UnschedulableAndUnresolvable ("node(s) were unschedulable"): preemption cannot help. The plugin
reads ``ClusterState.node_unschedulable`` (empty: no node cordoned, every node passes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from analyzer.scheduling.constraint_types import Taint, Toleration
from analyzer.scheduling.framework import FilterResult
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.versions import KubeVersion

NAME = "NodeUnschedulable"
REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
CACHE_KEY = "nodeunschedulable.cordoned"  # dropped by whoever changes node_unschedulable


def cordoned(state: ClusterState) -> np.ndarray:
    """``state.node_unschedulable`` as a boolean array, kept in ``state.cache`` (the filter runs
    for every shape and preemption attempt; building it from the list each time is O(nodes))."""
    cached = state.cache.get(CACHE_KEY)
    if not isinstance(cached, np.ndarray) or len(cached) != state.node_count:
        cached = np.zeros(state.node_count, dtype=bool)
        if state.node_unschedulable:
            cached[:] = state.node_unschedulable
        state.cache[CACHE_KEY] = cached
    return cached


def tolerates_unschedulable(tolerations: tuple[Toleration, ...]) -> bool:
    """Whether one of ``tolerations`` tolerates ``node.kubernetes.io/unschedulable:NoSchedule``."""
    return any(t.tolerates(UNSCHEDULABLE_TAINT) for t in tolerations)


class NodeUnschedulable:
    """The filter: cordoned nodes refuse pods without the unschedulable toleration."""

    name = NAME

    def __init__(self, args: Any = None, version: KubeVersion | None = None) -> None:
        self.args = args

    def filter(self, state: ClusterState, pod: PodDemand, now: float) -> FilterResult:
        """Every node not cordoned, and cordoned ones too when the pod tolerates it."""
        closed = cordoned(state)
        if not closed.any() or tolerates_unschedulable(pod.constraints.tolerations):
            feasible = np.ones(state.node_count, dtype=bool)
        else:
            feasible = ~closed
        return FilterResult(
            feasible,
            lambda node: [] if feasible[node] else [REASON],
            unresolvable=~feasible,
        )


def parse_args(raw: Any, where: str) -> None:
    """NodeUnschedulable takes no args."""
    return None
