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
  it gets a new deadline, in candidate order.

``expire`` leaves what that pass would: its reasons, the summary of what it judged, the new
deadlines, ``dirty`` and ``last_pass``. Only after a pass (run, or stood for one) that found no
node unremovable, was not stopped by the candidates limit and refused no candidate for its
group's minSize (``applicable``): then the reasons' order is known (the judged ones' reasons,
then the simulations' — here only ``BlockedByPod`` — then ``Unneeded``). The rest of what the
nodes' changes could alter (read by a placement, room freed for a pod that found none, the
same epoch and budgets) is ``SimulationMemo.unchanged``'s, asked with the nodes ``verified``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from analyzer.autoscaler.drainability import PdbTracker, pods_to_move
from analyzer.autoscaler.recheck import RECENTLY_UNREMOVABLE, UNNEEDED_LIMIT
from analyzer.replay.autoscale_setup import SECOND

# ``ca`` is the loop's ``ClusterAutoscaler`` (typed Any: importing it here would make a circle)
ClusterAutoscaler = Any

BLOCKED = "BlockedByPod"
NOT_UNDERUTILIZED = "NotUnderutilized"
UNNEEDED = "Unneeded"
# reasons a pass records only from its simulations or its groups' minSize: a summary with one
# of them found a node unremovable, was stopped, or refused a candidate before simulating
NOT_AFTER = frozenset({BLOCKED, "NoPlaceToMovePods", UNNEEDED_LIMIT, "NodeGroupMinSizeReached"})


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
) -> tuple[list[int], list[int]] | None:
    """The nodes of ``gone`` (their deadline passed) that a pass now counts
    ``NotUnderutilized`` and those it finds ``BlockedByPod``, each in slot order; None if one
    is neither (or gone from the cluster). ``ratio``: every slot's screen ratio;
    ``judge``: ``_judge`` of a list of slots (the candidates among them).

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
        return over, look
    # (not empty either: a node with a blocking pod has a pod that stops the emptiness walk,
    # ``has_no_pod_to_move``, so an empty one, ordered first, fails the last check below)
    if len(judge(look)) != len(look):
        return None
    sizes, of_node, min_size = ca.sizes(), ca.groups.of_node, ca.groups.min_size
    if any(sizes[of_node[s]] <= min_size[of_node[s]] for s in look):
        return None
    if ca.budgets and ca.budgets.covering([p for s in look for p in ca.on_node[s]]):
        return None
    opts, seconds, none = ca.options, now / SECOND, PdbTracker([])
    for node in look:
        if pods_to_move(ca.pods_of(node), opts, none, seconds, None, ca.verdicts).blocking is None:
            return None
    return over, look


def expire(
    ca: ClusterAutoscaler, over: list[int], blocked: list[int], limit: int, now: int
) -> None:
    """The pass at ``now`` answered as the summarised one with ``over`` counted
    ``NotUnderutilized`` and ``blocked`` found blocked by a pod instead of both skipped
    (``classify``; ``unchanged`` held with them verified): its reasons recorded, the summary
    describing it (the blocked ones judged: ``look``; found unremovable, all blocked:
    ``blocked``, so the next pass may skip them as after a run pass), their deadlines from
    ``now`` in candidate order (among themselves, slot order: none is empty nor was unneeded),
    ``dirty`` and ``last_pass`` as ``_end_pass`` leaves them."""
    summary = ca.sims.summary
    assert summary is not None  # ``applicable``
    before, k = summary.reasons, len(over) + len(blocked)
    reasons: dict[str, int] = {}
    left = before.get(RECENTLY_UNREMOVABLE, 0) - k  # each was skipped by that pass
    if left:
        reasons[RECENTLY_UNREMOVABLE] = left
    if before.get(NOT_UNDERUTILIZED, 0) + len(over):
        reasons[NOT_UNDERUTILIZED] = before.get(NOT_UNDERUTILIZED, 0) + len(over)
    for key, value in before.items():  # the judged nodes' other reasons, in their order
        if key not in (RECENTLY_UNREMOVABLE, NOT_UNDERUTILIZED, UNNEEDED):
            reasons[key] = value
    if blocked:  # the first (and only) reason of a simulation in that pass
        reasons[BLOCKED] = len(blocked)
    if before.get(UNNEEDED):
        reasons[UNNEEDED] = before[UNNEEDED]
    summary.reasons = reasons
    summary.rechecks = None  # the nodes a later pass skipped are others now
    if blocked:
        summary.look = summary.look.copy()  # the pass's mask, not changed in place
        summary.look[blocked] = True
        summary.blocked = tuple(blocked)
        deadline = now + ca.settings.unremovable_node_recheck_timeout
        for slot in blocked:
            ca.recheck.add_timeout(slot, deadline)
        ca.sims.clear[blocked] = False  # judged now: a bind on one is verified again
        ca.dirty = True
    ca.last_pass = (limit, False, bool(blocked))
    ca.deadlines_changed()
