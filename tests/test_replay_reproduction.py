"""Issue 18, deliverable 4: a synthetic cluster placed by the full default profile — pods waiting,
several priorities, preemption — is reproduced pod for pod by the replay of kube-default.

The generator's loop (``analyzer.sources.lifecycle_loop``) and the replay's (``engine``) run one
queue semantics (``analyzer.scheduling.queue_order``); the hand-built cases pin that semantics
(priority before arrival at an instant, victims' grace period, controllers' replacements), the
generated ones check the whole loop against the replay on contended clusters."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from replay_fixtures import N, P, build
from test_replay_preemption import kube_default, runs, with_priorities

from analyzer.core.kube_objects import kept_objects
from analyzer.core.resources import PodSpecResources
from analyzer.core.snapshot_schema import END_PREEMPTED
from analyzer.replay.engine import replay
from analyzer.replay.input import NEVER, ReplayInput, prepare
from analyzer.replay.result import ReplayResult
from analyzer.scheduling.queue_order import may_fit, queue_rank
from analyzer.sources import SyntheticSpec, generate
from analyzer.sources.catalog import GIB, Container, Template
from analyzer.sources.kube_placement import kube_placer
from analyzer.sources.lifecycle import Pod
from analyzer.sources.lifecycle_loop import TERMINATION_GRACE, run_lifecycles
from analyzer.sources.placement import ClusterState, least_allocated_place
from analyzer.sources.synthetic import SyntheticCluster


def _template(name: str, priority_class: str) -> Template:
    app = Container(name="app", requests={"cpu": 2000, "memory": GIB}, limits={})
    return Template(name, "Deployment", "shop", (app,), cpu_use=100, mem_use=GIB,
                    priority_class=priority_class)  # fmt: skip


LOW, HIGH = _template("batch", ""), _template("api", "high")
CACHE = _template("cache", "")


def _pod(uid: str, template: Template, created: int, deleted: int | None = None) -> Pod:
    owner = ("ReplicaSet", f"{template.name}-rs", "Deployment", template.name)
    pod = Pod(uid=uid, name=f"{template.name}-{uid}", template=template, owner_kind=owner[0],
              owner_name=owner[1], workload_kind=owner[2], workload_name=owner[3],
              created=created, arrive=created + 1,
              spec=PodSpecResources(containers=template.containers))  # fmt: skip
    pod.deleted = deleted
    return pod


def _one_node(cpu: int = 3000) -> ClusterState:
    """One node with room for one 2-core pod."""
    alloc = np.array([[cpu, 16 * GIB, 100 * GIB, 0, 110]], dtype=np.int64)
    return ClusterState.empty(("n0",), ("general",), alloc)


def test_at_an_instant_priority_goes_before_the_wait() -> None:
    # m (priority 0) waits from 201 for the node x holds; x leaves at 300, when h (priority
    # 10000) arrives: PrioritySort gives the room to h, m keeps waiting. (The old loop retried
    # the waiting pods at the departure, before the arrival, and gave it to m.)
    pods = [_pod("x", LOW, 100, deleted=300), _pod("m", LOW, 200), _pod("h", HIGH, 299)]
    run_lifecycles(pods, _one_node(), least_allocated_place, np.random.default_rng(0), (0, 1000))
    by = {p.uid: p for p in pods}
    assert (by["h"].node, by["h"].scheduled) == (0, 300)
    assert by["m"].node == -1 and by["m"].scheduled is None and by["m"].phase == "Pending"


def test_preemption_deletes_the_victim_and_its_controller_recreates_it() -> None:
    # low runs since 101; high arrives at 500 and fits nowhere: DefaultPreemption deletes low
    # (terminated after the 30 s grace period, phase Failed); its ReplicaSet creates a new pod at
    # once (it waits: the node is full and it cannot preempt its equal); high is bound when the
    # room frees, at 530, on the victim's node.
    pods = [_pod("low", LOW, 100), _pod("high", HIGH, 499)]
    placer = kube_placer("kube-default", seed=0)
    run_lifecycles(pods, _one_node(), placer, np.random.default_rng(0), (0, 1000))
    low, high, *others = pods
    assert low.preempted == 500 and TERMINATION_GRACE == 30
    assert (low.finished, low.deleted, low.phase) == (530, 530, "Failed")
    assert (high.node, high.scheduled) == (0, 530)
    assert len(others) == 1
    new = others[0]
    assert new.owner_name == low.owner_name and new.uid != low.uid and new.name != low.name
    assert (new.created, new.node, new.phase) == (500, -1, "Pending")


def _cache_budget(state: ClusterState) -> None:
    """A PodDisruptionBudget keeping at least one ``cache`` pod, in ``state.objects``."""
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
           "metadata": {"name": "cache-pdb", "namespace": "shop"},
           "spec": {"selector": {"matchLabels": {"app": "cache"}}, "minAvailable": 1}}  # fmt: skip
    state.objects = kept_objects([pdb])


@pytest.mark.parametrize("budget", [False, True])
def test_the_generators_preemption_honours_disruption_budgets(budget: bool) -> None:
    # two nodes, each full with one priority-0 pod: b (batch, bound at 101) on one, c (cache,
    # bound at 201) on the other. h fits nowhere at 500; with equal victims upstream prefers
    # the node whose victim started last: c's. A budget keeping one cache pod (c, the only one)
    # makes evicting c a violation, and the node without violations wins: b's.
    alloc = np.array([[3000, 16 * GIB, 100 * GIB, 0, 110]] * 2, dtype=np.int64)
    state = ClusterState.empty(("n0", "n1"), ("general", "general"), alloc)
    if budget:
        _cache_budget(state)
    pods = [_pod("b", LOW, 100), _pod("c", CACHE, 200), _pod("h", HIGH, 499)]

    def describe(pod: Pod) -> dict[str, str]:
        return {"labels": json.dumps({"app": pod.workload_name})}

    run_lifecycles(pods, state, kube_placer("kube-default", seed=0), np.random.default_rng(0),
                   (0, 1000), describe=describe)  # fmt: skip
    by = {p.uid: p for p in pods}
    assert {by["b"].node, by["c"].node} == {0, 1}
    assert (by["b"].scheduled, by["c"].scheduled) == (101, 201)
    victim = "b" if budget else "c"
    node = by[victim].node
    assert by["h"].preemptions == [(500, node, (victim,), 530)]
    assert (by["h"].node, by["h"].scheduled) == (node, 530)


def test_no_preemption_before_the_observed_range() -> None:
    # the same cluster with the range starting at 600: high waits (nothing leaves), nobody is
    # deleted; at 600 it still waits — preemption needs a retry, and nothing frees room
    pods = [_pod("low", LOW, 100), _pod("high", HIGH, 499)]
    run_lifecycles(pods, _one_node(), kube_placer(seed=0), np.random.default_rng(0), (600, 900))
    low, high = pods
    assert low.preempted is None and low.node == 0
    assert high.node == -1


def test_the_replay_tries_an_arrival_before_a_lower_priority_waiting_pod() -> None:
    # lo (priority 1) waits from minute 5 for the 2 cores x (priority 10) holds; x leaves at 20,
    # when hi (priority 9, scheduled at 20) arrives. One pass in queue order: hi first. Retrying
    # lo first would bind it and make hi preempt it.
    nodes = [N("a", cpu=2000)]
    pods = [
        P("x", "a", cpu=2000, start=0, end=20),
        P("lo", None, cpu=2000, start=5),
        P("hi", "a", cpu=2000, start=20),
    ]
    snap = with_priorities(build(nodes, pods), {"x": 10, "lo": 1, "hi": 9})
    result = replay(prepare(snap), kube_default(), seed=0)
    assert runs(snap, result, "hi") == [("a", 20, -1)]
    assert runs(snap, result, "lo") == []
    assert len(result.preemptions["victim"]) == 0


def test_queue_rank_and_may_fit() -> None:
    ranks = [queue_rank(5, 30, 0), queue_rank(5, 10, 7), queue_rank(100, 90, 3),
             queue_rank(5, 10, 2), queue_rank(-10, 0, 0)]  # fmt: skip
    assert sorted(range(5), key=ranks.__getitem__) == [2, 3, 1, 0, 4]
    with pytest.raises(ValueError):
        queue_rank(0, -1, 0)
    need = np.array([[1000, 0], [3000, 1], [0, 5]], dtype=np.int64)
    free = np.array([[2000, 4], [4000, 0]], dtype=np.int64)
    # pod 0 fits either node (it asks no memory); pod 1 needs 3000 cpu (node 1) and memory
    # (node 0): no single node; pod 2 needs 5 memory: nowhere. A node without room for one more
    # pod counts for nobody.
    assert may_fit(need, free, np.array([True, True])).tolist() == [True, False, False]
    assert may_fit(need, free, np.array([False, True])).tolist() == [True, False, False]
    assert may_fit(need, free, np.array([False, False])).tolist() == [False, False, False]
    wider = np.array([[2000, 4], [4000, 1]], dtype=np.int64)
    assert may_fit(need, wider, np.array([True, True])).tolist() == [True, True, False]


SEEDS = (1, 2, 3)


_CLUSTERS: dict[int, SyntheticCluster] = {}


def contended(seed: int) -> SyntheticCluster:
    """20 nodes in 3 zones at 20 app pods per node (more than fits): pods wait, high-priority
    pods preempt, spread constraints and anti-affinity in play; placed by kube-default with
    tie-break seed ``seed`` (built once per seed)."""
    if seed not in _CLUSTERS:
        spec = SyntheticSpec(seed=seed, nodes=20, days=1, step=300, churn=0.8, gpu_pool=False,
                             pending_fraction=0.0, zones=3, pod_constraints=True,
                             pods_per_node=20)  # fmt: skip
        _CLUSTERS[seed] = generate(spec, place=kube_placer("kube-default", seed=seed))
    return _CLUSTERS[seed]


def assert_same_placements(inp: ReplayInput, result: ReplayResult, ordered: list[Pod]) -> None:
    """The replay put every pod on the generator's node at the generator's bind second, never
    bound the pods the generator never bound, and left pending at the end those still alive."""
    assert np.array_equal(result.node, inp.real_node)
    bound = inp.real_node >= 0
    scheduled = np.array([-1 if p.scheduled is None else p.scheduled for p in ordered])
    assert np.array_equal(result.placed_at[bound] // 10**9, scheduled[bound])
    assert (result.placed_at[~bound] == NEVER).all()
    unplaced = np.flatnonzero(~bound & (inp.departure == NEVER))
    assert result.pending_at_end[unplaced].all()


@pytest.mark.parametrize("seed", SEEDS)
def test_contended_cluster_is_reproduced_pod_for_pod(seed: int) -> None:
    cluster = contended(seed)
    inp = prepare(cluster.snapshot)
    pods = {p.uid: p for p in cluster.pods}
    ordered = [pods[u] for u in inp.pod_uids]
    # not vacuous: pods waited (bound after they arrived, or never), pods were preempted
    waited = sum(p.scheduled is not None and p.scheduled > p.arrive for p in ordered)
    never = sum(p.scheduled is None for p in ordered)
    victims = [p for p in ordered if p.preempted is not None]
    assert waited >= 3 and never >= 10 and victims
    assert {p.template.priority_class for p in ordered} >= {"high", "", "batch-low"}
    result = replay(inp, kube_default(), seed=seed)
    # same node per pod, the same bind time, pending to the end where the generator's pod was
    assert_same_placements(inp, result, ordered)
    # same victims: the generator's preemptions reach the replay as the victims' deletion, a
    # grace period after the preemption, on their node; the replay itself evicts nobody
    assert len(result.preemptions["victim"]) == 0
    for victim in victims:
        assert victim.phase == "Failed" or victim.finished is None
        if victim.finished is not None:
            row = inp.pod_uids.index(victim.uid)
            assert victim.finished == victim.preempted + TERMINATION_GRACE
            assert inp.departure[row] // 10**9 == victim.finished
            lower = victim.template.priority_class in ("", "batch-low")
            assert lower  # only pods below "high" can be victims here


@pytest.mark.parametrize("seed", SEEDS)
def test_the_replays_preemption_picks_the_generators_victims(seed: int) -> None:
    """For each preemptor's first preemption: the snapshot with that pod arriving at the instant
    it preempted (instead of when its victims had gone) makes the replay run DefaultPreemption
    at that instant, on the same cluster state; it nominates the same node and the same
    victims. (Replayed up to that instant only: afterwards the edited data diverges. The first
    four preemptors of each cluster, to bound the test's time.)"""
    cluster = contended(seed)
    snapshot = cluster.snapshot
    preemptors = [p for p in cluster.pods if p.preemptions][:4]
    assert preemptors
    checked = 0
    for preemptor in preemptors:
        when, node, victims, _ = preemptor.preemptions[0]
        pods = snapshot.pods.copy()
        row = list(pods["uid"]).index(preemptor.uid)
        pods.loc[row, "scheduled"] = pd.Timestamp(when, unit="s", tz="UTC")
        inp = prepare(dataclasses.replace(snapshot, pods=pods))
        times = inp.events[0]
        result = replay(inp, kube_default(), seed=seed,
                        stop_after=int((times <= when * 10**9).sum()))  # fmt: skip
        found = result.preemptions
        mine = np.flatnonzero((found["preemptor"] == row) & (found["time"] == when * 10**9))
        assert len(mine) == len(victims)
        assert set(found["node"][mine].tolist()) == {node}
        assert {inp.pod_uids[v] for v in found["victim"][mine]} == set(victims)
        checked += 1
    assert checked == len(preemptors)


@pytest.mark.parametrize("seed", SEEDS)
def test_created_arrivals_reproduce_the_generators_preemptions(seed: int) -> None:
    """arrivals="created": every pod arrives when the generator offered it (a second after its
    creation), and the pods the generator preempted (``end_reason``) run until the replay
    preempts them, so the waits and preemptions are the replay's own. It still places every pod
    where and when the generator did, and makes the generator's preemptions: same instant,
    nominated node and victims, PodDisruptionBudgets honoured alike."""
    cluster = contended(seed)
    snapshot = cluster.snapshot
    pods = {p.uid: p for p in cluster.pods}
    marked = snapshot.pods["end_reason"] == END_PREEMPTED
    assert set(snapshot.pods["uid"][marked]) == {u for u, p in pods.items() if p.preempted}
    inp = prepare(snapshot, arrivals="created")
    ordered = [pods[u] for u in inp.pod_uids]
    assert (inp.arrival // 10**9).tolist() == [p.arrive for p in ordered]
    assert inp.replaced is not None and inp.replaced.tolist() == marked.tolist()
    result = replay(inp, kube_default(), seed=seed)
    assert_same_placements(inp, result, ordered)
    # the preemptions: (time, node, preemptor, victims) of the generator and of the replay
    made: dict[tuple[int, int, str], set[str]] = {}
    found = result.preemptions
    for victim, preemptor, node, time in zip(*(found[c].tolist() for c in
                                               ("victim", "preemptor", "node", "time")),
                                             strict=True):  # fmt: skip
        key = (time // 10**9, node, inp.pod_uids[preemptor])
        made.setdefault(key, set()).add(inp.pod_uids[victim])
    want = {(t, n, p.uid): set(v) for p in ordered for t, n, v, _ in p.preemptions}
    assert len(want) >= 5 and made == want
    # a victim's run ends a grace period after its preemption, when the generator's did
    seg = result.segments
    for row in np.flatnonzero(marked.to_numpy()).tolist():
        victim = ordered[row]
        ends = seg["end"][seg["pod"] == row]
        assert victim.preempted is not None and len(ends) == 1
        if victim.finished is not None:
            assert ends[0] // 10**9 == victim.finished == victim.preempted + TERMINATION_GRACE
