"""When a waiting pod that may preempt is tried again (a known gap, kept as a strict xfail).

kube-scheduler requeues a pod NodeResourcesFit refused on any deletion of a scheduled pod
(``isSchedulableAfterPodEvent`` in upstream's ``noderesources/fit.go``: "any deletion event to a
scheduled pod could make the unscheduled pod schedulable"), so its DefaultPreemption runs again at
that deletion. The replay and the generator's loop retry a waiting pod only where room grew
enough for it to fit without evicting anyone (``queue_order.may_fit``). A pod that a deletion
lets preempt — but not fit — waits in both loops until some later room.

Not fixed yet, and why: retrying at such deletions alone (tried 2026-12-02) turns the generator's
contended cluster (seed 1 of ``tests/test_replay_reproduction.py``) from 25 preemptions into 630,
one pod preempting 205 times, a victim every 30 s. Each victim's replacement (smaller, lower
priority) takes the room the victim's termination still leaves free, because neither loop
reserves the nominated node for its preemptor (upstream's ``addNominatedPods``: a pod of lower or
equal priority sees the nominated pod on that node), and when the victim is gone the preemptor
no longer fits and preempts the replacement. The retry needs that reservation first, in both
loops, and the replay of observed data (where preemptions are only the victims' deletions) cannot
see nominations. docs/whatif.md ("Not modelled") says the same.
"""

from __future__ import annotations

import pytest
from replay_fixtures import GI, N, P, build
from test_replay_preemption import runs, with_priorities

from analyzer.core.snapshot import Snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling import load_strategy


def room_after_a_deletion() -> Snapshot:
    """One 8-core node: h (priority 100, 2 cores) until minute 5, f (priority 100, 3 cores) and
    l (priority 0, 2 cores) throughout. p (priority 100, 4 cores) arrives at minute 1: 1 core is
    free, 3 without l — p neither fits nor can preempt, and waits. At 5 h ends: 3 cores free (p
    still does not fit), 5 without l, so the deletion lets p preempt l."""
    nodes = [N("a", cpu=8000, memory=64 * GI)]
    pods = [P("h", "a", cpu=2000, start=0, end=5), P("f", "a", cpu=3000, start=0),
            P("l", "a", cpu=2000, start=0), P("p", "a", cpu=4000, start=1)]  # fmt: skip
    return with_priorities(build(nodes, pods, minutes=30), {"h": 100, "f": 100, "p": 100})


@pytest.mark.xfail(strict=True, reason="not modelled: the retry on deletions (module docstring)")
@pytest.mark.parametrize("name", ["kube-default", "most-allocated"])
def test_a_deletion_that_makes_room_to_preempt_retries_the_pod(name: str) -> None:
    snapshot = room_after_a_deletion()
    result = replay(prepare(snapshot), Strategy(name, load_strategy(name)), seed=0)
    # upstream: p preempts l at 5:00 and is bound on a when l's 30 s grace ends
    assert runs(snapshot, result, "l") == [("a", 0, 5)]
    assert runs(snapshot, result, "p") == [("a", 5, -1)]


@pytest.mark.parametrize("name", ["kube-default", "most-allocated"])
def test_today_the_pod_waits_for_room_to_fit_without_preempting(name: str) -> None:
    """What both loops do now (the gap above, pinned so a change to it is seen): nothing
    preempts, p never runs in the 30 minutes, l keeps running."""
    snapshot = room_after_a_deletion()
    result = replay(prepare(snapshot), Strategy(name, load_strategy(name)), seed=0)
    assert runs(snapshot, result, "p") == []
    assert runs(snapshot, result, "l") == [("a", 0, -1)]
    assert len(result.preemptions["victim"]) == 0
