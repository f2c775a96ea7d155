"""Where the generator puts pods: the cluster state it tracks and the placement hook.

``generate(spec, place=...)`` accepts any ``Placer``: a function of the incoming pod
(``PlacementRequest``) and the current ``ClusterState`` returning a node index or ``None`` (the pod
stays pending and is retried when capacity frees). The default, ``least_allocated_place``, is a
simple least-allocated choice; an exact kube-scheduler profile can be plugged in instead. A placer
that also has a ``preempt`` method (``Preempter``, e.g. ``kube_placement.KubePlacer``) lets pods
that fit nowhere preempt lower-priority ones (``lifecycle_loop``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from analyzer.scheduling.pdb import DisruptionBudget
from analyzer.sources.catalog import RESOURCES


@dataclass(frozen=True)
class PlacementRequest:
    """The pod being placed.

    ``requests`` are the effective pod requests (``pod_requests``) plus ``pods: 1``;
    ``non_zero`` the kube-scheduler non-zero cpu/memory; ``allowed`` is a bool mask over nodes
    (nodeSelector, taints/tolerations, or the one node of a DaemonSet pod). ``ClusterState.fits``
    honours it; a placer may ignore it (the snapshot does not record these constraints).
    """

    uid: str
    requests: Mapping[str, int]
    non_zero: Mapping[str, int]
    allowed: np.ndarray
    priority: int
    daemonset: bool
    time: int  # unix seconds
    namespace: str = ""
    owner: tuple[str, str] = ("", "")  # the snapshot's owner_kind, owner_name
    # the pod's snapshot cells (JSON text): labels, tolerations, node_selector, affinity,
    # topology_spread — what an exact placer reads, as a replay of the snapshot will
    cells: Mapping[str, str] = field(default_factory=dict)


@dataclass
class ClusterState:
    """Nodes × resources arrays (resource order ``RESOURCES``), updated as pods bind and leave."""

    nodes: tuple[str, ...]
    pools: tuple[str, ...]
    resources: tuple[str, ...]
    allocatable: np.ndarray  # int64 [nodes, resources]
    requested: np.ndarray  # int64 [nodes, resources], "pods" counts pods
    non_zero_requested: np.ndarray  # int64 [nodes, 2]: cpu, memory
    # the snapshot's node cells (JSON text), for exact placers; empty: not given
    node_labels: tuple[str, ...] = ()
    node_taints: tuple[str, ...] = ()
    # the snapshot's kube_objects.json (``core.kube_objects.kept_objects``): the ReplicaSets and
    # StatefulSets an exact placer's default spreading reads; empty: none
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # every bind (+1) and unbind (-1) in order: (node, step, pod), so a placer keeping its own
    # state (placed pods' labels for spread and affinity) can follow incrementally
    log: list[tuple[int, int, PlacementRequest]] = field(default_factory=list)
    # the nodes that exist now (an autoscaled cluster's, updated in place; None: every node):
    # an exact placer's PodTopologySpread counts only these as domains, as upstream does
    present: np.ndarray | None = None
    # each placed pod's request vector (``vector``), built once for its fit, bind and unbind;
    # keyed by the request's id, the request kept so that the id stays its own
    _needs: dict[int, tuple[PlacementRequest, np.ndarray, tuple[tuple[int, int], ...]]] = field(
        default_factory=dict, repr=False, compare=False
    )
    # ``allocatable``'s cpu and memory as floats, and where they are > 0 (``shares``): the
    # placers' scores divide by them at every placement (``allocatable`` never changes in place)
    _shares: tuple[np.ndarray, np.ndarray, np.ndarray | None] | None = field(
        default=None, repr=False, compare=False
    )

    @classmethod
    def empty(
        cls, nodes: tuple[str, ...], pools: tuple[str, ...], allocatable: np.ndarray
    ) -> ClusterState:
        """A cluster with no pods bound."""
        return cls(
            nodes=nodes,
            pools=pools,
            resources=RESOURCES,
            allocatable=allocatable,
            requested=np.zeros_like(allocatable),
            non_zero_requested=np.zeros((len(nodes), 2), dtype=np.int64),
        )

    def vector(self, values: Mapping[str, int]) -> np.ndarray:
        """A resource map as an int64 vector in ``resources`` order (absent = 0)."""
        return np.array([values.get(r, 0) for r in self.resources], dtype=np.int64)

    def _entry(
        self, pod: PlacementRequest
    ) -> tuple[PlacementRequest, np.ndarray, tuple[tuple[int, int], ...]]:
        """(pod, ``vector(pod.requests)``, (column, amount) of each resource it requests),
        built once per request (read-only: they are shared)."""
        found = self._needs.get(id(pod))
        if found is None or found[0] is not pod:
            need = self.vector(pod.requests)
            need.flags.writeable = False
            asked = tuple((k, int(need[k])) for k in np.flatnonzero(need).tolist())
            found = self._needs[id(pod)] = (pod, need, asked)
        return found

    def _need(self, pod: PlacementRequest) -> np.ndarray:
        """``vector(pod.requests)``, built once per request (read-only: it is shared)."""
        return self._entry(pod)[1]

    def shares(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``allocatable[:, :2]`` (cpu, memory) as float64 columns (shape [2, nodes]), the same
        with 1 where it is not > 0 (a divisor), and where it is not > 0 (None: nowhere)."""
        if self._shares is None or self._shares[0].shape[1] != len(self.allocatable):
            alloc = np.ascontiguousarray(self.allocatable[:, :2].T, dtype=np.float64)
            empty = ~(alloc > 0)
            self._shares = (alloc, np.where(empty, 1.0, alloc), empty if empty.any() else None)
        return self._shares

    def bind(self, node: int, pod: PlacementRequest) -> None:
        """Account ``pod`` on ``node``."""
        self.requested[node] += self._need(pod)
        self.non_zero_requested[node] += (pod.non_zero["cpu"], pod.non_zero["memory"])
        self.log.append((node, 1, pod))

    def unbind(self, node: int, pod: PlacementRequest) -> None:
        """Release ``pod`` from ``node``."""
        self.requested[node] -= self._need(pod)
        self.non_zero_requested[node] -= (pod.non_zero["cpu"], pod.non_zero["memory"])
        self.log.append((node, -1, pod))

    def reserve(self, node: int, pod: PlacementRequest) -> None:
        """Hold ``pod``'s requests on ``node`` for it while it is nominated there (a preemptor
        whose victims terminate: ``lifecycle_loop``); its non-zero requests, which the scores
        read, are not counted (kube-scheduler adds nominated pods for the filters only)."""
        self.requested[node] += self._need(pod)
        self.log.append((node, 2, pod))

    def release(self, node: int, pod: PlacementRequest) -> None:
        """Undo ``reserve``."""
        self.requested[node] -= self._need(pod)
        self.log.append((node, -2, pod))

    def fits(self, pod: PlacementRequest) -> np.ndarray:
        """Bool mask of nodes where ``pod`` fits (NodeResourcesFit filter) and is allowed."""
        # a resource the pod does not request never stops it (even on an overcommitted node):
        # only the requested columns are compared, one at a time (cheaper than the whole table)
        result: np.ndarray = pod.allowed.copy()
        for k, amount in self._entry(pod)[2]:
            result &= self.requested[:, k] + amount <= self.allocatable[:, k]
        return result


Placer = Callable[[PlacementRequest, ClusterState], int | None]


class Running(NamedTuple):
    """A pod the scheduler placed, as preemption sees it: its node, request and bind time (ns)."""

    node: int
    request: PlacementRequest
    since_ns: int


@runtime_checkable
class Preempter(Protocol):
    """A placer that can also preempt (DefaultPreemption) when a pod fits nowhere."""

    def preempt(
        self,
        pod: PlacementRequest,
        state: ClusterState,
        now: int,
        lower: Sequence[Running],
        budgets: Sequence[DisruptionBudget] = (),
    ) -> tuple[int, list[str]] | None:
        """(node, victim uids) for ``pod`` at ``now`` (unix seconds), choosing among ``lower``
        (the placed pods of lower priority, in the order they were bound) and honouring
        ``budgets`` (PodDisruptionBudgets with their status now), or None."""
        ...


def preempter_of(place: Placer) -> Preempter | None:
    """``place`` when it can preempt, else None (the generator's pods then only wait)."""
    return place if isinstance(place, Preempter) else None


def least_allocated_place(pod: PlacementRequest, state: ClusterState) -> int | None:
    """Pick the feasible node with the most free non-zero cpu+memory share; lowest index on ties."""
    return _least_allocated(pod, state, state.fits(pod))


def _least_allocated(
    pod: PlacementRequest, state: ClusterState, feasible: np.ndarray
) -> int | None:
    if not feasible.any():
        return None
    alloc, divisor, empty = state.shares()
    used = state.non_zero_requested
    # each column's free share after the pod (0 where nothing is allocatable); the mean of the
    # two is their sum halved: the same order, so the same first maximum
    cpu = (alloc[0] - (used[:, 0] + pod.non_zero["cpu"])) / divisor[0]
    memory = (alloc[1] - (used[:, 1] + pod.non_zero["memory"])) / divisor[1]
    if empty is not None:
        cpu[empty[0]] = 0.0
        memory[empty[1]] = 0.0
    score = cpu + memory
    score[~feasible] = -np.inf
    return int(np.argmax(score))


# Extra filters for some pods: a mask of the nodes they allow, or None for a pod they do not concern
Refiner = Callable[[PlacementRequest, ClusterState], np.ndarray | None]


def crowding_place(crowded: frozenset[str], refine: Refiner | None = None) -> Placer:
    """``least_allocated_place``, except that the named nodes are filled first, fullest first.

    What a few nodes look like after a team's workloads were pinned to them for a while: their
    cpu runs out while memory is left over (stranded capacity, fragmentation). DaemonSet pods
    keep their node; a pod that fits no crowded node goes to the least allocated one. ``refine``
    (optional) narrows the feasible nodes of the pods it concerns, e.g. to those their required
    constraints allow (``constrained_placement.RequiredFilters``).
    """

    masks: dict[tuple[str, ...], np.ndarray] = {}  # the crowded nodes of a cluster's node list

    def place(pod: PlacementRequest, state: ClusterState) -> int | None:
        feasible = state.fits(pod)
        if refine is not None and feasible.any():
            allowed = refine(pod, state)
            if allowed is not None:
                feasible = feasible & allowed
        if pod.daemonset or not feasible.any():
            return _least_allocated(pod, state, feasible)
        chosen = masks.get(state.nodes)
        if chosen is None:
            chosen = masks[state.nodes] = np.array([name in crowded for name in state.nodes])
        mask = feasible & chosen
        if not mask.any():
            return _least_allocated(pod, state, feasible)
        alloc = np.maximum(state.shares()[0][0], 1.0)
        free_share = (state.allocatable[:, 0] - state.requested[:, 0]) / alloc
        free_share[~mask] = np.inf
        return int(np.argmin(free_share))

    return place
