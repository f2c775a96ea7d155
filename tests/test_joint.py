"""Joint right-size-then-repack scenarios, the busiest window, and the drain dry run."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from replay_fixtures import GI, T0, N, P, at, build

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot, write_snapshot
from analyzer.core.workloads import KEY, apply_recommendations, workload_keys
from analyzer.replay.engine import replay
from analyzer.replay.input import prepare
from analyzer.replay.projection import usage_matrices
from analyzer.replay.result import ReplayResult
from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.busiest import busiest_window, cut
from analyzer.whatif.compare import WhatIfSettings, resolve_strategy, run_whatif
from analyzer.whatif.evaluate import evaluate
from analyzer.whatif.joint import (
    BOTH,
    REPACK,
    RIGHTSIZE,
    TODAY,
    JointResult,
    JointSettings,
    run_joint,
)
from analyzer.whatif.kept import KEPT, merge, pod_pools, pools_independent, raised_pods, refusal
from analyzer.whatif.pool_figures import PoolFigures, pool_figures


def _workloads(snap: Snapshot, owners: dict[str, str]) -> Snapshot:
    """Give pods a Deployment (``owners``: pod uid -> workload name)."""
    pods = snap.pods.copy()
    pods["workload_kind"] = pd.array(["Deployment"] * len(pods), dtype="string")
    pods["workload_name"] = pd.array([owners[u] for u in pods["uid"]], dtype="string")
    return replace(snap, pods=pods)


def _recs(rows: list[tuple[str, float, float]]) -> pd.DataFrame:
    """Recommendations: (deployment, cpu m, memory bytes) in namespace default."""
    return pd.DataFrame(
        {
            "namespace": ["default"] * len(rows),
            "owner_kind": ["Deployment"] * len(rows),
            "owner_name": [r[0] for r in rows],
            "pool": ["pool"] * len(rows),
            "cpu_request_millicores": [np.nan] * len(rows),
            "memory_request_bytes": [np.nan] * len(rows),
            "cpu_recommended_millicores": [r[1] for r in rows],
            "memory_recommended_bytes": [r[2] for r in rows],
            "skipped_reason": [""] * len(rows),
        }
    )


def three_half_empty() -> Snapshot:
    """Three 4-core nodes, one 2.1-core pod each (52 % requested). ``db-0`` (arrives first) may
    only run on ``n2`` (nodeSelector disk=ssd); ``web-a``/``web-b`` arrive next.

    Today's requests never share a node (2 × 2100 m > 4000 m): repacking alone keeps 3 nodes.
    Right-sized to 1500 m, two pods share a node (3000 m) but not three (4500 m): bin packing
    needs 2 nodes; kube-default (LeastAllocated) still spreads them over 3.
    """
    nodes = [N(f"n{i}", cpu=4000, memory=16 * GI) for i in range(3)]
    pods = [
        P("db-0", "n2", cpu=2100, memory=4 * GI, start=1, cpu_used=300.0),
        P("web-a", "n0", cpu=2100, memory=4 * GI, start=2, cpu_used=300.0),
        P("web-b", "n1", cpu=2100, memory=4 * GI, start=3, cpu_used=300.0),
    ]
    snap = build(nodes, pods, minutes=30)
    node_frame = snap.nodes.copy()
    node_frame["labels"] = pd.array(["{}", "{}", '{"disk": "ssd"}'], dtype="string")
    pod_frame = snap.pods.copy()
    pod_frame["node_selector"] = pd.array(['{"disk": "ssd"}', "{}", "{}"], dtype="string")
    snap = replace(snap, nodes=node_frame, pods=pod_frame)
    return _workloads(snap, {"db-0": "db", "web-a": "web", "web-b": "web"})


RIGHTSIZED = _recs([("db", 1500, np.nan), ("web", 1500, np.nan)])


@pytest.mark.parametrize("workers", [1, 2])
def test_hand_built_cluster_known_answer(workers: int) -> None:
    result = run_joint(
        three_half_empty(), RIGHTSIZED, JointSettings(repack="most-allocated", workers=workers)
    )
    rows = {r["name"]: r for r in result.pool_rows("pool")}
    assert [r["nodes_observed"] for r in rows.values()] == [3, 3, 3, 3]
    assert rows[TODAY]["nodes_peak"] == 3 and rows[TODAY]["nodes_removable"] == 0
    assert rows[RIGHTSIZE]["nodes_peak"] == 3  # kube-default spreads even small pods
    assert rows[REPACK]["nodes_peak"] == 3  # 2 × 2100 m never fit one 4000 m node
    assert rows[BOTH]["nodes_peak"] == 2 and rows[BOTH]["nodes_removable"] == 1
    assert all(r["violations"] == 0 and r["pods_waited"] == 0 for r in rows.values())
    assert result.best["pool"] == BOTH
    # "both" at its peak (minute 3): db-0 and web-a on n2 (3000 m), web-b alone elsewhere
    drain = result.drains["pool"]
    assert drain.time == at(3).isoformat()
    assert len(drain.needed) == 2 and "n2" in drain.needed
    other = next(n for n in drain.needed if n != "n2")
    reasons = {b["node"]: b["reasons"] for b in drain.blocked_nodes}
    # draining n2: web-a fits beside web-b (3000 m), db-0 has no other ssd node
    assert reasons["n2"] == [
        "1 pod of default/db: 0/1 nodes are available: "
        "1 node(s) didn't match Pod's node affinity/selector."
    ]
    # draining the other: web-b (1500 m) cannot join n2's 3000 m on 4000 m
    assert reasons[other] == ["1 pod of default/web: 0/1 nodes are available: 1 Insufficient cpu."]
    assert drain.drainable_nodes == [] and drain.greedy_drained == []
    assert drain.greedy_order == [other, "n2"]  # 1500/4000 requested before 3000/4000
    data = result.to_dict()
    assert data["pools"][0]["blocked_nodes"] == drain.blocked_nodes
    json.dumps(data, allow_nan=False)


def test_drain_frees_a_node_the_replay_kept() -> None:
    """Without the selector, draining the lone web-b's node is still refused (cpu); draining a
    node whose pod fits elsewhere is reported drainable and counted by the greedy drain."""
    nodes = [N(f"n{i}", cpu=4000, memory=16 * GI) for i in range(3)]
    # today: a 1000 m pod on each node, kube-default spread them; they fit on one node
    pods = [P(f"p{i}", f"n{i}", cpu=1000, memory=GI, start=i + 1) for i in range(3)]
    snap = _workloads(build(nodes, pods, minutes=20), {f"p{i}": "app" for i in range(3)})
    keep = _recs([("app", np.nan, np.nan)])  # nothing right-sized: "both" = "repack only"
    result = run_joint(snap, keep, JointSettings(workers=1, repack="kube-default"))
    best = result.best["pool"]
    assert result.run(best).pools["pool"].nodes_peak == 3
    drain = result.drains["pool"]
    # each node's pod fits on either other node: every needed node is drainable alone, and the
    # greedy drain empties two of the three (the third holds all three pods: 3000 m)
    assert sorted(drain.drainable_nodes) == ["n0", "n1", "n2"] and drain.blocked_nodes == []
    assert len(drain.greedy_drained) == 2


def test_apply_recommendations_hand_computed() -> None:
    nodes = [N("n0")]
    pods = [
        P("a-1", "n0", cpu=1000, memory=2 * GI, limits={"cpu": 1200, "memory": 2 * GI}),
        P("a-2", "n0", cpu=800, memory=2 * GI),
        P("b-1", "n0", cpu=500, memory=GI),
        P("c-1", "n0", cpu=0, memory=0),
    ]
    snap = _workloads(
        build(nodes, pods, minutes=5), {"a-1": "a", "a-2": "a", "b-1": "b", "c-1": "c"}
    )
    recs = _recs([("a", 1500.2, np.nan), ("b", np.nan, 0.5 * GI), ("zzz", 1, 1)])
    out = apply_recommendations(snap, recs).pods.set_index("uid")
    # a: cpu 1500.2 -> 1501 m (rounded up) on every pod, memory kept; limit 1200 < 1501 raised
    assert out.loc["a-1", "requests:cpu"] == 1501 and out.loc["a-2", "requests:cpu"] == 1501
    assert out.loc["a-1", "nonzero_requests:cpu"] == 1501
    assert out.loc["a-1", "limits:cpu"] == 1501 and out.loc["a-2", "limits:cpu"] == 0
    assert out.loc["a-1", "requests:memory"] == 2 * GI
    # b: memory only; c: no recommendation, its zero request and 100 m non-zero default kept
    assert out.loc["b-1", "requests:memory"] == GI // 2 and out.loc["b-1", "requests:cpu"] == 500
    assert out.loc["c-1", "requests:cpu"] == 0 and out.loc["c-1", "nonzero_requests:cpu"] == 100
    # the usage is not touched
    assert apply_recommendations(snap, recs).pod_usage is snap.pod_usage
    with pytest.raises(InputError, match="cpu_recommended_millicores of default/a is -5"):
        apply_recommendations(snap, _recs([("a", -5, np.nan)]))
    with pytest.raises(InputError, match="missing column"):
        apply_recommendations(snap, recs.drop(columns=["owner_kind"]))


def test_busiest_window_holds_the_spike() -> None:
    """Ten days; a 3-core spike on day 8. Day-aligned 7-day windows start on days 0..3; those
    holding day 8 start on day 2 or 3 and tie: the earlier wins."""
    minutes = 10 * 24 * 60
    day = 24 * 60
    pods = [
        P("base", "n0", cpu=1000, start=0, end=None),
        P("spike", "n0", cpu=3000, start=8 * day + 600, end=8 * day + 700),
    ]
    snap = build([N("n0", cpu=8000)], pods, minutes=minutes)
    start, end = busiest_window(snap, 7)
    assert (start, end) == (T0 + pd.Timedelta(days=2), T0 + pd.Timedelta(days=9))
    part = cut(snap, start, end)
    assert set(part.pods["uid"]) == {"base", "spike"}
    stamps = part.node_usage["timestamp"]
    assert stamps.min() > start and stamps.max() <= end
    # a snapshot no longer than the window is its own window
    short = build([N("n0")], pods[:1], minutes=60)
    assert busiest_window(short, 7) == (short.start, short.end)


def _halved(snap: Snapshot) -> pd.DataFrame:
    frame = pd.concat([workload_keys(snap.pods), snap.pods[["requests:cpu"]]], axis=1)
    recs = frame.groupby(KEY, as_index=False).agg(cpu=("requests:cpu", "max"))
    recs["cpu_recommended_millicores"] = np.where(recs["cpu"] > 0, recs["cpu"] // 2, np.nan)
    recs["memory_recommended_bytes"] = np.nan
    return recs


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_both_never_needs_more_nodes_than_repack_only(seed: int) -> None:
    """Halving every CPU request cannot make a requests-based bin packing need more nodes on
    these clusters (the same pods arrive in the same order, each smaller). Also the figures'
    invariants, and today = what the what-if comparison reports for observed."""
    snap = generate(SyntheticSpec(seed=seed, nodes=16, days=0.5, step=300)).snapshot
    settings = JointSettings(repack="most-allocated", workers=1, drain=False)
    result = run_joint(snap, _halved(snap), settings)
    assert result.run(BOTH).nodes_peak <= result.run(REPACK).nodes_peak
    assert result.changed_pods > 0
    observed = run_whatif(snap, WhatIfSettings(strategies=("kube-default",), workers=1))
    today = observed.strategies[0].outcomes[0]
    assert result.run(TODAY).nodes_peak == today.active_nodes_peak
    assert result.run(TODAY).violations == today.violations
    for run in result.scenarios:
        figures = run.pools.values()
        assert sum(f.violations for f in figures) == run.violations
        # pools peak at different instants: the sum of their peaks bounds the cluster's
        assert sum(f.nodes_peak for f in figures) >= run.nodes_peak
        for f in figures:
            assert 0 <= f.nodes_peak <= f.nodes_observed
            assert f.nodes_removable == f.nodes_observed - f.nodes_peak
            for value in [*f.idle_pct.values(), *f.slack_pct.values()]:
                assert math.isnan(value) or 0.0 <= value <= 100.0
            for r in ("cpu", "memory"):  # unrequested + requested-unused <= allocatable
                if not math.isnan(f.idle_pct[r]):
                    assert f.idle_pct[r] + f.slack_pct[r] <= 100.0 + 1e-9


def test_bad_strategy_fails_before_any_replay() -> None:
    with pytest.raises(InputError):
        run_joint(three_half_empty(), RIGHTSIZED, JointSettings(repack="bin-packing", workers=1))


def test_cli_whatif_recommendations_blocked(tmp_path: Path) -> None:
    path = write_snapshot(three_half_empty(), tmp_path / "snap")
    recs = tmp_path / "recs.csv"
    RIGHTSIZED.to_csv(recs, index=False)
    runner = CliRunner()
    args = ["whatif", str(path), "--recommendations", str(recs), "--workers", "1"]
    ok = runner.invoke(
        main, [*args, "--strategy", "kube-default", "--strategy", "most-allocated", "--blocked"]
    )
    assert ok.exit_code == 0, ok.output
    assert "3 pods right-sized" in ok.output
    assert "pool pool (both, at 2026-11-01T00:03:00+00:00): 2 nodes needed, 2 cannot go alone" in (
        ok.output
    )
    assert "1 pod of default/db: 0/1 nodes are available: 1 node(s) didn't match" in ok.output
    both = ["--strategy", "kube-default", "--strategy", "most-allocated"]
    data = json.loads(runner.invoke(main, [*args, *both, "--format", "json"]).output)
    assert [s["nodes_peak"] for s in data["pools"][0]["scenarios"]] == [3, 3, 3, 2]
    lonely = runner.invoke(main, ["whatif", str(path), "--blocked", "--strategy", "kube-default"])
    assert lonely.exit_code == 2 and "--blocked: only with --recommendations" in lonely.output
    bad = tmp_path / "bad.csv"
    bad.write_text("namespace,owner_name\ndefault,web\n")
    missing = runner.invoke(main, ["whatif", str(path), "--recommendations", str(bad)])
    assert missing.exit_code == 2 and "missing column(s) owner_kind" in missing.output


def test_load_aware_drain_reason() -> None:
    """The default repack (most-allocated-loadaware): LoadAwareScheduling refuses what bin
    packing would accept. db-0 binds to n2 at minute 1; the NodeMetric of minute 1 shows n2's
    100 m overhead, and the pod-assign cache adds db-0's estimate 1500 m × 85 % = 1275 m. web-a
    (1275 m estimated) would make 2650 / 4000 m = 66 % > the 65 % threshold, so at minute 2 it goes
    to another node: "both" needs 2 nodes from minute 2. Draining web-a's node at minute 2 meets
    the same refusal, in LoadAwareScheduling's words."""
    result = run_joint(three_half_empty(), RIGHTSIZED, JointSettings(workers=1))
    assert [r["nodes_peak"] for r in result.pool_rows("pool")] == [3, 3, 3, 2]
    drain = result.drains["pool"]
    assert drain.time == at(2).isoformat()
    reasons = {b["node"]: b["reasons"] for b in drain.blocked_nodes}
    other = next(n for n in drain.needed if n != "n2")
    assert reasons[other] == [
        "1 pod of default/web: 0/1 nodes are available: 1 node(s) cpu usage exceed threshold."
    ]
    assert "1 node(s) didn't match Pod's node affinity/selector." in reasons["n2"][0]


WEB = {"app": "web"}
ANTI_WEB = json.dumps({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": WEB}, "topologyKey": "kubernetes.io/hostname"}
]}})  # fmt: skip
SHRUNK = _recs([("db", 1000, np.nan), ("web", 1000, np.nan)])


def three_half_empty_anti() -> Snapshot:
    """Three 4-core nodes labelled with their hostname, one 2.1-core pod each (52 % requested).
    ``db-0`` (arrives first) has a required anti-affinity against ``app=web`` pods on its node;
    ``web-a``/``web-b`` (``app=web``) arrive together a minute later.

    Today's requests never share a node (2 × 2100 m > 4000 m): repacking alone keeps 3 nodes.
    Right-sized to 1000 m, all three would fit one node (3000 m), but db-0 keeps its node to
    itself: bin packing puts web-a beside nothing (db-0's node refuses it), web-b beside web-a
    (2000 m) — 2 nodes, one of them db-0's alone.
    """
    nodes = [N(f"n{i}", cpu=4000, memory=16 * GI) for i in range(3)]
    pods = [
        P("db-0", "n2", cpu=2100, memory=4 * GI, start=1, cpu_used=300.0),
        P("web-a", "n0", cpu=2100, memory=4 * GI, start=2, cpu_used=300.0),
        P("web-b", "n1", cpu=2100, memory=4 * GI, start=2, cpu_used=300.0),
    ]
    snap = build(nodes, pods, minutes=30)
    node_frame = snap.nodes.copy()
    node_frame["labels"] = pd.array(
        [json.dumps({"kubernetes.io/hostname": f"n{i}"}) for i in range(3)], dtype="string"
    )
    pod_frame = snap.pods.copy()
    pod_frame["labels"] = pd.array(
        [json.dumps({"app": "db"}), json.dumps(WEB), json.dumps(WEB)], dtype="string"
    )
    pod_frame["affinity"] = pd.array([ANTI_WEB, "{}", "{}"], dtype="string")
    snap = replace(snap, nodes=node_frame, pods=pod_frame)
    return _workloads(snap, {"db-0": "db", "web-a": "web", "web-b": "web"})


# kube-scheduler's InterPodAffinity Filter reasons (scheduling/plugins/interpodaffinity.py, upstream's
# ErrReasonAntiAffinityRulesNotMatch and ErrReasonExistingAntiAffinityRulesNotMatch)
OWN_ANTI = "node(s) didn't match pod anti-affinity rules"
THEIR_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"


@pytest.mark.parametrize("workers", [1, 2])
def test_hand_built_anti_affinity_keeps_a_node(workers: int) -> None:
    result = run_joint(
        three_half_empty_anti(), SHRUNK, JointSettings(repack="most-allocated", workers=workers)
    )
    rows = {r["name"]: r for r in result.pool_rows("pool")}
    assert [rows[s]["nodes_peak"] for s in (TODAY, RIGHTSIZE, REPACK, BOTH)] == [3, 3, 3, 2]
    assert rows[BOTH]["nodes_removable"] == 1 and rows[BOTH]["placement"] == "fresh"
    assert all(r["violations"] == 0 and r["pods_waited"] == 0 for r in rows.values())
    assert result.best["pool"] == BOTH and result.notes == []
    drain = result.drains["pool"]
    assert drain.time == at(2).isoformat() and len(drain.needed) == 2
    reasons = {b["node"]: b["reasons"] for b in drain.blocked_nodes}
    assert len(reasons) == 2 and drain.drainable_nodes == [] and drain.greedy_drained == []
    # 1000 m + 2000 m fit 4000 m everywhere: only the anti-affinity refuses, from either side
    db_node = next(n for n, r in reasons.items() if "default/db" in r[0])
    web_node = next(n for n in reasons if n != db_node)
    assert reasons[db_node] == [f"1 pod of default/db: 0/1 nodes are available: 1 {OWN_ANTI}."]
    assert reasons[web_node] == [f"2 pods of default/web: 0/1 nodes are available: 1 {THEIR_ANTI}."]


def test_cli_blocked_names_the_anti_affinity(tmp_path: Path) -> None:
    path = write_snapshot(three_half_empty_anti(), tmp_path / "snap")
    recs = tmp_path / "recs.csv"
    SHRUNK.to_csv(recs, index=False)
    args = ["whatif", str(path), "--recommendations", str(recs), "--workers", "1", "--blocked"]
    run = CliRunner().invoke(
        main, [*args, "--strategy", "kube-default", "--strategy", "most-allocated"]
    )
    assert run.exit_code == 0, run.output
    assert "pool pool (both, at 2026-11-01T00:02:00+00:00): 2 nodes needed, 2 cannot go alone" in (
        run.output
    )
    assert f"1 pod of default/db: 0/1 nodes are available: 1 {OWN_ANTI}." in run.output
    assert f"2 pods of default/web: 0/1 nodes are available: 1 {THEIR_ANTI}." in run.output


def _valid_limits(snap: Snapshot) -> Snapshot:
    """The synthetic generator writes some limits below the request, which Kubernetes refuses;
    raised to the request here (apply_recommendations would raise them to the *new* request,
    which can raise LoadAwareScheduling's estimate, capped at the limit)."""
    pods = snap.pods.copy()
    for r in ("cpu", "memory"):
        limit, request = pods[f"limits:{r}"], pods[f"requests:{r}"]
        pods[f"limits:{r}"] = limit.where((limit <= 0) | (limit >= request), request)
    return replace(snap, pods=pods)


def _no_worse(result: JointResult) -> None:
    """'both' needs no more nodes than 'repack only', per pool and in the whole cluster, and a
    row of repack only's placement has its violations, waits and nodes (not its slack)."""
    both, repack = result.run(BOTH), result.run(REPACK)
    assert both.nodes_peak <= repack.nodes_peak
    for pool in result.pools():
        b, r = both.pools[pool], repack.pools[pool]
        assert b.nodes_peak <= r.nodes_peak
        if both.placement_of(pool) == KEPT:
            assert (b.nodes_peak, b.violations, b.pods_waited) == (
                r.nodes_peak,
                r.violations,
                r.pods_waited,
            )
            for res in ("cpu", "memory"):  # the same nodes, smaller requests
                if not math.isnan(r.idle_pct[res]):
                    assert b.idle_pct[res] >= r.idle_pct[res] - 1e-9
                    assert b.slack_pct[res] <= r.slack_pct[res] + 1e-9
    if both.placement == KEPT:
        assert (both.violations, both.pods_waited, both.never_placed) == (
            repack.violations,
            repack.pods_waited,
            repack.never_placed,
        )


def test_seed_1_both_keeps_repack_only_placement() -> None:
    """30 nodes, seed 1, CPU requests halved, the default repack (most-allocated-loadaware):
    replayed afresh, the smaller requests need 4 compute nodes at peak where repack only needs 2
    (LoadAwareScheduling's smaller estimates let pods crowd a node before its NodeMetric shows
    them, later pods spread). Pods move between the general and compute pools, so the pools are
    not independent: 'both' is repack only's placement in every pool, with the right-sized
    requests, and the row says so."""
    snap = _valid_limits(generate(SyntheticSpec(seed=1, nodes=30, days=0.5, step=300)).snapshot)
    result = run_joint(snap, _halved(snap), JointSettings(workers=1, drain=False))
    _no_worse(result)
    both, repack = result.run(BOTH), result.run(REPACK)
    assert both.placement == KEPT and both.to_dict()["placement"] == KEPT
    assert [r["placement"] for r in result.pool_rows("compute")] == [
        "observed",
        "fresh",
        "fresh",
        KEPT,
    ]
    assert both.pools["compute"].nodes_peak == repack.pools["compute"].nodes_peak == 2
    assert any("pool compute: 'both' is repack only's placement" in n for n in result.notes)
    assert any(
        "runs in general in one placement and compute in the other" in n for n in result.notes
    )
    # the generator's own limits (below the request): apply_recommendations raises a limit below
    # the halved request, and LoadAwareScheduling's estimate (capped at the limit) grows, so the
    # argument does not cover those pods — the walk through the filters accepts the placement
    raw = generate(SyntheticSpec(seed=1, nodes=30, days=0.5, step=300)).snapshot
    profile = resolve_strategy("most-allocated-loadaware", None).profile
    raw_rs = apply_recommendations(raw, _halved(raw))
    assert len(raised_pods(prepare(raw), prepare(raw_rs), profile)) > 0
    walked = run_joint(raw, _halved(raw), JointSettings(workers=1, drain=False))
    _no_worse(walked)
    assert walked.run(BOTH).placement == KEPT


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_both_no_worse_property(seed: int) -> None:
    """Several clusters with the default repack: 'both' never needs more nodes than 'repack only'
    when no request or estimate rose, whichever placement it is."""
    snap = _valid_limits(generate(SyntheticSpec(seed=seed, nodes=16, days=0.5, step=300)).snapshot)
    result = run_joint(snap, _halved(snap), JointSettings(workers=1, drain=False))
    _no_worse(result)
    assert result.changed_pods > 0


def test_refusal_walks_a_placement_through_the_filters() -> None:
    """A replay's own placement passes its own filters at every bind (the walk re-creates the
    state, the NodeMetrics and the bind order); with requests no node can hold, the first bind
    is refused in the filter's words. Repack only keeps each 2100 m pod alone on a 4000 m node:
    2500 m still fits there, 4100 m does not."""
    snap = three_half_empty()
    strategy = resolve_strategy("most-allocated-loadaware", None)
    assert strategy.profile is not None
    inp = prepare(snap)
    mats = usage_matrices(inp)
    result = replay(inp, strategy, 0, matrices=mats)
    assert refusal(inp, result, strategy.profile, mats) == ""
    bigger = prepare(
        apply_recommendations(snap, _recs([("db", 2500, np.nan), ("web", 2500, np.nan)]))
    )
    assert raised_pods(inp, bigger, strategy.profile) == [0, 1, 2]
    assert refusal(bigger, result, strategy.profile, mats) == ""
    too_big = prepare(
        apply_recommendations(snap, _recs([("db", 4100, np.nan), ("web", 4100, np.nan)]))
    )
    first = int(np.argmin(result.segments["start"]))
    assert refusal(too_big, result, strategy.profile, mats) == (
        f"pod db-0 on {inp.node_names[result.segments['node'][first]]} at {at(1).isoformat()}: "
        "Insufficient cpu"
    )
    # lowered requests raise nothing
    assert (
        raised_pods(inp, prepare(apply_recommendations(snap, RIGHTSIZED)), strategy.profile) == []
    )


def two_pools(affinity: str = "{}", spread: str = "[]", zones: tuple[str, ...] = ()) -> Snapshot:
    """Pools a and b, three 4-core nodes each (``zones``: a ``zone`` label per node), three
    1500 m pods held in each pool by a nodeSelector; pod a-0 carries ``affinity``/``spread``."""
    nodes = [N(f"{p}{i}", cpu=4000, memory=16 * GI) for p in "ab" for i in range(3)]
    pods = [
        P(f"{p}-{i}", f"{p}{i}", cpu=1500, memory=GI, start=1 + i, labels=json.dumps({"app": p}))
        for p in "ab"
        for i in range(3)
    ]
    snap = build(nodes, pods, minutes=20)
    node_frame = snap.nodes.copy()
    node_frame["pool"] = pd.array([n.name[0] for n in nodes], dtype="string")
    node_frame["labels"] = pd.array(
        [
            json.dumps({"pool": n.name[0], "kubernetes.io/hostname": n.name, **(
                {"zone": zones[k]} if zones else {})})
            for k, n in enumerate(nodes)
        ],
        dtype="string",
    )  # fmt: skip
    pod_frame = snap.pods.copy()
    pod_frame["node_selector"] = pd.array(
        [json.dumps({"pool": u[0]}) for u in pod_frame["uid"]], dtype="string"
    )
    pod_frame["affinity"] = pd.array([affinity] + ["{}"] * 5, dtype="string")
    pod_frame["topology_spread"] = pd.array([spread] + ["[]"] * 5, dtype="string")
    return replace(snap, nodes=node_frame, pods=pod_frame)


def test_merge_takes_each_pool_from_its_placement() -> None:
    """kube-default spreads each pool's three pods over its three nodes; most-allocated packs two
    per node (3000 of 4000 m): 2 nodes per pool. Merged, pool a is most-allocated's and pool b
    kube-default's — every per-pool figure equals its source's, the cluster peak is 2 + 3."""
    inp = prepare(two_pools())
    mats = usage_matrices(inp)
    packed, spread = (
        replay(inp, resolve_strategy(s, None), 0, matrices=mats)
        for s in ("most-allocated", "kube-default")
    )
    pods = pod_pools(inp, packed, spread)
    assert pods == ["a", "a", "a", "b", "b", "b"]
    profile = resolve_strategy("most-allocated", None).profile
    assert pools_independent(inp, profile) == ""
    merged = merge(inp, packed, spread, pods, {"b"})
    settings = JointSettings()

    def figures(result: ReplayResult) -> dict[str, PoolFigures]:
        outcome = evaluate(inp, result, mats, settings.thresholds, fragmentation_times=[])
        return pool_figures(inp, result, mats, outcome)

    mine, a, b = figures(merged), figures(packed), figures(spread)
    assert (a["a"].nodes_peak, b["b"].nodes_peak) == (2, 3)
    assert mine["a"] == a["a"] and mine["b"] == b["b"]
    outcome = evaluate(inp, merged, mats, settings.thresholds, fragmentation_times=[])
    assert outcome.active_nodes_peak == 5 and outcome.waited == 0
    # every pool from one placement gives that placement back
    again = merge(inp, packed, spread, pods, {"a", "b"})
    assert figures(again) == b
    assert np.array_equal(again.node, spread.node)


@pytest.mark.parametrize(
    ("affinity", "spread", "zones", "why"),
    [
        ("{}", "[]", (), ""),
        # hostname anti-affinity: each domain is one node, in one pool
        (json.dumps({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "b"}}, "topologyKey": "kubernetes.io/hostname"}
        ]}}), "[]", (), ""),
        # a zone spanning both pools
        (json.dumps({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "b"}}, "topologyKey": "zone"}
        ]}}), "[]", ("z1", "z1", "z2", "z2", "z3", "z3"), "the anti-affinity topology zone=z2 spans pools"),
        (json.dumps({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}
        ]}}), "[]", (), "pod a-0 has a required pod affinity term"),
        ("{}", json.dumps([{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                           "whenUnsatisfiable": "DoNotSchedule",
                           "labelSelector": {"matchLabels": {"app": "a"}}}]), (),
         "pod a-0 has a DoNotSchedule topology spread constraint"),
    ],
)  # fmt: skip
def test_pools_independent(affinity: str, spread: str, zones: tuple[str, ...], why: str) -> None:
    inp = prepare(two_pools(affinity, spread, zones))
    assert pools_independent(inp, resolve_strategy("most-allocated", None).profile) == why
