"""``analyzer report monthly --snapshot SNAP --autoscaler cluster-autoscaler``: each scenario's
nodes released are what CA would release, replayed with it, and the decision says so.

The month of tests/monthly_scenarios_case.py (three 4-core / 16 GiB nodes, three pods arriving at
minutes 1, 2, 3 of a 30-minute busiest window), node group minSize 0 (the data's own minimum, 3,
would keep every node), CA's defaults (scan every 10 s, unneeded 10 m, threshold 0.5):

- **today** (today's scheduler, 2.1-core requests): every pod holds 52.5 % of its node's CPU, above
  CA's 0.5, so no node goes: 0 released, 1.5 node-hours as in the data;
- **both** (right-sized 1.5-core pods packed by most-allocated): n0 holds no pod from the start,
  CA finds it unneeded at its first run (0:00:10) and deletes it at the first run when that is
  more than ten minutes (0:10:20, upstream's ``since + unneededTime`` before the loop's time):
  3 × 0.5 h − 19 m 40 s = 1.1722 node-hours, 0.656 fewer nodes on average over the 30 minutes,
  released to the nearest whole node: 1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from monthly_scenarios_case import MONTH, STRATEGIES, write_case
from reliability_doc import documented_exit

from analyzer.cli import main

CONFIG = "autoscaler:\n  node-groups: {pool: {minSize: 0}}\n"


def _monthly(base: Path, name: str, *extra: str) -> tuple[int, str, Path]:
    out, snap = base / "out", base / "snap"
    (base / "config.yaml").write_text(CONFIG)
    review = base / name
    run = CliRunner().invoke(
        main,
        ["--config", str(base / "config.yaml"), "report", "monthly", str(out), "--out",
         str(review), "--month", MONTH, "--snapshot", str(snap), "--strategy", STRATEGIES[0],
         "--strategy", STRATEGIES[1], "--workers", "1", *extra],
    )  # fmt: skip
    return run.exit_code, run.output, review


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("month-ca")
    write_case(folder)
    return folder


@pytest.fixture(scope="module")
def under_ca(base: Path) -> tuple[dict[str, Any], str, str]:
    code, output, review = _monthly(base, "review-ca", "--autoscaler", "cluster-autoscaler")
    assert code == 0, output
    payload = json.loads((review / "report.json").read_text())
    return payload, (review / "report.html").read_text(), output


def test_nodes_released_are_what_ca_releases(under_ca: tuple[dict[str, Any], str, str]) -> None:
    payload, _, _ = under_ca
    rows = {r["name"]: r for r in payload["pools"][0]["scenarios"]}
    today, both = rows["today"]["autoscaler"], rows["both"]["autoscaler"]
    assert today["autoscaler"] == "cluster-autoscaler"
    assert today["nodes_released"] == 0 and today["nodes_removed"] == 0
    assert today["node_hours"] == pytest.approx(1.5)
    gone = (30 - (10 + 20 / 60)) / 60  # hours n0 no longer exists
    assert both["node_hours"] == pytest.approx(1.5 - gone, abs=1e-6)
    assert both["nodes_released_mean"] == pytest.approx(gone / 0.5, abs=1e-6)
    assert both["nodes_released"] == 1 and both["nodes_removed"] == 1
    for row in rows.values():  # never impossible: within the data's nodes, never negative
        figures = row["autoscaler"]
        assert 0 <= figures["nodes_released"] <= figures["observed_peak_nodes"] == 3
        assert 0 < figures["node_hours"] <= 3 * 0.5 + 1e-9
        assert figures["nodes_released_mean"] <= 3
    assert payload["simulation"]["autoscaler"] == "cluster-autoscaler"


def test_the_decision_says_cluster_autoscaler_would_release(
    under_ca: tuple[dict[str, Any], str, str],
) -> None:
    payload, _, output = under_ca
    pool = payload["pools"][0]
    sim = pool["simulated_decision"]
    assert (sim["scenario"], sim["nodes"], sim["nodes_empty"]) == ("both", 1, 1)
    assert sim["autoscaler"] == "cluster-autoscaler"
    assert sim["sentence"].startswith(
        "cluster-autoscaler would release 1 node after right-sizing 2 workloads and repacking "
        "with most-allocated"
    )
    assert "0.7 fewer nodes on average" in sim["sentence"]
    assert "would let cluster-autoscaler release 1 node" in pool["pool_decision"]["sentence"]
    assert sim["sentence"] in output


def test_the_page_names_the_autoscaler(under_ca: tuple[dict[str, Any], str, str]) -> None:
    payload, page, _ = under_ca
    assert "Each scenario was also replayed under cluster-autoscaler" in page
    assert "Nodes released by cluster-autoscaler" in page
    assert payload["pools"][0]["pool_decision"]["sentence"] in page.replace("&#39;", "'")


def test_whatif_recommendations_under_ca_agree_with_the_review(
    base: Path, under_ca: tuple[dict[str, Any], str, str]
) -> None:
    # the same four scenarios of the same window with the review's own right-sizing CSV: the
    # same releases under CA, in whatif --recommendations' JSON and table
    payload, _, _ = under_ca
    recs = base / "review-ca" / "rightsizing.csv"
    args = ["--config", str(base / "config.yaml"), "whatif", str(base / "snap"),
            "--recommendations", str(recs), "--strategy", STRATEGIES[0], "--strategy",
            STRATEGIES[1], "--workers", "1", "--autoscaler", "cluster-autoscaler"]  # fmt: skip
    run = CliRunner().invoke(main, [*args, "--format", "json"])
    assert run.exit_code == 0, run.output
    joint = json.loads(run.output)
    assert joint["autoscaler"] == "cluster-autoscaler"
    released = {r["name"]: r["autoscaler"] for r in joint["pools"][0]["scenarios"]}
    review = {r["name"]: r["autoscaler"] for r in payload["pools"][0]["scenarios"]}
    assert released == review
    table = CliRunner().invoke(main, args)
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    header = next(line for line in lines if line.startswith("pool ")).split()
    both = next(line for line in lines if " both " in line).split()
    cells = dict(zip(header, both, strict=True))  # "both": one token per column
    assert cells["released_by_autoscaler"] == "1" and cells["removable"] == "1"


def test_auto_on_a_cluster_without_churn_changes_nothing(base: Path) -> None:
    code, output, review = _monthly(base, "review-auto", "--autoscaler", "auto")
    assert code == 0, output
    payload = json.loads((review / "report.json").read_text())
    simulation = payload["simulation"]
    assert simulation["autoscaler"] == "none"
    assert "no node joined or left" in simulation["autoscaler_choice"]["why"]
    pool = payload["pools"][0]
    assert all("autoscaler" not in r for r in pool["scenarios"])  # the rows as without it
    assert "autoscaler" not in pool["simulated_decision"]
    assert pool["simulated_decision"]["nodes"] == 1  # the node left empty, as today
    page = (review / "report.html").read_text()
    assert "No node autoscaler replayed (--autoscaler auto: none" in page


def test_autoscaler_without_snapshot_is_one_line(base: Path) -> None:
    run = CliRunner().invoke(
        main,
        ["report", "monthly", str(base / "out"), "--out", str(base / "bad-no-snapshot"),
         "--month", MONTH, "--autoscaler", "cluster-autoscaler"],
    )  # fmt: skip
    assert run.exit_code == documented_exit("monthly-autoscaler-without-snapshot")
    lines = run.output.strip().splitlines()
    assert len(lines) == 1 and "--autoscaler" in lines[0] and "Traceback" not in run.output
    assert not (base / "bad-no-snapshot").exists()  # refused before anything was written


def test_a_pool_held_at_its_observed_size_says_so(base: Path) -> None:
    # without node-groups the pool's bounds are the data's observed range, 3 to 3 nodes: CA may
    # remove none in any scenario, and the decision says that is why, not that none was idle
    out, snap, review = base / "out", base / "snap", base / "review-held"
    run = CliRunner().invoke(
        main,
        ["report", "monthly", str(out), "--out", str(review), "--month", MONTH, "--snapshot",
         str(snap), "--strategy", STRATEGIES[0], "--strategy", STRATEGIES[1], "--workers", "1",
         "--autoscaler", "cluster-autoscaler"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    pool = json.loads((review / "report.json").read_text())["pools"][0]
    for row in pool["scenarios"]:
        figures = row["autoscaler"]
        assert figures["min_size"] == figures["observed_peak_nodes"] == 3
        assert figures["nodes_removed"] == 0 and figures["nodes_released"] == 0
    sim = pool["simulated_decision"]
    assert sim["held_at_min"] and sim["nodes"] == 0
    assert (
        "the pool's minSize, 3, is as many nodes as it ran at its peak in the data"
        in (sim["sentence"])
    )
    decision = pool["pool_decision"]["sentence"]
    if "would release no node" in decision:
        assert decision.endswith(": the pool's minSize is its size in the data.")
