"""What-if comparison: outcome metrics on hand-built scenarios, the process pool, CLI and report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from replay_fixtures import GI, N, P, build

from analyzer.cli import main
from analyzer.core.snapshot import Snapshot, write_snapshot
from analyzer.replay.engine import OBSERVED_STRATEGY, replay
from analyzer.replay.input import prepare
from analyzer.replay.projection import usage_matrices
from analyzer.sources import SyntheticSpec, generate
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.usage.violations import find_violations
from analyzer.whatif.compare import WhatIfSettings, resolve_strategy, run_whatif
from analyzer.whatif.evaluate import evaluate


def packing() -> Snapshot:
    """Four 4000m nodes; four 1000m pods arriving at minutes 1..4 (all ran on n0 in reality)."""
    nodes = [N(f"n{i}", cpu=4000, memory=16 * GI) for i in range(4)]
    pods = [P(f"p{i}", "n0", cpu=1000, memory=GI, start=i + 1, cpu_used=300.0) for i in range(4)]
    return build(nodes, pods, minutes=20)


def spread() -> Snapshot:
    """The same pods, but in reality spread one per node."""
    nodes = [N(f"n{i}", cpu=4000, memory=16 * GI) for i in range(4)]
    pods = [P(f"p{i}", f"n{i}", cpu=1000, memory=GI, start=i + 1, cpu_used=300.0) for i in range(4)]
    return build(nodes, pods, minutes=20)


def test_outcome_metrics_hand_computed() -> None:
    snap = packing()
    inp = prepare(snap)
    mats = usage_matrices(inp)
    config = ThresholdConfig()
    most = evaluate(inp, replay(inp, resolve_strategy("most-allocated")), mats, config)
    least = evaluate(inp, replay(inp, resolve_strategy("kube-default")), mats, config)
    assert most.active_nodes_peak == 1 and least.active_nodes_peak == 4
    # grid minutes 0..20; minute 0 has no active node. Packed: 1/4, 2/4, 3/4 then 17 × 4/4.
    assert most.allocation_ratio["cpu"] == pytest.approx((0.25 + 0.5 + 0.75 + 17) / 20)
    assert least.allocation_ratio["cpu"] == pytest.approx(0.25)  # one pod per active node
    assert most.placed == 4 and most.waited == 0 and most.never_placed == 0
    # the packed node runs what observed ran on n0: nothing moved except the node choice
    observed = evaluate(inp, replay(inp, OBSERVED_STRATEGY), mats, config)
    assert observed.moved_share == 0.0 and observed.active_nodes_peak == 1
    assert least.moved_share == pytest.approx(0.75)  # three of four pods left n0
    # one pod shape (1000m, 1Gi); fragmentation points at 00:00 (empty: 4 × 4 fit) and 00:20
    # (four pods placed: 12 more fit whether packed or spread) → mean 14
    assert list(most.headroom.values()) == [14.0]
    assert list(least.headroom.values()) == [14.0]


def test_observed_violations_match_analyzer_violations() -> None:
    snap = generate(SyntheticSpec(seed=2, nodes=8, days=1, step=300, hot_nodes=0.3)).snapshot
    config = ThresholdConfig()
    inp = prepare(snap)
    outcome = evaluate(inp, replay(inp, OBSERVED_STRATEGY), usage_matrices(inp), config)
    direct = find_violations(snap, config)
    assert direct.count > 0  # the generator's hot nodes breach 65 % cpu
    assert outcome.violations == direct.count
    assert outcome.nodes_with_violations == int((direct.per_node["breaches"] > 0).sum())


def test_whatif_recommends_packing_and_pool_matches_serial() -> None:
    snap = spread()
    settings = WhatIfSettings(strategies=("kube-default", "most-allocated"), seeds=2, workers=1)
    serial = run_whatif(snap, settings)
    assert [c.name for c in serial.strategies] == ["observed", "kube-default", "most-allocated"]
    assert len(serial.strategies[0].outcomes) == 1 and len(serial.strategies[1].outcomes) == 2
    assert serial.best == "most-allocated"
    # packing releases three nodes from minute 4 to 20 (grid points 4..20 = 17 × 1 min) and
    # two/one node at minutes 2, 3 (observed has 2, 3 active vs 1): (17 × 3 + 1 + 2) / 60 h
    most = serial.strategies[2]
    assert most.stat("node_hours_released")["mean"] == pytest.approx((17 * 3 + 1 + 2) / 60)
    assert serial.strategies[1].stat("node_hours_released")["mean"] == pytest.approx(0.0)
    json.dumps(serial.to_dict(), allow_nan=True)
    pooled = run_whatif(
        snap, WhatIfSettings(("kube-default", "most-allocated"), seeds=2, workers=2)
    )
    for a, b in zip(serial.strategies, pooled.strategies, strict=True):
        assert [o.summary() for o in a.outcomes] == [o.summary() for o in b.outcomes]


def test_no_recommendation_when_every_strategy_is_worse() -> None:
    snap = packing()  # observed already packs everything on one node
    result = run_whatif(snap, WhatIfSettings(strategies=("kube-default",), workers=1))
    assert result.best is None
    assert result.recommendation.startswith("No strategy")


def test_cli_whatif_json_and_bad_strategy(tmp_path: Path) -> None:
    path = write_snapshot(spread(), tmp_path / "snap")
    runner = CliRunner()
    ok = runner.invoke(
        main,
        ["whatif", str(path), "--strategy", "most-allocated", "--format", "json", "--workers", "1"],
    )
    assert ok.exit_code == 0, ok.output
    data = json.loads(ok.output)
    assert data["best"] == "most-allocated"
    assert [s["name"] for s in data["strategies"]] == ["observed", "most-allocated"]
    bad = runner.invoke(main, ["whatif", str(path), "--strategy", "bin-packing"])
    assert bad.exit_code == 2
    assert "valid: " in bad.output and "most-allocated" in bad.output
    none = runner.invoke(main, ["whatif", str(path)])
    assert none.exit_code == 2 and "--strategy" in none.output


def test_report_whatif_writes_html_json_csv(tmp_path: Path) -> None:
    nodes = [N(f"n{i}", cpu=4000, memory=16 * GI) for i in range(3)]
    nodes.append(N("<script>alert(1)</script>", cpu=4000))
    pods = [P(f"p{i}", "n0", cpu=1000, start=i + 1) for i in range(3)]
    path = write_snapshot(build(nodes, pods, minutes=20), tmp_path / "snap")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        ["report", "whatif", str(path), "--out", str(out), "--strategy", "kube-default",
         "--strategy", "most-allocated", "--workers", "1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    folder = out  # the folder the user names, not OUT/whatif/ (issue 14)
    assert not (out / "whatif").exists()
    assert {p.name for p in folder.iterdir()} >= {
        "report.html", "report.json", "comparison.csv", "seeds.csv", "series.csv",
        "wait_reasons.csv", "moves.csv", "waiting_pods.csv", "moved_pods.csv",
    }  # fmt: skip
    data = json.loads((folder / "report.json").read_text())
    html = (folder / "report.html").read_text()
    # the first screen answers the question before any table
    answer = html.index('data-answer="best"')
    assert answer < html.index('id="comparison"')
    assert data["recommendation"].split(":")[0] in html
    rows = {r["strategy"]: r for r in data["tables"]["comparison"]}
    assert next(iter(rows)) == "observed"
    assert rows["kube-default"]["active_nodes_peak"] == 3  # spreads: one node per pod
    assert "<script>alert(1)</script>" not in html
    csv = (folder / "comparison.csv").read_text().splitlines()
    assert csv[0].startswith("strategy,") and len(csv) == 4


def test_demo_writes_the_whatif_report(tmp_path: Path) -> None:
    from analyzer.cli.demo import DemoSettings, run_demo

    run_demo(DemoSettings(out=tmp_path / "demo", nodes=8, days=1, step_seconds=900))
    html = (tmp_path / "demo" / "whatif" / "report.html").read_text()
    data = json.loads((tmp_path / "demo" / "whatif" / "report.json").read_text())
    question = (
        "Which of the 4 strategies compared below would have released the most capacity of "
        "active nodes without more threshold violations, waiting or unplaced pods than observed?"
    )
    assert question in html and html.index(question) < html.index('id="comparison"')
    names = [s["name"] for s in data["comparison"]["strategies"]]
    assert names == [
        "observed",
        "kube-default",
        "most-allocated",
        "rtcr-binpack",
        "koord-loadaware",
    ]
    assert data["recommendation"] in html


def test_snapshot_without_pods_compares_cleanly() -> None:
    snap = build([N("a"), N("b")], [], minutes=10)
    result = run_whatif(snap, WhatIfSettings(strategies=("kube-default",), workers=1))
    assert [c.stat("active_nodes_peak")["mean"] for c in result.strategies] == [0.0, 0.0]
    assert result.best is None
