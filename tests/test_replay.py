"""The replay engine: observed reproduces reality; kube-default reproduces a kube-default cluster;
hand-built scenarios with known outcomes (packing, spreading, waiting, load-aware refusal)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from replay_fixtures import GI, N, P, at, build

from analyzer.core.snapshot import Snapshot
from analyzer.replay.engine import OBSERVED_STRATEGY, Strategy, replay
from analyzer.replay.input import NEVER, prepare
from analyzer.replay.projection import project, projected_snapshot, usage_matrices
from analyzer.replay.result import ReplayResult
from analyzer.scheduling import load_strategy
from analyzer.sources import SyntheticSpec, generate
from analyzer.sources.kube_placement import kube_placer


def strategy(name: str) -> Strategy:
    return Strategy(name, load_strategy(name))


def node_of(snapshot: Snapshot, result: ReplayResult, uid: str) -> str | None:
    index = list(snapshot.pods["uid"]).index(uid)
    node = int(result.node[index])
    return None if node < 0 else str(snapshot.nodes["node"][node])


@pytest.fixture(scope="module")
def synthetic() -> Snapshot:
    """A small generated cluster (least-allocated placement, churn, jobs, pending pods)."""
    return generate(SyntheticSpec(seed=3, nodes=10, days=1, step=300)).snapshot


def test_observed_reproduces_placement_and_node_usage(synthetic: Snapshot) -> None:
    inp = prepare(synthetic)
    result = replay(inp, OBSERVED_STRATEGY)
    ran = inp.real_node >= 0
    assert ran.sum() > 50
    assert (result.node[ran] == inp.real_node[ran]).all()
    assert (result.node[~ran] == -1).all()  # pods that never ran in reality are not placed either
    mats = usage_matrices(inp)
    usage = project(inp, result, mats)
    for resource in ("cpu", "memory"):
        observed = mats.node[resource]
        assert np.array_equal(np.isnan(usage[resource]), np.isnan(observed))
        np.testing.assert_allclose(
            np.nan_to_num(usage[resource]), np.nan_to_num(observed), rtol=1e-9, atol=1e-6
        )


def test_observed_projected_snapshot_keeps_every_pod_and_usage_row(synthetic: Snapshot) -> None:
    inp = prepare(synthetic)
    result = replay(inp, OBSERVED_STRATEGY)
    mats = usage_matrices(inp)
    snap = projected_snapshot(inp, result, mats, project(inp, result, mats))
    assert sorted(snap.pods["uid"]) == sorted(synthetic.pods["uid"])
    merged = snap.pods.set_index("uid")["node"].reindex(synthetic.pods["uid"])
    assert merged.fillna("").tolist() == synthetic.pods["node"].fillna("").tolist()
    assert len(snap.pod_usage) == len(synthetic.pod_usage)


@pytest.fixture(scope="module")
def kube_cluster() -> tuple[Snapshot, dict[str, list[int]]]:
    """A generated cluster whose pods the generator placed with the exact kube-default profile."""
    placer = kube_placer("kube-default", seed=11)
    spec = SyntheticSpec(seed=5, nodes=12, days=1, step=300, churn=0.5, gpu_pool=False,
                         pending_fraction=0.0)  # fmt: skip
    cluster = generate(spec, place=placer)
    return cluster.snapshot, placer.ties


def test_kube_default_cluster_is_reproduced_pod_for_pod(
    kube_cluster: tuple[Snapshot, dict[str, list[int]]],
) -> None:
    snapshot, ties = kube_cluster
    # the identical nodes make ties common: the same seed must still give the same draws
    assert sum(len(t) > 1 for t in ties.values()) >= 5
    inp = prepare(snapshot)
    result = replay(inp, strategy("kube-default"), seed=11)
    ran = inp.real_node >= 0
    assert ran.sum() > 100
    assert (result.node[ran] == inp.real_node[ran]).all()
    assert not result.waited[ran].any()


def test_other_seeds_differ_first_among_tied_nodes(
    kube_cluster: tuple[Snapshot, dict[str, list[int]]],
) -> None:
    snapshot, ties = kube_cluster
    inp = prepare(snapshot)
    _times, kinds, index = inp.events
    order = index[kinds == 3]  # placement order (arrival events)
    same = replay(inp, strategy("kube-default"), seed=11)
    again = replay(inp, strategy("kube-default"), seed=11)
    assert np.array_equal(same.node, again.node)
    differing = 0
    for seed in (1, 2, 3):
        other = replay(inp, strategy("kube-default"), seed=seed)
        diff = [p for p in order if other.node[p] != same.node[p]]
        if not diff:
            continue
        differing += 1
        first = diff[0]
        tie_set = ties[inp.pod_uids[first]]
        assert len(tie_set) > 1  # the first divergence is a tie-break ...
        assert int(other.node[first]) in tie_set  # ... resolved to another tied node
    assert differing >= 1


def _packing() -> Snapshot:
    nodes = [N(f"n{i}", cpu=4000, memory=16 * GI) for i in range(4)]
    pods = [P(f"p{i}", "n0", cpu=1000, memory=GI, start=i + 1) for i in range(4)]
    return build(nodes, pods, minutes=20)


def test_most_allocated_packs_least_allocated_spreads() -> None:
    # Hand-computed (research/kube-scoring.md §5, §7, v1.36): an empty 4000m/16Gi node scores
    # LeastAllocated (75+93)//2 = 84 and Balanced 70; a node with one 1000m/1Gi pod 68 and 70,
    # so kube-default spreads. MostAllocated: empty (25+6)//2 = 15, loaded (50+12)//2 = 31:
    # the second pod joins the first, and so on until the node is full.
    snap = _packing()
    inp = prepare(snap)
    for seed in range(3):
        most = replay(inp, strategy("most-allocated"), seed)
        assert len(set(most.node.tolist())) == 1
        least = replay(inp, strategy("kube-default"), seed)
        assert sorted(least.node.tolist()) == [0, 1, 2, 3]


def test_pod_too_large_waits_until_a_departure_frees_room() -> None:
    nodes = [N("n1", cpu=4000), N("n2", cpu=4000)]
    pods = [
        P("a", "n1", cpu=3000, start=0, end=30),
        P("b", "n2", cpu=3000, start=0),
        P("big", "n1", cpu=2000, start=10),  # 1000m free on each node until "a" leaves
    ]
    snap = build(nodes, pods, minutes=60)
    inp = prepare(snap)
    for name in ("kube-default", "most-allocated"):
        result = replay(inp, strategy(name), seed=0)
        big = 2
        assert result.waited[big]
        assert result.placed_at[big] == at(30).value
        assert result.wait[big] == 20 * 60 * 10**9
        assert node_of(snap, result, "big") == node_of(snap, result, "a")
        assert not result.pending_at_end.any()
    waits = replay(inp, strategy("kube-default")).waits
    assert waits["start"].tolist() == [at(10).value] and waits["end"].tolist() == [at(30).value]


def test_pod_that_never_fits_is_reported_pending_at_end() -> None:
    snap = build([N("n1", cpu=2000)], [P("huge", None, cpu=3000, start=5)], minutes=30)
    inp = prepare(snap)
    result = replay(inp, strategy("kube-default"))
    assert result.pending_at_end.tolist() == [True]
    assert result.node.tolist() == [-1] and result.placed_at.tolist() == [NEVER]


def test_load_aware_refuses_a_node_above_its_threshold() -> None:
    # "hog" requests 100m but uses 3000m; "fair" requests 1000m and uses 200m. At minute 20 a
    # 500m pod arrives. kube-default prefers the node with fewer requests (hog's). LoadAware sees
    # hog's node at (100 overhead + 3000) + 0.85 × 500 = 3525m of 4000m = 88 % > 65 %: refused.
    nodes = [N("n1", cpu=4000), N("n2", cpu=4000)]
    pods = [
        P("hog", "n1", cpu=100, start=0, cpu_used=3000),
        P("fair", "n2", cpu=1000, start=0, cpu_used=200),
        P("new", "n1", cpu=500, start=20, cpu_used=100),
    ]
    snap = build(nodes, pods, minutes=40)
    inp = prepare(snap)
    for seed in range(3):
        kube = replay(inp, strategy("kube-default"), seed)
        assert node_of(snap, kube, "new") == node_of(snap, kube, "hog")
        load = replay(inp, strategy("koord-loadaware"), seed)
        assert node_of(snap, load, "hog") != node_of(snap, load, "fair")
        assert node_of(snap, load, "new") == node_of(snap, load, "fair")


def test_daemonset_pods_stay_on_their_node_in_every_strategy() -> None:
    nodes = [N("n1"), N("n2"), N("n3")]
    pods = [P(f"ds-{n.name}", n.name, owner="DaemonSet", cpu=100) for n in nodes]
    pods += [P("static", "n3", owner="Node", cpu=100)]
    pods += [P(f"w{i}", "n1", cpu=500, start=i + 1) for i in range(5)]
    snap = build(nodes, pods, minutes=20)
    inp = prepare(snap)
    for name in ("kube-default", "most-allocated", "rtcr-binpack", "koord-loadaware"):
        result = replay(inp, strategy(name), seed=1)
        assert result.node[:4].tolist() == [0, 1, 2, 2]


def test_departures_come_before_arrivals_at_the_same_instant() -> None:
    # a (3000m) leaves at minute 10 exactly when b (3000m) arrives on a 4000m node: b fits at once
    snap = build(
        [N("n1", cpu=4000)], [P("a", "n1", cpu=3000, end=10), P("b", "n1", cpu=3000, start=10)]
    )
    result = replay(prepare(snap), strategy("kube-default"))
    assert result.node.tolist() == [0, 0]
    assert not result.waited.any()


def test_leaving_node_sends_its_pods_back_to_the_queue() -> None:
    nodes = [N("n1", cpu=4000, last=20), N("n2", cpu=4000, first=30)]
    pods = [P("w", "n1", cpu=1000, start=1, end=50)]
    snap = build(nodes, pods, minutes=60)
    inp = prepare(snap)
    result = replay(inp, strategy("kube-default"))
    assert result.evicted == 1
    seg = result.segments
    assert seg["node"].tolist() == [0, 1]
    assert seg["start"].tolist() == [at(1).value, at(30).value]
    assert seg["end"][0] == at(20).value
    assert result.wait[0] == 10 * 60 * 10**9  # pending from the node leaving to the node joining
    mats = usage_matrices(inp)
    snap2 = projected_snapshot(inp, result, mats, project(inp, result, mats))
    assert sorted(snap2.pods["uid"]) == ["w", "w#2"]
    assert pd.isna(snap2.pods.set_index("uid").loc["w", "finished"]) is False


def test_load_feed_builds_node_metrics_from_projected_usage() -> None:
    # research/koordinator.md §1.5, §2: estimate = round(max(req, lim) × factor / 100), cpu 85 %;
    # nodeUsage = mean of the projected samples in (r − 5m, r]; a pod is delta-estimated while it
    # has no usage in the report or was bound after updateTime − 60 s: max(0, e − u).
    from analyzer.replay.loadfeed import LoadFeed

    nodes = [N("n1", cpu=4000, memory=16 * GI)]
    pods = [
        P("a", "n1", cpu=2000, start=0, cpu_used=1000.0),
        P("b", None, cpu=500, start=5),  # never ran: no usage samples at all
        P("c", "n1", cpu=1000, start=7, cpu_used=300.0),
    ]
    inp = prepare(build(nodes, pods, minutes=20))  # node overhead 100m
    state = inp.fresh_state()
    feed = LoadFeed.for_profile(inp, load_strategy("koord-loadaware"), state)
    assert feed is not None and state.load is feed.inputs
    cpu = feed.resources.index("cpu")
    t0 = inp.start
    second = 10**9
    feed.advance(t0)
    feed.bound(0, 0, t0)  # a
    assert not feed.inputs.has_metric[0]  # no report yet: the node is not load-aware
    assert feed.advance(t0 + 301 * second)  # report at 300 s is now visible
    load = feed.inputs
    assert load.has_metric[0] and load.update_time[0] == t0 / second + 300
    assert load.node_usage[0, cpu] == 1100  # samples at 60..300 s: 100 + 1000
    assert load.node_delta[0, cpu] == 0  # a: reported, bound long before
    assert load.node_estimated[0, cpu] == 1700
    feed.bound(1, 0, t0 + 301 * second)  # b, after the report: full estimate at once
    assert load.node_delta[0, cpu] == 425
    feed.advance(t0 + 361 * second)
    assert load.node_delta[0, cpu] == 425  # b still has no usage in the report
    feed.bound(2, 0, t0 + 421 * second)  # c
    assert feed.advance(t0 + 481 * second)  # report at 480 s
    # samples at 240..480 s: 1100 ×4, then 1100 + 300 (c's first sample, at 480 s)
    assert load.node_usage[0, cpu] == 1160
    # b: 425 (no usage); c: bound 421 s > 480 − 60 s, u = 300: 850 − 300
    assert load.node_delta[0, cpu] == 425 + 550
    feed.unbound(1, 0, t0 + 500 * second)
    assert load.node_delta[0, cpu] == 550
    assert load.node_estimated[0, cpu] == 1700 + 850
