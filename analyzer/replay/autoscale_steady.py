"""What lets a scale-down pass answer as the last one beyond an unchanged state
(``analyzer.replay.autoscale_stands.stands``; issue 25 item 5):

- after a pass whose only nodes found unremovable gave quiet answers (blocked by a pod, or no
  place for their first pod: ``Entry.quiet``), the next pass skips them
  (``RecentlyUnremovable``) and answers as that one otherwise (``blocked_only``; a quiet
  answer changed nothing the other candidates read: ``autoscale_candidates``): it stands with
  its reasons moved (``skip_blocked``); at their deadline, if none of them changed (and no
  node freed room for a first pod that found none: ``SimulationMemo.unchanged``'s ``failed``
  rows), the pass answers as the one that found them (``rechecked``, ``restore_blocked``);
- a node judged with a verdict a bind keeps (``steady``) is not verified again after a bind
  (``SimulationMemo.touch``'s ``clear``);
- after a pass that set hints other than those it read, the next pass answers as that one if
  it takes the candidates in the same order (``next_order_same``) and no pod was placed on two
  nodes in it (``repeats``): each pod then goes by its new hint where it went.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import numpy as np

from analyzer.autoscaler.drainability import PdbTracker, pods_to_move
from analyzer.autoscaler.recheck import RECENTLY_UNREMOVABLE, candidate_order
from analyzer.replay.autoscale_reuse import Entry, PassSummary
from analyzer.replay.autoscale_setup import SECOND

_NO_BUDGETS = PdbTracker([])  # (never changed: with no budget nothing is counted)

# ``ca`` is the loop's ``ClusterAutoscaler`` (typed Any: importing it here would make a circle)
ClusterAutoscaler = Any

BLOCKED = "BlockedByPod"
NO_PLACE = "NoPlaceToMovePods"
NOT_UNDERUTILIZED = "NotUnderutilized"
# ``eligibility.check``'s reasons decided before any pod is read (``CurrentlyBeingDeleted``
# reads the time: left out)
STATIC = frozenset({"ScaleDownDisabledAnnotation", "NotAutoscaled"})
# a verdict's kind (``verdict_kind``, kept per slot as ``ReplayView.keeps``): a reason a
# bind keeps, a reason decided before any pod is read; 0 for the others and candidates
BIND_KEEPS, STATIC_KIND = 1, 2


def steady(ca: ClusterAutoscaler, looked: np.ndarray[Any, Any]) -> np.ndarray[Any, Any] | None:
    """The nodes of ``looked`` (a mask over slots: those just judged,
    ``autoscale_scaledown._judge``) whose verdict a bind on them keeps, and keeps them looked
    at, so that the pass's reasons stay (None: none):

    - ``NotUnderutilized``: a bind only adds requests, and CA's utilisation (each resource's
      requests over the allocatable, the highest; a GPU node's GPU ratio) only rises with
      them, so it stays at or over the threshold — unless pods' requests are taken off the
      allocatable (``ignore-daemonsets-utilization``, ``ignore-mirror-pods-utilization``,
      globally or in a group's options): then none. Risen over the screen's margin, the node
      is no longer looked at and counts ``NotUnderutilized`` all the same (the reason's
      place is the second, fixed before any node is judged);
    - ``ScaleDownDisabledAnnotation`` and ``NotAutoscaled`` of a node judged whatever its
      ratio (``special``): decided before any pod is read (``eligibility.check``), the
      annotation and group fixed (no node-state changes where reuse is on). (Another node
      with such a reason leaves ``look`` when a bind lifts it over the screen, counted
      ``NotUnderutilized`` then: not steady.)

    Read from each slot's kept flag (``ReplayView.keeps``, set by ``_judge`` with the slot's
    verdict from its kind, ``keeps``: current for every node judged now): one mask over every
    slot. An unbind is verified as before (``SimulationMemo.touch``); a node a placement walked
    is not ``clear`` either (``summarise``)."""
    mask = ca.keeps & looked
    return mask if np.count_nonzero(mask) else None


def keeps(kind: int, special: bool, rises: bool) -> bool:
    """Whether a verdict of ``kind`` (``verdict_kind``) on a node (``special``: judged whatever
    its ratio) is one a bind keeps (``steady``; ``rises``: ``ReplayView.bind_rises``)."""
    return (kind == BIND_KEEPS and rises) or (kind == STATIC_KIND and special)


def verdict_kind(reason: str) -> int:
    """A verdict's kind as ``steady`` reads it: ``BIND_KEEPS`` (``NotUnderutilized``),
    ``STATIC_KIND`` (decided before any pod is read) or 0."""
    return BIND_KEEPS if reason == NOT_UNDERUTILIZED else STATIC_KIND if reason in STATIC else 0


def blocked_only(ca: ClusterAutoscaler) -> bool:
    """Whether the nodes the last pass found unremovable (``added``) all gave quiet answers
    (blocked by a pod, or no place for their first pod: ``Entry.quiet``), and a pass now, skipping
    them, would still judge a present node (else it ends as a pass with none, which keeps no
    summary). Then (``autoscale_stands.stands``' other tests holding: every node touched since
    outside what the last pass judged and walked, so not one of them) it answers as the last pass
    with them skipped (``skip_blocked``)."""
    summary = ca.sims.summary
    if summary is None or not summary.blocked:
        return False
    # the deadlines are of present nodes (``recheck.update``, ``settle``)
    return int(np.count_nonzero(ca.active)) > len(ca.recheck.deadlines)


def skip_blocked(ca: ClusterAutoscaler, summary: PassSummary) -> None:
    """The pass after one that found only ``summary.blocked`` unremovable, all with quiet
    answers, ran as that one with them skipped (``autoscale_stands.stands``). A pass run would find:
    the ``RecentlyUnremovable`` count (the first reason of a pass with deadlines) up by them, each
    out of ``present`` and of ``look`` alike (``NotUnderutilized``, the count less the nodes looked
    at, the same), not a candidate (its ``BlockedByPod`` or, for the ``no_place`` ones,
    ``NoPlaceToMovePods`` count gone: a reason left at 0 is not recorded), the other candidates in
    the same order, each answering as before (a quiet answer is no part of their context,
    ``simulate_candidates``): the same removable nodes, none found unremovable (no deadline added:
    ``last_pass``'s third field False), the same hints read and set (a quiet candidate sets none: no
    ``drop_old`` as for any pass that stands), the same limit and stop. The summary then describes
    it with the skipped nodes out of what it judged (``look``): a later touch of one is checked as
    of a node skipped (``unchanged``)."""
    blocked = summary.blocked
    assert blocked is not None  # ``stands`` held
    k, no_place = len(blocked), summary.no_place
    taken = {BLOCKED: k - no_place, NO_PLACE: no_place}
    reasons = {RECENTLY_UNREMOVABLE: summary.reasons.get(RECENTLY_UNREMOVABLE, 0) + k}
    for key, value in summary.reasons.items():
        left = value - taken.get(key, 0)
        if key != RECENTLY_UNREMOVABLE and left:
            reasons[key] = left
    summary.rechecks = (blocked, summary.reasons, no_place)
    summary.reasons = reasons
    summary.look = summary.look.copy()  # the pass's mask, not changed in place
    summary.look[list(blocked)] = False
    summary.blocked, summary.no_place = (), 0
    ca.last_pass = (*ca.last_pass[:2], False)


def rechecked(ca: ClusterAutoscaler, before: int, now: int) -> bool:
    """Whether the deadlines a pass just dropped (``before``: their count until then) are
    exactly those of the nodes ``skip_blocked`` moved to skipped, and none of those nodes had
    its pods changed since the pass that found them blocked (``SimulationMemo.changed``: none
    stamped after the summarised pass began). Such a pass judges them as that pass did (the
    same pods: the same verdict, candidates again), and if ``autoscale_stands.stands``
    holds on the deadlines left (the ones that pass skipped: any other expiry or any pass run
    since replaced the summary), answers as that pass: each blocked again (``find``'s first
    test: the same pods, moved-in ones included, and the same budgets; no budget covered the
    pass, or it would not stand), or with no place for its first pod again (the same turn in
    the same order on the same state but the replay's binds, which only take room, and its
    unbinds, each checked by ``unchanged`` for room for that pod: the summary's ``failed``),
    the others as before (their context has no quiet answer).
    ``restore_blocked`` leaves what it would."""
    summary = ca.sims.summary
    if summary is None or summary.rechecks is None:
        return False
    nodes = summary.rechecks[0]
    if ca.system_ages and not _still_blocked(ca, nodes, now):
        return False
    deadlines = ca.recheck.deadlines
    if len(deadlines) != before - len(nodes) or any(n in deadlines for n in nodes):
        return False
    memo = ca.sims
    return bool(int(memo.changed[list(nodes)].max()) <= memo.passes)


def _still_blocked(ca: ClusterAutoscaler, nodes: Sequence[int], now: int) -> bool:
    """Whether each of ``nodes`` found blocked by a kube-system pod not old enough then
    (``Entry.lasting`` False: CA 1.33+'s timeout) is blocked by a pod now (``GetPodsToMove`` as
    the pass's simulator asks it: no budgets, no controllers, the kept verdicts), where time
    alone may have lifted it; the other answers do not change with time (``rechecked``)."""
    entries = ca.sims.entries
    for slot in nodes:
        entry = entries.get(slot)
        if entry is None or entry.lasting:
            continue
        found = pods_to_move(ca.pods_of(slot), ca.options, _NO_BUDGETS, now / SECOND,
                             None, ca.verdicts)  # fmt: skip
        if found.blocking is None:
            return False
    return True


def restore_blocked(ca: ClusterAutoscaler, summary: PassSummary, now: int) -> None:
    """A pass at ``now`` answered as the one that found ``summary.rechecks``' nodes blocked
    (``rechecked``): its reasons recorded again (as it recorded them: the
    ``RecentlyUnremovable`` count back, ``BlockedByPod`` in its place), the nodes judged
    again (``look``) and found blocked (``blocked``: the next pass may skip them again), new
    deadlines from ``now`` in the order they were found, ``dirty`` (the next pass skips them)
    and ``last_pass`` saying deadlines were added, as ``_end_pass`` leaves them."""
    assert summary.rechecks is not None
    nodes, reasons, no_place = summary.rechecks
    summary.reasons = reasons
    summary.look = summary.look.copy()
    summary.look[list(nodes)] = True
    summary.blocked, summary.no_place = nodes, no_place
    summary.rechecks = None
    deadline = now + ca.settings.unremovable_node_recheck_timeout
    for slot in nodes:
        ca.recheck.add_timeout(slot, deadline)
    ca.dirty = True
    ca.last_pass = (*ca.last_pass[:2], True)
    # the loop keeps the next expiry by the deadlines' count, which is back where it was: it
    # is computed again, as after a pass run (``ClusterAutoscaler._run``)
    ca.deadlines_changed()


def repeats(used: list[Entry]) -> bool:
    """Whether a pass on the same state as the one whose answers are ``used`` (made or taken
    again, in order) places every pod where that one placed it, and so answers the same, when
    the hints it reads are those that one left (set over its own, and ``DropOldHints`` after).

    True when no pod was placed on two different nodes in that pass (a pod moved onto a later
    candidate and moved again). Then, candidate by candidate in the same order (the caller
    checks the order), the state at each candidate's turn is the same in both passes: each pod
    placed in the first now has its hint naming the node it went to, tries that node first and
    it passes, on the same state, as it passed there (``tryScheduleUsingHints``: filters only);
    a pod that found no place has no hint now (older ones were dropped with the first pass's
    ``DropOldHints``), or one naming a node it did not fit then (its search walked every
    destination), and again finds none. So no
    placement searches with success, and the round-robin start (``lastIndex``), which only a
    successful search's answer reads, changes nothing; the hints set are the same."""
    pairs = [pair for entry in used for pair in entry.sets]
    # each pod's placements all on one node: as many distinct (pod, node) pairs as pods
    return len(set(pairs)) == len(dict(pairs))


def next_order_same(
    order: list[int],
    candidates: list[int],
    empty: set[int],
    previous: AbstractSet[int],
    outcomes: AbstractSet[int],
) -> bool:
    """Whether a pass with the same ``candidates`` and ``empty`` ones, ordering them by this
    pass's unneeded nodes (``outcomes``), takes them in ``order``, which this pass took by the
    last pass's (``previous``; ``candidate_order``). Only a candidate in one of the two and not
    the other can move (the empty ones too are ordered by it, among themselves): with none,
    the two sorts have the same keys and the orders are one (no sort)."""
    moved = previous ^ outcomes
    if not moved or moved.isdisjoint(candidates):
        return True
    return order == candidate_order(candidates, empty, outcomes)
