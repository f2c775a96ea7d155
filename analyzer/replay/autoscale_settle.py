"""A change whose scale-down pass would answer as the last, settled at the end of its instant.

The cluster-autoscaler loop (``analyzer.replay.autoscale_loop``) runs a pass at its next run after
the replay bound or unbound a pod (``dirty``); most such passes answer as the last one did
(``autoscale_stands.stands``) and are skipped there. Asked at the end of the instant that
made the change instead (``settle``), the answer is the same, and the run need not be an instant
of the replay: with ``dirty`` cleared, it is one of the runs that do nothing
(``autoscale_idle``).

That run is the loop's next: at the first instant at or after ``next_tick``, else at the run
``next_time`` would answer (``ClusterAutoscaler.first_run``, kept in ``ca.settled`` and moved on at each
instant's end, as ``next_time`` would move it). Nothing changes before it but at another
instant, which settles again (or leaves ``dirty``). So the pass's test reads what it would read
at that run, but for what the run itself does before its pass:

- a recheck deadline at or before it (or of a node gone): not settled, the pass is run there;
- a scale-up (only while pods wait): not settled while pods wait; pods that start to wait later
  make that run an instant (``until``), which asks the scale-up again as a change would, and a
  scale-up there has the pass run (``ClusterAutoscaler._run``).

The run the change stands for, made or left out, records the pass's reasons at its time, counts
it skipped and moves ``next_tick`` on (``skipped_at``), as a skipped pass does; ``finish``
accounts for one due before the replay's end. Only on the fast path (``ca.reuse``) and where
an instant with nothing to do is nothing to the scheduler (``ca.queued`` set).
"""

from __future__ import annotations

from typing import Any

from analyzer.replay.autoscale_stands import candidates_limit, stands, stood

# ``ca`` is the loop's ``ClusterAutoscaler`` (typed Any: importing it here would make a circle)
ClusterAutoscaler = Any


def trigger(ca: ClusterAutoscaler) -> None:
    """Frequent loops (``--frequent-loops-enabled``, ``loop/trigger.go`` ``LoopTrigger.Wait``):
    the loop runs again at once, at this instant after the scheduler's pass, when a run of it
    ordered a scale-up or started a deletion (``lastScaleUpTime`` / ``lastScaleDownDeleteTime``
    not before the run; upstream checks against the run before the last, so two runs follow
    a productive one; the second changes nothing here when the first did not scale, as no time
    passes between them) or a pod became unschedulable at this instant (the pod informer's
    signal: a pod whose ``PodScheduled=False/Unschedulable`` condition is newer than 10 s; the
    engine sets ``unschedulable`` for a pod that started waiting now). That run restarts the
    timer: the next ones are a scan-interval apart from it (``anchor``). It is also a pass
    soon after the last run (``Planner.minUpdateInterval``: the interval since the loop's last
    run, a run of its timer before it or one at this instant; two runs at one instant are
    apart by the first's duration, not known here: taken as 1 ns)."""
    if not (ca.productive or ca.unschedulable):
        return
    ca.productive = ca.unschedulable = False
    now = ca.clock
    if now < ca.inp.start:  # before the data's window the loop does not run (its first run
        return  # is a scan after the start: ``ClusterAutoscaler``)
    if ca.intervals.passes:  # upstream's first pass does not set it
        ca.intervals.shorter((now - ca.anchor) % ca.settings.scan_interval)
    ca.anchor = ca.next_tick = now
    ca.grid_after = now + ca.settings.scan_interval  # the timer's next run after the clock
    ca.again = True
    ca.deadlines_changed()  # the kept run at a recheck deadline is on the old grid


def settle(ca: ClusterAutoscaler) -> None:
    """The end of an instant (the engine has placed its pods and set ``waiting``): with frequent
    loops, a run at once if one is due (``trigger``); then settle a change whose pass would
    answer as the last (``settle_change``)."""
    if ca.frequent:
        trigger(ca)
    else:
        ca.productive = False
    settle_change(ca)


def settle_change(ca: ClusterAutoscaler) -> None:
    """Settle a change whose pass would answer as the last (module docstring)."""
    # ``ca.first_run()`` (written out: once per instant)
    run = ca.next_tick
    if ca.again:  # the run frequent loops start at once, at this instant
        run = ca.clock
    elif run < ca.grid_after:
        run = ca.grid_after
    if ca.settled is not None:
        ca.settled = run
    if not ca.dirty or ca.waiting or ca.undecided or ca.queued is None or not ca.reuse:
        return  # (``undecided``: asked since the last run and left to it, as it will be again)
    ca.undecided = True
    deadlines = ca.recheck.deadlines
    if deadlines:  # (none at most calls)
        active = ca.active
        for slot, deadline in deadlines.items():
            if deadline <= run or not active.item(slot):  # the pass there drops it: run
                return
    # the candidates limit: read by ``stands`` only when the limit stopped the last pass
    limit = -1
    if ca.last_pass[1]:
        limit = candidates_limit(ca, ca.intervals.peek())
    if stands(ca, limit):
        ca.dirty = False
        ca.settled = run
        ca.undecided = False


def finish(ca: ClusterAutoscaler, end: int) -> None:
    """The replay ended at ``end``: a settled change's run before it was left out."""
    if ca.settled is not None and ca.settled <= end:
        skipped_at(ca, ca.settled)


def skipped_at(ca: ClusterAutoscaler, run: int) -> None:
    """The settled change's run at ``run`` (made or left out): its pass stood as the last one
    (recorded and counted skipped, as ``update_unneeded`` does) and the next run is a scan
    later."""
    ca.settled = None
    stood(ca, run)
    ca.intervals.step()
    after = run + ca.settings.scan_interval
    if after > ca.next_tick:
        ca.next_tick = after
