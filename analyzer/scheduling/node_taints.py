"""Changing nodes' taints on a live ``ClusterState``, its taint caches following.

TaintToleration's filter and score, and NodeUnschedulable, keep per-taint-set masks in
``state.cache``; a taint set on a node after they were built must reach them. Used by an
autoscaler's own taints: Karpenter's disruption taint in the replay
(``analyzer.replay.karpenter_loop``) and cluster-autoscaler's ToBeDeleted taint on the node a
removal simulation drains (``analyzer.autoscaler.removal``).
"""

from __future__ import annotations

from collections.abc import Sequence

from analyzer.scheduling.constraint_types import Taint
from analyzer.scheduling.plugins.helper.node_constraints import _CACHE_KEY as CONSTRAINTS_KEY
from analyzer.scheduling.plugins.helper.node_constraints import retaint as retaint_filter
from analyzer.scheduling.plugins.nodeunschedulable import CACHE_KEY as CORDONED_KEY
from analyzer.scheduling.plugins.tainttoleration import _CACHE_KEY as TAINT_SCORE_KEY
from analyzer.scheduling.plugins.tainttoleration import retaint as retaint_score
from analyzer.scheduling.state import ClusterState


def set_node_taints(
    state: ClusterState, nodes: Sequence[int], taints: Sequence[tuple[Taint, ...]]
) -> None:
    """Give ``nodes`` the ``taints``, the per-taint-set caches following them as at a change of
    the snapshot's node states. A replay's caller tells its score cache
    (``node_state_changed``)."""
    if not state.node_taints:  # no node was tainted: every node's list made first
        state.node_taints = [() for _ in range(state.node_count)]
        forget_taint_caches(state)
    for node, value in zip(nodes, taints, strict=True):
        state.node_taints[node] = value
    retaint_filter(state, list(nodes))
    retaint_score(state, list(nodes))


def forget_taint_caches(state: ClusterState) -> None:
    """Drop the per-taint-set masks TaintToleration keeps in ``state.cache`` (rebuilt lazily)."""
    state.cache.pop(CONSTRAINTS_KEY, None)
    state.cache.pop(TAINT_SCORE_KEY, None)
    state.cache.pop(CORDONED_KEY, None)
