"""``RemovalSimulator.SimulateNodeRemoval`` (cluster-autoscaler/simulator/cluster.go) on analyzer's
scheduling core.

A candidate's pods (``GetPodsToMove``) are taken off it and re-placed one by one, each on the first
destination whose scheduler Filter plugins pass (``Profile.filters``, the same vectorised filters
``analyzer score`` and the replay use), walking the nodes round-robin from where the previous
placement stopped (``SchedulerPluginRunner.RunFiltersUntilPassingNode``'s ``lastIndex``). The
walk stops at the first pod that fits nowhere (``NoPlaceToMovePods``). A successful simulation is
kept (the planner's simulator persists them), so later candidates see the moved pods; a failed one
is undone; a pod moved onto a node simulated later moves again with that node's pods (its first
destination is the one that node's entry shows). The removed node and nodes already chosen for
removal are not destinations;
``spec.unschedulable`` nodes are skipped as upstream's runner skips them.

With ``hints`` (a caller that runs passes one after another: the replay), each pod first tries
the node its hint names, as ``HintingSimulator.TrySchedulePods`` (simulator/scheduling/
hinting_simulator.go): if that node exists, is a destination and its filters pass, the pod goes
there and ``lastIndex`` stays; else the round-robin search. Every placement sets the pod's hint,
also in a simulation that then fails. The caller drops the old hints once per pass
(``analyzer.scheduling.sim_hints``). One instant (``analyzer autoscale``) has no hints.

Upstream keeps its node list in a Go map (random order); this walks the scenario's node order, so
where several nodes fit, the destination is one valid choice of upstream's, not necessarily the
one a given CA run picks.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import eq
from typing import Any

import numpy as np

from analyzer.autoscaler.cluster import Cluster
from analyzer.autoscaler.drainability import PdbTracker, PodsToMove, Status, ages, pods_to_move
from analyzer.autoscaler.hinted import HintedPlan
from analyzer.autoscaler.options import CAOptions
from analyzer.autoscaler.pods import CAPod
from analyzer.autoscaler.removal_place import Placement
from analyzer.autoscaler.removal_snapshot import NO_RULES, SnapshotRules, enter, leave
from analyzer.autoscaler.removal_state import (
    LiveState,
    Outcome,
    build_state,
)
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.sim_hints import Hints
from analyzer.scheduling.state import PodDemand

_ALL: dict[int, np.ndarray[Any, np.dtype[np.bool_]]] = {}


def _all_schedulable(count: int) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """A mask of ``count`` True slots, one read-only array per size (never written: a live
    caller's own mask says which nodes are destinations)."""
    found = _ALL.get(count)
    if found is None:
        found = _ALL[count] = np.ones(count, dtype=bool)
        found.flags.writeable = False
    return found


class RemovalSimulator(Placement):
    """Simulates node removals one after another on one scheduler state (its pods' placements:
    ``Placement``)."""

    def __init__(
        self,
        cluster: Cluster,
        profile: Profile,
        options: CAOptions,
        now: float,
        live: LiveState | None = None,
    ) -> None:
        self.cluster = cluster
        self.profile = profile
        self.options = options
        self.now = now
        known = None if live is None else live.position
        self.position = known or {n.name: i for i, n in enumerate(cluster.nodes)}
        given = None if live is None else live.names
        self.names: Sequence[str] = given if given is not None else [n.name for n in cluster.nodes]
        self.last_index = 0
        # every bind/unbind a kept simulation made, so a caller's live state can be restored
        self.journal: list[tuple[bool, int, PodDemand]] = []
        # moves ``apply`` made in one step (light only): (distinct targets, their added
        # requests, their added pod counts)
        self.batches: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.saved: tuple[np.ndarray, np.ndarray] | None = None  # ``checkpoint``
        self.static: dict[tuple[Any, ...], Any] | None = None
        # a caller that reuses simulations sets a list here: each successful placement's walk
        # (start index, nodes looked at) is appended, what the placement read of the nodes
        self.walks: list[tuple[int, int]] | None = None
        # a caller that knows some filters pass everywhere for every pod it moves names them here
        self.skip: frozenset[str] = frozenset()
        # True: NodeResourcesFit asked of the walk's nodes in order until one fits (the same
        # node as the full mask's first from ``last_index``); False: every slot, as the plain path
        self.first_fit = False
        # True: a simulated move updates only what the filters it runs read (requests, pod
        # count, host ports), not the scores' non-zero requests nor the pod index that
        # spreading and pod affinity read; for a caller that skips those filters (``skip``)
        # and restores the state after the pass (the moves are undone the same light way)
        self.light = False
        # ``NodeResourcesFit.compared`` per demand object (with the demand, so its id stays
        # its own) and per demand shape (``_fit_columns``); a caller whose state keeps its
        # resource axis may share one across passes
        self.columns: dict[Any, tuple[PodDemand | None, list[tuple[int, int]] | None]] = {}
        # a caller may keep ``GetPodsToMove``'s answers here between passes, by the pods' object
        # ids, ``drain_key`` (what else it read: the budgets) and the disruptions left
        self.drains: dict[tuple[object, ...], PodsToMove] | None = None
        self.drain_key: object = None
        # a caller may keep each pod's drain verdict here (``pods_to_move``'s ``verdicts``)
        self.verdicts: dict[int, tuple[CAPod, Status]] | None = None
        # CA's scheduling hints, kept by a caller across passes (the replay; one instant has no
        # earlier pass, so ``analyzer autoscale`` has none): each pod tries its hinted node first
        self.hints: Hints[str, str] | None = None
        self.hint_log: list[tuple[str, str]] = []  # every hint set, in order
        self.looked: dict[str, str | None] = {}  # each pod's hint at its first look this pass
        # first looks a caller kept out of ``looked`` that ``stable`` must read too (the
        # replay: answers taken again unread whose pods' hints a later answer set)
        self.also_looked: list[dict[str, str | None]] = []
        self.look_log: list[tuple[str, str | None]] = []  # every look, in order
        self.hinted = 0  # pods placed on their hinted node
        self.unplaced: Any = None  # the ``PodDemand`` that found no place in the last failure
        # pods moved onto each node in the pass and not yet in ``current`` (``pods_on`` adds
        # them when the node's pods are read: most targets' never are)
        self.added: dict[str, list[CAPod]] = {}
        # the nodes whose pods a caller reads in the pass (``pods_on``; the replay: its
        # candidates), or None: any. ``apply`` keeps the pods it moves onto the others nowhere
        self.readers: set[str] | None = None
        # what CA's snapshot holds of a simulated node (``removal_snapshot``); a caller sets the
        # version's rules (``analyzer autoscale``), the replay leaves them off
        self.snapshot: SnapshotRules = NO_RULES
        if live is not None:
            self.static = live.static  # the replay's own state (its pods already bound): no copy
            # the caller's mask says which nodes exist, are schedulable and not being deleted
            self.schedulable = _all_schedulable(len(cluster.nodes))
            self.destinations = live.destinations.copy()
            self.state = live.state
            self.demands: dict[str, list[PodDemand]] = {}
            # the caller's lists, not copies: changed by replacing them (``_add_pod``), so a
            # caller may tell an unchanged node's list by its identity
            self.current = dict(cluster.pods)
            self.demand_of = live.demand_of  # read only: the caller's, not copied
            return
        self.schedulable = np.array([not n.unschedulable for n in cluster.nodes], dtype=bool)
        # the nodes pods may move to: every node but those being deleted and those found
        # removable in this pass (``drop``)
        self.destinations = np.array([not n.being_deleted(now) for n in cluster.nodes], dtype=bool)
        self.state, self.demands = build_state(cluster)

        # the pods on each node now: a successful simulation persists, so a pod moved onto a
        # node that is simulated later moves again with that node's own pods (as upstream's
        # snapshot holds it there)
        self.current = {n.name: list(cluster.pods.get(n.name, [])) for n in cluster.nodes}
        # each pod object's demand, by identity (two pods may be equal field by field)
        self.demand_of = {
            id(pod): demand
            for name, pods in cluster.pods.items()
            if name in self.demands
            for pod, demand in zip(pods, self.demands[name], strict=True)
        }

    def _bind(self, node: int, demand: PodDemand) -> None:
        """Account ``demand`` on ``node`` for the simulation (``light``: what filters read)."""
        if not self.light:
            self.state.bind(node, demand)
            return
        self.state.requested[node] += demand.requests
        self.state.pod_count[node] += 1
        if demand.host_ports:
            self.state.ports.add(node, demand.host_ports)

    def _unbind(self, node: int, demand: PodDemand) -> None:
        """Undo ``_bind``."""
        if not self.light:
            self.state.unbind(node, demand)
            return
        self.state.requested[node] -= demand.requests
        self.state.pod_count[node] -= 1
        if demand.host_ports:
            self.state.ports.remove(node, demand.host_ports)

    def checkpoint(self) -> None:
        """A light simulator about to move pods: keep the requests and pod counts now, the only
        state its moves change (no host ports: ``light``), for ``restore`` to copy back."""
        assert self.light and not self.journal and not self.batches
        self.saved = (self.state.requested.copy(), self.state.pod_count.copy())

    def restore(self) -> None:
        """Undo every kept simulation on the state (a live state is as it was before the pass)."""
        if self.saved is not None:  # ``checkpoint``: the counts as they were, in two copies
            self.state.requested[...] = self.saved[0]
            self.state.pod_count[...] = self.saved[1]
            self.saved = None
            self.journal.clear()
            self.batches.clear()
            return
        for bound, node, demand in reversed(self.journal):
            if bound:
                self._unbind(node, demand)
            else:
                self._bind(node, demand)
        self.journal.clear()
        # light moves are additions of requests and pod counts only: any order undoes them
        for where, sums, counts in self.batches:  # distinct nodes per batch
            self.state.requested[where] -= sums
            self.state.pod_count[where] -= counts
        self.batches.clear()

    def apply(
        self,
        node: str,
        outcome: Outcome,
        targets: list[int],
        plan: HintedPlan | None = None,
    ) -> None:
        """A removable ``outcome`` of ``node`` found earlier on the same inputs, applied again
        without re-placing: its moved pods go to ``targets`` (node indices) as they did.
        ``plan`` (``hinted.plan`` of the answer): a light simulator adds each target's pods in
        one step (no moved pod has host ports there: ``light`` callers exclude them)."""
        if plan is not None and self.light:
            requested, counts = self.state.requested, self.state.pod_count
            if requested.flags.c_contiguous and requested.shape[1] == plan.width:
                # the non-zero sums on the flat array (a view of the same memory in row order),
                # one index per cell: ``requested[where] += sums`` in one 1-D step
                requested.reshape(-1)[plan.cells] += plan.adds
            else:
                requested[plan.where] += plan.sums  # distinct targets: no index twice
            counts[plan.where] += plan.counts
            if self.saved is None:  # (``checkpoint``'s copies undo it otherwise)
                self.batches.append((plan.where, plan.sums, plan.counts))
            self._add_moved(plan)
            before = self.pods_on(node)
            if plan.left is None or plan.left[0] is not before:  # its list as the pass holds it
                plan.left = (before, [p for p in before if id(p) not in plan.gone])
            self.current[node] = plan.left[1]  # lists are replaced, never changed: shared
            return
        index = self.position[node]
        nodes = self.cluster.nodes
        for pod, target in zip(outcome.moved, targets, strict=True):
            demand = self.demand_of[id(pod)]
            if not self.light:  # as ``simulate``: a light one leaves the candidate's counts
                self._unbind(index, demand)
                self.journal.append((False, index, demand))
            self._bind(target, demand)
            self.journal.append((True, target, demand))
            self._add_pod(nodes[target].name, pod)
        gone = {id(pod) for pod in outcome.moved}
        self.current[node] = [p for p in self.pods_on(node) if id(p) not in gone]

    def apply_many(self, plans: Sequence[HintedPlan]) -> None:
        """``apply`` of removable answers found earlier, each by its ``plan``, in order, on a
        light simulator whose counts ``checkpoint`` keeps (``restore`` copies them back): their
        moves added in one step (a sum: the order of additions does not matter), and the pods
        moved onto each node whose pods the pass reads (``readers``), in order. The removed
        candidates' own lists are left as they are: a removable candidate takes no more pods
        (``drop``) and no later turn reads its pods (each candidate has one turn)."""
        assert self.light and self.saved is not None
        requested, counts = self.state.requested, self.state.pod_count
        if len(plans) == 1:
            one = plans[0]
            cells, adds, where, many = one.cells, one.adds, one.where, one.counts
        else:
            cells = np.concatenate([p.cells for p in plans])
            adds = np.concatenate([p.adds for p in plans])
            where = np.concatenate([p.where for p in plans])
            many = np.concatenate([p.counts for p in plans])
        if requested.flags.c_contiguous and all(p.width == requested.shape[1] for p in plans):
            np.add.at(requested.reshape(-1), cells, adds)  # a cell named twice: added twice
        else:
            for p in plans:
                requested[p.where] += p.sums  # distinct targets within a plan
        np.add.at(counts, where, many)
        for plan in plans:
            self._add_moved(plan)

    def _add_moved(self, plan: HintedPlan) -> None:
        """``_add_pods`` of ``plan``'s pods on each target whose pods the pass reads (any order of
        targets: each target's pods in order)."""
        added, readers = self.added, self.readers
        by_name = self.by_name(plan)
        for name in by_name if readers is None else readers.intersection(by_name):
            pods = by_name[name]
            found = added.get(name)
            if found is None:
                added[name] = list(pods)
            else:
                found.extend(pods)

    def by_name(self, plan: HintedPlan) -> dict[str, list[CAPod]]:
        """``plan``'s pods per target, by the targets' names (made once for these names)."""
        names = self.names
        found = plan.by_name
        if found is None or plan.by_name_of is not names:
            found = plan.by_name = {names[t]: pods for t, pods in plan.groups}
            plan.by_name_of = names
        return found

    def _add_pod(self, node: str, pod: CAPod) -> None:
        """``pod`` moved onto ``node`` in the simulation (after its pods, ``pods_on``)."""
        self._add_pods(node, (pod,))

    def _add_pods(self, node: str, pods: Sequence[CAPod]) -> None:
        """``pods`` moved onto ``node`` in the simulation, in order (after its pods)."""
        found = self.added.get(node)
        if found is None:
            self.added[node] = list(pods)
        else:
            found.extend(pods)

    def pods_on(self, node: str) -> list[CAPod]:
        """``node``'s pods in the simulation now: its own, then those moved onto it in order.
        A node that took pods gets a new list (never the caller's: lists are not changed)."""
        pods = self.current.get(node, [])
        extra = self.added.pop(node, None)
        if extra:
            pods = self.current[node] = [*pods, *extra]
        return pods

    def stable(self) -> bool:
        """Whether a pass on the same state would now read the same hints as this one did:
        every pod it looked up was placed where its hint said (or had none and found no place),
        so the hints this pass leaves are those it read (``drop_old`` not yet called)."""
        if self.hints is None:
            return True
        current = self.hints.current
        for looked in (self.looked, *self.also_looked):
            # each key's hint now against the one it read (no Python loop)
            if not all(map(eq, map(current.get, looked), looked.values())):
                return False
        return True

    def drop(self, node: str) -> None:
        """``delete(podDestinations, node)``: a removable node takes no more pods."""
        self.destinations[self.position[node]] = False

    def simulate(self, node: str, pdbs: PdbTracker) -> Outcome:
        """``SimulateNodeRemoval``: drain rules first, then re-place the pods to move; the
        version's snapshot rules around it where a caller set them (``snapshot``)."""
        if not self.snapshot.active:
            return self._simulate(node, pdbs)
        index = self.position[node]
        before = enter(self.state, index, self.snapshot, self.now)
        outcome = self._simulate(node, pdbs)
        leave(self.state, index, self.snapshot, before, outcome.removable)
        return outcome

    def _simulate(self, node: str, pdbs: PdbTracker) -> Outcome:
        pods = self.pods_on(node)
        key = (tuple(map(id, pods)), self.drain_key, tuple(pdbs.remaining))
        found = None if self.drains is None else self.drains.get(key)
        if found is None:
            found = pods_to_move(
                pods, self.options, pdbs, self.now, self.cluster.controllers, self.verdicts
            )
            # (not an answer blocked by a pod that time may lift: ``drainability.ages``)
            if self.drains is not None and (
                found.blocking is None or not ages(found.blocking, self.options)
            ):
                self.drains[key] = found
        if found.blocking is not None:
            return Outcome(node, False, "BlockedByPod", found.blocking.key, found.reason)
        index = self.position[node]
        # kept static masks and NodeResourcesFit asked apart: a pod whose filters are those
        # (``_quick``) is placed on the allowed nodes that are not cordoned and its masks; the
        # plain path's (``_hinted``, ``_place``) answers are the same on those (it reads
        # ``allowed & schedulable`` only)
        quick = self.static is not None and self.first_fit
        allowed = self.destinations & self.schedulable if quick else self.destinations.copy()
        allowed[index] = False
        demand_of = self.demand_of
        moving = [demand_of[id(pod)] for pod in found.pods]
        # a light quick simulation with ``views``: a pod with a ``_record`` is placed and bound
        # through the memoryviews (the same reads and sums as ``_hinted_in``, ``_place_in`` and
        # ``_bind`` on the same memory)
        kept_views = self.views if quick and self.light else None
        found_views = None if kept_views is None else kept_views.of(self)
        fast = found_views is not None
        views: tuple[memoryview, ...] = found_views or ()
        records: dict[int, Any] = {}
        if fast:
            assert self.static is not None
            records = self.static.setdefault(("records",), {})
            ok = allowed.data
            count, used = views[1], views[4]
            width = self.state.requested.shape[1]
        # the candidate is no destination in this simulation, nor (removable) later in the
        # pass: in a light simulation its own counts are left as they are (never read again
        # before ``restore``)
        own = not self.light
        if own:
            for demand in moving:
                self._unbind(index, demand)
        done: list[tuple[bool, int, PodDemand]] = []  # the journal's entries of the moves
        placed: dict[str, str] = {}
        hints, names, position = self.hints, self.names, self.position
        look, first_look = self.look_log.append, self.looked.setdefault
        for pod, demand in zip(found.pods, moving, strict=True):
            record = None
            if fast:
                kept = records.get(id(demand))
                record = kept[1] if kept is not None else self._record(demand)
            masks = self._quick(demand) if quick and record is None else None
            target = None
            pod_key = ""
            if hints is not None:  # ``HintingSimulator.TrySchedulePods``: the hint first
                pod_key = pod.obj.uid or pod.key  # ``hint_key``
                hint = hints.get(pod_key)
                look((pod_key, hint))
                first_look(pod_key, hint)  # the first look of this pass (``stable``)
                if hint is not None:
                    if record is not None:
                        spot = position.get(hint)
                        if self._hinted_views(spot, ok, record, views):
                            target = spot
                    elif masks is None:
                        target = self._hinted(hint, demand, allowed)
                    else:
                        target = self._hinted_in(hint, allowed, masks)
                    self.hinted += target is not None
            if target is None:
                if record is not None:
                    target = self._place_views(allowed, ok, record, views)
                elif masks is None:
                    target = self._place(demand, allowed)
                else:
                    target = self._place_in(allowed, masks)
            if target is None:
                self.unplaced = demand  # the pod that found no place (its requests are read)
                for _, i, moved in done:  # Revert(): undo the forked simulation
                    self._unbind(i, moved)
                if own:
                    for back in moving:
                        self._bind(index, back)
                return Outcome(node, False, "NoPlaceToMovePods")
            name = names[target]
            if hints is not None:  # kept even if a later pod fails
                hints.set(pod_key, name)
                self.hint_log.append((pod_key, name))
            if record is not None and not record[3]:  # ``_bind`` (light) on the memoryviews
                at = target * width
                for j, r in record[2]:
                    used[at + j] += r
                count[target] += 1
            else:
                self._bind(target, demand)
            done.append((True, target, demand))
            placed[pod.key] = name
        if own:
            self.journal.extend((False, index, demand) for demand in moving)
        self.journal.extend(done)
        gone = {id(pod) for pod in found.pods}
        self.current[node] = [p for p in pods if id(p) not in gone]
        onto: dict[int, list[CAPod]] = {}  # each target's pods in order (``_add_pods``)
        for pod, (_, target, _) in zip(found.pods, done, strict=True):
            onto.setdefault(target, []).append(pod)
        for target, group in onto.items():
            self._add_pods(names[target], group)
        risky = not pdbs.in_parallel(found.pods)
        return Outcome(
            node,
            True,
            moved=found.pods,
            destinations=placed,
            risky=risky,
            on_completion=found.on_completion,
        )
