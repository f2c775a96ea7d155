"""A scale-down pass at the recheck deadline of nodes the last pass skipped as recently
unremovable (``analyzer.replay.autoscale_scaledown``; issue 25 item 5).

At its deadline a node skipped as ``RecentlyUnremovable`` is judged again (``unremovable.Nodes.
Update`` drops the deadline). Most such nodes are, in the replay's week, either over the
threshold by then or blocked by a pod again: a pod that is not replicated, holds local storage,
or is a kube-system pod does not leave a node by itself. Then the pass answers as the last one
did, but for those nodes (``classify``):

- one over the screen's margin and not judged whatever its ratio counts ``NotUnderutilized``
  instead of ``RecentlyUnremovable`` (a pass's ``NotUnderutilized`` is its present nodes less
  those looked at);
- one judged a candidate with pods to move whose pods' drain rules find a blocking pod is
  simulated and found ``BlockedByPod`` before any placement: it reads no other node, moves
  nothing, reads and sets no hint, and is no part of the later candidates' context
  (``autoscale_candidates.simulate_candidates``). So the other candidates answer as before and
  it gets a new deadline, in candidate order;
- one whose first pod to move has room on no destination of the pass at its turn (checked on
  the state now without the pass's removable candidates, a bound: their moves only take room)
  is found ``NoPlaceToMovePods`` on that pod: it places nothing, so it too is no part of the
  later candidates' context, and gets a new deadline (``Entry.quiet``).

``expire`` leaves what that pass would: its reasons, the summary of what it judged, the new
deadlines, ``dirty`` and ``last_pass``. Only after a pass (run, or stood for one) that found no
node unremovable, was not stopped by the candidates limit and refused no candidate for its
group's minSize (``applicable``): then the reasons' order is known (the judged ones' reasons,
then the simulations' — here only ``BlockedByPod`` and ``NoPlaceToMovePods`` — then
``Unneeded``). The rest of what the nodes' changes could alter (read by a placement, room
freed for a pod that found none, the same epoch and budgets) is ``SimulationMemo.unchanged``'s,
asked with the nodes ``verified``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from analyzer.autoscaler.drainability import PdbTracker, pods_to_move
from analyzer.autoscaler.recheck import RECENTLY_UNREMOVABLE, UNNEEDED_LIMIT
from analyzer.replay import autoscale_reuse
from analyzer.replay.autoscale_reuse import room_for_any
from analyzer.replay.autoscale_setup import SECOND

# ``ca`` is the loop's ``ClusterAutoscaler`` (typed Any: importing it here would make a circle)
ClusterAutoscaler = Any

BLOCKED = "BlockedByPod"
NO_PLACE = "NoPlaceToMovePods"
NOT_UNDERUTILIZED = "NotUnderutilized"
UNNEEDED = "Unneeded"
# reasons a pass records only from its simulations or its groups' minSize: a summary with one
# of them found a node unremovable, was stopped, or refused a candidate before simulating
NOT_AFTER = frozenset({BLOCKED, NO_PLACE, UNNEEDED_LIMIT, "NodeGroupMinSizeReached"})


def applicable(ca: ClusterAutoscaler) -> bool:
    """Whether the last pass (run, or stood for one) found no node unremovable, added no
    deadline and was not stopped by the candidates limit, and its reasons hold no reason a
    simulation or a group's minSize gave (module docstring)."""
    summary = ca.sims.summary
    if summary is None or summary.blocked != ():  # () : none found unremovable
        return False
    _, stopped, added = ca.last_pass
    return not stopped and not added and NOT_AFTER.isdisjoint(summary.reasons)


def classify(
    ca: ClusterAutoscaler,
    gone: Sequence[int],
    ratio: np.ndarray[Any, Any],
    judge: Callable[[list[int]], list[int]],
    now: int,
    limit: int = -1,
) -> tuple[list[int], list[int], list[tuple[int, Any]]] | None:
    """The nodes of ``gone`` (their deadline passed) that a pass now counts
    ``NotUnderutilized``, those it finds ``BlockedByPod`` and those it finds
    ``NoPlaceToMovePods`` on their first pod (each with that pod's requests), each in slot
    order; None if one is none of these (or gone from the cluster). ``ratio``: every slot's
    screen ratio; ``judge``: ``_judge`` of a list of slots (the candidates among them);
    ``limit``: the pass's candidates limit (-1: not binding).

    A node judged comes after every candidate of the summarised pass (each removable, so the
    last pass's unneeded: ``PreviousCandidates``; none is empty, as it has a pod to move), so
    it is simulated only if they leave the limit room (``ca.last_unneeded`` below it).

    Blocked again: present, near or under the threshold (or judged whatever its ratio),
    ``_judge``'s verdict a candidate, its group above its minSize (else refused before any
    simulation),
    no budget covering its pods (the summarised pass had none, or the pass could not stand:
    one now would change every candidate's budgets) and ``GetPodsToMove`` on its pods now,
    as the pass's simulator asks it (no budgets, no controllers, the pods' kept verdicts),
    finding a blocking pod. Its pods are those the pass would read: no earlier candidate
    moves a pod onto it, as none did in the summarised pass (``unchanged`` refuses a
    touched node a placement read) and each answers as it did."""
    near, special, active = ca.screen_threshold + 1e-6, ca.special, ca.active
    over: list[int] = []
    look: list[int] = []
    for node in sorted(gone):
        if not active.item(node):
            return None
        if ratio.item(node) >= near and not special.item(node):
            over.append(node)
        else:
            look.append(node)
    if not look:
        return over, [], []
    # (not empty either: a node with a blocking pod has a pod that stops the emptiness walk,
    # ``has_no_pod_to_move``, so an empty one, ordered first, fails the last check below)
    if len(judge(look)) != len(look):
        return None
    sizes, of_node, min_size = ca.sizes(), ca.groups.of_node, ca.groups.min_size
    if any(sizes[of_node[s]] <= min_size[of_node[s]] for s in look):
        return None
    if ca.budgets and ca.budgets.covering([p for s in look for p in ca.on_node[s]]):
        return None
    if 0 <= limit <= ca.last_unneeded:
        return None
    opts, seconds, none = ca.options, now / SECOND, PdbTracker([])
    blocked: list[int] = []
    inert: list[tuple[int, Any]] = []
    for node in look:
        found = pods_to_move(ca.pods_of(node), opts, none, seconds, None, ca.verdicts)
        if found.blocking is not None:
            blocked.append(node)
            continue
        if not found.pods or not autoscale_reuse.NO_PLACE_QUIET:
            return None
        demand = ca.demand_by_id[id(found.pods[0])]
        if _room_anywhere(ca, node, demand):
            return None
        inert.append((node, demand.requests))
    return over, blocked, inert


def _room_anywhere(ca: ClusterAutoscaler, node: int, demand: Any) -> bool:
    """Whether a destination of a pass now but ``node`` (present, not cordoned) may take the
    pod of ``demand``: its kept static filters' mask (the simulations' ``_quick``, where made),
    then a pod slot and room for each resource it requests, on the state now.

    None has room: then at ``node``'s turn in the pass its first pod to move finds no place
    (``NoPlaceToMovePods``, the pass's earlier candidates only take room and destinations
    away: their moved pods are added, their nodes dropped), before any placement: it sets no
    hint, leaves the round-robin start and moves nothing (``Entry.quiet``), so the other
    candidates answer as before. (The filters besides NodeResourcesFit only refuse more.)"""
    allowed = ca.active.copy()
    allowed[node] = False
    cordoned = ca.state.node_unschedulable
    if cordoned:
        allowed &= ~np.array(cordoned, dtype=bool)
    if ca.outcomes:  # the pass's earlier candidates, removable: dropped before its turn
        allowed[list(ca.outcomes)] = False
    kept = ca.static.get(("*", id(demand.constraints), bool(demand.host_ports)))
    if kept is not None and kept[0] is not None:
        allowed &= kept[0]
    return room_for_any(ca.state, np.flatnonzero(allowed), [demand.requests], ca.screen)


def expire(
    ca: ClusterAutoscaler,
    over: list[int],
    blocked: list[int],
    limit: int,
    now: int,
    inert: Sequence[tuple[int, Any]] = (),
) -> None:
    """The pass at ``now`` answered as the summarised one with ``over`` counted
    ``NotUnderutilized``, ``blocked`` found blocked by a pod and ``inert`` found with no place
    for their first pod (each with that pod's requests) instead of all skipped (``classify``;
    ``unchanged`` held with them verified): its reasons recorded (the simulations' in order of
    first appearance, the nodes simulated in slot order), the summary describing it (those
    found unremovable judged: ``look``; all quiet, ``blocked`` with ``no_place`` of them
    inert, so the next pass may skip them as after a run pass; an inert one's first pod in
    ``failed``: room for it changes its answer), their deadlines from ``now`` in candidate
    order (among themselves, slot order: none is empty nor was unneeded), ``dirty`` and
    ``last_pass`` as ``_end_pass`` leaves them."""
    summary = ca.sims.summary
    assert summary is not None  # ``applicable``
    no_place = [slot for slot, _ in inert]
    found = sorted([*blocked, *no_place])
    before, k = summary.reasons, len(over) + len(found)
    reasons: dict[str, int] = {}
    left = before.get(RECENTLY_UNREMOVABLE, 0) - k  # each was skipped by that pass
    if left:
        reasons[RECENTLY_UNREMOVABLE] = left
    if before.get(NOT_UNDERUTILIZED, 0) + len(over):
        reasons[NOT_UNDERUTILIZED] = before.get(NOT_UNDERUTILIZED, 0) + len(over)
    for key, value in before.items():  # the judged nodes' other reasons, in their order
        if key not in (RECENTLY_UNREMOVABLE, NOT_UNDERUTILIZED, UNNEEDED):
            reasons[key] = value
    if found:  # the only simulations' reasons of that pass, in the order they are found
        inert_slots = set(no_place)
        for slot in found:
            reason = NO_PLACE if slot in inert_slots else BLOCKED
            reasons[reason] = reasons.get(reason, 0) + 1
    if before.get(UNNEEDED):
        reasons[UNNEEDED] = before[UNNEEDED]
    summary.reasons = reasons
    summary.rechecks = None  # the nodes a later pass skipped are others now
    if found:
        summary.look = summary.look.copy()  # the pass's mask, not changed in place
        summary.look[found] = True
        summary.blocked, summary.no_place = tuple(found), len(no_place)
        if inert:
            summary.failed = [*summary.failed, *(row for _, row in inert)]
        deadline = now + ca.settings.unremovable_node_recheck_timeout
        for slot in found:
            ca.recheck.add_timeout(slot, deadline)
        ca.sims.clear[found] = False  # judged now: a bind on one is verified again
        ca.dirty = True
    ca.last_pass = (limit, False, bool(found))
    ca.deadlines_changed()
