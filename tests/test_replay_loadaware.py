"""Load-aware replays scored incrementally give exactly what rescoring every node gives.

The incremental path (``analyzer.replay.loadrows`` inside ``ScoreCache``, the feed's incremental
pod-assign cache) must make every decision the reference path makes — ``replay(...,
rescore_all=True)``: ``Profile.evaluate`` over all nodes for every pod, the pod cache recomputed
at every report. Whole replays of generated clusters are compared placement by placement, wait by
wait and refusal by refusal, under the load-aware presets and under profiles that make the
incremental bookkeeping work: thresholds that trip (pods wait, refusals are counted), NodeMetrics
that expire between two reports (with and without scheduling on expired metrics), estimates kept
for a while after binding, prod thresholds and prod scoring, aggregated usage, a dominant weight.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from test_replay_preemption import churn

from analyzer.core.snapshot import Snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import ReplayInput, prepare
from analyzer.replay.loadrows import LOWEST, LoadRows, fail_cutoff
from analyzer.replay.result import ReplayResult
from analyzer.scheduling import ClusterState, load_strategy, make_demand
from analyzer.scheduling.config import build_profile, parse_kube_scheduler_configuration
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.state import LoadInputs
from analyzer.scheduling.versions import parse_version
from analyzer.sources import SyntheticSpec, generate

GI = 2**30
PRESETS = ("koord-loadaware", "most-allocated-loadaware", "rtcr-binpack-loadaware")


def custom(args: dict[str, Any], fit: str = "LeastAllocated", dominant: bool = False) -> Profile:
    """kube's filters and scores + LoadAwareScheduling with ``args``."""
    weight = [{"name": "LoadAwareScheduling", "weight": 2}]
    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "plugins": {
                    "filter": {
                        "disabled": [{"name": "*"}],
                        "enabled": [
                            {"name": n}
                            for n in (
                                "TaintToleration",
                                "NodeAffinity",
                                "NodeResourcesFit",
                                "LoadAwareScheduling",
                            )
                        ],
                    },
                    "score": {
                        "disabled": [{"name": "*"}],
                        "enabled": [
                            {"name": "NodeResourcesFit", "weight": 1},
                            {"name": "NodeResourcesBalancedAllocation", "weight": 1},
                            *weight,
                        ],
                    },
                },
                "pluginConfig": [
                    {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": fit}}},
                    {
                        "name": "LoadAwareScheduling",
                        "args": {**args, **({"dominantResourceWeight": 3} if dominant else {})},
                    },
                ],
            }
        ],
    }
    config = parse_kube_scheduler_configuration(doc, where="test")
    return build_profile(config.profile(None), parse_version(None))


# thresholds low enough to trip on busy nodes; metrics expire 45 s after a report (reports come
# every 60 s); an estimate kept 10 min after binding even once the pod reports usage (generated
# pods report their first sample 5–10 min after binding, so estimates expire between reports)
TIGHT = {
    "usageThresholds": {"cpu": 30, "memory": 60},
    "nodeMetricExpirationSeconds": 45,
    "estimatedSecondsAfterPodScheduled": 600,
}
# prod pods judged and scored on prod usage; the others on aggregated usage (p95 over 10 min for
# the filter, the average over 5 min for the score); expired metrics still schedulable
PROD_AGGREGATED = {
    "usageThresholds": {"cpu": 45, "memory": 80},
    "prodUsageThresholds": {"cpu": 35},
    "scoreAccordingProdUsage": True,
    "aggregated": {
        "usageThresholds": {"cpu": 40},
        "usageAggregationType": "p95",
        "usageAggregatedDuration": "10m",
        "scoreAggregationType": "avg",
        "scoreAggregatedDuration": "5m",
    },
    "nodeMetricExpirationSeconds": 45,
    "enableScheduleWhenNodeMetricsExpired": True,
}


@pytest.fixture(scope="module")
def coarse() -> ReplayInput:
    """5-minute samples: most reports see the same usage window (the feed's incremental path)."""
    spec = SyntheticSpec(
        seed=5, nodes=14, days=1, step=300, churn=1.5, hot_nodes=0.3, usage_scale=0.5
    )
    return prepare(generate(spec).snapshot)


@pytest.fixture(scope="module")
def fine() -> ReplayInput:
    """1-minute samples: every report brings a new column."""
    snapshot: Snapshot = generate(
        SyntheticSpec(seed=8, nodes=10, days=0.5, step=60, churn=2.0, hot_nodes=0.4)
    ).snapshot
    return prepare(snapshot)


def assert_same(new: ReplayResult, old: ReplayResult) -> None:
    """Every placement, every run, every wait and every refusal equal."""
    for name in ("node", "placed_at", "wait", "waited", "pending_at_end", "abandoned"):
        assert np.array_equal(getattr(new, name), getattr(old, name)), name
    for table in ("segments", "waits"):
        for column, values in getattr(old, table).items():
            assert np.array_equal(getattr(new, table)[column], values), f"{table}.{column}"
    assert new.refusals == old.refusals
    assert new.evicted == old.evicted


def both(inp: ReplayInput, profile: Profile, seed: int) -> tuple[ReplayResult, ReplayResult]:
    strategy = Strategy(profile.name, profile)
    new = replay(inp, strategy, seed)
    old = replay(inp, strategy, seed, rescore_all=True)
    # the reference really rescored every node; the fast path really was incremental
    assert any("every pod scored against all nodes" in n for n in old.notes)
    assert not any("every pod scored against all nodes" in n for n in new.notes)
    return new, old


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_replay_identically(coarse: ReplayInput, preset: str) -> None:
    new, old = both(coarse, load_strategy(preset), seed=1)
    assert_same(new, old)
    assert (new.node >= 0).sum() > 200


@pytest.mark.parametrize("seed", [0, 3])
def test_tripping_thresholds_expiring_metrics_and_estimates(coarse: ReplayInput, seed: int) -> None:
    new, old = both(coarse, custom(TIGHT, dominant=True), seed)
    assert_same(new, old)
    assert new.waited.sum() > 10  # the thresholds tripped: pods waited, refusals were counted
    assert any("exceed threshold" in r.message() for r in new.refusals.values())


def test_prod_and_aggregated_usage(fine: ReplayInput) -> None:
    new, old = both(fine, custom(PROD_AGGREGATED, fit="MostAllocated"), seed=2)
    assert_same(new, old)
    assert (new.node >= 0).sum() > 100


def test_fine_grid_tight(fine: ReplayInput) -> None:
    new, old = both(fine, custom(TIGHT), seed=4)
    assert_same(new, old)
    assert new.waited.sum() > 0


def test_fail_cutoff_is_the_first_failing_estimate() -> None:
    # the plugin refuses when float64(e) / allocatable × 100 >= t + 0.5 (Go's math.Round(x) > t)
    rng = np.random.default_rng(11)
    allocs = [1, 3, 7, 1000, 3999, 4000, 96_000, 16 * GI, 64 * GI + 12345, 2**50 + 1]
    allocs += [int(a) for a in rng.integers(1, 2**40, 40)]
    for alloc in allocs:
        for t in (1, 33, 65, 95, 100):
            cut = fail_cutoff(float(alloc), t)
            assert float(cut) / float(alloc) * 100 >= t + 0.5
            assert not float(cut - 1) / float(alloc) * 100 >= t + 0.5


def test_rows_equal_the_plugin_on_random_inputs() -> None:
    # every row's verdict and score, one by one (``rows``) and as whole arrays (``full``), against
    # the plugin's filter and score, on load inputs with missing and expired metrics, aggregated
    # rows, prod pods, annotations
    rng = np.random.default_rng(5)
    count = 40
    allocatable = [
        {"cpu": int(rng.choice([0, 2000, 8000, 32000])), "memory": int(rng.choice([4, 64])) * GI}
        for _ in range(count)
    ]
    annotations = [
        {"scheduling.koordinator.sh/usage-thresholds": '{"usageThresholds": {"cpu": 20}}'}
        if i % 9 == 4
        else {}
        for i in range(count)
    ]
    state = ClusterState.from_nodes(
        [f"n{i}" for i in range(count)], allocatable, annotations=annotations
    )
    for args in (TIGHT, PROD_AGGREGATED, {}):
        profile = custom(args, dominant=bool(args))
        plugin = profile.filters[-1]
        resources = plugin.resources  # type: ignore[attr-defined]
        load = LoadInputs.empty(count, resources)
        state.load = load
        rows = LoadRows(profile, state)
        for trial in range(6):
            load.has_metric[:] = rng.random(count) < 0.9
            load.metric_present[:] = rng.random(count) < 0.95
            load.update_time[:] = np.where(rng.random(count) < 0.8, 1000.0, np.nan)
            shape = (count, len(resources))
            for table in ("node_usage", "node_delta", "node_estimated", "prod_usage", "prod_delta"):
                getattr(load, table)[:] = rng.integers(0, 40 * GI, shape) // rng.choice(
                    [1, 2**20], shape
                )
            for key in (("p95", 600), ("avg", 300), ("avg", 0)):
                load.aggregated[key] = (rng.random(count) < 0.7, rng.integers(0, 30000, shape))
            now = 1000.0 + (30.0 if trial % 2 else 50.0)  # before / after the 45 s expiry
            rows.reloaded(now)
            rows.sync(now)
            for k in range(8):
                cpu = int(rng.choice([0, 100, 1500, 6000]))
                requests = {"cpu": cpu, "memory": int(rng.choice([0, 1, 8])) * GI}
                pod = make_demand(
                    state.resources,
                    {r: v for r, v in requests.items() if v},
                    {"cpu": cpu or 100, "memory": requests["memory"] or 200 * 2**20},
                    name=f"p{k}",
                    namespace="t",
                    koord_class="koord-prod" if k % 2 else "koord-batch",
                )
                if k == 4:  # binds on three nodes: their rows go stale (the arrays are patched)
                    for node in (1, 5, 9):
                        load.node_delta[node] += rng.integers(0, 4 * GI, len(resources))
                        rows.touch(node)
                got = rows.rows(rows.shape(pod), list(range(count)))
                passes, added = rows.full(rows.shape(pod), now)
                whole = [int(a) if ok else None for ok, a in zip(passes, added, strict=True)]
                feasible = plugin.filter(state, pod, now).feasible  # type: ignore[attr-defined]
                score = plugin.score(state, pod, now)  # type: ignore[attr-defined]
                expected = [
                    int(2 * s) if ok else None
                    for ok, s in zip(feasible.tolist(), score.tolist(), strict=True)
                ]
                assert got == expected, (args, trial, k)
                assert whole == expected, (args, trial, k)


def test_incremental_pod_cache_equals_recomputing_every_report(coarse: ReplayInput) -> None:
    # two feeds see the same binds (the pods' real nodes) and departures; after every report the
    # incremental one must hold exactly the arrays of the one recomputing every bound pod
    from analyzer.replay.input import ARRIVE, DEPART
    from analyzer.replay.loadfeed import LoadFeed
    from analyzer.replay.projection import usage_matrices

    profile = custom(TIGHT)
    mats = usage_matrices(coarse)
    feeds = []
    for incremental in (True, False):
        state = coarse.fresh_state()
        feed = LoadFeed.for_profile(coarse, profile, state, mats, incremental=incremental)
        assert feed is not None
        feeds.append(feed)
    times, kinds, index = coarse.events
    bound: set[int] = set()
    reports = same_window_changes = 0
    minute = 60 * 10**9
    tick = coarse.start + 10**9  # the clock also passes every report, not only event instants

    def advance(t: int) -> None:
        nonlocal reports, same_window_changes
        before = feeds[0].inputs.node_delta.copy()
        seen = feeds[0].seen
        refreshed = [feed.advance(t) for feed in feeds]
        assert refreshed[0] == refreshed[1]
        if refreshed[0]:
            reports += 1
            a, b = feeds[0].inputs, feeds[1].inputs
            for name in ("node_usage", "node_delta", "node_estimated", "prod_usage", "prod_delta"):
                assert np.array_equal(getattr(a, name), getattr(b, name)), (name, t)
            assert np.array_equal(feeds[0].delta, feeds[1].delta)
            if seen is not None and feeds[0].seen is not None and seen[1:] == feeds[0].seen[1:]:
                same_window_changes += int(not np.array_equal(before, a.node_delta))

    for t, kind, item in zip(times.tolist(), kinds.tolist(), index.tolist(), strict=True):
        while tick < t:
            advance(tick)
            tick += minute
        advance(t)
        node = int(coarse.real_node[item]) if kind == ARRIVE else -1
        if kind == ARRIVE and node >= 0 and item not in bound:
            bound.add(item)
            for feed in feeds:
                feed.bound(item, node, t)
        elif kind == DEPART and item in bound:
            bound.discard(item)
            for feed in feeds:
                feed.unbound(item, int(coarse.real_node[item]), t)
    assert reports > 1000
    assert same_window_changes > 10  # estimates did expire between two reports of one window


def test_rows_refuse_exactly_at_the_rounded_threshold() -> None:
    # 8 cores, cpu threshold 30 %: Round(e / 8000 × 100) > 30 first holds at e = 2440 (30.5 %);
    # the incoming pod (1 core requested) is estimated at 850m
    state = ClusterState.from_nodes(["a", "b"], [{"cpu": 8000, "memory": 64 * GI}] * 2)
    profile = custom({"usageThresholds": {"cpu": 30, "memory": 90}})
    plugin = profile.filters[-1]
    load = LoadInputs.empty(2, plugin.resources)  # type: ignore[attr-defined]
    state.load = load
    cpu = load.resources.index("cpu")
    load.has_metric[:] = load.metric_present[:] = True
    load.update_time[:] = 1000.0
    load.node_usage[:, cpu] = [2440 - 850, 2440 - 851]
    rows = LoadRows(profile, state)
    rows.reloaded(1010.0)
    pod = make_demand(
        state.resources,
        {"cpu": 1000},
        {"cpu": 1000, "memory": 200 * 2**20},
        name="p",
        namespace="t",
    )
    assert rows.shape(pod).vector[cpu] == 850
    got = rows.rows(rows.shape(pod), [0, 1])
    assert got[0] is None and got[1] is not None
    assert plugin.filter(state, pod, 1010.0).feasible.tolist() == [False, True]  # type: ignore[attr-defined]


def test_many_shapes_replay_identically(coarse: ReplayInput) -> None:
    # every pod its own request vector (cpu requests shifted by 0–36 × 10m): ~290 shapes, most
    # of them scored once — every shape's first pass over all nodes, an entry meeting several
    # new usage columns between two of its pods, a few rows patched into the epoch's arrays
    pods = coarse.snapshot.pods.copy()
    step = (np.arange(len(pods)) % 37) * 10
    for column in ("requests:cpu", "nonzero_requests:cpu"):
        pods[column] = pods[column] + np.where(pods[column] > 0, step, 0)
    inp = prepare(dataclasses.replace(coarse.snapshot, pods=pods))
    assert len(set(inp.shape_keys)) > 150
    for profile, seed in ((load_strategy("koord-loadaware"), 1), (custom(TIGHT), 2)):
        new, old = both(inp, profile, seed)
        assert_same(new, old)
        assert (new.node >= 0).sum() > 200


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_preemption_and_departures_replay_identically(seed: int) -> None:
    # four small nodes, 80 pods of priorities -1..2 that mostly leave again after 5–20 minutes:
    # pods are unbound by departures and by DefaultPreemption (the load-aware filter runs in its
    # dry runs), wait and are retried at reports
    inp = prepare(churn(seed))
    for name in ("koord-loadaware", "most-allocated-loadaware"):
        new, old = both(inp, load_strategy(name), seed)
        assert_same(new, old)
        for column, values in old.preemptions.items():
            assert np.array_equal(new.preemptions[column], values), column
        assert new.waited.sum() > 0
        if name == "koord-loadaware" and seed == 0:  # the preemption test's own case
            assert len(new.preemptions["victim"]) > 0


def test_totals_add_the_resource_part_and_keep_refusals() -> None:
    # ``totals`` (a few rows) and ``total`` (every node) give res + weight × score, LOWEST where
    # the resource part or the load-aware filter refuses, for every resource total
    rng = np.random.default_rng(3)
    count = 30
    state = ClusterState.from_nodes(
        [f"n{i}" for i in range(count)],
        [{"cpu": int(rng.choice([0, 4000, 16000])), "memory": 32 * GI} for _ in range(count)],
    )
    profile = custom(TIGHT)
    plugin = profile.filters[-1]
    load = LoadInputs.empty(count, plugin.resources)  # type: ignore[attr-defined]
    state.load = load
    load.has_metric[:] = rng.random(count) < 0.9
    load.metric_present[:] = True
    load.update_time[:] = np.where(rng.random(count) < 0.85, 1000.0, np.nan)
    load.node_usage[:] = rng.integers(0, 12 * GI, (count, 2)) // [2**18, 1]
    rows = LoadRows(profile, state)
    rows.reloaded(1010.0)
    pod = make_demand(
        state.resources,
        {"cpu": 1000, "memory": GI},
        {"cpu": 1000, "memory": GI},
        name="p",
        namespace="t",
    )
    shape = rows.shape(pod)
    feasible = plugin.filter(state, pod, 1010.0).feasible  # type: ignore[attr-defined]
    score = plugin.score(state, pod, 1010.0)  # type: ignore[attr-defined]
    assert 0 < feasible.sum() < count  # both verdicts occur
    res = rng.integers(0, 300, count)
    res[rng.random(count) < 0.3] = LOWEST
    expected = [
        LOWEST if r == LOWEST or not ok else int(r) + 2 * int(s)
        for r, ok, s in zip(res.tolist(), feasible.tolist(), score.tolist(), strict=True)
    ]
    assert rows.totals(shape, list(range(count)), res.tolist()) == expected
    out = np.empty(count, dtype=np.int64)
    rows.total(shape, res, out)
    assert out.tolist() == expected


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("args", [TIGHT, PROD_AGGREGATED])
def test_remembered_preemption_failures_give_the_same_replay(
    seed: int, args: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a failed preemption attempt is remembered for load-aware profiles too: the group's next
    # attempt tries only the nodes touched since plus the rows a report or an expiry changed
    # (``LoadRows.log``; a new epoch: every node). Trying every node every time — and the
    # reference path, which remembers nothing — gives the same replay. At offset 0: the paths
    # draw their random offsets over different node sets, so their streams part where the
    # counts differ (``test_replay_preemption.test_remembered_failures_give_the_same_replay``)
    from test_replay_preemption import offsets_at_zero

    from analyzer.replay.preemption import ReplayPreemption

    offsets_at_zero(monkeypatch)
    inp = prepare(churn(seed))
    strategy = Strategy("tight", custom(args))
    narrowed: list[int] = []  # per remembered attempt: rows added by the load log alone
    original = ReplayPreemption._touched_since_failure

    def counting(self: ReplayPreemption, key: bytes) -> set[int] | None:
        touched = original(self, key)
        if touched is not None and self.journal is not None:
            since = self.journal.changes - self.failed[key]
            nodes = set(self.journal.log[len(self.journal.log) - since :])
            narrowed.append(len(touched - nodes))
        return touched

    monkeypatch.setattr(ReplayPreemption, "_touched_since_failure", counting)
    quick = replay(inp, strategy, seed=4)
    assert len(quick.preemptions["victim"]) > 0 and quick.waited.sum() > 10
    assert narrowed, "no attempt used the remembered failure"
    monkeypatch.setattr(ReplayPreemption, "_touched_since_failure", lambda self, key: None)
    full = replay(inp, strategy, seed=4)
    reference = replay(inp, strategy, seed=4, rescore_all=True)
    for other in (full, reference):
        assert_same(quick, other)
        for column, values in other.preemptions.items():
            assert np.array_equal(quick.preemptions[column], values), column
    assert sum(narrowed) > 0, "no report or expiry changed a row between two attempts"
