"""A scale-down pass's candidates through ``SimulateNodeRemoval`` in the replay's loop
(``analyzer.replay.autoscale_scaledown``): each in upstream's order on one simulator (a removable
one is kept in the simulation for the next), or its earlier answer where nothing it read changed
(``analyzer.replay.autoscale_reuse``: the same inputs, or a removable answer whose pods all went
to their hinted nodes, asked again on the state now), until ``unneededNodesLimit`` removable ones
are found.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from analyzer.autoscaler import hinted
from analyzer.autoscaler.drainability import PdbTracker
from analyzer.autoscaler.recheck import UNNEEDED_LIMIT
from analyzer.autoscaler.removal import RemovalSimulator
from analyzer.autoscaler.removal_state import Outcome
from analyzer.replay import autoscale_reuse
from analyzer.replay.autoscale_reuse import Entry, allowed_but, walked

SYSTEM_POD = "UnmovableKubeSystemPod"
# ``ca`` is the loop's ``ClusterAutoscaler`` (typed Any: importing it here would make a circle)
ClusterAutoscaler = Any


def simulate_candidates(
    ca: ClusterAutoscaler,
    simulator: RemovalSimulator,
    order: list[int],
    pdbs: PdbTracker,
    covering: list[int],
    reasons: dict[str, int],
    limit: int,
) -> tuple[dict[int, Outcome], list[int], bool]:
    """Each candidate of ``order`` through ``SimulateNodeRemoval`` (a removable one is kept in
    the simulation for the next), or its earlier answer when nothing it read changed
    (``analyzer.replay.autoscale_reuse``), until ``limit`` removable ones are found. The
    removable ones in pass order, the unremovable ones, and whether the limit stopped it.

    ``context`` (what the pass did before a candidate, part of what its answer read) holds each
    earlier answer but the quiet ones (``Entry.quiet``): a ``BlockedByPod`` answer changed
    nothing a later simulation reads, nor did a ``NoPlaceToMovePods`` one whose first pod found
    no place (no pod placed: no bind kept, no hint set, ``last_index`` not moved, no node
    dropped, no budget taken from). ``simulate`` returns it from ``GetPodsToMove`` alone, before any
    placement: no bind or unbind (no ``journal``), no hint looked up or set (no ``look_log``
    nor ``hint_log``), ``last_index`` not moved; the budgets are not taken from (``pdbs.remove``
    is for removable ones) and the node stays a destination (``drop`` likewise). Taken again, it
    sets and moves nothing either (its entry has no looks nor sets; ``last_index`` is kept for
    it below). What it leaves are caches that give equal answers (``drains``, ``verdicts``, the
    node's merged pod list in ``pods_on``). So the state every later candidate's simulation
    reads is the same with or without it before them, and so is its answer."""
    memo, state = ca.sims, ca.state
    memo.start_pass()
    # ``hinted.fits``'s reads of the state's arrays, and the light simulation's (``views``)
    views = memo.views
    if views is None:
        views = memo.views = hinted.Views()
    columns = ca.screen
    # the plain path (``settings.reuse`` False) keeps every slot's fit, the reference
    simulator.first_fit, simulator.columns = ca.settings.reuse, ca.columns
    simulator.hints = ca.hints  # kept across passes, as upstream's RemovalSimulator keeps them
    if ca.reuse:
        # local: no pod has spreading or pod (anti-)affinity, so these filters pass everywhere
        simulator.skip = frozenset({"PodTopologySpread", "InterPodAffinity"})
        simulator.light = True
        simulator.checkpoint()  # light moves: ``restore`` copies the counts back
        simulator.verdicts = ca.verdicts
        simulator.drains, simulator.drain_key = memo.drains, tuple(covering)
        simulator.views = views
        memo.starting(simulator.destinations, order)
    drops = ca.hints.drops  # ``drop_old`` calls so far (``SimulationMemo.unread``)
    # the pass reads the pods of its candidates only (``pods_on``): moves onto other nodes
    # are kept in the counts alone
    simulator.readers = {ca.nodes[slot].name for slot in order}
    outcomes: dict[int, Outcome] = {}
    unremovable: list[int] = []
    context = 0  # ``memo.extend``'s number for what the pass did so far (0: nothing)
    stopped = False
    # the PodDisruptionBudgets' disruptions left (read by every answer): changed only by
    # ``pdbs.remove`` below, so made again only after it
    budget = (*covering, -1, *pdbs.remaining)
    deferred = Deferred(simulator)
    taken_unread: list[Entry] = []
    for i, slot in enumerate(order):
        if len(outcomes) >= limit:  # ``unneededNodesLimit``: the rest are not simulated
            reasons[UNNEEDED_LIMIT] = len(order) - i
            stopped = True
            break
        name = ca.nodes[slot].name
        if name in deferred.waiting:  # its pods include moved ones not added yet
            deferred.flush()
        pods = ca.pod_ids(slot, simulator.pods_on(name))
        start = simulator.last_index
        # where its pods may go: the destinations but itself (made where read: ``allowed``)
        destinations = simulator.destinations
        entry = last = None
        unread = False
        if ca.reuse:
            entry = memo.entries.get(slot)
            if entry is not None and entry.seen == memo.passes - 1 and entry.outcome.removable:
                last = entry  # its removable answer in the last pass
            if entry is not None and memo.unread(entry, pods, budget, drops):
                unread = True  # nothing it read changed since the last pass: its answer
                ca.record.reused_unread += 1
            elif entry is not None and entry.by_hints and autoscale_reuse.HINTED_ALONE:
                # an answer placed by hints alone read no search: where ``find`` would take it
                # (nothing it read changed) its simulation places each pod on its hint again,
                # so ``_by_hints_again``'s check passes too; asked alone, it reads the counts
                # of its targets only
                deferred.flush_if(entry.targets_once())
                entry = _by_hints_again(ca, simulator, slot, pods, budget, destinations, views)
                ca.record.reused_by_hints += entry is not None
            else:
                deferred.flush()  # what follows reads the counts
                entry = memo.find(slot, context, pods, budget, start, state, destinations, columns)
                if entry is None:
                    entry = _by_hints_again(ca, simulator, slot, pods, budget, destinations, views)
                    ca.record.reused_by_hints += entry is not None
                elif not ca.hints.same_keys(*_keys(entry)):
                    # a pod's hint changed since: it may go elsewhere; ``_by_hints_again``
                    # would find this entry (the slot's) and refuse it on the same hints
                    entry = None
        if entry is not None:
            memo.reused += 1
            ca.record.reused_over_epochs += entry.epoch != memo.epoch
            memo.used.append(entry)
            outcome, targets = entry.outcome, entry.targets
            # the hints it read and set, as simulating would: each key's first look kept
            # (``setdefault`` in order; one step where none of its keys was looked at yet in
            # the pass), its sets in order (one dict: each key's last). An unread one's first
            # looks are its sets (each pod placed on its hint), and nothing before it in the
            # pass looked at its pods' keys: ``stable`` reads them only if a later answer set
            # one (``claim`` marks it ``disturbed``), else they hold (below, ``also_looked``)
            read = entry.hints_read()
            if unread:
                taken_unread.append(entry)
            else:
                looked = simulator.looked
                if looked.keys().isdisjoint(read.first):
                    looked.update(read.first)
                else:
                    for key, hint in read.first.items():
                        looked.setdefault(key, hint)
            ca.hints.current.update(read.sets)
            if entry.by_hints and entry.plan and simulator.light:
                deferred.add(entry)  # its moves added when something reads those counts
            elif outcome.removable:
                if entry.plan is None and simulator.light:  # its moves added in one step
                    entry.plan = hinted.plan(simulator, outcome.moved, targets) or False
                simulator.apply(name, outcome, targets, entry.plan or None)
            # a blocked one moved nothing; one placed by hints alone did not move the start
            if outcome.reason != "BlockedByPod" and not entry.by_hints:
                simulator.last_index = entry.end
        else:
            deferred.flush()  # a simulation reads the counts
            memo.simulated += 1
            mark = len(simulator.journal)
            looks, sets = len(simulator.look_log), len(simulator.hint_log)
            by_hint = simulator.hinted
            simulator.walks = []
            outcome = simulator.simulate(name, pdbs)
            targets = [t for bound, t, _ in simulator.journal[mark:] if bound]
            if ca.reuse:
                entry = Entry(
                    memo.passes, memo.epoch, context, pods, budget, start,
                    simulator.last_index, outcome, targets,
                    walked(simulator.walks, state.node_count), [],
                    simulator.look_log[looks:], simulator.hint_log[sets:],
                    # removable with every pod on its hinted node: no search, start unread
                    outcome.removable and simulator.hinted - by_hint == len(outcome.moved),
                )  # fmt: skip
                if outcome.reason == "NoPlaceToMovePods":
                    # a quiet one placed no pod: it holds while its first pod finds no place,
                    # so only room for that pod can change it; another, room for any of its pods
                    entry.rows = (
                        [simulator.unplaced.requests]
                        if entry.quiet
                        else [simulator.demand_of[id(p)].requests for p in simulator.pods_on(name)]
                    )
                memo.keep(slot, entry)
                if ca.system_ages and outcome.blocking_reason == SYSTEM_POD:
                    # blocked by a kube-system pod until it is old enough (CA 1.33+): time
                    # alone lifts it, so no later pass takes this answer again (``find``)
                    entry.lasting = False
        if entry is not None:  # (``ca.reuse``) what an unread take reads
            if not unread:
                memo.claim(entry)
                memo.answered(slot, last, entry)
            entry.seen, entry.hint_drops = memo.passes, drops
            if outcome.removable:
                memo.removable.append((slot, entry))
        # a quiet answer (blocked, or no place for its first pod) is no part of it (docstring)
        quiet = outcome.reason == "BlockedByPod" if entry is None else entry.quiet
        if not quiet:
            said = None if entry is None else entry.said
            if said is None:  # what it adds to a later candidate's context (kept with it)
                said = (slot, outcome.reason, tuple(targets))
                if entry is not None:
                    entry.said = said
            context = memo.extend(context, said) if ca.reuse else 0
        if not outcome.removable:
            reasons[outcome.reason] = reasons.get(outcome.reason, 0) + 1
            unremovable.append(slot)
            continue
        simulator.drop(outcome.node)
        pdbs.remove(outcome.moved)
        budget = (*covering, -1, *pdbs.remaining)
        outcomes[slot] = outcome
    # the unread answers' first looks that a later answer's sets may have changed
    simulator.also_looked = [
        e.hints_read().first for e in taken_unread if e.disturbed == memo.passes
    ]
    ca.record.simulated, ca.record.reused = memo.simulated, memo.reused
    return outcomes, unremovable, stopped


class Deferred:
    """The moves of answers placed by hints alone, taken again in a pass and not added yet
    (``plans``): nothing reads the counts until an answer is simulated or checked by ``find``,
    a check by hints reads one of their targets (``nodes``), or a node they moved pods onto
    has its turn (``waiting``: its pods); then they are added in one step
    (``RemovalSimulator.apply_many``; addition: the order does not matter). What is left at the
    end of the pass the checkpoint's restore undoes anyway."""

    def __init__(self, simulator: RemovalSimulator) -> None:
        self.simulator = simulator
        self.plans: list[Any] = []
        self.nodes: set[int] = set()
        self.waiting: set[str] = set()

    def add(self, entry: Entry) -> None:
        """``entry``'s moves (its plan made), added later."""
        simulator = self.simulator
        self.plans.append(entry.plan)
        self.nodes.update(entry.targets_once())
        readers = simulator.readers
        assert readers is not None  # (``simulate_candidates`` names them)
        reached = readers.intersection(simulator.by_name(entry.plan))
        if reached:
            self.waiting.update(reached)

    def flush(self) -> None:
        """Add every move kept."""
        if self.plans:
            self.simulator.apply_many(self.plans)
            self.plans, self.nodes, self.waiting = [], set(), set()

    def flush_if(self, nodes: list[int]) -> None:
        """Add every move kept if one is onto ``nodes``."""
        if self.plans and not self.nodes.isdisjoint(nodes):
            self.flush()


def _by_hints_again(
    ca: ClusterAutoscaler,
    simulator: RemovalSimulator,
    slot: int,
    pods: tuple[int, ...],
    budget: tuple[int, ...],
    destinations: np.ndarray[Any, Any],
    views: hinted.Views | None = None,
) -> Entry | None:
    """``slot``'s last answer if it placed every pod on its hinted node and would again now:
    the same pods and budgets (the same pods to move), the same hints, and each hinted node
    still a destination with room for its pods in turn (``fits_as_hinted``). Such a simulation
    read nothing else (no search: neither the round-robin start nor the other nodes), so
    whatever the pass did before it, simulating it now gives that answer."""
    memo = ca.sims
    entry: Entry | None = memo.entries.get(slot)
    # any epoch: such an answer read nothing of the node set (``SimulationMemo.new_epoch``)
    if entry is None or not entry.by_hints:
        return None
    if (entry.pods, entry.pdbs) != (pods, budget):
        return None
    if not ca.hints.same_keys(*_keys(entry)):
        return None
    # the nodes its pods may go to: the destinations but ``slot``, which no target of its own
    # simulation is (copied with ``slot`` refused only if one were)
    allowed = allowed_but(destinations, slot) if slot in entry.targets else destinations
    if entry.plan is None:  # the part of the check the answer fixes, made once
        entry.plan = hinted.plan(simulator, entry.outcome.moved, entry.targets) or False
    if entry.plan is False:
        if not simulator.fits_as_hinted(entry.outcome.moved, entry.targets, allowed):
            return None
    elif not hinted.fits(simulator, entry.plan, allowed, views):
        return None
    return entry


def _keys(entry: Entry) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
    """``entry``'s hint looks as ``Hints.same_keys`` reads them."""
    read = entry.hints_read()
    return read.keys, read.hints
