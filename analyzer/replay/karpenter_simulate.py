"""Karpenter's consolidation simulation on the replay's live state (``SimulateScheduling`` in
kubernetes-sigs/karpenter ``pkg/controllers/disruption/helpers.go``): which of the candidates'
pods fit on no node that stays, and which kept answers a node that freed room could change.

As upstream, the simulation schedules the cluster's pending pods together with the candidates'
pods: the pending pods take room the candidates' pods could otherwise use (on a node launched for
them and Ready, or on the nodes still launching: upstream's in-flight NodeClaims, which only
pending pods may use; a candidate's pod placed on a node that is not initialized fails the
command). A pending pod that fits nowhere needs a new node (upstream's ``NewNodeClaims``), so it
counts among the requests left over, unless no shape of the pool holds it alone (upstream: a
scheduling error of a pending pod, which ``AllNonPendingPodsScheduled`` ignores; the caller
leaves out the pending pods no pool could launch a node for).

The pods are re-placed largest first (cpu, then memory) on the first node that passes the
resources they request and then the profile's filters, bound in the simulation so that the next
pod sees them; every bind and unbind is undone before returning.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import groupby
from operator import itemgetter
from typing import Any, NamedTuple, TypeVar

import numpy as np

from analyzer.autoscaler.nodepool import Shape
from analyzer.replay.karpenter_provision import holds
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.spread_types import DO_NOT_SCHEDULE
from analyzer.scheduling.state import ClusterState, PodDemand

Key = TypeVar("Key", bound=Hashable)
# a bound above every node number (``stale_answers``): room freed on any node counts
FREED_ANYWHERE = 1 << 62


def leftover(
    state: ClusterState,
    profile: Profile,
    demands: Sequence[PodDemand],
    moves: Sequence[tuple[int, int]],
    allowed: np.ndarray[Any, Any],
    shapes: Sequence[Shape],
    seconds: float,
    fast: bool = True,
    needs: dict[int, Need] | None = None,
    pending: Sequence[int] = (),
    inflight: np.ndarray[Any, Any] | None = None,
    requests: np.ndarray[Any, Any] | None = None,
    within: Sequence[Shape] | None = None,
    spare: np.ndarray[Any, Any] | None = None,
    masks: dict[Any, np.ndarray[Any, Any]] | None = None,
    reads: Reads | None = None,
) -> list[Mapping[str, int]]:
    """The requests of the pods to move (``moves``: their node and pod) that fit on no
    ``allowed`` node, and of the ``pending`` pods that fit on no ``allowed`` node nor on one
    of ``inflight`` (a node mask: nodes only pending pods may use, those still launching or
    within their consolidateAfter window) and that a shape of ``shapes`` holds alone.

    ``fast`` (the default; ``KarpenterSettings.fast``) gives the same answer cheaper: the
    resource check runs on the ``allowed`` nodes and requested resources only, and the filters
    that read only a node's labels, taints and cordon (fixed during one call) run once per pod
    constraints; ``fast=False`` is the plain path the tests compare it with. ``requests``: every
    pod's requests as a row of one matrix (``demands``' order), for the sum below.

    Once the pods left fit no shape of ``within`` (default ``shapes``: the shapes a replacement
    may take; the caller's are those strictly cheaper than the candidates) the try fails
    whatever the pods not placed yet do (no replacement can hold what is left, and more pods
    left only need more): the answer is the pods left so far, the rest not tried. With no such
    shape that is at the first pod left. ``spare``: the room left on the ``allowed`` nodes
    summed per resource, a node's negative room counted as 0 (the caller may have it at hand;
    computed here when None). ``masks``: the static filters' verdict on every node per pod
    constraints (``_static_mask``), kept by the caller while no node's labels, taints or
    cordon change (filled here). ``reads``: filled with what the answer read (``Reads``).
    """
    lost = Lost(shapes, shapes if within is None else within)
    pods = [p for _, p in moves]
    if reads is not None:
        reads.pending = bool(pending)
    if pods:
        # a necessary condition: what exceeds the room left on the staying nodes must fit one
        # shape a replacement may take; if it fits none, the try fails whatever the placement
        # (pending pods only take more of that room: the condition holds with them too)
        if requests is None:
            need = np.sum([demands[p].requests for p in pods], axis=0)
        else:
            need = requests[pods].sum(axis=0)
        if spare is None:
            room = state.allocatable[allowed] - state.requested[allowed]
            spare = np.maximum(room, 0).sum(axis=0)
        excess = np.maximum(need - spare, 0).tolist()
        over = dict(zip(state.resources, excess, strict=True))
        if any(over.values()) and not any(holds(s, over) for s in lost.replacing):
            if reads is not None:
                reads.rooms = True  # the room summed: less of it anywhere only adds to this
            return [demands[p].request_map for p in pods]
    if fast:
        cache = {} if needs is None else needs
        launching = np.zeros_like(allowed) if inflight is None else inflight & ~allowed
        everyone = [*pods, *pending]
        dynamic: list[Any] | None = None
        for p in everyone:
            if p not in cache:
                if dynamic is None:
                    dynamic = _dynamic(profile)
                cache[p] = _need(state, demands[p], dynamic)
        # ``_order``'s order, from each pod's kept key
        order = sorted(everyone, key=lambda p: (cache[p].key, p))
        return _place_fast(state, profile, demands, moves, order, allowed, lost, seconds,
                           cache, set(pending), launching, masks, reads)  # fmt: skip
    undo: list[tuple[int, PodDemand, bool]] = []
    left: list[Mapping[str, int]] = []
    total: dict[str, int] = {}
    try:
        for slot, p in moves:
            state.unbind(slot, demands[p])
            undo.append((slot, demands[p], True))
        waits = set(pending)
        launching = np.zeros_like(allowed) if inflight is None else inflight & ~allowed
        free = state.allocatable - state.requested  # kept in step with the binds below
        order = _order(demands, [*pods, *pending])
        for p in order:
            demand = demands[p]
            # resources first (those it requests, as NodeResourcesFit): most pods that fit
            # nowhere fail here, without the filters
            need = demand.requests
            rows = allowed | launching if p in waits else allowed
            feasible = rows & np.all((free >= need) | (need == 0), axis=1)
            for plugin in profile.filters if feasible.any() else ():
                feasible &= plugin.filter(state, demand, seconds).feasible
                if not feasible.any():
                    break
            hits = np.flatnonzero(feasible)
            if not len(hits):
                if _left_over(demand, left, total, lost, p in waits):
                    return left
                continue
            target = int(hits[0])
            state.bind(target, demand)
            free[target] -= need
            undo.append((target, demand, False))
    finally:
        for node, demand, was_unbound in reversed(undo):
            (state.bind if was_unbound else state.unbind)(node, demand)
    return left


# filters whose answer depends only on the pod's constraints and the nodes' labels, taints and
# cordon: none of these change while one simulation binds and unbinds pods
STATIC_FILTERS = frozenset({"NodeUnschedulable", "TaintToleration", "NodeAffinity"})


def _place_fast(
    state: ClusterState,
    profile: Profile,
    demands: Sequence[PodDemand],
    moves: Sequence[tuple[int, int]],
    order: list[int],
    allowed: np.ndarray[Any, Any],
    lost: Lost,
    seconds: float,
    needs: dict[int, Need],
    waits: set[int],
    launching: np.ndarray[Any, Any],
    masks: dict[Any, np.ndarray[Any, Any]] | None = None,
    reads: Reads | None = None,
) -> list[Mapping[str, int]]:
    """``leftover``'s placement loop, in its ``order`` (``_order``'s) and first-fit, on the
    ``allowed`` rows (and the ``launching`` ones for the pending pods, ``waits``) only.

    The room and pod counts of those rows are kept here (the ``moves`` taken off their nodes,
    each placed pod added). The state itself changes only once a filter that reads it (a
    dynamic one: ``_need``'s ``plugins``, or every dynamic filter where that is None) is
    about to run: then the moved pods are unbound and the pods placed so far bound, in that
    order, as if done from the start, and each later placement is bound too; every bind and
    unbind is undone before returning. Most tries are lost before any such filter runs
    (``_left_over``), and where every pod's dynamic filters are left out none runs at all:
    such a try leaves the state untouched, and its answer read only the room, pod counts and
    static filters of the rows (first fit) and whether a placed pod had affinity terms:
    ``reads`` says so (``rooms``, ``tried``, ``alone``), and says nothing of an answer that
    ran a filter reading the state."""
    rows = np.flatnonzero(allowed | launching)
    staying = allowed[rows]  # the rows a candidate's pod may use
    # the room per resource (a row each: one contiguous comparison per requested resource) and
    # the pod counts, the moved pods taken off (a candidate is among the rows only as a node
    # still launching), kept in step with each placement
    free = (state.allocatable[rows] - state.requested[rows]).T.copy()
    counts = state.pod_count[rows].copy()
    limits = state.allowed_pods[rows]
    for slot, p in moves:
        if allowed[slot] or launching[slot]:
            i = int(np.searchsorted(rows, slot))
            free[:, i] += demands[p].requests
            counts[i] -= 1
    everywhere = np.ones(len(rows), dtype=bool)
    static = _static(profile)
    dynamic = _dynamic(profile)
    index = state.pod_index
    whole = {} if masks is None else masks  # the static filters' verdict per node
    local: dict[Any, np.ndarray[Any, Any]] = {}  # and per row of ``rows``
    placed: list[tuple[int, PodDemand]] = []  # (node, pod) placed, in order
    live = False  # the state is the simulation's (a filter that reads it ran)
    unbound = bound = 0  # the moves taken off the state, the placements bound on it, so far
    # pods with affinity terms in the index less the moved ones' (None: not counted yet; a
    # positive bound where the index holds more than the moves), and the placed ones with such
    # terms
    base: int | None = None
    gained = 0
    alone = False  # InterPodAffinity left out for a pod without terms: no placed pod had any
    tried: list[tuple[int, int]] = []  # each pod tried and the node that took it (-1: none)
    # a pod tried with every dynamic filter (NodeResourcesFit compares other resources than it
    # requests): its answer is not kept over binds (``Reads.live``)
    unknown = False
    left: list[Mapping[str, int]] = []
    total: dict[str, int] = {}
    try:
        for p in order:
            demand = demands[p]
            asked, plugins, lone, _ = needs[p]  # (made by ``leftover``)
            unknown = unknown or plugins is None
            fits = everywhere
            for j, request in asked:  # a resource it does not request passes (NodeResourcesFit)
                fits = fits & (free[j] >= request)
            if p not in waits:
                fits = fits & staying
            if static and fits.any():
                # AND is order-free: the static filters too, from a mask per constraints
                mask = local.get(demand.constraints)
                if mask is None:
                    every = whole.get(demand.constraints)
                    if every is None:
                        every = whole[demand.constraints] = _static_mask(
                            state, static, demand, seconds
                        )
                    mask = local[demand.constraints] = every[rows]
                fits = fits & mask
            run = dynamic
            if plugins is not None:  # (``_need``) NodeResourcesFit: the pod count left
                fits = fits & (counts < limits)
                run = plugins
                if lone is not None and index is not None:
                    if live:
                        affine = bool(index.affinity_groups)
                    else:  # as it would be: the moved pods' off, the placed ones' on
                        if base is None:
                            base = index.affine  # (more than the moves: no need to count)
                            if base <= len(moves):
                                base -= sum(1 for _, m in moves if demands[m].affinity is not None)
                        affine = base + gained > 0
                        alone = alone or not affine
                    if affine:
                        run = [*plugins, lone]  # a placed pod has affinity terms: it runs
            hits = rows[fits]
            if len(hits) and run and not live:
                # the filter reads the state: make it the simulation's, then bind on it
                live = True
                for slot, group in groupby(moves, key=itemgetter(0)):  # a candidate's pods
                    taken = [demands[moved] for _, moved in group]
                    state.unbind_many(slot, taken)
                    unbound += len(taken)
                while bound < len(placed):
                    state.bind(*placed[bound])
                    bound += 1
            if len(hits) and run:
                feasible = np.zeros(state.node_count, dtype=bool)
                feasible[hits] = True
                for plugin in run:
                    feasible &= plugin.filter(state, demand, seconds).feasible
                    if not feasible.any():
                        break
                hits = np.flatnonzero(feasible)
            if not len(hits):
                tried.append((p, -1))
                if _left_over(demand, left, total, lost, p in waits):
                    return left
                continue
            target = int(hits[0])
            tried.append((p, target))
            at = int(np.searchsorted(rows, target))
            free[:, at] -= demand.requests
            counts[at] += 1
            placed.append((target, demand))
            gained += demand.affinity is not None
            if live:  # the state is the simulation's: bind on it too
                state.bind(target, demand)
                bound += 1
    finally:
        for node, demand in reversed(placed[:bound]):
            state.unbind(node, demand)
        for slot, group in groupby(reversed(moves[:unbound]), key=itemgetter(0)):
            state.bind_many(slot, [demands[moved] for _, moved in group])
        if reads is not None and not live:
            reads.rooms, reads.tried, reads.alone = True, tried, alone
        elif reads is not None and not unknown and state.devices is None and _known(dynamic):
            reads.live, reads.tried = True, tried
    return left


# the dynamic filters whose reads of the placed pods ``Reads.live`` accounts for: host ports
# (NodePorts), the pods matching a pod's spread selectors (PodTopologySpread) and its required
# terms, and the placed pods' own terms (InterPodAffinity); NodeResourcesFit reads room only
LIVE_FILTERS = frozenset({"NodePorts", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity"})


def _known(dynamic: list[Any]) -> bool:
    """Whether every filter of ``dynamic`` is one of ``LIVE_FILTERS``."""
    return all(getattr(f, "name", "") in LIVE_FILTERS for f in dynamic)


def _static(profile: Profile) -> list[Any]:
    """The profile's ``STATIC_FILTERS``, in its order."""
    return [f for f in profile.filters if getattr(f, "name", "") in STATIC_FILTERS]


def _dynamic(profile: Profile) -> list[Any]:
    """The profile's filters that read the pods placed (``STATIC_FILTERS`` do not)."""
    return [f for f in profile.filters if getattr(f, "name", "") not in STATIC_FILTERS]


def _static_mask(
    state: ClusterState, static: list[Any], demand: PodDemand, seconds: float
) -> np.ndarray[Any, Any]:
    """The nodes every filter of ``static`` passes for ``demand`` (one mask per pod
    constraints: none of them reads the pods placed)."""
    mask = np.ones(state.node_count, dtype=bool)
    for plugin in static:
        mask &= plugin.filter(state, demand, seconds).feasible
    return mask


@dataclass
class Reads:
    """What a try's answer read of the state (``karpenter_kept``): ``rooms``, the staying
    nodes' room and pod counts only (the room pre-check, or a placement that ran no filter
    reading the placed pods); ``tried``,
    for a placement, each pod it tried, in order, and the node that took it (-1: none; None:
    the pre-check, which read every pod's requests and the room summed); ``pending``, whether
    it scheduled pending pods too; ``alone``, whether it relied on no placed pod having affinity
    terms (InterPodAffinity left out for its pods without terms); ``live``, a placement that
    ran filters reading the placed pods, all of them among ``LIVE_FILTERS`` (``tried`` set: its
    pods say what it read of the placed pods, ``karpenter_kept``)."""

    rooms: bool = False
    tried: list[tuple[int, int]] | None = None
    pending: bool = False
    # InterPodAffinity was left out for a pod without terms because no placed pod had
    # affinity terms (``_need``'s ``lone``): a pod with terms placed anywhere may change it
    alone: bool = False
    # a placement that ran filters reading the placed pods (spreading, pod affinity, host
    # ports) through the known plugins only: besides the room and pod counts as ``rooms``, it
    # read the pods that match its tried pods' selectors and terms (``karpenter_kept``)
    live: bool = False

    @cached_property
    def took(self) -> set[int]:
        """The nodes that took one of its pods (read once the placement is done: kept)."""
        return {node for _, node in self.tried or () if node >= 0}


class Lost(NamedTuple):
    """The shapes a try reads: ``pool``, the pool's (a pending pod none of them holds alone is
    left out); ``replacing``, those a replacement may take (the try is lost once the pods left
    fit none of them)."""

    pool: Sequence[Shape]
    replacing: Sequence[Shape]


class Need(NamedTuple):
    """What the fast placement checks for a pod, fixed for the replay (its requests, the
    profile's filters and the state's resource axis do not change; ``_need``)."""

    # the resource check: (column, request) of each resource the pod requests (one it does not
    # request passes whatever the node's room, as NodeResourcesFit)
    asked: list[tuple[int, int]]
    # the dynamic filters still to run after that check and the pod count's; None: that check
    # only, then every dynamic filter
    plugins: list[Any] | None
    lone: Any  # InterPodAffinity where it runs only while a placed pod has affinity terms
    key: tuple[int, int]  # its place in ``_order`` before its number (``_key``)


def _need(state: ClusterState, demand: PodDemand, dynamic: list[Any]) -> Need:
    """The pod's ``Need``. Each filter left out passes every node that check leaves, as its own code answers:

    - NodeResourcesFit, where it compares exactly the resources the pod requests (none ignored
      or untracked, none off the state's axis): its verdict on a node is that resource check and
      a pod slot left (``pods on node + 1 > allowed``);
    - NodePorts, for a pod with no host port (its PreFilter Skip);
    - PodTopologySpread, for a pod with no DoNotSchedule constraint of its own, or with none of
      its own and no DoNotSchedule default (its filter has no constraint then);
    - InterPodAffinity, for a pod with no required (anti-)affinity term, while no placed pod has
      affinity terms (``PodIndex.affinity_groups`` empty: no existing pod's anti-affinity can
      match it; its PreFilter Skip)."""
    need = demand.requests
    asked = [(j, int(need[j])) for j in np.flatnonzero(need > 0).tolist()]
    key = _key(demand)
    fit = next((f for f in dynamic if getattr(f, "name", "") == "NodeResourcesFit"), None)
    compared = None if fit is None else fit.compared(state, demand)
    if compared is None or {j for j, _ in compared} != {j for j, _ in asked}:
        return Need(asked, None, None, key)
    rest, lone = [], None
    for plugin in dynamic:
        name = getattr(plugin, "name", "")
        if plugin is fit or (name == "NodePorts" and not demand.host_ports):
            continue
        if name == "PodTopologySpread" and not _hard_spread(plugin, demand):
            continue
        affinity = demand.affinity
        if (
            name == "InterPodAffinity"
            and state.pod_index is not None
            and (affinity is None or not (affinity.required or affinity.required_anti))
        ):
            lone = plugin
            continue
        rest.append(plugin)
    return Need(asked, rest, lone, key)


def _hard_spread(plugin: Any, demand: PodDemand) -> bool:
    """Whether PodTopologySpread's filter may have a DoNotSchedule constraint for the pod: one
    of its own, or (with none of its own) one of the plugin's defaults."""
    if demand.spread:
        return any(c.when_unsatisfiable == DO_NOT_SCHEDULE for c in demand.spread)
    return hard_defaults(plugin)


def hard_defaults(plugin: Any) -> bool:
    """Whether PodTopologySpread's default constraints (for a pod with none of its own) have a
    DoNotSchedule one."""
    return any(c.when_unsatisfiable == DO_NOT_SCHEDULE for c in getattr(plugin, "defaults", ()))


def stale_answers(
    state: ClusterState,
    demands: Sequence[PodDemand],
    freed: Sequence[int],
    pods: Mapping[Key, Sequence[tuple[int, int]]],
    requests: np.ndarray[Any, Any] | None = None,
) -> list[Key]:
    """The kept answers a node of ``freed`` could change: ``pods`` gives each answer's pods,
    each with a bound: the answer is stale when one of its pods fits the room now of a freed
    node numbered below its bound (resources only; a first-fit placement's pod moves only to
    a node before the one that took it; ``FREED_ANYWHERE``: any). ``requests``: every pod's
    requests as a row of one matrix (``demands``' order), else read from ``demands``."""
    distinct = sorted({p for moved in pods.values() for p, _ in moved})
    if not distinct:
        return []
    order = sorted(freed)
    rooms = state.allocatable[order] - state.requested[order]
    if requests is None:
        need = np.stack([demands[p].requests for p in distinct])
    else:
        need = requests[distinct]
    # pod × freed node × resource: a resource it does not request passes
    passes = (rooms[np.newaxis, :, :] >= need[:, np.newaxis, :]) | (need[:, np.newaxis, :] == 0)
    fits = passes.all(axis=2)
    # each pod's lowest freed node with room for it (FREED_ANYWHERE: none)
    nodes = np.append(np.asarray(order, dtype=np.int64), FREED_ANYWHERE)
    first = nodes[np.where(fits.any(axis=1), fits.argmax(axis=1), len(order))].tolist()
    lowest = dict(zip(distinct, first, strict=True))
    return [key for key, moved in pods.items() if any(lowest[p] < b for p, b in moved)]


def _order(demands: Sequence[PodDemand], pods: Sequence[int]) -> list[int]:
    """``pods`` largest first, cpu then memory (upstream's ``byCPUAndMemoryDescending``), then
    in pod order."""
    return sorted(pods, key=lambda p: (_key(demands[p]), p))


def _key(demand: PodDemand) -> tuple[int, int]:
    """A pod's place in ``_order`` before its number: largest cpu first, then memory."""
    return (-int(demand.request_map.get("cpu", 0)), -int(demand.request_map.get("memory", 0)))


def _alone(demand: PodDemand, shapes: Sequence[Shape]) -> bool:
    """Whether a shape holds the pod alone (a new node could take it)."""
    return any(holds(s, {**demand.request_map, "pods": 1}) for s in shapes)


def _left_over(
    demand: Any,
    left: list[Mapping[str, int]],
    total: dict[str, int],
    lost: Lost,
    waiting: bool = False,
) -> bool:
    """Count ``demand`` among the pods left over; True when no shape a replacement may take
    holds them all any more (the try is lost: the caller stops placing). A pending pod
    (``waiting``) that no shape of the pool holds alone is not counted: it stays pending
    whatever the command (upstream's ``AllNonPendingPodsScheduled`` ignores it)."""
    if waiting and not _alone(demand, lost.pool):
        return False
    left.append(demand.request_map)
    for k, v in demand.request_map.items():
        total[k] = total.get(k, 0) + v
    total["pods"] = len(left)
    return not any(holds(shape, total) for shape in lost.replacing)
