"""A waiting pod that a deletion lets preempt is tried again at once, and a nominated node holds
its preemptor's room (``queue_order.may_preempt``; ``ClusterState.reserve``).

Upstream, in order:

- NodeResourcesFit's queueing hint (``isSchedulableAfterPodEvent``, ``noderesources/fit.go``)
  requeues a pod it refused on any deletion of a scheduled pod, so the pod's DefaultPreemption
  runs again at that deletion. Both loops retry it where the deletion made room enough once the
  node's lower-priority pods are gone (the only change that can let it preempt).
- While its victims terminate the preemptor is nominated to their node, and the scheduler counts
  it there when it filters any pod of lower or equal priority (``addNominatedPods`` in
  ``framework/runtime/framework.go``): a smaller pod cannot take the room the victims will free.

Without the second, the first turns into a loop (tried 2026-12-02 on the generator's contended
cluster, seed 1: 25 preemptions became 630, one pod preempting 205 times): each victim's smaller,
lower-priority replacement took the room during the grace period, and the preemptor, no longer
fitting when the victim was gone, preempted the replacement.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hostile_documents import mutated
from hypothesis import given, settings
from hypothesis import strategies as st
from replay_fixtures import GI, N, P, build
from test_replay_preemption import index_of, runs, with_priorities

from analyzer.core.errors import InputError
from analyzer.core.resources import Container, PodSpecResources
from analyzer.core.snapshot import Snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import nominated_spans, prepare
from analyzer.replay.result import ReplayResult
from analyzer.scheduling import load_strategy
from analyzer.scheduling.queue_order import may_preempt
from analyzer.sources import SyntheticSpec, generate
from analyzer.sources.catalog import GIB, Template
from analyzer.sources.kube_placement import kube_placer
from analyzer.sources.lifecycle import Pod
from analyzer.sources.lifecycle_loop import run_lifecycles
from analyzer.sources.placement import ClusterState

MINUTE = 60 * 10**9
GRACE = 30 * 10**9
STRATEGIES = ["kube-default", "most-allocated"]


def _replayed(snapshot: Snapshot, name: str) -> tuple[ReplayResult, int]:
    inp = prepare(snapshot)
    return replay(inp, Strategy(name, load_strategy(name)), seed=0), int(inp.start)


def room_after_a_deletion() -> Snapshot:
    """One 8-core node: h (priority 100, 2 cores) until minute 5, f (priority 100, 3 cores) and
    l (priority 0, 2 cores) throughout. p (priority 100, 4 cores) arrives at minute 1: 1 core is
    free, 3 without l — p neither fits nor can preempt, and waits. At 5 h ends: 3 cores free (p
    still does not fit), 5 without l, so the deletion lets p preempt l."""
    nodes = [N("a", cpu=8000, memory=64 * GI)]
    pods = [P("h", "a", cpu=2000, start=0, end=5), P("f", "a", cpu=3000, start=0),
            P("l", "a", cpu=2000, start=0), P("p", "a", cpu=4000, start=1)]  # fmt: skip
    return with_priorities(build(nodes, pods, minutes=30), {"h": 100, "f": 100, "p": 100})


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_deletion_that_makes_room_to_preempt_retries_the_pod(name: str) -> None:
    snapshot = room_after_a_deletion()
    result, start = _replayed(snapshot, name)
    # p preempts l at 5:00 (before: p waited to the end, 3 cores never enough) and is bound
    # on a when l's 30 s grace ends; l queues again as its controller's new pod (no room)
    assert runs(snapshot, result, "l") == [("a", 0, 5)]
    assert runs(snapshot, result, "p") == [("a", 5, -1)]
    p = index_of(snapshot, "p")
    assert result.placed_at[p] - start == 5 * MINUTE + GRACE
    assert len(result.preemptions["victim"]) == 1


def held_room() -> Snapshot:
    """One 4-core node: f (priority 100, 2 cores) and v (priority 0, 1 core) from the start, 1
    core free. x (priority 100, 2 cores) arrives at minute 1 and preempts v (1 + 1 core). r
    (priority 0, 1 core) arrives at 1:12, while v terminates: the free core would take it, but
    x is nominated there and counts for r (x's 2 cores on top of f and v: none left)."""
    nodes = [N("a", cpu=4000, memory=64 * GI)]
    pods = [P("f", "a", cpu=2000, start=0), P("v", "a", cpu=1000, start=0),
            P("x", "a", cpu=2000, start=1), P("r", "a", cpu=1000, start=1.2)]  # fmt: skip
    return with_priorities(build(nodes, pods, minutes=30), {"f": 100, "x": 100})


@pytest.mark.parametrize("name", STRATEGIES)
def test_the_nominated_node_holds_the_preemptors_room(name: str) -> None:
    snapshot = held_room()
    result, start = _replayed(snapshot, name)
    # x is bound at 1:30 when v is gone; r and v's new pod wait (the node is full). Without the
    # hold r took the core at 1:12, x did not fit at 1:30 and preempted r too (bound at 2:00)
    x = index_of(snapshot, "x")
    assert result.placed_at[x] - start == MINUTE + GRACE
    names = list(snapshot.pods["uid"])
    assert [names[v] for v in result.preemptions["victim"]] == ["v"]
    assert runs(snapshot, result, "r") == []


def room_elsewhere_too() -> Snapshot:
    """Nodes a and b, 4 cores each. DaemonSet pods (they keep their node) f on a (2 cores) and g
    (3 cores, until 1:30) and w (1 core) on b, priority 100; v (priority 0, 2 cores) arrives with
    them and only a has room. x (priority 100, 2 cores) arrives at minute 1, fits nowhere and
    preempts v (b has no lower-priority pod). At 1:30 v is gone and so is g: a has 2 cores free,
    b 3."""
    nodes = [N("a", cpu=4000, memory=16 * GI), N("b", cpu=4000, memory=16 * GI)]
    pods = [P("f", "a", cpu=2000, start=0, owner="DaemonSet"), P("v", "a", cpu=2000, start=0),
            P("g", "b", cpu=3000, start=0, end=1.5, owner="DaemonSet"),
            P("w", "b", cpu=1000, start=0, owner="DaemonSet"),
            P("x", "a", cpu=2000, start=1)]  # fmt: skip
    return with_priorities(build(nodes, pods, minutes=30), {"f": 100, "g": 100, "w": 100, "x": 100})


def test_the_preemptor_tries_its_nominated_node_first() -> None:
    # kube-default's LeastAllocated would score b (3 of 4 cores used with x) above a (4 of 4),
    # but upstream's evaluateNominatedNode tries a alone first and x passes its filters there:
    # bound on a at 1:30, unscored (before 2026-12-02 the replay scored every node: b)
    snapshot = room_elsewhere_too()
    result, start = _replayed(snapshot, "kube-default")
    x = index_of(snapshot, "x")
    assert result.preemptions["victim"].tolist() == [index_of(snapshot, "v")]
    assert runs(snapshot, result, "x") == [("a", 1, -1)]
    assert result.placed_at[x] - start == MINUTE + GRACE
    # the victim's new pod (priority 0) goes where the room is left: b
    assert runs(snapshot, result, "v") == [("a", 0, 1), ("b", 1, -1)]


def test_a_preemption_that_finds_no_candidate_ends_the_nomination() -> None:
    # a: f (DaemonSet, 2 cores) and v (priority 0, 2 cores); b: g (DaemonSet, 4 cores, until
    # minute 10). x (priority 100, 2 cores) preempts v at 1:00; h (priority 200, 2 cores, until
    # minute 10) arrives at 1:12 and preempts v too (x's hold does not count for a higher
    # priority). At 1:30 h, first in the queue, takes a; x fits nowhere and its preemption finds
    # no candidate (no running pod below 100): upstream clears its nominated node. At minute 10 h
    # and g end: a has 2 cores free, b 4, and x, no longer nominated, is scored: b. (With the
    # stale nomination it would go to a.)
    nodes = [N("a", cpu=4000, memory=16 * GI), N("b", cpu=4000, memory=16 * GI)]
    pods = [P("f", "a", cpu=2000, start=0, owner="DaemonSet"), P("v", "a", cpu=2000, start=0),
            P("g", "b", cpu=4000, start=0, end=10, owner="DaemonSet"),
            P("x", "a", cpu=2000, start=1), P("h", "a", cpu=2000, start=1.2, end=10)]  # fmt: skip
    snapshot = with_priorities(
        build(nodes, pods, minutes=30), {"f": 100, "g": 100, "x": 100, "h": 200}
    )
    result, _ = _replayed(snapshot, "kube-default")
    assert runs(snapshot, result, "h") == [("a", 1, 10)]
    assert runs(snapshot, result, "x") == [("b", 10, -1)]


def test_may_preempt_counts_only_the_lower_priority_pods_of_each_changed_node() -> None:
    # two changed nodes, 1 core free each; node 0 holds a priority-0 pod of 2 cores, node 1 a
    # priority-50 pod of 2 cores. Rows asked: 3 cores at priority 100 (node 0 or 1: 3 with the
    # pod gone), 3 cores at priority 10 (node 0 only), 3 cores at priority 0 (none: equal is not
    # lower), 4 cores at priority 100 (none: 3 at most), and no pod slot left on node 1 for the
    # last (priority 40: node 1's pod is not lower, node 0 lacks the memory)
    need = np.array([[3000, 1], [3000, 1], [3000, 1], [4000, 1], [1000, 8]], dtype=np.int64)
    free = np.array([[1000, 4], [1000, 9]], dtype=np.int64)
    slots = np.array([1, 0], dtype=np.int64)
    lower = (np.array([0, 1]), np.array([0, 50]), np.array([[2000, 1], [2000, 1]]))
    hits = may_preempt(need, [100, 10, 0, 100, 40], free, slots, lower)
    assert hits.tolist() == [True, True, False, False, False]


def _template(name: str, cpu: int, priority_class: str) -> Template:
    app = Container(name="app", requests={"cpu": cpu, "memory": GIB}, limits={})
    return Template(name, "Deployment", "shop", (app,), cpu_use=100, mem_use=GIB,
                    priority_class=priority_class)  # fmt: skip


def _pod(uid: str, template: Template, created: int) -> Pod:
    return Pod(uid=uid, name=f"{template.name}-{uid}", template=template,
               owner_kind="ReplicaSet", owner_name=f"{template.name}-rs",
               workload_kind="Deployment", workload_name=template.name, created=created,
               arrive=created + 1, spec=PodSpecResources(containers=template.containers))  # fmt: skip


def test_the_generators_loop_holds_the_room_too() -> None:
    # held_room through the generator's loop (seconds): f and v at 1, x arrives at 60 and
    # preempts v (nominated to 90); v's new pod (at 60) and r (at 70) find no room while x is
    # nominated; x is bound at 90, nobody else is preempted
    alloc = np.array([[4000, 16 * GIB, 100 * GIB, 0, 110]], dtype=np.int64)
    state = ClusterState.empty(("n0",), ("general",), alloc)
    high, low = _template("x", 2000, "high"), _template("v", 1000, "")
    pods = [_pod("f", _template("f", 2000, "high"), 0), _pod("v", low, 0),
            _pod("x", high, 59), _pod("r", _template("r", 1000, ""), 69)]  # fmt: skip
    run_lifecycles(pods, state, kube_placer("kube-default", seed=0), np.random.default_rng(0),
                   (0, 1000))  # fmt: skip
    by = {p.uid: p for p in pods}
    assert by["v"].preempted == 60
    assert (by["x"].node, by["x"].scheduled) == (0, 90)
    assert [p.uid for p in pods if p.preempted is not None] == ["v"]
    assert by["r"].node == -1 and by["r"].phase == "Pending"


def test_the_generator_writes_its_nominations_and_the_replay_reads_them() -> None:
    spec = SyntheticSpec(seed=1, nodes=20, days=1, step=300, churn=0.8, gpu_pool=False,
                         pending_fraction=0.0, zones=3, pod_constraints=True,
                         pods_per_node=20)  # fmt: skip
    cluster = generate(spec, place=kube_placer("kube-default", seed=1))
    pods = cluster.snapshot.pods
    preemptors = [p for p in cluster.pods if p.preemptions]
    assert preemptors
    cells = dict(zip(pods["uid"], pods["nominated"], strict=True))
    names = list(cluster.snapshot.nodes["node"])
    for pod in preemptors:
        spans = json.loads(cells[pod.uid])
        assert spans == [[names[n], t, end] for t, n, _, end in pod.preemptions]
        # a nomination lasts its victims' grace, or less if a higher priority took the node
        assert all(t <= end <= t + 30 for _, t, end in spans)
    inp = prepare(cluster.snapshot)
    assert inp.nominations is not None
    spans, marked = inp.nominations
    assert len(spans) == sum(len(p.preemptions) for p in preemptors)
    assert marked.sum() == sum(p.preempted is not None for p in cluster.pods)
    # created arrivals: the replay makes the preemptions, the data's nominations are not read
    assert prepare(cluster.snapshot, arrivals="created").nominations is None


def test_a_malformed_nomination_names_the_pod() -> None:
    snapshot = held_room()
    snapshot.pods["nominated"] = ["[]", "[]", '[["a", 60]]', "[]"]
    with pytest.raises(InputError, match=r"pods\.nominated of pod x"):
        prepare(snapshot)


@settings(max_examples=200, deadline=None)
@given(st.one_of(mutated([["n1", 60, 90], ["n2", 120, 150]]), st.text(max_size=40)))
def test_a_hostile_nominated_cell_is_read_or_refused_in_one_line(cell: Any) -> None:
    """The ``pods.nominated`` reader (``nominated_spans``, through the project's depth-bounded
    JSON reader) meets wrong types, non-finite and huge numbers, nesting past the bound and
    random text: it returns [node, start, end] spans of a string and two ints, or raises one
    ``InputError`` line naming the cell."""
    text = cell if isinstance(cell, str) else json.dumps(cell)
    try:
        spans = nominated_spans(text, "pods.nominated of pod x")
    except InputError as err:
        assert str(err).startswith("pods.nominated of pod x") and "\n" not in str(err)
        return
    for node, start, end in spans:
        assert isinstance(node, str)
        assert type(start) is int and type(end) is int
