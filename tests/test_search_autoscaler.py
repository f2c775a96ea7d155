"""``analyzer whatif --search --autoscaler cluster-autoscaler``: every searched configuration is
also replayed under CA, and the front and the recommendation rank on what a team running CA pays.

The cluster (as tests/test_replay_autoscaler.py's): three 4-core nodes, three 1.5-core ReplicaSet
pods for two hours (1-minute step), node group minSize 0. Under CA with its defaults (scan every
10 s, unneeded 10 m) one node goes at 10:20 whatever the scheduler: kube-default spreads the pods
one per node and CA drains the first (its pod fits beside another: 3 of 4 cores); MostAllocated
packs two on one node from the start, so the third node is empty and goes at 10:20 as well. Both
then pay for 2 × 2 h + 10 m 20 s = 4.1722 node-hours against the data's 6 (three nodes all
along), and kube-default 30 s more: its drained node runs until its evicted pod has terminated
(the default 30 s grace, under max-graceful-termination's 600 s), the empty one goes at once.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from replay_fixtures import GI, N, P, build

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot

# two nodes all along, the third until 10:20 (unneeded from 0:10, deleted at the first run when
# that is strictly more than 10 minutes: upstream's ``since + unneededTime`` before the time)
CA_HOURS = 4 + (10 * 60 + 20) / 3600
DRAIN_HOURS = 30 / 3600  # a drained node's evicted pod terminating (30 s grace)
CONFIG = "autoscaler:\n  node-groups: {pool: {minSize: 0}}\n"


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    """The search's folder, its JSON on stdout and its table (one run, module-wide)."""
    tmp = tmp_path_factory.mktemp("search-ca")
    snap = build(
        [N("a"), N("b"), N("c")],
        [P(f"p{i}", n, cpu=1500, memory=GI) for i, n in enumerate("abc")],
        minutes=120,
    )
    snap.pods["owner_name"] = "web-5d9f"  # ReplicaSet pods: CA may move them
    write_snapshot(snap, tmp / "snap")
    (tmp / "config.yaml").write_text(CONFIG)
    (tmp / "grid.yaml").write_text("scoring: [MostAllocated]\nloadAwareThresholds: [null]\n")
    common = ["--config", str(tmp / "config.yaml"), "whatif", str(tmp / "snap"), "--search",
              "--search-grid", str(tmp / "grid.yaml"), "--workers", "1",
              "--autoscaler", "cluster-autoscaler"]  # fmt: skip
    run = CliRunner().invoke(main, [*common, "--format", "json", "--out", str(tmp / "out")])
    assert run.exit_code == 0, run.output
    table = CliRunner().invoke(main, common)
    assert table.exit_code == 0, table.output
    return tmp / "out", json.loads(run.output), table.output


def test_every_row_carries_its_outcome_under_ca(searched: tuple[Path, dict[str, Any], str]) -> None:
    _, page, _ = searched
    rows = {r["kind"]: r for r in page["rows"]}
    assert page["ranked_on"] == "cluster-autoscaler"
    assert "under cluster-autoscaler" in page["rule"]
    observed = rows["observed"]["autoscaled"]
    assert observed["node_hours"] == pytest.approx(6.0)  # the data's three nodes for 2 h
    assert observed["core_hours_released"] == 0
    for kind, drained in (("baseline", True), ("searched", False)):
        ca = rows[kind]["autoscaled"]
        hours = CA_HOURS + (DRAIN_HOURS if drained else 0.0)
        assert ca["autoscaler"] == "cluster-autoscaler"
        assert ca["node_hours"] == pytest.approx(hours, abs=1e-6)
        assert ca["observed_node_hours"] == pytest.approx(6.0)
        assert ca["core_hours"] == pytest.approx(4 * hours, abs=1e-5)  # 4-core nodes
        assert ca["core_hours_released_pct"] == pytest.approx(100 * (6 - hours) / 6, abs=1e-4)
        assert ca["gib_hours_released_pct"] == pytest.approx(ca["core_hours_released_pct"])
        assert ca["nodes_removed"] == 1 and ca["nodes_added"] == 0
        assert ca["peak_nodes"] == 3
        assert ca["pending_pods_at_end"] == 0
    # kube-default's spread needs the drain (one pod evicted); MostAllocated left a node empty
    assert rows["baseline"]["autoscaled"]["pods_evicted"] == 1
    assert rows["searched"]["autoscaled"]["pods_evicted"] == 0


def test_the_recommendation_says_it_ranked_under_ca(
    searched: tuple[Path, dict[str, Any], str],
) -> None:
    _, page, table = searched
    assert page["sentence"].startswith("Ranked on the replay under cluster-autoscaler")
    best = next(r for r in page["rows"] if r["recommended"])
    # equal under CA (30.5 % each): the tie goes to fewer peak active nodes, MostAllocated's 2
    assert best["kind"] == "searched" and best["peak_nodes"] == 2
    assert f"{CA_HOURS:,.1f} node-hours, observed 6.0" in page["sentence"]
    assert "30.5 %" in page["sentence"]
    assert "Ranked on the replay under cluster-autoscaler" in table
    assert "node_hours_ca" in table


def test_the_page_and_csv_carry_the_ca_figures(
    searched: tuple[Path, dict[str, Any], str],
) -> None:
    out, _, _ = searched
    with (out / "search.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    hours = [float(r["ca_node_hours"]) for r in rows]
    assert hours[0] == pytest.approx(6.0) and all(0 < v <= 6.0 for v in hours)
    for r in rows:  # shares of the data's capacity: never above 100 %, never NaN
        for key in ("ca_core_hours_released_pct", "ca_gib_hours_released_pct"):
            assert -100.0 <= float(r[key]) <= 100.0
    stored = json.loads((out / "search.json").read_text())
    assert stored["search"]["ranked_on"] == "cluster-autoscaler"
    assert "node capacity under cluster-autoscaler" in stored["first_screen"]["question"]
    html = (out / "search.html").read_text()
    assert "Ranked on the replay under cluster-autoscaler" in html
    assert "Node-hours under cluster-autoscaler" in html
    assert "Core-hours released under cluster-autoscaler" in html  # the card
    assert "released the most node capacity under cluster-autoscaler" in html  # the question


def test_without_autoscaler_the_search_ranks_on_fixed_nodes(tmp_path: Path) -> None:
    snap = build([N("a"), N("b")], [P("p0", "a", cpu=1500, memory=GI)], minutes=30)
    write_snapshot(snap, tmp_path / "snap")
    (tmp_path / "grid.yaml").write_text("scoring: [MostAllocated]\nloadAwareThresholds: [null]\n")
    run = CliRunner().invoke(
        main,
        ["whatif", str(tmp_path / "snap"), "--search", "--search-grid", str(tmp_path / "grid.yaml"),
         "--workers", "1", "--format", "json"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    page = json.loads(run.output)
    assert page["ranked_on"] == "fixed nodes"
    assert all("autoscaled" not in r for r in page["rows"])
    assert not page["sentence"].startswith("Ranked on")


def test_pools_held_at_their_observed_size_are_named_as_the_reason(
    searched: tuple[Path, dict[str, Any], str], tmp_path: Path
) -> None:
    # the same cluster without node-groups: its one pool's bounds are its observed range, 3 to
    # 3 nodes, so under CA no configuration can remove one; the sentence says so (with minSize
    # 0, above, it does not)
    snap = searched[0].parent / "snap"
    run = CliRunner().invoke(
        main,
        ["whatif", str(snap), "--search", "--search-grid", str(searched[0].parent / "grid.yaml"),
         "--workers", "1", "--autoscaler", "cluster-autoscaler", "--format", "json"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    held = "no configuration could remove a node: every pool's minSize is as many nodes"
    assert held in json.loads(run.output)["sentence"]
    assert held not in searched[1]["sentence"]
