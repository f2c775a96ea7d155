"""The monthly review's right-sizing and four scenarios (issue 17, deliverable 4) on the hand-built
month of tests/monthly_scenarios_case.py, whose docstring derives every expected value."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from monthly_scenarios_case import MONTH, STRATEGIES, write_case

from analyzer.cli import main
from analyzer.monthly import decisions
from analyzer.report import monthly_scenarios as msc
from analyzer.whatif.joint import SCENARIOS

MIB, GIB = 2**20, 2**30


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("month17")
    out, snap = write_case(base)
    code, output = _run("report", "monthly", str(out), "--out", str(base / "review"),
                        "--month", MONTH, "--snapshot", str(snap), "--strategy", STRATEGIES[0],
                        "--strategy", STRATEGIES[1], "--workers", "1")  # fmt: skip
    assert code == 0, output
    return base / "review"


def _payload(folder: Path) -> dict:
    return json.loads((folder / "report.json").read_text())


def _table(page: str, name: str) -> list[list[str]]:
    """The cells of the page's table ``data-table=name``, row by row (tags stripped)."""
    body = re.search(rf'data-table="{name}".*?<tbody>(.*?)</tbody>', page, re.S)
    assert body, name
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S)
    return [
        [html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
        for r in rows
    ]  # fmt: skip


def test_scenario_rows_are_the_hand_computed_ones(case: Path) -> None:
    pool = _payload(case)["pools"][0]
    rows = {r["name"]: r for r in pool["scenarios"]}
    assert list(rows) == list(SCENARIOS)
    assert all(set(r) == {"name", "nodes_peak", "nodes_removable", "violations", "pods_waited",
                          "core_hours_released", "gib_hours_released", "core_hours_released_pct",
                          "gib_hours_released_pct", "cost_released"}
               for r in rows.values())  # fmt: skip
    # today: n2, n0, n1 active from minutes 1, 2, 3 to 30 (30 + 29 + 28 grid points); "both" frees
    # n0 (db-0 and web-a share n2): 29 points of a 4-core, 16-GiB node, a third of today's
    assert rows["both"]["core_hours_released"] == pytest.approx(4 * 29 / 60)
    assert rows["both"]["gib_hours_released"] == pytest.approx(16 * 29 / 60)
    assert rows["both"]["core_hours_released_pct"] == pytest.approx(100 * 29 / 87)
    assert rows["today"]["core_hours_released"] == 0 and rows["both"]["cost_released"] is None
    assert all(rows[n]["core_hours_released"] == pytest.approx(0) for n in SCENARIOS[:3])
    # only right-sized pods packed by most-allocated share a node: "both" 2 nodes, the rest 3
    assert {n: r["nodes_peak"] for n, r in rows.items()} == {
        "today": 3, "right-size only": 3, "repack only": 3, "both": 2}  # fmt: skip
    assert rows["both"]["nodes_removable"] == 1
    assert all(r["violations"] == 0 and r["pods_waited"] == 0 for r in rows.values())
    assert rows["both"]["nodes_peak"] <= rows["repack only"]["nodes_peak"]


def test_blocked_nodes_name_the_real_pods_and_refusals(case: Path) -> None:
    blocked = {b["node"]: b["reasons"] for b in _payload(case)["pools"][0]["blocked_nodes"]}
    assert blocked == {
        "n2": ["1 pod of default/db: 0/1 nodes are available: 1 node(s) didn't match Pod's "
               "node affinity/selector."],
        "n1": ["1 pod of default/web: 0/1 nodes are available: 1 Insufficient cpu."],
    }  # fmt: skip


def test_simulated_decision_comes_from_the_both_row(case: Path) -> None:
    d = _payload(case)["pools"][0]["simulated_decision"]
    assert (d["action"], d["nodes"], d["workloads"], d["scenario"], d["strategy"]) == (
        "change-scheduler", 1, 2, "both", "most-allocated")  # fmt: skip
    assert d["sentence"].startswith(
        "Release 1 node after right-sizing 2 workloads and changing the scheduler configuration "
        "to most-allocated: in scenario 'both' the pool needed 2 of its 3 nodes"
    )


def test_workloads_carry_current_and_recommended_requests(case: Path) -> None:
    payload = _payload(case)
    by_name = {w["owner_name"]: w for w in payload["workloads"]}
    for name in ("db", "web"):
        assert by_name[name]["current"] == {"cpu_cores": 2.1, "memory_gib": 4.0}
        # krr: CPU max daily p95 1.5 cores; memory 2 GiB × 1.15 → 2356 MiB (rounded up)
        assert by_name[name]["recommended"] == {"cpu_cores": 1.5, "memory_gib": 2356 * MIB / GIB}
        assert by_name[name]["rightsize_skipped"] == ""
    rs = payload["rightsizing"]
    assert (rs["recipe"], rs["workloads"], rs["recommended"], rs["changed"]) == ("krr", 2, 2, 2)
    # requests × peak replicas: 3 pods × 2.1 = 6.3 → 3 × 1.5 = 4.5 cores
    totals = rs["requested_times_peak_replicas"]
    assert totals["before"]["cpu_cores"] == pytest.approx(6.3)
    assert totals["after"]["cpu_cores"] == pytest.approx(4.5)


def test_csv_and_yaml_patches_next_to_the_page(case: Path) -> None:
    docs = [d for d in yaml.safe_load_all((case / "rightsizing-patches.yaml").read_text()) if d]
    assert sorted(d["metadata"]["name"] for d in docs) == ["db", "web"]
    requests = docs[0]["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
    assert requests == {"cpu": "1500m", "memory": "2356Mi"}
    csv = (case / "rightsizing.csv").read_text().splitlines()
    assert len(csv) == 3 and csv[0].startswith("namespace,owner_kind,owner_name")


def test_page_and_json_agree(case: Path) -> None:
    payload = _payload(case)
    page = (case / "report.html").read_text()
    pool = payload["pools"][0]
    cells = _table(page, "scenarios")
    assert [(c[0], c[1]) for c in cells] == [("pool", n) for n in SCENARIOS]
    for row, c in zip(pool["scenarios"], cells, strict=True):
        # nodes in the pool, core-hours and GiB-hours released, nodes needed at peak,
        # removable, violations, pods waited
        assert c[3:10] == [str(row["nodes_peak"] + row["nodes_removable"]),
                           f"{row['core_hours_released']:,.0f}",
                           f"{row['gib_hours_released']:,.0f}", str(row["nodes_peak"]),
                           str(row["nodes_removable"]), str(row["violations"]),
                           str(row["pods_waited"])]  # fmt: skip
    # the headline: the whole cluster's capacity released, the sum of the pools' rows
    headline = re.search(r"<p data-scenarios-capacity><strong>(.*?)</strong>", page, re.S)
    both = payload["simulation"]["cluster"][3]
    assert headline and (
        f"both {both['core_hours_released']:,.0f} core-hours "
        f"({both['core_hours_released_pct']:.1f} %)" in html.unescape(headline.group(1))
    )
    assert both["core_hours_released"] == pytest.approx(pool["scenarios"][3]["core_hours_released"])
    # where each row's placement comes from (no kept placement in this case: "both" replayed
    # afresh needs 2 nodes, "repack only" 3), so the scheduler cell is the strategy alone
    detail = payload["simulation"]["pools"][0]["rows"]
    assert [r["placement"] for r in detail] == ["observed", "fresh", "fresh", "fresh"]
    assert [c[2] for c in cells] == [r["strategy"] for r in detail]
    assert payload["simulation"]["kept"] == [] and "keeps repack only's" not in page
    said = re.search(
        r'data-simulated-decision="pool".*?<span data-sentence>(.*?)</span>', page, re.S
    )
    assert said and html.unescape(said.group(1)) == pool["simulated_decision"]["sentence"]
    blocked = {c[1]: c[2] for c in _table(page, "blocked_nodes")}
    assert blocked == {b["node"]: "; ".join(b["reasons"]) for b in pool["blocked_nodes"]}
    changes = _table(page, "rightsizing_changes")
    assert [c[0] for c in changes] == ["default/web", "default/db"]  # 2 replicas free more CPU
    assert changes[0][4:6] == ["2.100 → 1.500", "4.00 → 2.30"]  # per pod, now → recommended
    assert "6.3 → 4.5 cores" in page


def test_without_a_snapshot_the_page_says_how_to_get_one(tmp_path: Path) -> None:
    out, _ = write_case(tmp_path)
    code, output = _run("report", "monthly", str(out), "--out", str(tmp_path / "r"),
                        "--month", MONTH)  # fmt: skip
    assert code == 0, output
    payload = _payload(tmp_path / "r")
    assert payload["simulation"]["available"] is False
    assert payload["pools"][0]["scenarios"] == [] and payload["pools"][0]["blocked_nodes"] == []
    assert payload["workloads"][0]["recommended"]["cpu_cores"] == 1.5  # right-sizing still runs
    page = (tmp_path / "r" / "report.html").read_text()
    assert "pass --snapshot SNAP" in page and 'data-table="scenarios"' not in page


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        (["--recipe", "percentile:97"], "--recipe"),
        (["--strategy", "most-allocated"], "--snapshot"),
        (["--snapshot", "SNAP", "--strategy", "a", "--strategy", "b", "--strategy", "c"],
         "at most two"),
        (["--snapshot", "SNAP", "--strategy", "no-such-strategy"], "no-such-strategy"),
    ],
)  # fmt: skip
def test_bad_options_are_one_line_and_exit_2(tmp_path: Path, extra: list[str], names: str) -> None:
    out, snap = write_case(tmp_path)
    args = [str(snap) if a == "SNAP" else a for a in extra]
    code, output = _run("report", "monthly", str(out), "--out", str(tmp_path / "r"),
                        "--month", MONTH, *args)  # fmt: skip
    assert code == 2, output
    assert names in output and len(output.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_scenario_names_match_the_replay() -> None:
    assert (decisions.TODAY, decisions.RIGHTSIZE, decisions.REPACK, decisions.BOTH) == SCENARIOS


def _rows(peaks: dict[str, int], observed: int = 10) -> list[dict]:
    return [{"name": n, "nodes_peak": p, "nodes_removable": observed - p, "violations": 0,
             "pods_waited": 0} for n, p in peaks.items()]  # fmt: skip


def test_decision_notes_when_both_needs_more_than_repack_only() -> None:
    # docs/whatif.md: with load-aware repacking "both" may need more nodes than "repack only";
    # the best row is then "repack only" and the sentence says why "both" is not it.
    rows = _rows({"today": 10, "right-size only": 9, "repack only": 7, "both": 8})
    d = decisions.simulated_decision(rows, "repack only", workloads_changed=4,
                                     baseline="kube-default", repack="lw")  # fmt: skip
    assert (d["action"], d["nodes"], d["workloads"]) == ("change-scheduler", 3, 0)
    assert d["sentence"].startswith("Change the scheduler configuration to lw and release 3 nodes")
    assert "'both' needed more nodes at peak than 'repack only' (8 against 7)" in d["sentence"]
    assert "packed worse here" in d["sentence"]  # no reason given: the fresh replay's
    # right-sizing raised requests, so repack only's placement could not be kept: the sentence
    # gives that reason, not the packing one (it would contradict the simulation's note)
    raised = "right-sizing raised the request of 3 pod(s)); first refusal: Insufficient memory"
    d = decisions.simulated_decision(rows, "repack only", workloads_changed=4,
                                     baseline="kube-default", repack="lw",
                                     both_worse_because=raised)  # fmt: skip
    assert f"(8 against 7): {raised} (docs/whatif.md)." in d["sentence"]
    assert "packed worse" not in d["sentence"]


def test_decision_says_when_only_the_whole_cluster_rules_a_row_out() -> None:
    # "both" frees 6 nodes of this pool with no more violations or waits here than today, but
    # its whole-cluster replay breaches more (elsewhere): best is "repack only" (3), and the
    # sentence says why the bigger saving is not taken, with the whole cluster's figures
    rows = _rows({"today": 10, "right-size only": 10, "repack only": 7, "both": 4})
    cluster = {"today": {"violations": 5, "pods_waited": 0},
               "right-size only": {"violations": 5, "pods_waited": 0},
               "repack only": {"violations": 5, "pods_waited": 0},
               "both": {"violations": 1090, "pods_waited": 2}}  # fmt: skip
    d = decisions.simulated_decision(rows, "repack only", workloads_changed=4,
                                     baseline="kube-default", repack="lw", cluster=cluster)  # fmt: skip
    assert d["nodes"] == 3
    assert (
        "Scenario 'both' would leave 6 nodes of this pool empty with no more violations or "
        "waiting pods here than today, but in the whole cluster it had 1,090 violations and 2 pods "
        "waiting (today: 5 and 0), so it is not counted." in d["sentence"]
    )
    # the pool's own figures rule it out (its _rows violations are 0, today's too): the sentence
    # gives this pool's figures, not the whole cluster's
    rows[3]["violations"] = 1089
    d = decisions.simulated_decision(rows, "repack only", workloads_changed=4,
                                     baseline="kube-default", repack="lw", cluster=cluster)  # fmt: skip
    assert (
        "Scenario 'both' would leave 6 nodes of this pool empty, but with 1,089 violations and 0 "
        "pods waiting in this pool (today: 0 and 0), so it is not counted." in d["sentence"]
    )
    assert "whole cluster" not in d["sentence"]
    # ... also without the whole cluster's figures; none when the bigger saving is the best row
    d = decisions.simulated_decision(rows, "repack only", workloads_changed=4,
                                     baseline="kube-default", repack="lw")  # fmt: skip
    assert "so it is not counted" in d["sentence"]
    d = decisions.simulated_decision(rows, "both", workloads_changed=4,
                                     baseline="kube-default", repack="lw", cluster=cluster)  # fmt: skip
    assert "not counted" not in d["sentence"]


def test_decision_without_a_removable_node_is_no_release() -> None:
    d = decisions.simulated_decision(_rows(dict.fromkeys(SCENARIOS, 10)), "today",
                                     workloads_changed=0, baseline="kd", repack="ma")  # fmt: skip
    assert (d["action"], d["nodes"]) == ("none", 0)
    assert d["sentence"].startswith("No release from the simulation")


def test_decision_right_size_only_keeps_the_scheduler() -> None:
    rows = _rows({"today": 10, "right-size only": 8, "repack only": 10, "both": 8})
    d = decisions.simulated_decision(rows, "right-size only", workloads_changed=5,
                                     baseline="kube-default", repack="ma", forecast_action="add")  # fmt: skip
    assert d["sentence"].startswith(
        "Release 2 nodes after right-sizing 5 workloads with today's scheduler (kube-default)"
    )
    assert d["sentence"].endswith("not the growth ahead.")


def test_skipped_workloads_are_counted_by_kind_of_reason() -> None:
    from analyzer.report.monthly_rightsize import _skipped_text, skipped_by_reason

    reasons = pd.Series(
        [
            "not running on 2026-10-31, the window's last day (last seen 2026-10-05)",
            "not running on 2026-10-31, the window's last day (last seen 2026-10-06)",
            "24 usage samples, fewer than --min-samples 100",
            "3 usage samples, fewer than --min-samples 100",
        ]
    )
    counted = skipped_by_reason(reasons)
    assert counted == [
        {"reason": "fewer than --min-samples 100 usage samples", "workloads": 2},
        {"reason": "not running on 2026-10-31, the window's last day", "workloads": 2},
    ]
    text = _skipped_text({"skipped": 4, "skipped_by_reason": counted})
    assert text.startswith(
        "4 skipped: 2 fewer than --min-samples 100 usage samples; 2 not running on 2026-10-31"
    )
    assert _skipped_text({"skipped": 0, "skipped_by_reason": []}) == "none skipped"


def test_sentence_names_the_pools_whose_both_row_is_kept() -> None:
    simulation = {"available": True, "snapshot": "snap", "start": "2026-11-01T00:00:00+00:00",
                  "end": "2026-11-08T00:00:00+00:00", "baseline": "kube-default",
                  "repack": "most-allocated", "changed_pods": 3, "recipe": "krr"}  # fmt: skip
    plain = msc.sentence({"simulation": {**simulation, "kept": []}})
    assert plain.endswith("savings are simulated, never added.")
    kept = msc.sentence({"simulation": {**simulation, "kept": ["compute", "memory"]}})
    assert kept == plain + (
        " In compute, memory the 'both' row keeps repack only's placement with the right-sized "
        "requests: replayed afresh one pod at a time, the right-sized requests needed more nodes."
    )


def test_a_kept_row_says_so_in_its_scheduler_cell() -> None:
    kept = {"strategy": "most-allocated-loadaware", "placement": "repack only's, right-sized"}
    assert msc._scheduler(kept) == (
        "most-allocated-loadaware (repack only's placement, right-sized requests)"
    )
    assert msc._scheduler({**kept, "placement": "fresh"}) == "most-allocated-loadaware"
