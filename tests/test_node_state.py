"""Node state in time: the NodeUnschedulable filter and the taint-eviction delay against
upstream's own cases (tests/data/upstream/node_state_cases.yaml), NoExecute eviction with
tolerationSeconds in a replay, cordons and taints applied only while they held, and a snapshot
without interval data replaying exactly as one whose intervals repeat its static taints."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from reliability_doc import documented_exit
from replay_fixtures import GI, N, P, at, build

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot, read_snapshot, write_snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.replay.node_state import eviction_delay
from analyzer.scheduling import load_strategy
from analyzer.scheduling.constraint_types import (
    PodConstraints,
    Taint,
    Toleration,
    parse_tolerations,
)
from analyzer.scheduling.plugins.helper.node_constraints import retaint as retaint_filter
from analyzer.scheduling.plugins.helper.node_constraints import taint_mask
from analyzer.scheduling.plugins.nodeunschedulable import REASON, NodeUnschedulable
from analyzer.scheduling.plugins.tainttoleration import raw_counts
from analyzer.scheduling.plugins.tainttoleration import retaint as retaint_score
from analyzer.scheduling.state import ClusterState, make_demand
from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.node_state_notes import node_state_notes

CASES = yaml.safe_load(
    (Path(__file__).parent / "data" / "upstream" / "node_state_cases.yaml").read_text()
)


@pytest.mark.parametrize("case", CASES["node_unschedulable"], ids=lambda c: c["name"])
def test_node_unschedulable_matches_upstream(case: dict[str, Any]) -> None:
    state = ClusterState.from_nodes(["n"], [{"cpu": 1000, "memory": GI, "pods": 10}])
    state.node_unschedulable = [case["unschedulable"]]
    tolerations = parse_tolerations(case["tolerations"], "t")
    pod = make_demand(
        state.resources,
        {"cpu": 100},
        {"cpu": 100, "memory": 0},
        name="p",
        namespace="default",
        constraints=PodConstraints(tolerations),
    )
    result = NodeUnschedulable().filter(state, pod, 0.0)
    assert bool(result.feasible[0]) is case["passes"]
    assert result.reasons(0) == ([] if case["passes"] else [REASON])
    # preemption cannot cure a cordon: the refusal is UnschedulableAndUnresolvable
    assert bool(result.unresolvable[0]) is not case["passes"]


@pytest.mark.parametrize("case", CASES["min_toleration_time"], ids=str)
def test_eviction_delay_matches_upstream_min_toleration_time(case: dict[str, Any]) -> None:
    # one NoExecute taint per toleration, each tolerated by its own toleration only (so the
    # tolerations "used" are exactly upstream's list); no toleration: one untolerated taint
    seconds = case["seconds"]
    taints = [Taint(f"k{i}", "", "NoExecute") for i in range(max(1, len(seconds)))]
    tolerations = [Toleration(f"k{i}", "Exists", "", "NoExecute", s) for i, s in enumerate(seconds)]
    delay = eviction_delay(taints, tolerations)
    assert (-1 if delay is None else delay) == case["expected"]


def test_eviction_ignores_other_effects() -> None:
    # NoSchedule / PreferNoSchedule never evict, tolerated or not
    taints = [Taint("a", "", "NoSchedule"), Taint("b", "", "PreferNoSchedule")]
    assert eviction_delay(taints, []) is None


def _with_state(snapshot: Snapshot, rows: list[tuple[Any, ...]]) -> Snapshot:
    snapshot.node_state = pd.DataFrame(
        rows, columns=["node", "kind", "key", "value", "effect", "start", "end"]
    )
    snapshot.node_state["end"] = pd.to_datetime(snapshot.node_state["end"], utc=True)
    return snapshot


def _segments(snapshot: Snapshot, result: Any, uid: str) -> list[tuple[str, float]]:
    """(node, start minute) of each run of ``uid``."""
    pod = list(snapshot.pods["uid"]).index(uid)
    seg = result.segments
    names = list(snapshot.nodes["node"])
    rows = np.flatnonzero(seg["pod"] == pod)
    return [(names[int(seg["node"][r])], (int(seg["start"][r]) - at(0).value) / 60e9) for r in rows]


def test_no_execute_taint_evicts_after_toleration_seconds() -> None:
    # node b joins at minute 5, so every pod arriving at 0 starts on a; at minute 10 a gets a
    # NoExecute taint: x (no toleration) goes at once, y (tolerationSeconds 300) at minute 15,
    # z (tolerates it without a bound) stays
    snapshot = build(
        [N("a", cpu=8000), N("b", cpu=8000, first=5)],
        [P("x", "a"), P("y", "a"), P("z", "a")],
        minutes=60,
    )
    tol = {"key": "maint", "operator": "Exists", "effect": "NoExecute"}
    snapshot.pods["tolerations"] = [
        "[]",
        json.dumps([{**tol, "tolerationSeconds": 300}]),
        json.dumps([tol]),
    ]
    _with_state(snapshot, [("a", "taint", "maint", "", "NoExecute", at(10), None)])
    result = replay(prepare(snapshot), Strategy("kube-default", load_strategy("kube-default")))
    assert _segments(snapshot, result, "x") == [("a", 0.0), ("b", 10.0)]
    assert _segments(snapshot, result, "y") == [("a", 0.0), ("b", 15.0)]
    assert _segments(snapshot, result, "z") == [("a", 0.0)]
    assert result.evicted == 2
    assert "2 pod(s) evicted by NoExecute taints" in result.notes


def test_taint_gone_before_toleration_seconds_cancels_the_eviction() -> None:
    snapshot = build([N("a", cpu=8000), N("b", cpu=8000, first=5)], [P("y", "a")], minutes=60)
    tol = {"key": "maint", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 600}
    snapshot.pods["tolerations"] = [json.dumps([tol])]
    _with_state(snapshot, [("a", "taint", "maint", "", "NoExecute", at(10), at(15))])
    result = replay(prepare(snapshot), Strategy("kube-default", load_strategy("kube-default")))
    assert _segments(snapshot, result, "y") == [("a", 0.0)]
    assert result.evicted == 0


def test_cordon_and_no_schedule_act_at_placement_only() -> None:
    # a is cordoned from 20 to 40 and tainted NoSchedule from 40 to 50: the pod running there
    # stays; pods arriving meanwhile go to b; after 50 a is open again
    snapshot = build(
        [N("a", cpu=8000), N("b", cpu=8000)],
        [P("old", "a"), P("p20", "b", start=25), P("p45", "b", start=45), P("p55", "a", start=55)],
        minutes=60,
    )
    _with_state(
        snapshot,
        [
            ("a", "cordon", "", "", "", at(20), at(40)),
            ("a", "taint", "k", "v", "NoSchedule", at(40), at(50)),
            ("b", "taint", "ToBeDeletedByClusterAutoscaler", "1", "NoSchedule", at(0), at(20)),
        ],
    )
    result = replay(prepare(snapshot), Strategy("kube-default", load_strategy("kube-default")))
    assert _segments(snapshot, result, "old") == [("a", 0.0)]  # b was tainted at 0
    assert _segments(snapshot, result, "p20") == [("b", 25.0)]
    assert _segments(snapshot, result, "p45") == [("b", 45.0)]
    # a holds 1 pod, b 2 at 55: least-allocated picks a once its taint is gone
    assert _segments(snapshot, result, "p55") == [("a", 55.0)]


def test_snapshot_without_intervals_replays_as_intervals_of_its_static_taints(
    tmp_path: Path,
) -> None:
    # the old reading (no node_state table: nodes.taints all window long) and the new one
    # (intervals covering the whole range) must place every pod identically
    cluster = generate(SyntheticSpec(seed=3, nodes=12, days=0.25, step=60))
    old = cluster.snapshot
    assert old.node_state is None
    assert any(t != "[]" for t in old.nodes["taints"])  # the GPU pool's taint is in play
    write_snapshot(old, tmp_path / "old")
    reread = read_snapshot(tmp_path / "old")
    assert reread.node_state is None and not (tmp_path / "old" / "node_state.parquet").exists()
    rows = [
        (node, "taint", t["key"], t["value"], t["effect"], old.start, None)
        for node, text in zip(old.nodes["node"], old.nodes["taints"], strict=True)
        for t in json.loads(text)
    ]
    new = _with_state(read_snapshot(tmp_path / "old"), rows)
    new.nodes["taints"] = "[]"  # proves the intervals, not the column, bar the GPU node
    for name in ("kube-default", "most-allocated"):
        strategy = Strategy(name, load_strategy(name))
        a, b = replay(prepare(reread), strategy), replay(prepare(new), strategy)
        assert np.array_equal(a.node, b.node)
        for key in a.segments:
            assert np.array_equal(a.segments[key], b.segments[key])
        assert a.evicted == b.evicted and int((a.node == -1).sum()) == int((b.node == -1).sum())


def test_inspect_shows_the_intervals(tmp_path: Path) -> None:
    cluster = generate(SyntheticSpec(seed=1, nodes=8, days=0.25, step=300, node_events=True))
    write_snapshot(cluster.snapshot, tmp_path / "s")
    runner = CliRunner()
    summary = runner.invoke(main, ["inspect", str(tmp_path / "s")])
    assert summary.exit_code == 0, summary.output
    line = next(x for x in summary.output.splitlines() if x.strip().startswith("node state:"))
    # two cordons from the start over about 60 % of the 6 hours (to the step after it)
    truth = cluster.snapshot.node_state
    assert truth is not None
    cordons = truth[truth["kind"] == "cordon"]
    hours = float((cordons["end"] - cordons["start"]).dt.total_seconds().sum()) / 3600
    assert 2 * 0.6 * 6 <= hours <= 2 * 0.6 * 6 + 2 * 5 / 60
    assert f"cordon 2 node(s) {hours:.1f} node-hours" in line
    table = runner.invoke(main, ["inspect", str(tmp_path / "s"), "--table", "node_state",
                                 "--format", "json"])  # fmt: skip
    rows = json.loads(table.output)
    assert len(rows) == len(truth)
    assert {r["kind"] for r in rows} == {"cordon", "taint", "not-ready"}
    old = generate(SyntheticSpec(seed=1, nodes=8, days=0.25, step=300))
    write_snapshot(old.snapshot, tmp_path / "old")
    said = runner.invoke(main, ["inspect", str(tmp_path / "old")]).output
    assert "node state:  none recorded" in said


def test_toleration_seconds_read_as_kube_state_metrics_writes_them() -> None:
    # the collector keeps KSM's toleration_seconds label as a string of digits
    (tol,) = parse_tolerations(
        [{"key": "k", "operator": "Exists", "tolerationSeconds": "300"}], "t"
    )
    assert tol.seconds == 300
    (tol,) = parse_tolerations([{"key": "k", "operator": "Exists"}], "t")
    assert tol.seconds is None
    with pytest.raises(InputError, match=r"t\[0\]\.tolerationSeconds"):
        parse_tolerations([{"key": "k", "tolerationSeconds": "soon"}], "t")


def test_old_snapshot_replays_exactly_as_main_did() -> None:
    # tests/data/snapshots/pre_intervals: a snapshot written before node-state intervals (no
    # node_state.parquet), whose nodes.taints hold autoscaler taints as the old collector kept
    # them; the expected placements were computed by main (25d626e) on this very snapshot
    folder = Path(__file__).parent / "data" / "snapshots"
    want = json.loads((folder / "pre_intervals_main.json").read_text())
    snapshot = read_snapshot(folder / "pre_intervals")
    assert snapshot.node_state is None
    inp = prepare(snapshot)
    for name in ("kube-default", "most-allocated"):
        result = replay(inp, Strategy(name, load_strategy(name)), seed=0)
        assert result.node.tolist() == want[name]["node"]
        for key, column in result.segments.items():
            assert np.asarray(column).astype("int64").tolist() == want[name]["segments"][key]
        assert result.evicted == want[name]["evicted"]


def test_whatif_note_figures_are_possible() -> None:
    # every "N nodes <kind> for H node-hours": 0 < N <= nodes, 0 <= H <= N x the window's hours,
    # and the cordon figure is the table's own sum
    cluster = generate(SyntheticSpec(seed=2, nodes=10, days=0.25, step=300, node_events=True))
    snapshot = cluster.snapshot
    (note,) = node_state_notes(snapshot)
    window = (snapshot.end - snapshot.start).total_seconds() / 3600
    found = re.findall(r"(\d+) nodes? ([a-z ]+?) for ([\d.]+) node-hours", note)
    assert {kind for _, kind, _ in found} >= {"cordoned", "tainted by an autoscaler", "not ready"}
    for count, _, hours in found:
        assert 0 < int(count) <= len(snapshot.nodes)
        assert 0 <= float(hours) <= int(count) * window
    table = snapshot.node_state
    assert table is not None
    cordons = table[table["kind"] == "cordon"]
    hours = float((cordons["end"] - cordons["start"]).dt.total_seconds().sum()) / 3600
    assert f"2 nodes cordoned for {hours:.1f} node-hours" in note


def test_a_damaged_node_state_table_is_one_line_naming_the_file(tmp_path: Path) -> None:
    cluster = generate(SyntheticSpec(seed=1, nodes=6, days=0.25, step=300, node_events=True))
    write_snapshot(cluster.snapshot, tmp_path / "s")
    table = pd.read_parquet(tmp_path / "s" / "node_state.parquet")
    table.loc[0, "kind"] = "drained"
    table.to_parquet(tmp_path / "s" / "node_state.parquet", index=False)
    run = CliRunner().invoke(main, ["inspect", str(tmp_path / "s")])
    assert run.exit_code == documented_exit("node-state-damaged")
    (line,) = run.output.strip().splitlines()
    assert "node_state.parquet" in line and "'drained'" in line and "re-create" in line
    meta = json.loads((tmp_path / "s" / "meta.json").read_text())
    meta["extra"]["node_state_version"] = 2
    (tmp_path / "s" / "meta.json").write_text(json.dumps(meta))
    run = CliRunner().invoke(main, ["inspect", str(tmp_path / "s")])
    assert run.exit_code == documented_exit("node-state-damaged")
    assert "node_state version 2" in run.output and "re-collect" in run.output


def test_generate_node_events_option(tmp_path: Path) -> None:
    runner = CliRunner()
    common = ["--nodes", "6", "--days", "0.25", "--step", "5m"]
    run = runner.invoke(main, ["generate", "--out", str(tmp_path / "on"), *common, "--node-events"])
    assert run.exit_code == 0, run.output
    table = read_snapshot(tmp_path / "on").node_state
    assert table is not None and set(table["kind"]) == {"cordon", "taint", "not-ready"}
    run = runner.invoke(main, ["generate", "--out", str(tmp_path / "off"), *common])
    assert run.exit_code == 0, run.output
    assert read_snapshot(tmp_path / "off").node_state is None  # off by default: as before
    assert not (tmp_path / "off" / "node_state.parquet").exists()


def test_retaint_updates_the_cached_masks_as_a_rebuild_would() -> None:
    # the replay updates TaintToleration's per-taint-set caches in place; the result must be
    # what building them afresh from the new taints gives
    hard, soft = Taint("a", "1", "NoSchedule"), Taint("b", "", "PreferNoSchedule")
    state = ClusterState.from_nodes(["n0", "n1", "n2", "n3"], [{"cpu": 1000, "pods": 9}] * 4)
    state.node_taints = [(hard,), (), (soft,), ()]
    pods = [
        make_demand(
            state.resources,
            {"cpu": 1},
            {"cpu": 1, "memory": 0},
            name="p",
            namespace="d",
            constraints=PodConstraints(tolerations),
        )
        for tolerations in ((), (Toleration("a", "Exists"),))
    ]
    for pod in pods:  # fill the caches
        taint_mask(state, pod)
        raw_counts(state, pod)
    state.node_taints[1] = (hard, soft)
    state.node_taints[0] = ()
    state.node_taints[3] = (Taint("c", "", "NoExecute"),)  # a set never seen before
    retaint_filter(state, [0, 1, 3])
    retaint_score(state, [0, 1, 3])
    fresh = ClusterState.from_nodes(["n0", "n1", "n2", "n3"], [{"cpu": 1000, "pods": 9}] * 4)
    fresh.node_taints = list(state.node_taints)
    for pod in pods:
        assert taint_mask(state, pod)[0].tolist() == taint_mask(fresh, pod)[0].tolist()
        assert raw_counts(state, pod).tolist() == raw_counts(fresh, pod).tolist()
    assert taint_mask(state, pods[0])[0].tolist() == [True, False, True, False]
    assert taint_mask(state, pods[1])[0].tolist() == [True, True, True, False]
    assert raw_counts(state, pods[0]).tolist() == [0, 1, 1, 0]
