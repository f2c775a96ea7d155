"""What cluster-autoscaler's removal simulation (``autoscaler.removal``) works on and answers.

``Outcome`` (one candidate's answer), ``LiveState`` (a caller's scheduler state simulated on in
place: the replay's), ``build_state`` (the state of one instant, ``analyzer autoscale``),
``hint_key`` (``HintKeyFromPod``) and ``first_fitting`` (the round-robin walk of
``SchedulerPluginRunner.RunFiltersUntilPassingNode`` from ``lastIndex``, also the replay's
scale-up side's). Split from ``removal`` so that module holds the simulator alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.autoscaler.cluster import Cluster
from analyzer.autoscaler.pods import CAPod
from analyzer.scheduling.state import ClusterState, PodDemand


@dataclass
class Outcome:
    """One candidate's simulation: removable with destinations, or the reason it is not."""

    node: str
    removable: bool
    reason: str = ""  # BlockedByPod | NoPlaceToMovePods
    blocking_pod: str = ""
    blocking_reason: str = ""
    moved: tuple[CAPod, ...] = ()
    destinations: dict[str, str] = field(default_factory=dict)
    risky: bool = False  # PDBs do not allow all its pods at once (sorted last)


@dataclass
class LiveState:
    """A caller's scheduler state to simulate on in place (the replay's): the pods of
    ``cluster.pods`` are bound on it already, ``demand_of`` maps each pod object (by ``id``) to
    its demand, ``destinations`` masks the nodes pods may move to (present, schedulable, not
    being deleted)."""

    state: ClusterState
    demand_of: dict[int, PodDemand]
    destinations: np.ndarray
    # the filters that read only the node and the pod's own constraints, kept per
    # (plugin, constraints object) while the caller's node labels, taints and cordons stay
    static: dict[tuple[Any, ...], Any] | None = None
    position: dict[str, int] | None = None  # node name -> index in ``cluster.nodes``, if known
    names: Sequence[str] | None = (
        None  # the names of ``cluster.nodes`` in order, if known (read only)
    )


# filters whose answer depends on the node's labels, taints and cordon and the pod's constraints
# (tolerations, node selector and affinity), never on the pods placed
STATIC_FILTERS = frozenset({"NodeUnschedulable", "TaintToleration", "NodeAffinity"})
# how far past the walk's start ``_first_fit`` looks for its first few nodes before the rest
NEAR = 32


def build_state(cluster: Cluster) -> tuple[ClusterState, dict[str, list[PodDemand]]]:
    """The scheduler state with every pod bound where it runs, and each node's demands."""
    extra = {
        r
        for pods in cluster.pods.values()
        for pod in pods
        for c in (*pod.obj.spec.containers, *pod.obj.spec.init_containers)
        for r in c.requests
    }
    nodes = cluster.nodes
    state = ClusterState.from_nodes(
        [n.name for n in nodes],
        [n.allocatable for n in nodes],
        extra_resources=extra,
        annotations=[dict(n.annotations) for n in nodes],
        labels=[dict(n.labels) for n in nodes],
        taints=[n.taints for n in nodes],
    )
    demands: dict[str, list[PodDemand]] = {}
    for i, node in enumerate(nodes):
        demands[node.name] = []
        for pod in cluster.pods.get(node.name, []):
            demand = pod.obj.demand(state.resources)
            state.bind(i, demand)
            demands[node.name].append(demand)
    return state, demands


def hint_key(pod: CAPod) -> str:
    """``HintKeyFromPod``: the pod's UID, else ``namespace/name``."""
    return pod.obj.uid or pod.key


def first_fitting(
    state: ClusterState,
    fit: Any,
    demand: PodDemand,
    columns: list[tuple[int, int]] | None,
    feasible: np.ndarray,
    start: int,
) -> int | None:
    """The first node from ``start`` on (round-robin) that ``feasible`` (the other filters)
    allows and NodeResourcesFit ``fit`` accepts (``columns``: ``fit.compared`` for ``demand``):
    the first node of the full filter mask. The walk mostly stops at the first nodes it looks
    at, so those are asked one by one (a few integer comparisons), the rest at once."""
    if columns is None:  # a resource no node offers: fits nowhere
        return None
    alloc, used, count, allowed = (
        state.allocatable,
        state.requested,
        state.pod_count,
        state.allowed_pods,
    )
    near = (np.flatnonzero(feasible[start : start + NEAR]) + start).tolist()[:4]
    for i in near:
        if count.item(i) < allowed.item(i) and all(
            alloc.item(i, j) - used.item(i, j) >= r for j, r in columns
        ):
            return int(i)
    # the rest of the walk, in its order, at once
    nodes = np.flatnonzero(feasible)
    cut = int(np.searchsorted(nodes, start))
    order = np.concatenate((nodes[cut:], nodes[:cut]))[len(near) :]
    if not len(order):
        return None
    ok = fit.fits_on(state, demand, order)
    return int(order[int(np.argmax(ok))]) if ok.any() else None
