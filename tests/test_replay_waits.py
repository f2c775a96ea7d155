"""Waits count inside the window only, and a waiting pod's last refusal reasons are kube's.

Issue 14: on the demo, pods created before the 7-day window counted their wait from creation
(p99 1,267,797 s, max 14.8 days > the window) while the pending-pods series showed pods pending
only in the first hours. These tests pin the window rule (no wait longer than the window; the
summed pending pod-seconds equal the integral of the pending-pods series) and the refusal
bookkeeping (the reasons kube-scheduler would print, counted per node at its first refusing
filter).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from replay_fixtures import GI, N, P, at, build

from analyzer.core.snapshot import Snapshot, make_snapshot
from analyzer.replay import refusals
from analyzer.replay.engine import replay
from analyzer.replay.input import NEVER, prepare
from analyzer.replay.projection import usage_matrices
from analyzer.replay.refusals import RefusalCounter
from analyzer.replay.scoring import ScoreCache
from analyzer.scheduling import ClusterState, PodDemand, Profile
from analyzer.scheduling.state import make_demand
from analyzer.sources import SyntheticSpec, generate
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.compare import resolve_strategy
from analyzer.whatif.evaluate import evaluate

MINUTE_NS = 60 * 10**9
SIMPLE_FILTERS = ("NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit")


def pending_integral(outcome_series: pd.DataFrame, step_s: float) -> float:
    """Left Riemann sum of the pending-pods series: pod-seconds pending over the window."""
    pending = outcome_series["pending_pods"].to_numpy(dtype=float)
    return float(pending[:-1].sum() * step_s)


def test_pod_created_before_the_window_waits_from_its_start() -> None:
    # One 4-core node. "old" arrived 10 h before the window and runs until minute 30; "late"
    # arrived 5 h before the window and needs 3 cores too: it waits until minute 30. Inside the
    # window that is 30 minutes — not 5 h 30 min.
    nodes = [N("n0", cpu=4000)]
    pods = [
        P("old", "n0", cpu=3000, start=-600, end=30),
        P("late", "n0", cpu=3000, start=-300),
    ]
    snap = build(nodes, pods, minutes=60)
    inp = prepare(snap)
    result = replay(inp, resolve_strategy("most-allocated"))
    late = 1
    assert result.waited.tolist() == [False, True]
    assert result.wait[late] == 30 * MINUTE_NS
    assert result.waits["start"].tolist() == [at(0).value]
    assert result.waits["end"].tolist() == [at(30).value]
    outcome = evaluate(inp, result, usage_matrices(inp), ThresholdConfig())
    assert outcome.wait_seconds["max"] == 30 * 60
    assert pending_integral(outcome.series, 60) == 30 * 60


def test_waits_and_pending_series_agree_exactly_on_grid_events() -> None:
    # Events on whole minutes (the 1-minute grid): the left Riemann sum of the pending series is
    # the exact integral, so it must equal the summed waits to the second. Two 4-core nodes, six
    # 3-core pods arriving at minutes -120, -60, -30, 7, 9, 11, each running 20 minutes after it
    # really started: only two fit at a time, so several wait, some from before the window.
    nodes = [N("n0", cpu=4000), N("n1", cpu=4000)]
    starts = [-120, -60, -30, 7, 9, 11]
    pods = [
        P(f"p{i}", f"n{i % 2}", cpu=3000, start=s, end=max(s, 0) + 20) for i, s in enumerate(starts)
    ]
    snap = build(nodes, pods, minutes=90)
    inp = prepare(snap)
    mats = usage_matrices(inp)
    window_s = 90 * 60
    for name in ("kube-default", "most-allocated"):
        result = replay(inp, resolve_strategy(name))
        outcome = evaluate(inp, result, mats, ThresholdConfig())
        assert outcome.waited >= 2, name
        waits_s = result.wait / 1e9
        assert waits_s.max() <= window_s
        assert waits_s.sum() == pending_integral(outcome.series, 60), name


@pytest.fixture(scope="module")
def pooled() -> Snapshot:
    """30 synthetic nodes, 1 day, 5-minute usage: pools, a tainted GPU pool, nodeSelectors, and
    pods created up to weeks before the window. Packing strategies leave pods waiting."""
    return generate(SyntheticSpec(seed=42, nodes=30, days=1, step=300)).snapshot


def test_no_wait_exceeds_the_window_and_waits_match_the_series(pooled: Snapshot) -> None:
    inp = prepare(pooled)
    mats = usage_matrices(inp)
    assert (inp.arrival < inp.start).sum() > 100  # many pods were created before the window
    window_s = (inp.end - inp.start) / 1e9
    step_s = inp.step / 1e9
    for name in ("most-allocated", "rtcr-binpack"):
        result = replay(inp, resolve_strategy(name))
        outcome = evaluate(inp, result, mats, ThresholdConfig())
        assert outcome.waited > 10, name
        assert 0 < outcome.wait_seconds["max"] <= window_s
        assert outcome.wait_seconds["p50"] <= outcome.wait_seconds["p99"] <= window_s
        # Events fall between grid points here: each pending interval differs from its sampled
        # sum by less than one step, so the two agree within (intervals × step). Counting waits
        # from creation made the sum ~30× the series' integral on this cluster.
        summed = float(result.wait.sum()) / 1e9
        intervals = len(result.waits["pod"])
        assert abs(summed - pending_integral(outcome.series, step_s)) <= intervals * step_s
        assert len(outcome.series) == int(window_s // step_s) + 1  # not thinned: exact grid


def _with_constraints(snap: Snapshot, taints: dict[str, str], labels: dict[str, str],
                      selectors: dict[str, str]) -> Snapshot:  # fmt: skip
    nodes = snap.nodes.copy()
    nodes["taints"] = [taints.get(n, "[]") for n in nodes["node"]]
    nodes["labels"] = [labels.get(n, "{}") for n in nodes["node"]]
    pods = snap.pods.copy()
    pods["node_selector"] = [selectors.get(u, "{}") for u in pods["uid"]]
    pods["tolerations"] = ["[]"] * len(pods)
    return make_snapshot(snap.meta, nodes, pods, snap.node_usage, snap.pod_usage)


def constrained() -> Snapshot:
    """g0 tainted (gpu), m0 labelled pool=memory, c0 and c1 plain. "db" must go to m0 (selector)
    but "cache" (also bound to m0) leaves it 1 core free until minute 20: db waits 15 minutes."""
    nodes = [N("g0"), N("m0"), N("c0"), N("c1")]
    pods = [
        P("cache", "m0", cpu=3000, start=0, end=20),
        P("db", "m0", cpu=2000, start=5),
    ]
    snap = build(nodes, pods, minutes=40)
    gpu_taint = json.dumps([{"key": "gpu", "value": "present", "effect": "NoSchedule"}])
    return _with_constraints(
        snap,
        {"g0": gpu_taint},
        {"m0": json.dumps({"pool": "memory"})},
        {u: json.dumps({"pool": "memory"}) for u in ("cache", "db")},
    )


def test_last_refusal_counts_each_node_at_its_first_refusing_filter() -> None:
    inp = prepare(constrained())
    for name in ("kube-default", "most-allocated"):
        result = replay(inp, resolve_strategy(name))
        db = 1
        assert result.waited.tolist() == [False, True]
        assert result.wait[db] == 15 * MINUTE_NS  # minute 5 to 20
        refusal = result.refusals[db]
        # g0: the taint comes first (TaintToleration before NodeAffinity); c0, c1: no pool label;
        # m0: 1000m free < 2000m requested
        assert refusal.nodes == 4
        assert dict(refusal.reasons) == {
            "node(s) had untolerated taint {gpu: present}": 1,
            "node(s) didn't match Pod's node affinity/selector": 2,
            "Insufficient cpu": 1,
        }
        assert refusal.message() == (
            "0/4 nodes are available: 2 node(s) didn't match Pod's node affinity/selector, "
            "1 Insufficient cpu, 1 node(s) had untolerated taint {gpu: present}."
        )
        assert set(result.refusals) == {db}  # only pods that waited carry a refusal


def _first_filter_reasons(
    profile: Profile, state: ClusterState, demand: PodDemand, active: np.ndarray
) -> dict[str, int]:
    """The same count from ``Profile.evaluate``: each node's reasons at its first refusing filter."""
    evaluation = profile.evaluate(state, demand, 0.0, active)
    counts: dict[str, int] = {}
    for node in np.flatnonzero(active).tolist():
        for feasible, reasons in evaluation.reason_fns:
            if not feasible[node]:
                for reason in reasons(node):
                    counts[reason] = counts.get(reason, 0) + 1
                break
    return counts


def test_refusal_counter_matches_the_profiles_own_reasons(pooled: Snapshot) -> None:
    # An empty cluster (only taints and selectors refuse) and a full one (every node's requests
    # at allocatable: NodeResourcesFit refuses what the static filters let through). The
    # counter's vectorised counts must equal the profile's own per-node reasons.
    inp = prepare(pooled)
    active = inp.node_join <= inp.start
    selectors = pooled.pods["node_selector"].astype(str) != "{}"
    tolerating = pooled.pods["tolerations"].astype(str) != "[]"
    chosen = [
        p for p in range(inp.pod_count)
        if not inp.pinned[p] and (selectors.iloc[p] or tolerating.iloc[p])
    ][:20] + [p for p in range(inp.pod_count) if not inp.pinned[p]][:5]  # fmt: skip
    assert len(chosen) == 25
    for name in ("kube-default", "koord-loadaware"):
        profile = resolve_strategy(name).profile
        assert profile is not None
        for fill in (False, True):
            state = inp.fresh_state()
            if fill:
                state.requested[:] = state.allocatable
            counter = RefusalCounter(profile, state, active)
            for pod in chosen:
                demand = inp.demands[pod]
                got = dict(counter.refusal(inp.shape_keys[pod], demand, 0.0).reasons)
                expected = _first_filter_reasons(profile, state, demand, active)
                assert got == expected, (name, fill, pod)
                if fill:
                    assert sum(got.values()) >= int(active.sum())  # every node refused


def test_placements_never_pay_for_reasons_when_nothing_waits() -> None:
    nodes = [N(f"n{i}", cpu=4000, memory=16 * GI) for i in range(3)]
    pods = [P(f"p{i}", f"n{i}", cpu=1000, start=i) for i in range(3)]
    inp = prepare(build(nodes, pods, minutes=10))
    result = replay(inp, resolve_strategy("most-allocated"))
    assert not result.waited.any() and result.refusals == {}
    assert (result.waits["end"] != NEVER).all()


def test_reused_counts_equal_fresh_counts(
    pooled: Snapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A shape's count is reused while no node it could use was touched; with the scan limit at
    # 0 every touched state is counted afresh. Both replays must give every waiting pod the
    # same last refusal.
    inp = prepare(pooled)
    for name in ("most-allocated", "rtcr-binpack"):
        reused = replay(inp, resolve_strategy(name)).refusals
        with monkeypatch.context() as patch:
            patch.setattr(refusals, "REUSE_SCAN", 0)
            fresh = replay(inp, resolve_strategy(name)).refusals
        assert len(reused) > 10 and reused == fresh, name


def test_counts_follow_nodes_joining_and_leaving() -> None:
    # Under cluster-autoscaler nodes join and leave between two counts of a shape; the counter
    # keeps each node's NodeResourcesFit reason bits and revisits only the touched nodes while
    # the present nodes stay, and reuses a count while no usable node was touched. Whatever
    # the mix of binds, unbinds, joins and leaves, every count must equal a fresh counter's.
    base = resolve_strategy("kube-default").profile
    assert base is not None
    profile = dataclasses.replace(
        base, filters=[f for f in base.filters if f.name in SIMPLE_FILTERS]
    )  # static filters then NodeResourcesFit: the kept-bits path
    rng = np.random.default_rng(3)
    count = 12
    state = ClusterState.from_nodes(
        [f"n{i}" for i in range(count)], [{"cpu": 4000, "memory": 8 * GI, "pods": 4}] * count
    )
    active = np.arange(count) < 8
    cache = ScoreCache(profile, state, active)
    counter = RefusalCounter(profile, state, active, cache)

    def demand(cpu: int, memory: int) -> PodDemand:
        need = {"cpu": cpu, "memory": memory}
        return make_demand(state.resources, need, need, name="p", namespace="default")

    # ... and one that fits no node, empty or not (a node's bits are not 0 when it is empty)
    shapes = [(b"small", demand(1000, GI)), (b"large", demand(3000, 6 * GI))]
    huge = (b"huge", demand(5000, GI))
    on: list[list[PodDemand]] = [[] for _ in range(count)]
    moved = 0
    for step in range(400):
        node = int(rng.integers(count))
        action = rng.random()
        if action < 0.45 and active[node]:
            pod = shapes[int(rng.integers(2))][1]
            state.bind(node, pod)
            on[node].append(pod)
        elif action < 0.7 and on[node]:
            state.unbind(node, on[node].pop())
        elif action >= 0.7:  # joins or leaves (its pods go with it, as the engine's drain)
            while on[node]:
                state.unbind(node, on[node].pop())
            active[node] = not active[node]
            moved += 1
        cache.touch(node)
        for key, pod in [*shapes, huge]:
            fresh = RefusalCounter(profile, state, active).refusal(key, pod, 0.0)
            assert counter.refusal(key, pod, 0.0) == fresh, step
    assert moved > 50
