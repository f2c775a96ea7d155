"""The cluster-autoscaler loop's runs that do nothing, left out of the replay's instants, and
the loop's next instant (``next_time``, a method of ``ClusterAutoscaler``).

While pods wait or nodes are unneeded, the loop runs every ``scan-interval`` (``next_time``).
Such a run does nothing but move ``next_tick`` on when the state did not change since the last
pass (no ``dirty``), no recheck deadline passed, the waiting pods are those the last scale-up
was asked about (the same queue, nodes and removals: ``_run`` does not ask again) and no unneeded
node can be deleted yet (``to_delete``: none unneeded for ``scale-down-unneeded-time``, or within
``scale-down-delay-after-add`` of the last scale-up). Between two instants of the replay nothing
changes, so every run of the loop before the first at which one of those may no longer hold
does nothing: ``next_time`` answers that run (``until``), and ``tick`` at the next instant sets
``next_tick`` as the runs left out would have (``catch_up``). The runs are at ``first``,
``first + scan``, … (``first``: the run ``next_time`` would have answered).

Only where an instant with nothing to do is nothing to the scheduler too: no load-aware feed
(a reload at an instant retries the pending pods); the engine says so (``queued`` set).
"""

from __future__ import annotations

from typing import Any

from analyzer.replay.input import NEVER

# ``ca`` is the loop's ``ClusterAutoscaler`` (typed Any: importing it here would make a circle)
ClusterAutoscaler = Any


def next_time(ca: ClusterAutoscaler) -> int:
    """The next instant the loop acts on its own (``NEVER``: none): a node ready, a recheck
    deadline's run, or while one is due (the state changed, pods wait or nodes are unneeded)
    its next run, after the runs that do nothing (``until``). Read once per instant: the kept
    values (``grid_after``, ``_expiry``'s) without a call."""
    if ca.again:  # a run frequent loops start at once: at this instant, again
        ca.idle_from = None  # (caught up with at this instant's first call of ``tick``)
        return ca.clock  # type: ignore[no-any-return]
    ready: int = ca.ready_at
    kept = ca._expiry_kept
    if kept is None or kept[0] != len(ca.recheck.deadlines):
        ca._expiry()
        kept = ca._expiry_kept
        assert kept is not None
    expiry = kept[1]
    ca.idle_from = None
    busy = ca.dirty or ca.waiting or ca.unneeded
    recheck = NEVER
    if expiry is not None:  # a node skipped as recently unremovable is judged again then
        # the run on the grid at or after the deadline and after the last instant
        at = ca.grid_after if expiry <= ca.clock + 1 else kept[2]
        after = ca.next_tick
        settled = ca.settled
        if settled is not None and at > settled:  # that run comes first
            after = max(after, settled + ca.settings.scan_interval)
        recheck = after if after > at else at
    if not busy:
        return ready if ready < recheck else recheck
    # ``first_run`` (never after ``recheck``: both on the grid)
    first: int = ca.next_tick
    if first < ca.grid_after:
        first = ca.grid_after
    if ca.queued is not None and not ca.dirty:
        # the runs before ``until`` do nothing: left out (module docstring); the recheck is
        # the first run at or after the deadline (``until`` reads it), not ``recheck``
        # (``next_tick`` is not caught up before the next instant)
        due = until(ca, expiry)
        if due > first:
            scan = ca.settings.scan_interval
            ca.idle_from = first
            first = NEVER if due >= NEVER else first + -(-(due - first) // scan) * scan
            return ready if ready < first else first
    if recheck < first:  # min(ready, recheck, first), written out (once per instant)
        first = recheck
    return ready if ready < first else first


def until(ca: ClusterAutoscaler, expiry: int | None) -> int:
    """The first time a run of the loop may do more than move ``next_tick`` on, given the
    state now and no change before (NEVER: none; at most now when it may at once)."""
    if ca.dirty or (ca.waiting and ca.settled is not None):
        return -NEVER  # a pass, or a settled change's run that asks the scale-up again
    if ca.waiting and (ca.queued(), len(ca.record.presence), len(ca.record.removed)) != ca.asked:
        return -NEVER  # the scale-up is asked again
    first = deletable(ca)
    if expiry is not None:  # ``_recheck_due``: a pass at the first run at or after it
        return min(first, expiry)
    return first


def deletable(ca: ClusterAutoscaler) -> int:
    """The first time ``to_delete`` may answer a node (NEVER: none unneeded): the earliest
    unneeded node's time and the cool-down after the last scale-up; before it ``to_delete``
    answers nothing. Kept as of (the outcomes, their count, ``last_add``): the unneeded times
    change only with them (a pass makes new outcomes, a removal drops one)."""
    outcomes, last_add = ca.outcomes, ca.last_add
    kept = ca.deletable_kept
    if kept is None or kept[0] is not outcomes or kept[1] != len(outcomes) or kept[2] != last_add:
        if outcomes:
            settings = ca.settings
            since = min(map(ca.unneeded.__getitem__, outcomes))
            # unneeded strictly longer than the time (``to_delete``), at once with none
            wait = settings.unneeded_time
            first = max(last_add + settings.delay_after_add, since + wait + (1 if wait else 0))
        else:
            first = NEVER
        kept = ca.deletable_kept = (outcomes, len(outcomes), last_add, first)
    return kept[3]  # type: ignore[no-any-return]


def catch_up(ca: ClusterAutoscaler, now: int) -> None:
    """At an instant ``now`` after runs left out (at ``ca.idle_from`` + k × scan before now),
    ``next_tick`` as they would have left it: one scan after the last of them."""
    first = ca.idle_from
    if first is None or now <= first:
        return
    scan = ca.settings.scan_interval
    last = first + (now - first) // scan * scan
    if last < now:  # the run at ``now`` itself (on the grid) is run as it would be
        ca.next_tick = last + scan
