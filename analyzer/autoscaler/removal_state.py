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
    # pods left to finish (CA 1.36+ ``safe-to-evict: on-completion``): a removable node with
    # any is not deleted while they run (``BlockedByOnCompletionPod``, ``planner``)
    on_completion: tuple[CAPod, ...] = ()


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
# how many nodes from the walk's start ``first_fit_from`` asks one by one before the rest at once
NEAR = 32


def build_state(
    cluster: Cluster, pending: Sequence[CAPod] = ()
) -> tuple[ClusterState, dict[str, list[PodDemand]]]:
    """The scheduler state with every pod bound where it runs, and each node's demands
    (``pending``: pods not bound, whose resources the state must count too)."""
    extra = {
        r
        for pods in (*cluster.pods.values(), pending)
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
    the first node of the full filter mask (``first_fit_from`` with one mask)."""
    return first_fit_from(state, columns, feasible, None, start)


def first_fit_from(
    state: ClusterState,
    columns: list[tuple[int, int]] | None,
    base: np.ndarray,
    mask: np.ndarray | None,
    start: int,
) -> int | None:
    """The first node from ``start`` on (round-robin) that ``base`` and ``mask`` (the other
    filters; ``mask`` None: ``base`` alone) allow and NodeResourcesFit accepts (``columns``:
    its ``compared`` for the pod; None: fits nowhere): a pod slot free and each column's
    ``allocatable - requested >= request``, as ``NodeResourcesFit.fits_on``. The walk mostly
    stops within a few nodes of its start, so the ``NEAR`` nodes from ``start`` are asked one
    by one (a few integer reads each, no array made); the rest of the ring at once."""
    if columns is None:  # a resource no node offers: fits nowhere
        return None
    alloc, used, count, allowed = (
        state.allocatable,
        state.requested,
        state.pod_count,
        state.allowed_pods,
    )
    stop = min(start + NEAR, len(base))
    on_base = base.item
    on_mask = on_base if mask is None else mask.item
    pods, slots, free, held = count.item, allowed.item, alloc.item, used.item
    for i in range(start, stop):
        if on_base(i) and on_mask(i) and pods(i) < slots(i):
            for j, r in columns:
                if free(i, j) - held(i, j) < r:
                    break
            else:
                return i
    # the rest of the ring, in its order: after the walked nodes, then from 0 up to ``start``
    ok = base & (count < allowed)
    if mask is not None:
        ok &= mask
    for j, r in columns:
        ok &= alloc[:, j] - used[:, j] >= r
    ahead = np.flatnonzero(ok[stop:])
    if len(ahead):
        return stop + int(ahead[0])
    behind = np.flatnonzero(ok[:start])
    return int(behind[0]) if len(behind) else None
