"""The replay's PrioritySort queue and DefaultPreemption (``analyzer.replay.preemption``).

Hand-built clusters whose outcome follows from upstream's rules (worked out in each test's
docstring), the equal-priority replay against the FIFO replay without preemption, the replay's
node-by-node preemption against the scheduling core's ``preempt`` on the whole state, and the
invariant that nobody is preempted by a pod of equal or lower priority.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from replay_fixtures import GI, N, P, build

from analyzer.core.snapshot import Snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import NEVER, prepare
from analyzer.replay.preemption import ReplayPreemption
from analyzer.replay.priority_order import band, queue_rank
from analyzer.replay.projection import usage_matrices
from analyzer.replay.result import ReplayResult
from analyzer.replay.scoring import ScoreCache
from analyzer.scheduling import load_strategy
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.plugins.defaultpreemption import (
    BoundPod,
    DefaultPreemption,
    node_statuses,
    offset_and_count,
    preempt,
)
from analyzer.scheduling.plugins.helper.node_constraints import (
    NodeAffinityFilter,
    TaintTolerationFilter,
)
from analyzer.scheduling.plugins.noderesources.fit import NodeResourcesFit
from analyzer.scheduling.plugins.nodeunschedulable import CACHE_KEY as CORDONED_KEY
from analyzer.scheduling.plugins.nodeunschedulable import NodeUnschedulable
from analyzer.scheduling.state import ClusterState, PodDemand, make_demand
from analyzer.sources import SyntheticSpec, generate
from analyzer.sources.kube_placement import kube_placer
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.evaluate import evaluate

MINUTE = 60 * 10**9
GRACE = 30 * 10**9  # a victim's graceful termination (kube's default)


def with_priorities(snapshot: Snapshot, priorities: Mapping[str, int]) -> Snapshot:
    """``snapshot`` with the pods' ``priority`` set from ``priorities`` (by uid; others 0)."""
    pods = snapshot.pods.copy()
    pods["priority"] = [priorities.get(str(u), 0) for u in pods["uid"]]
    pods["priority"] = pods["priority"].astype("Int64")
    return dataclasses.replace(snapshot, pods=pods)


def kube_default() -> Strategy:
    return Strategy("kube-default", load_strategy("kube-default"))


def fifo(profile: Profile) -> Profile:
    """``profile`` without PrioritySort and DefaultPreemption: the replay before they existed."""
    return dataclasses.replace(profile, queue_sort="", post_filters=[])


def index_of(snapshot: Snapshot, uid: str) -> int:
    return list(snapshot.pods["uid"]).index(uid)


def runs(snapshot: Snapshot, result: ReplayResult, uid: str) -> list[tuple[str, int, int]]:
    """(node, start minute, end minute or -1) of every run of pod ``uid``."""
    seg = result.segments
    pod = index_of(snapshot, uid)
    start = int(prepare(snapshot).start)
    out = []
    for p, n, s, e in zip(seg["pod"], seg["node"], seg["start"], seg["end"], strict=True):
        if int(p) == pod:
            end = -1 if int(e) == NEVER else (int(e) - start) // MINUTE
            out.append((str(snapshot.nodes["node"][int(n)]), (int(s) - start) // MINUTE, end))
    return out


@pytest.fixture(scope="module")
def full_cluster() -> Snapshot:
    """Node a (4 cores) from the start, node b (4 cores) from minute 5; 1 GiB pods.

    a1, a2 (priority 1, 2 cores) arrive at minutes 1, 2 while only a exists: a is full. b1
    (priority 5, 3 cores) and b2 (priority 1, 1 core) arrive at 6, 7: b is full. h (priority 100,
    3 cores) arrives at 10 and fits nowhere. b1 ends at 20, h at 30.
    """
    nodes = [N("a", cpu=4000), N("b", cpu=4000, first=5)]
    pods = [
        P("a1", "a", cpu=2000, start=1),
        P("a2", "a", cpu=2000, start=2),
        P("b1", "b", cpu=3000, start=6, end=20),
        P("b2", "b", cpu=1000, start=7),
        P("h", "a", cpu=3000, start=10, end=30),
    ]
    return with_priorities(build(nodes, pods), {"a1": 1, "a2": 1, "b1": 5, "b2": 1, "h": 100})


def test_high_priority_pod_evicts_on_the_node_upstream_picks(full_cluster: Snapshot) -> None:
    """Upstream's choice: on a, with a1 and a2 gone, reprieving a1 (the more important: same
    priority, earlier start) leaves 2 + 3 > 4 cores, so both are victims (highest victim priority
    1); on b, b1 (priority 5) is a victim and b2 is reprieved (1 + 3 = 4 cores fit). The node
    with the lower highest-victim priority wins before the fewer victims: a, evicting a1 and a2.

    As upstream, the victims are deleted at minute 10 and hold their room for the 30 s grace
    period; h waits, nominated, and is bound on a when they are gone (10:30), where their
    controllers' new pods (the same rows here) queue again: at 20 b1 leaves and frees 3 cores on
    b, a1 (2 cores, queued first) goes there and a2 no longer fits; at 30 h leaves a and a2
    returns to a.
    """
    result = replay(prepare(full_cluster), kube_default(), seed=0)
    pre = result.preemptions
    names = list(full_cluster.pods["uid"])
    assert sorted(names[v] for v in pre["victim"]) == ["a1", "a2"]
    assert {names[p] for p in pre["preemptor"]} == {"h"}
    assert {str(full_cluster.nodes["node"][n]) for n in pre["node"]} == {"a"}
    assert runs(full_cluster, result, "h") == [("a", 10, 30)]
    h, start = index_of(full_cluster, "h"), prepare(full_cluster).start
    assert result.placed_at[h] - start == 10 * MINUTE + GRACE  # once the victims are gone
    assert result.wait[h] == GRACE and set(pre["time"].tolist()) == {start + 10 * MINUTE}
    assert runs(full_cluster, result, "a1") == [("a", 1, 10), ("b", 20, -1)]
    assert runs(full_cluster, result, "a2") == [("a", 2, 10), ("a", 30, -1)]
    assert runs(full_cluster, result, "b2") == [("b", 7, -1)]  # never a victim
    # a2's wait is recorded (from 10:30, when it was gone); its last refusal: retried at 20,
    # 1 free core on a and on b
    a2 = index_of(full_cluster, "a2")
    assert result.wait[a2] == 20 * MINUTE - GRACE
    assert result.refusals[a2].message() == "0/2 nodes are available: 2 Insufficient cpu."


def test_only_the_minimal_victims_are_evicted() -> None:
    """One 4-core node: x1 (priority 1, 1 core, oldest), x2 (priority 2, 1 core), x3 (priority
    1, 2 cores, newest); h (priority 100, 2 cores) arrives. Reprieved most important first: x2
    (1 + 2 = 3 cores fit), x1 (2 + 2 = 4 fit), x3 (4 + 2 > 4): only x3 is evicted, though x1 and
    x2 together would also have made room."""
    nodes = [N("a", cpu=4000)]
    pods = [
        P("x1", "a", cpu=1000, start=1),
        P("x2", "a", cpu=1000, start=2),
        P("x3", "a", cpu=2000, start=3),
        P("h", "a", cpu=2000, start=10),
    ]
    snap = with_priorities(build(nodes, pods), {"x1": 1, "x2": 2, "x3": 1, "h": 100})
    result = replay(prepare(snap), kube_default(), seed=0)
    names = list(snap.pods["uid"])
    assert [names[v] for v in result.preemptions["victim"]] == ["x3"]
    assert result.pending_at_end[index_of(snap, "x3")]  # nothing ever frees 2 cores again


def test_equal_priority_never_preempts_and_waits() -> None:
    """h has the same priority as the pods filling the node: it waits, nothing is evicted."""
    nodes = [N("a", cpu=4000)]
    pods = [P("x", "a", cpu=4000, start=1, end=20), P("h", "a", cpu=2000, start=10)]
    snap = with_priorities(build(nodes, pods), {"x": 7, "h": 7})
    result = replay(prepare(snap), kube_default(), seed=0)
    assert len(result.preemptions["victim"]) == 0
    assert runs(snap, result, "h") == [("a", 20, -1)]


def test_pending_pods_leave_the_queue_by_priority_then_arrival() -> None:
    """A full node; lo (priority 1, arrived first) and hi (priority 9) wait for the same 2 cores
    (neither can preempt x, priority 10). When x leaves, PrioritySort gives
    the room to hi; a FIFO queue would give it to lo."""
    nodes = [N("a", cpu=2000)]
    pods = [
        P("x", "a", cpu=2000, start=0, end=20),
        P("lo", "a", cpu=2000, start=5),
        P("hi", "a", cpu=2000, start=6),
    ]
    snap = with_priorities(build(nodes, pods), {"x": 10, "lo": 1, "hi": 9})
    inp = prepare(snap)
    strategy = kube_default()
    ordered = replay(inp, strategy, seed=0)
    assert runs(snap, ordered, "hi") == [("a", 20, -1)]
    assert runs(snap, ordered, "lo") == []
    plain = replay(inp, Strategy("fifo", fifo(load_strategy("kube-default"))), seed=0)
    assert runs(snap, plain, "lo") == [("a", 20, -1)]


def test_queue_rank_orders_priority_then_arrival() -> None:
    ranks = [queue_rank(p, a, True) for p, a in [(5, 3), (5, 1), (100, 9), (-10, 0)]]
    assert sorted(range(4), key=ranks.__getitem__) == [2, 1, 0, 3]
    assert [queue_rank(p, a, False) for p, a in [(5, 3), (100, 9)]] == [3, 9]
    assert band(-1) == "< 0" and band(0) == "0–999" and band(999999) == "1000–999999"
    assert band(2000001000) == "≥ 1000000"


def _same(a: ReplayResult, b: ReplayResult) -> None:
    assert np.array_equal(a.node, b.node)
    assert np.array_equal(a.placed_at, b.placed_at)
    assert np.array_equal(a.wait, b.wait)
    for key in a.segments:
        assert np.array_equal(a.segments[key], b.segments[key])
    for key in a.waits:
        assert np.array_equal(a.waits[key], b.waits[key])
    assert {k: v.message() for k, v in a.refusals.items()} == {
        k: v.message() for k, v in b.refusals.items()
    }


def _squeezed(snapshot: Snapshot, share: float) -> Snapshot:
    """``snapshot`` with every node's cpu and memory cut to ``share``: pods wait."""
    nodes = snapshot.nodes.copy()
    for column in ("allocatable:cpu", "allocatable:memory"):
        nodes[column] = (nodes[column] * share).astype("int64")
    return dataclasses.replace(snapshot, nodes=nodes)


@pytest.fixture(scope="module")
def fixtures() -> list[Snapshot]:
    """The replay tests' generated clusters (one squeezed so many pods wait, one placed by the
    kube-default generator) and the hand-built one above."""
    plain = generate(SyntheticSpec(seed=3, nodes=10, days=1, step=300)).snapshot
    spec = SyntheticSpec(
        seed=5, nodes=12, days=1, step=300, churn=0.5, gpu_pool=False, pending_fraction=0.0
    )
    kube = generate(spec, place=kube_placer("kube-default", seed=11)).snapshot
    squeezed = _squeezed(
        generate(SyntheticSpec(seed=5, nodes=8, days=1, step=300, gpu_pool=False)).snapshot, 0.3
    )
    return [plain, kube, squeezed]


@pytest.mark.parametrize("name", ["kube-default", "most-allocated", "koord-loadaware"])
def test_equal_priorities_give_the_fifo_replay_pod_for_pod(
    fixtures: list[Snapshot], full_cluster: Snapshot, name: str
) -> None:
    """With every priority equal, PrioritySort orders by creation and nobody can preempt: on these
    clusters the replay equals the one without PrioritySort and DefaultPreemption (FIFO by
    arrival, the engine before them)."""
    profile = load_strategy(name)
    assert profile.queue_sort == "PrioritySort" and profile.post_filters
    waited = 0
    for snapshot in [*fixtures, full_cluster]:
        inp = prepare(with_priorities(snapshot, {}))
        now = replay(inp, Strategy(name, profile), seed=2)
        before = replay(inp, Strategy(name, fifo(profile)), seed=2)
        _same(now, before)
        assert len(now.preemptions["victim"]) == 0
        waited += int(now.waited.sum())
    assert waited > 10  # the queue was exercised


@given(
    priorities=st.lists(st.integers(-3, 3), min_size=14, max_size=14),
    cpus=st.lists(st.sampled_from([500, 1000, 1500, 2000]), min_size=14, max_size=14),
    seed=st.integers(0, 3),
)
@settings(max_examples=25, deadline=None)
def test_nobody_is_preempted_by_an_equal_or_lower_priority(
    priorities: list[int], cpus: list[int], seed: int
) -> None:
    """Random priorities on a small busy cluster: every eviction's victim has a strictly lower
    priority than its preemptor, and a preempted pod ran before it was evicted."""
    nodes = [N("a", cpu=3000), N("b", cpu=3000), N("c", cpu=2000)]
    pods = [
        P(f"p{i}", "a", cpu=cpu, start=i * 2, end=(i * 2 + 25) if i % 3 == 0 else None)
        for i, cpu in enumerate(cpus)
    ]
    snap = with_priorities(build(nodes, pods), {f"p{i}": p for i, p in enumerate(priorities)})
    inp = prepare(snap)
    result = replay(inp, kube_default(), seed=seed)
    pre = result.preemptions
    for victim, preemptor, t in zip(pre["victim"], pre["preemptor"], pre["time"], strict=True):
        assert priorities[int(victim)] < priorities[int(preemptor)]
        assert result.placed_at[int(victim)] <= t
    outcome = evaluate(inp, result, usage_matrices(inp), ThresholdConfig())
    assert 0 <= outcome.preempted <= outcome.placed
    assert sum(outcome.preempted_by_band.values()) == outcome.preempted
    assert outcome.summary()["preempted"] == outcome.preempted


_RUNNING = st.lists(
    st.tuples(st.integers(-2, 2), st.sampled_from([500, 1000, 2000])), min_size=0, max_size=5
)


@given(
    per_node=st.lists(_RUNNING, min_size=4, max_size=4),
    incoming=st.tuples(st.integers(-1, 3), st.sampled_from([1000, 2000, 3000, 4000])),
    pod_limit=st.sampled_from([3, 110]),
)
@settings(max_examples=80, deadline=None)
def test_replay_preemption_matches_the_core_on_the_whole_state(
    per_node: list[list[tuple[int, int]]], incoming: tuple[int, int], pod_limit: int
) -> None:
    """The replay's preemption (a numpy pre-check, then ``select_victims`` on one-node copies)
    nominates the node and victims ``analyzer.scheduling.plugins.defaultpreemption.preempt`` finds on the whole
    state, and leaves the state as it found it."""
    pods = [(node, priority, cpu) for node, running in enumerate(per_node)
            for priority, cpu in running]  # fmt: skip
    profile = load_strategy("kube-default")
    names = ["n0", "n1", "n2", "n3"]
    alloc = [{"cpu": c, "memory": 8 * GI, "pods": pod_limit} for c in (3000, 3000, 4000, 2000)]
    state = ClusterState.from_nodes(names, alloc)
    axis = state.resources

    def demand(i: int, cpu: int, priority: int) -> PodDemand:
        return make_demand(axis, {"cpu": cpu, "memory": GI}, {"cpu": cpu, "memory": GI},
                           name=f"p{i}", namespace="default", priority=priority)  # fmt: skip

    demands, priorities, on_node = [], [], [set() for _ in names]
    placed: list[tuple[int, int]] = []
    for i, (node, priority, cpu) in enumerate(pods):
        d = demand(i, cpu, priority)
        free = state.allocatable[node, 0] - state.requested[node, 0]
        if free < cpu or state.pod_count[node] >= pod_limit:
            continue  # the node is full: the pod does not run
        state.bind(node, d)
        demands.append(d)
        priorities.append(priority)
        placed.append((len(demands) - 1, node))
    priority, cpu = incoming
    demands.append(demand(99, cpu, priority))
    priorities.append(priority)
    active = np.ones(len(names), dtype=bool)
    pre = ReplayPreemption.for_profile(profile, state, active, demands, priorities, on_node)
    assert pre is not None
    for pod, node in placed:
        on_node[node].add(pod)
        pre.bound(pod, node, pod)  # bound in this order: start times 0, 1, 2, …
    evaluation = profile.evaluate(state, demands[-1], 0.0, active)
    assume(not evaluation.feasible.any())  # preemption runs only for a pod that fits nowhere
    before = (state.requested.copy(), state.pod_count.copy())
    got = pre.attempt(len(demands) - 1, 0)
    assert np.array_equal(state.requested, before[0])
    assert np.array_equal(state.pod_count, before[1])
    bound = [
        BoundPod(node, f"p{pod}", "default", priorities[pod], demands[pod], {}, pod)
        for pod, node in placed
    ]
    want = preempt(
        profile.filters, state, demands[-1], priority, "PreemptLowerPriority",
        node_statuses(evaluation, profile.filters), bound, (),
        load_strategy("kube-default").post_filters[0].args,
    )  # fmt: skip
    if want.nominated is None:
        assert got is None
    else:
        assert got is not None
        assert got[0] == want.nominated
        assert [f"p{v}" for v in got[1]] == [v.name for v in want.victims]


def offsets_at_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every DefaultPreemption dry run reads its nodes from offset 0 (no random draw)."""
    monkeypatch.setattr(
        DefaultPreemption,
        "offset_and_count",
        lambda self, potential, rng: offset_and_count(self.args, potential, None, self.sampling),
    )


def churn(seed: int) -> Snapshot:
    """Four 4-core nodes, 80 pods of 0.5–2.5 cores and priority -1 to 2 arriving over 50
    minutes, most of them leaving after 5–20 minutes: pods wait, preempt and fail to."""
    rnd = random.Random(seed)
    nodes = [N(f"n{i}", cpu=4000) for i in range(4)]
    pods, priorities = [], {}
    for i in range(80):
        start, lasts = rnd.uniform(0, 50), rnd.choice([5, 10, 20, None])
        end = None if lasts is None else start + lasts
        pods.append(P(f"p{i}", "n0", cpu=rnd.choice([500, 1000, 1500, 2500]), start=start, end=end))
        priorities[f"p{i}"] = rnd.choice([-1, 0, 1, 2])
    return with_priorities(build(nodes, pods), priorities)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("name", ["kube-default", "most-allocated"])
def test_remembered_failures_give_the_same_replay(
    seed: int, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a failed attempt the replay tries only the nodes touched since; trying every node
    every time gives the same replay.

    Both at offset 0 (the dry run reads the nodes in index order): the two paths draw their
    random offsets over different sets — every potential node, or the touched ones, and none
    for one node or fewer — so with a seeded stream they part after the first attempt where the
    counts differ and later ties (``pick_candidate``'s last) may fall otherwise. Which nodes can
    yield victims is the claim; the order of equal candidates is a draw."""
    inp = prepare(churn(seed))
    strategy = Strategy(name, load_strategy(name))
    offsets_at_zero(monkeypatch)
    # the kube presets carry PodTopologySpread and InterPodAffinity: these pods have no spread
    # or affinity terms, so failures are remembered all the same (``_memo_ok``) — count it
    remembered = []
    narrow = ReplayPreemption._on

    def counting(self: ReplayPreemption, *args: Any) -> Any:
        remembered.append(1)
        return narrow(self, *args)

    monkeypatch.setattr(ReplayPreemption, "_on", counting)
    quick = replay(inp, strategy, seed=4)
    assert len(quick.preemptions["victim"]) > 0 and quick.waited.sum() > 20
    assert remembered, "no attempt used the remembered failure"
    monkeypatch.setattr(ReplayPreemption, "_touched_since_failure", lambda self, key: None)
    full = replay(inp, strategy, seed=4)
    _same(quick, full)
    for column in quick.preemptions:
        assert np.array_equal(quick.preemptions[column], full.preemptions[column])


def test_a_remembered_failure_sees_a_node_uncordoned_since() -> None:
    """The dry run over the nodes touched since a failure keeps the static filters' mask per
    queue group while node taints and cordons stay (the score cache's ``epoch``). Two 2-core
    nodes, each full with a priority-0 pod, both cordoned: a 2-core pod of priority 10 finds
    no candidate (remembered); n0 is touched and still refuses it; then n0 is uncordoned (a
    node-state change: a new epoch, n0 touched) — its pod is the victim now. A mask kept across
    the epoch would still refuse n0 and nominate nobody."""
    base = load_strategy("kube-default")
    static = (NodeUnschedulable, TaintTolerationFilter, NodeAffinityFilter, NodeResourcesFit)
    profile = dataclasses.replace(
        base, filters=[f for f in base.filters if isinstance(f, static)]
    )  # only filters reading a node's own state: failures are remembered (``memo``)
    state = ClusterState.from_nodes(["n0", "n1"], [{"cpu": 2000, "memory": 8 * GI, "pods": 10}] * 2)
    state.node_unschedulable = [True, True]

    def demand(i: int, priority: int) -> PodDemand:
        return make_demand(state.resources, {"cpu": 2000, "memory": GI},
                           {"cpu": 2000, "memory": GI}, name=f"p{i}", namespace="default",
                           priority=priority)  # fmt: skip

    demands = [demand(0, 0), demand(1, 0), demand(2, 10)]
    active = np.ones(2, dtype=bool)
    cache = ScoreCache(profile, state, active)
    on_node: list[set[int]] = [set(), set()]
    pre = ReplayPreemption.for_profile(profile, state, active, demands, [0, 0, 10], on_node, cache)
    assert pre is not None
    for pod in (0, 1):
        state.bind(pod, demands[pod])
        on_node[pod].add(pod)
        pre.bound(pod, pod, 0)
        cache.touch(pod)
    narrow: list[list[int]] = []
    on = pre._on

    def counting(nodes: list[int], *args: Any) -> Any:
        narrow.append(nodes)
        return on(nodes, *args)

    pre._on = counting  # type: ignore[method-assign]
    assert pre.attempt(2, 0, b"group") is None  # both cordoned: no candidate (every node)
    cache.touch(0)
    assert pre.attempt(2, 0, b"group") is None  # n0 touched, still cordoned
    state.node_unschedulable[0] = False
    state.cache.pop(CORDONED_KEY, None)
    cache.node_state_changed([0])
    assert pre.attempt(2, 0, b"group") == (0, [0])
    assert narrow == [[0], [0]]  # both later attempts tried only the touched node


@pytest.mark.parametrize("name", ["koord-loadaware", "fgd"])
def test_other_profiles_preempt_only_lower_priorities(name: str) -> None:
    """LoadAwareScheduling profiles preempt (the filter runs on one-node copies of the state,
    NodeMetrics included) and evict only lower priorities; GPU profiles never preempt."""
    snap = churn(0)
    inp = prepare(snap)
    result = replay(inp, Strategy(name, load_strategy(name)), seed=1)
    pre = result.preemptions
    priorities = [int(p) for p in snap.pods["priority"]]
    if name == "fgd":
        assert len(pre["victim"]) == 0
        return
    assert len(pre["victim"]) > 0
    for victim, preemptor in zip(pre["victim"], pre["preemptor"], strict=True):
        assert priorities[int(victim)] < priorities[int(preemptor)]
