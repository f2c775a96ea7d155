"""A nominated pod's hold counts only for pods of lower or equal priority, lasts until the
preemptor's own attempt, and ends when a preemption of a higher priority takes its node
(``analyzer.scheduling.nominated_holds``), in the replay and in the generator's loop.

Upstream, in order:

- ``addNominatedPods`` (``pkg/scheduler/framework/runtime/framework.go``) adds to a node only the
  nominated pods whose priority is at least the filtered pod's: a pod of higher priority does
  not see a lower one's nomination, in its filters and in its preemption dry run
  (``SelectVictimsOnNode`` filters with the same nominated pods);
- the nomination (``status.nominatedNodeName``) lasts until the preemptor's next scheduling
  attempt, so pods popped before it at that instant (equal priority, earlier queue timestamp)
  still see it;
- ``prepareCandidate`` (``pkg/scheduler/framework/preemption/preemption.go``) clears the
  nomination of the lower-priority pods nominated to the node it just nominated
  (``getLowerPriorityNominatedPods``): they go back to the active queue and, no longer
  nominated, may preempt again (``PodEligibleToPreemptOthers``).

Before 2026-12-02 each loop's hold counted for every pod, ended before the pass of its last
instant, and a lower-priority nomination stayed on a node a higher preemptor took.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from replay_fixtures import GI, N, P, at, build
from test_replay_preemption import index_of, runs, with_priorities
from test_replay_preemption_retry import _pod, _template

from analyzer.core.snapshot import Snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.replay.result import ReplayResult
from analyzer.scheduling import load_strategy
from analyzer.scheduling.nominated_holds import Holds
from analyzer.scheduling.plugins.interpodaffinity import InterPodAffinity
from analyzer.scheduling.plugins.podtopologyspread import PodTopologySpread
from analyzer.scheduling.queue_order import may_fit_beside
from analyzer.sources.catalog import GIB
from analyzer.sources.kube_placement import KubePlacer, kube_placer
from analyzer.sources.lifecycle_loop import run_lifecycles
from analyzer.sources.placement import ClusterState

SECOND = 10**9
STRATEGIES = ["kube-default", "most-allocated"]


def _replayed(snapshot: Snapshot, name: str) -> tuple[ReplayResult, int]:
    inp = prepare(snapshot)
    return replay(inp, Strategy(name, load_strategy(name)), seed=0), int(inp.start)


def _victims(snapshot: Snapshot, result: ReplayResult) -> list[tuple[str, str, str, int]]:
    """(preemptor, victim, node, seconds from the start) of every preemption."""
    inp = prepare(snapshot)
    names, nodes, start = inp.pod_uids, inp.node_names, int(inp.start)
    found = result.preemptions
    return [
        (names[p], names[v], nodes[n], (t - start) // SECOND)
        for p, v, n, t in zip(
            found["preemptor"].tolist(), found["victim"].tolist(), found["node"].tolist(),
            found["time"].tolist(), strict=True,
        )
    ]  # fmt: skip


def higher_priority_arrives() -> Snapshot:
    """One 4-core node: f (priority 100, 2 cores) and v (priority 0, 1 core), 1 core free. x
    (priority 50, 2 cores) arrives at minute 1 and preempts v (nominated until 1:30). h
    (priority 100, 1 core) arrives at 1:12: the free core is there unless x's hold counts."""
    nodes = [N("a", cpu=4000, memory=64 * GI)]
    pods = [P("f", "a", cpu=2000, start=0), P("v", "a", cpu=1000, start=0),
            P("x", "a", cpu=2000, start=1), P("h", "a", cpu=1000, start=1.2)]  # fmt: skip
    return with_priorities(build(nodes, pods, minutes=30), {"f": 100, "x": 50, "h": 100})


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_lower_priority_nomination_does_not_count_for_a_higher_pod(name: str) -> None:
    snapshot = higher_priority_arrives()
    result, start = _replayed(snapshot, name)
    # h takes the free core at 1:12 (before: x's 2 cores counted for it until 1:30, when h,
    # popped first, was bound). At 1:30 v is gone, x finds 1 core and no lower-priority pod to
    # preempt: it waits, as upstream's
    assert _victims(snapshot, result) == [("x", "v", "a", 60)]
    assert runs(snapshot, result, "h") == [("a", 1, -1)]
    assert result.placed_at[index_of(snapshot, "h")] - start == 72 * SECOND
    assert runs(snapshot, result, "x") == []


def equal_priority_queued_earlier() -> Snapshot:
    """One 4-core node: f (priority 100, 2 cores) and v (priority 0, 1 core). x (priority 100,
    2 cores) arrives at minute 1 and preempts v. e (priority 100, 1 core) was created at 0:30
    but reaches the scheduler at 1:12 (scheduled then in the data): x's hold counts for it
    (equal priority), no room; it cannot preempt (v gone, x's 2 cores held: 0 free). At 1:30 v
    is gone and e, queued earlier, is popped before x."""
    nodes = [N("a", cpu=4000, memory=64 * GI)]
    pods = [P("f", "a", cpu=2000, start=0), P("v", "a", cpu=1000, start=0),
            P("x", "a", cpu=2000, start=1), P("e", "a", cpu=1000, start=1.2)]  # fmt: skip
    snapshot = with_priorities(build(nodes, pods, minutes=30), {"f": 100, "x": 100, "e": 100})
    snapshot.pods.loc[index_of(snapshot, "e"), "created"] = at(0.5)
    return snapshot


@pytest.mark.parametrize("name", STRATEGIES)
def test_the_hold_lasts_until_the_preemptors_own_attempt(name: str) -> None:
    snapshot = equal_priority_queued_earlier()
    result, start = _replayed(snapshot, name)
    # at 1:30 x's nomination still counts when e is tried first: x gets the room its victim
    # left (before: the hold ended before the pass, e took a core and x, 1 core short, waited)
    assert _victims(snapshot, result) == [("x", "v", "a", 60)]
    assert runs(snapshot, result, "x") == [("a", 1, -1)]
    assert result.placed_at[index_of(snapshot, "x")] - start == 90 * SECOND
    assert runs(snapshot, result, "e") == []


def taken_over() -> Snapshot:
    """Node a (4 cores): f (priority 100, 2 cores), v (priority 0, 1 core, from 0:00) and u
    (priority 0, 1 core, from 0:30). Node b (2 cores): y (priority 100) and w (priority 0, from
    0:00), 1 core each. Both full.

    x (priority 50, 1 core) arrives at 1:00: one victim on either node; upstream's last
    tie-break (the latest start of the most important victim) picks a and u. h (priority 100,
    2 cores) arrives at 1:12: x's hold does not count for it; b cannot make 2 cores, a can by
    evicting v and u. (The first five have a node selector: the replay places them where the
    data has them.)"""
    nodes = [N("a", cpu=4000, memory=64 * GI, labels=json.dumps({"side": "a"})),
             N("b", cpu=2000, memory=64 * GI, labels=json.dumps({"side": "b"}))]  # fmt: skip
    pods = [P("f", "a", cpu=2000, start=0), P("v", "a", cpu=1000, start=0),
            P("u", "a", cpu=1000, start=0.5), P("y", "b", cpu=1000, start=0),
            P("w", "b", cpu=1000, start=0), P("x", "b", cpu=1000, start=1),
            P("h", "a", cpu=2000, start=1.2)]  # fmt: skip
    snapshot = with_priorities(
        build(nodes, pods, minutes=30), {"f": 100, "y": 100, "x": 50, "h": 100}
    )
    snapshot.pods["node_selector"] = [json.dumps({"side": side}) for side in "aaabb"] + ["{}", "{}"]
    return snapshot


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_higher_preemption_ends_the_lower_nomination_on_its_node(name: str) -> None:
    snapshot = taken_over()
    result, start = _replayed(snapshot, name)
    # h's nomination to a ends x's there: x, tried again at once, no longer nominated, preempts
    # w on b at 1:12 and is bound there when w is gone (1:42). Before, x's hold counted for h
    # until 1:30 (h could not preempt: v and u gone, x's core held, 1 core short); then h
    # preempted v and x preempted w, both bound at 2:00
    assert _victims(snapshot, result) == [
        ("x", "u", "a", 60), ("h", "v", "a", 72), ("h", "u", "a", 72), ("x", "w", "b", 72),
    ]  # fmt: skip
    assert runs(snapshot, result, "x") == [("b", 1, -1)]
    assert result.placed_at[index_of(snapshot, "x")] - start == 102 * SECOND
    # h: u is gone at 1:30 (its first grace), v at 1:42
    assert runs(snapshot, result, "h") == [("a", 1, -1)]
    assert result.placed_at[index_of(snapshot, "h")] - start == 102 * SECOND


def _one_node(cpu: int) -> ClusterState:
    alloc = np.array([[cpu, 16 * GIB, 100 * GIB, 0, 110]], dtype=np.int64)
    return ClusterState.empty(("n0",), ("general",), alloc)


def test_the_generators_loop_sets_lower_holds_aside_too() -> None:
    # higher_priority_arrives in the generator's loop (seconds; "high" 10000, "" 0,
    # "batch-low" -10): x preempts v at 60 (nominated to 90); h, arriving at 70, takes the free
    # core (x's hold is not for it); x is never bound
    f, v = _template("f", 2000, "high"), _template("v", 1000, "batch-low")
    x, h = _template("x", 2000, ""), _template("h", 1000, "high")
    pods = [_pod("f", f, 0), _pod("v", v, 0), _pod("x", x, 59), _pod("h", h, 69)]
    run_lifecycles(pods, _one_node(4000), kube_placer("kube-default", seed=0),
                   np.random.default_rng(0), (0, 1000))  # fmt: skip
    by = {p.uid: p for p in pods}
    assert by["v"].preempted == 60 and by["x"].preemptions[0][:2] == (60, 0)
    assert (by["h"].node, by["h"].scheduled) == (0, 70)
    assert by["x"].node == -1


def test_the_generator_ends_a_nomination_a_higher_preemption_takes_over() -> None:
    # one 4-core node: f (high, 2 cores), v and u (batch-low, 1 core; u the later). x (priority
    # 0, 1 core) preempts u at 60; h (high, 2 cores) at 70 preempts v and u and takes the node
    # over: x's nomination ends at 70 (its span in the data too), and x, tried again, finds
    # nothing to preempt (without v and u, h's 2 cores held: no room)
    f, low = _template("f", 2000, "high"), _template("v", 1000, "batch-low")
    x, h = _template("x", 1000, ""), _template("h", 2000, "high")
    pods = [_pod("f", f, 0), _pod("v", low, 0), _pod("u", low, 30), _pod("x", x, 59),
            _pod("h", h, 69)]  # fmt: skip
    run_lifecycles(pods, _one_node(4000), kube_placer("kube-default", seed=0),
                   np.random.default_rng(0), (0, 1000))  # fmt: skip
    by = {p.uid: p for p in pods}
    assert by["x"].preemptions == [(60, 0, ("u",), 70)]
    assert by["h"].preemptions == [(70, 0, ("v", "u"), 100)] or by["h"].preemptions == [
        (70, 0, ("u", "v"), 100)
    ]
    assert (by["h"].node, by["h"].scheduled) == (0, 100)
    assert by["x"].node == -1


def test_holds_set_aside_and_displaced() -> None:
    # three nominees on two nodes: 1 (priority 0) and 2 (priority 5) on node 7, 3 (priority 9)
    # on node 8; the state is a per-node sum the callbacks keep
    prio = {1: 0, 2: 5, 3: 9}
    room = {7: 0, 8: 0}
    lasting: list[tuple[int, bool]] = []

    def reserve(pod: int, node: int) -> None:
        room[node] += pod

    def release(pod: int, node: int) -> None:
        room[node] -= pod

    holds = Holds(prio.__getitem__, reserve, release, lambda n, freed: lasting.append((n, freed)))
    holds.hold(1, 7, 100)
    holds.hold(2, 7, 100)
    holds.hold(3, 8, 50)
    assert room == {7: 3, 8: 3} and len(lasting) == 3
    with holds.aside(5):  # only 1 is below 5
        assert room == {7: 2, 8: 3}
        assert holds.displaced(6, 7) == [1, 2]  # 1 was aside: released once, not twice
        assert room == {7: 0, 8: 3}
    assert room == {7: 0, 8: 3} and 1 not in holds and 2 not in holds
    assert lasting[3:] == [(7, True), (7, True)]  # aside's changes are not lasting
    assert holds.beside([8, 7]) == [(0, 3, 9)]
    assert holds.ending(49) == [] and holds.ending(50) == [(3, 8)] and room == {7: 0, 8: 0}


def test_may_fit_beside_counts_a_hold_for_lower_or_equal_pods_only() -> None:
    # one changed node, 1 core free counting two holds: holder 10 (priority 50, 2 cores) and
    # holder 11 (priority 100, 1 core). A 2-core pod fits once the holds it does not see go:
    # at priority 60 (10's hold set aside: 3 free), not at 50 (equal: counts), yes for holder 10
    # itself, at priority 200 (both aside: 4 free) a 4-core pod too
    need = np.array([[2000, 1], [2000, 1], [2000, 1], [4000, 1], [4000, 1]], dtype=np.int64)
    free = np.array([[1000, 10]], dtype=np.int64)
    held = [(0, 10, 50), (0, 11, 100)]
    requests = {10: np.array([2000, 1]), 11: np.array([1000, 1])}
    hits = may_fit_beside(need, [1, 2, 10, 3, 4], [60, 50, 50, 200, 60], free,
                          np.array([0]), held, requests.__getitem__)  # fmt: skip
    assert hits.tolist() == [True, False, True, True, False]


def _placer(topology: bool) -> KubePlacer:
    """kube-default's placer; without its spread and affinity filters the generator's pass has
    no topology retry rule and holds only the groups it retries (``one_pass``)."""
    placer = kube_placer("kube-default", seed=0)
    if not topology:
        kept = [f for f in placer.profile.filters
                if not isinstance(f, (PodTopologySpread, InterPodAffinity))]  # fmt: skip
        placer = KubePlacer(dataclasses.replace(placer.profile, filters=kept), placer.rng)
        assert placer.requeue(_one_node(1)) is None
    return placer


@pytest.mark.parametrize("topology", [True, False])
def test_the_generator_retries_a_pod_whose_nomination_was_taken(topology: bool) -> None:
    # taken_over in the generator's loop (seconds), with the generator's priority classes:
    # n0 (4 cores) and n1 (2 cores). At 0 f (system-node-critical, 2 cores) and v, u
    # (batch-low, -10) go to n0, y (system-node-critical) to n1; w (priority 0) at 29 to n1
    # (LeastAllocated: the only room). x (high, 1 core) at 60 preempts one of v and u on n0 (its
    # victim's priority below w's); h (system-cluster-critical, 2 cores) at 70 preempts v and u
    # and takes n0 over: x, tried again at once, preempts w on n1 and is bound there at 100,
    # h on n0 at 100
    alloc = np.array([[4000, 16 * GIB, 100 * GIB, 0, 110], [2000, 16 * GIB, 100 * GIB, 0, 110]],
                     dtype=np.int64)  # fmt: skip
    state = ClusterState.empty(("n0", "n1"), ("general", "general"), alloc)
    top, low = _template("f", 2000, "system-node-critical"), _template("v", 1000, "batch-low")
    pods = [_pod("f", top, 0), _pod("y", _template("y", 1000, "system-node-critical"), 0),
            _pod("v", low, 0), _pod("u", low, 0), _pod("w", _template("w", 1000, ""), 29),
            _pod("x", _template("x", 1000, "high"), 59),
            _pod("h", _template("h", 2000, "system-cluster-critical"), 69)]  # fmt: skip
    run_lifecycles(pods, state, _placer(topology), np.random.default_rng(0), (0, 1000))
    by = {p.uid: p for p in pods}
    assert [by[u].node for u in "fyvuw"] == [0, 1, 0, 0, 1]
    (first, second) = by["x"].preemptions
    assert first[:2] == (60, 0) and len(first[2]) == 1 and first[2][0] in "vu"
    assert first[3] == 70  # ended when h's preemption took n0
    assert second == (70, 1, ("w",), 100)
    assert [(t, n, sorted(v), end) for t, n, v, end in by["h"].preemptions] == [
        (70, 0, ["u", "v"], 100)
    ]
    assert (by["x"].node, by["x"].scheduled) == (1, 100)
    assert (by["h"].node, by["h"].scheduled) == (0, 100)
