"""``analyzer demo`` at a small size: snapshot, NodeMetrics, violations and one report per day."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.snapshot import read_snapshot
from analyzer.report.output import list_runs
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.usage.violations import find_violations


def test_demo_writes_snapshot_aggregates_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    args = ["demo", "--out", str(out), "--nodes", "12", "--days", "2", "--step", "600"]
    run = CliRunner().invoke(main, args, catch_exceptions=False)
    assert run.exit_code == 0, run.output
    latest = out / "reports" / "2026-11-02" / "report.html"
    assert str(latest) in run.output
    assert "snapshot:" in run.output and "index" in run.output

    snapshot = read_snapshot(out / "snapshot")
    assert len(snapshot.nodes) == 12
    objects = list(yaml.safe_load_all((out / "nodemetrics.yaml").read_text()))
    assert len(objects) == 12
    assert {o["kind"] for o in objects} == {"NodeMetric"}

    stored = json.loads((out / "violations.json").read_text())
    assert len(stored["breaches"]) == find_violations(snapshot, ThresholdConfig()).count

    # One nightly report per day, the second compared with the first.
    assert [r.day for r in list_runs(out / "reports")] == ["2026-11-02", "2026-11-01"]
    report = json.loads((out / "reports" / "2026-11-02" / "report.json").read_text())
    assert report["previous_day"] == "2026-11-01"
    assert report["summary"]["nodes"]["value"] == 12
    html = latest.read_text()
    for question in (
        "Which nodes ran hot?",
        "How fragmented is free capacity?",
        "Was the data complete?",
    ):
        assert question in html


def test_demo_runs_the_search_and_names_its_answer(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    args = ["demo", "--out", str(out), "--nodes", "12", "--days", "1", "--step", "600"]
    run = CliRunner().invoke(main, args, catch_exceptions=False)
    assert run.exit_code == 0, run.output
    page = out / "whatif" / "search.html"
    assert page.is_file() and (out / "whatif" / "report.html").is_file()
    data = json.loads((out / "whatif" / "search.json").read_text())
    assert data["sentence"] in run.output  # the summary names the answer
    rows = data["search"]["rows"]
    # observed, the baselines kube-default and most-allocated, 2 searched configurations
    assert [r["kind"] for r in rows] == ["observed", "baseline", "baseline", "searched", "searched"]
    for row in rows:
        assert 0 <= row["peak_nodes"] <= 12
        assert min(row["violations"], row["waited"], row["never_placed"]) >= 0
    # the demo's memory pool is dedicated: tainted, and only its own workload tolerates it
    snapshot = read_snapshot(out / "snapshot")
    memory = snapshot.nodes[snapshot.nodes["pool"] == "memory"]
    assert all("dedicated" in t for t in memory["taints"])
    tolerant = snapshot.pods[snapshot.pods["tolerations"].str.contains("dedicated")]
    assert set(tolerant["workload_name"].str.replace(r"-\d+$", "", regex=True)) == {"session-cache"}
