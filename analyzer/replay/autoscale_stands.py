"""Whether a cluster-autoscaler scale-down pass would answer as the last one did, and the pass
that stands for it (``analyzer.replay.autoscale_scaledown``; issue 25 item 5).

``stands`` is the skip test the loop asks before running a pass (``update_unneeded``) and at
the end of an instant that changed the state (``autoscale_settle``): the hints the pass would
read are those the last pass left (or it would place every pod again where the last one did:
``repeat_again``), the last pass found no node unremovable or only nodes blocked by a pod, the
candidates limit that stopped it is the same, and nothing a pass reads changed since
(``SimulationMemo.unchanged``). ``stood`` records such a pass: the last one's reasons again,
counted skipped.
"""

from __future__ import annotations

from typing import Any

from analyzer.autoscaler.recheck import unneeded_limit
from analyzer.replay.autoscale_steady import (
    blocked_only,
    next_order_same,
    repeats,
    restore_blocked,
    skip_blocked,
)

# ``ca`` below is the loop's ``ClusterAutoscaler`` (typed Any: importing that class here would
# make an import circle, tests/test_layout.py)
ClusterAutoscaler = Any


def stood(ca: ClusterAutoscaler, now: int, expired: bool = False) -> None:
    """A pass at ``now`` answered as the last one (``stands``): its reasons recorded again and
    counted skipped. After a pass whose only nodes found unremovable were blocked by a pod,
    it answers as that pass with them skipped (``stands``): what that pass would leave is
    left (``autoscale_steady.skip_blocked``); at their deadline (``expired``), as the pass that
    found them blocked (``autoscale_steady.restore_blocked``). One that stood for a pass placing
    its pods again where the last one did (``hints_repeat``) read the hints the last one left
    and set them again: the next reads the hints it read (``hints_stable``)."""
    summary = ca.sims.summary
    assert summary is not None  # ``stands`` held: a pass was summarised
    if expired:
        restore_blocked(ca, summary, now)
    elif ca.last_pass[2]:
        skip_blocked(ca, summary)
    ca.record.skipped += 1
    ca.record.reasons.append((now, dict(summary.reasons)))
    if ca.hints_repeat:
        ca.hints_stable, ca.hints_repeat = True, False


def stands(ca: ClusterAutoscaler, limit: int, verified: tuple[int, ...] = ()) -> bool:
    """Whether a pass now, with candidates ``limit`` and the recheck deadlines of the last pass
    (the caller knows that no deadline expired but, ``autoscale_steady.rechecked``, those of
    nodes it skipped as blocked) and those it added, would answer as the last
    one did (``SimulationMemo.unchanged``): the hints it would read are those the last pass
    left, the last pass found no node unremovable (this one would skip it) or only nodes
    blocked by a pod (``autoscale_steady.blocked_only``: then it answers as the last with them
    skipped, ``stood``) and, if the limit stopped it, the limit is the same (``limit`` is read
    only then). True verifies the nodes touched since (``unchanged``'s bookkeeping). (No node
    present is never such a pass: ``unchanged`` holds only in the epoch of a pass that judged
    present nodes, and the node set changes only with a new epoch.) ``verified``: nodes whose
    own judging the caller checked (``autoscale_scaledown._expiry_stands``); ``unchanged``'s
    other checks of them (read by a placement, room freed for a pod that found none) still
    apply."""
    if ca.cpu is None or ca.mem is None:
        return False
    last_limit, stopped, added = ca.last_pass
    if added and not blocked_only(ca):
        return False
    return bool(
        (ca.hints_stable or ca.hints_repeat or ca.repeat_check is not None)
        and (not stopped or limit == last_limit)
        and ca.sims.unchanged(
            ca.state,
            ca.screen_under,
            ca.screen_threshold,
            ca.special,
            len(ca.provisioning),
            ca.screen,
            ca.recheck.deadlines,
            verified,
            ca.still_candidates,
        )
        and (ca.hints_stable or ca.hints_repeat or repeat_again(ca))
    )


def repeat_again(ca: ClusterAutoscaler) -> bool:
    """Whether a pass now, on the state of the last one that set hints other than it read,
    answers as it did (``autoscale_steady.repeats`` and ``next_order_same``), asked once, when
    every other test of ``stands`` held (a pass after which the state changed is not asked)."""
    check = ca.repeat_check
    if check is None:
        return False
    ca.repeat_check = None
    orders, used = check
    ca.hints_repeat = repeats(used) and next_order_same(*orders)
    return bool(ca.hints_repeat)


def candidates_limit(ca: ClusterAutoscaler, interval: int) -> int:
    """``unneededNodesLimit`` of a pass after the last one (``ca.last_unneeded`` nodes
    unneeded) with ``interval`` the smallest interval between passes as that pass sees it
    (``PassIntervals.step`` for a pass now, ``peek`` to ask without counting one). ``stands``
    reads it only when the limit stopped the last pass."""
    return unneeded_limit(
        ca.options.max_scale_down_parallelism,
        ca.last_unneeded,
        ca.settings.unneeded_time,
        interval,
    )
