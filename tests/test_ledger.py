"""The recommendation ledger: a review stores what it recommended, the next one scores it.

The histories are written with known truth (``monthly_history``): September's review recommends
(krr: CPU to the largest daily p95, memory to the month's max + 15 %), October's history then
applies one workload's recommendation on a known day, half of another's CPU change on another,
leaves a third alone, and releases the nodes the pool decision asked for on a known day. The
figures expected are computed here from those facts.
"""

from __future__ import annotations

import json
import math
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner
from conftest import DemoRun
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from monthly_history import PoolTruth, WorkloadTruth, const, write_history
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.history.ledger import read_ledger
from analyzer.monthly.adoption import score_ledger

GIB = 2**30
JULY_1 = date(2026, 7, 1)
OCT_1 = 92  # day number of 2026-10-01 counted from 2026-07-01
REPLICAS = 4.0


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["report", "monthly", *args])
    return result.exit_code, result.output


def _workload(name: str, cpu: Any = None, memory: Any = None) -> WorkloadTruth:
    return WorkloadTruth(
        name, "general", cpu_request=cpu or const(1.0), memory_request=memory or const(2.0),
        replicas=const(REPLICAS), cpu_p95=const(0.2), memory_max=const(0.5),
    )  # fmt: skip


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """September reviewed (its ledger stored), October written with known adoptions, reviewed."""
    base = tmp_path_factory.mktemp("ledger")
    root = base / "history"
    write_history(root, JULY_1, OCT_1, [PoolTruth("general", nodes=10)],
                  [_workload(f"app{i}") for i in range(3)])  # fmt: skip
    code, out = _run(str(root), "--out", str(base / "sep"), "--month", "2026-09")
    assert code == 0, out
    ledger = read_ledger(root, "2026-09")
    assert ledger is not None
    by_name = {w["owner_name"]: w for w in ledger["workloads"]}
    cpu_t = by_name["app0"]["cpu_recommended_millicores"] / 1000
    mem_t = by_name["app0"]["memory_recommended_bytes"] / GIB
    pool = ledger["pools"][0]
    applied, partly, released = OCT_1 + 9, OCT_1 + 4, OCT_1 + 14  # Oct 10, Oct 5, Oct 15
    workloads = [
        _workload("app0", cpu=lambda t: 1.0 if t < applied else cpu_t,
                  memory=lambda t: 2.0 if t < applied else mem_t),
        _workload("app1", cpu=lambda t: 1.0 if t < partly else 1.0 + 0.5 * (cpu_t - 1.0)),
        _workload("app2"),
    ]  # fmt: skip
    released_to = 10 - pool["nodes"] if pool["action"] == "release" else 10 + pool["nodes"]
    pools = [PoolTruth("general", nodes=10,
                       node_count=lambda t: 10 if t < released else released_to)]  # fmt: skip
    write_history(root, JULY_1, OCT_1 + 31, pools, workloads)
    code, out = _run(str(root), "--out", str(base / "oct"), "--month", "2026-10")
    assert code == 0, out
    payload = json.loads((base / "oct" / "report.json").read_text())
    return {"base": base, "root": root, "ledger": ledger, "payload": payload, "cpu_t": cpu_t,
            "mem_t": mem_t, "pool": pool, "out": out}  # fmt: skip


def test_the_review_stores_what_it_recommended(reviewed: dict[str, Any]) -> None:
    ledger = reviewed["ledger"]
    assert ledger["history_end"] == "2026-09-30" and ledger["recipe"] == "krr"
    # krr: CPU = the largest daily p95 (0.2 core), memory = max (0.5 GiB) + 15 %, rounded up
    # to whole MiB
    assert {w["owner_name"] for w in ledger["workloads"]} == {"app0", "app1", "app2"}
    for w in ledger["workloads"]:
        assert w["cpu_request_millicores"] == 1000 and w["cpu_recommended_millicores"] == 200
        assert w["memory_recommended_bytes"] == pytest.approx(0.575 * GIB, abs=2**20)
        assert w["replicas"] == REPLICAS
    pool = reviewed["pool"]
    assert pool["nodes_at_review"] == 10 and pool["action"] in ("release", "add")
    assert pool["nodes"] >= 1
    assert "ledger:" in reviewed["out"]


def test_adoption_found_on_its_day_with_the_freed_request_hours(reviewed: dict[str, Any]) -> None:
    led = reviewed["payload"]["ledger"]
    assert led["ledger_month"] == "2026-09" and led["days_observed"] == 31
    w = {x["owner_name"]: x for x in led["workloads"]}
    assert (w["app0"]["status"], w["app0"]["day"]) == ("applied", "2026-10-10")
    assert (w["app1"]["status"], w["app1"]["day"]) == ("partly", "2026-10-05")
    assert (w["app2"]["status"], w["app2"]["day"]) == ("not adopted", None)
    assert w["app1"]["resources"]["cpu"]["moved_percent"] == pytest.approx(50.0)
    # app0: (1 − 0.2) cores × 4 replicas × 24 h × 22 days (Oct 10–31), realised = predicted
    freed = (1.0 - reviewed["cpu_t"]) * REPLICAS * 24 * 22
    assert w["app0"]["realised"]["core-hours"] == pytest.approx(freed)
    assert w["app0"]["predicted"]["core-hours"] == pytest.approx(freed)
    assert w["app0"]["error_percent"]["core-hours"] == pytest.approx(0.0, abs=1e-9)
    gib = (2.0 - reviewed["mem_t"]) * REPLICAS * 24 * 22
    assert w["app0"]["realised"]["GiB-hours"] == pytest.approx(gib)
    # app1: half the CPU change from Oct 5 (27 days): realised is half the prediction
    half = 0.5 * (1.0 - reviewed["cpu_t"]) * REPLICAS * 24 * 27
    assert w["app1"]["realised"]["core-hours"] == pytest.approx(half)
    assert w["app1"]["error_percent"]["core-hours"] == pytest.approx(-50.0)
    assert (
        w["app2"]["realised"]["core-hours"] == 0
        and w["app2"]["error_percent"]["core-hours"] is None
    )
    t = led["totals"]
    assert t["workloads"] == {"applied": 1, "partly": 1, "not adopted": 1, "not seen": 0}
    assert t["request_hours"]["core-hours"]["realised"] == pytest.approx(freed + half)


def test_the_pool_decision_is_found_applied_on_its_day(reviewed: dict[str, Any]) -> None:
    pool = reviewed["payload"]["ledger"]["pools"][0]
    nodes = reviewed["pool"]["nodes"]
    assert (pool["status"], pool["day"]) == ("applied", "2026-10-15")
    # nodes × 24 h for the 17 days from Oct 15 to Oct 31, exactly as predicted
    assert pool["node_hours"]["realised"] == pytest.approx(nodes * 24 * 17)
    assert pool["node_hours"]["predicted"] == pytest.approx(nodes * 24 * 17)


def test_the_page_opens_with_last_months_decisions(reviewed: dict[str, Any]) -> None:
    html = (reviewed["base"] / "oct" / "report.html").read_text()
    first = html.index("<section")
    assert html.index('id="last-month"') == html.index("<section", first) + len("<section ")
    section = html[html.index('id="last-month"') : html.index('id="decisions"')]
    assert "1 applied, 1 partly, 1 not adopted" in section
    assert "applied on 2026-10-15" in section
    rows = pd.read_csv(reviewed["base"] / "oct" / "ledger.csv")
    # the sentence's counts are the table's
    assert (rows["status"] == "applied").sum() == 1 and (rows["status"] == "partly").sum() == 1
    assert "nan" not in section.lower()


def test_a_month_without_a_ledger_says_how_to_get_one(reviewed: dict[str, Any]) -> None:
    html = (reviewed["base"] / "sep" / "report.html").read_text()
    assert "No recommendations were stored for 2026-08" in html


def _frames(q: list[float], nodes: list[float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    days = [date(2026, 10, 1 + i) for i in range(len(q))]
    rows = pd.DataFrame({
        "day": [pd.Timestamp(d, tz="UTC") for d in days], "namespace": "ns",
        "owner_kind": "Deployment", "owner_name": "w", "replicas_mean": 2.0,
        "cpu_request_millicores": q, "memory_request_bytes": float(GIB),
    })  # fmt: skip
    daily = pd.DataFrame({"day": days, "pool": "p", "nodes_mean": nodes})
    return rows, daily


def _ledger(t: float, action: str = "release", n: int = 2) -> dict[str, Any]:
    return {
        "month": "2026-09", "history_end": "2026-09-30",
        "workloads": [{"namespace": "ns", "owner_kind": "Deployment", "owner_name": "w",
                       "pool": "p", "replicas": 2.0, "cpu_request_millicores": 1000.0,
                       "cpu_recommended_millicores": t, "memory_request_bytes": float(GIB),
                       "memory_recommended_bytes": None}],
        "pools": [{"pool": "p", "action": action, "nodes": n, "by_date": None,
                   "nodes_at_review": 10.0}],
    }  # fmt: skip


def test_a_change_in_the_afternoon_is_found_on_its_day_or_the_next() -> None:
    # changed to 500 m at 18:00 on Oct 3: that day's time-weighted mean is 875 m (¼ of the way)
    rows, daily = _frames([1000, 1000, 875, 500, 500, 500], [10] * 6)
    w = score_ledger(_ledger(500.0), rows, daily)["workloads"][0]
    assert w["status"] == "applied" and w["day"] in ("2026-10-03", "2026-10-04")
    # request-hours freed: 0.5 core × 2 replicas × (6 h + 3 days × 24 h)
    assert w["realised"]["core-hours"] == pytest.approx(0.5 * 2 * (6 + 72))


def test_a_move_the_other_way_or_a_vanished_workload_is_not_an_adoption() -> None:
    rows, daily = _frames([1000, 1200, 1200], [10, 11, 11])
    result = score_ledger(_ledger(500.0), rows, daily)
    assert result["workloads"][0]["status"] == "not adopted"
    assert result["workloads"][0]["resources"]["cpu"]["moved_percent"] == pytest.approx(-40.0)
    assert result["pools"][0]["status"] == "not adopted"  # it grew instead of releasing 2
    gone = score_ledger(_ledger(500.0), rows.iloc[0:0], daily)["workloads"][0]
    assert gone["status"] == "not seen" and gone["day"] is None


def test_a_partial_release_and_an_add() -> None:
    rows, daily = _frames([1000] * 4, [10, 10, 9, 9])
    assert score_ledger(_ledger(500.0, "release", 3), rows, daily)["pools"][0]["status"] == "partly"
    rows, daily = _frames([1000] * 4, [10, 12, 12, 12])
    pool = score_ledger(_ledger(500.0, "add", 2), rows, daily)["pools"][0]
    assert (pool["status"], pool["day"]) == ("applied", "2026-10-02")
    assert pool["node_hours"]["realised"] == pytest.approx(2 * 24 * 3)


@pytest.mark.parametrize(
    "text, fix",
    [
        ("{not json", "delete that file"),
        ('{"schema_version": 1, "month": "2026-09"}', "history_end"),
        ('{"schema_version": 1, "month": "2026-09", "history_end": "2026-09-30", '
         '"workloads": [{"namespace": "a"}]}', "workloads[0].owner_kind"),
        ('{"schema_version": 1, "month": "2026-09", "history_end": "2026-09-30", "pools": '
         '[{"pool": "p", "action": "drop", "nodes": 1, "nodes_at_review": 3}]}', "action"),
        ('{"schema_version": 1, "month": "2026-09", "history_end": "2026-09-30", "workloads": '
         '[{"namespace": "a", "owner_kind": "b", "owner_name": "c", "pool": "p", "replicas": '
         '-1}]}', "replicas"),
        ('{"schema_version": 9, "month": "2026-09", "history_end": "2026-09-30"}', "upgrade"),
    ],
)  # fmt: skip
def test_a_damaged_ledger_names_the_file_and_the_fix(tmp_path: Path, text: str, fix: str) -> None:
    (tmp_path / "ledger").mkdir()
    (tmp_path / "ledger" / "2026-09.json").write_text(text)
    with pytest.raises(InputError) as caught:
        read_ledger(tmp_path, "2026-09")
    assert "2026-09.json" in str(caught.value) and fix in str(caught.value)


def test_a_damaged_ledger_stops_the_review_in_one_line(
    reviewed: dict[str, Any], tmp_path: Path
) -> None:
    import shutil

    root = tmp_path / "history"
    shutil.copytree(reviewed["root"], root)
    (root / "ledger" / "2026-09.json").write_text("{not json")
    code, out = _run(str(root), "--out", str(tmp_path / "r"), "--month", "2026-10")
    assert code == documented_exit("monthly-ledger-damaged"), out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "2026-09.json" in lines[0] and "delete that file" in lines[0]
    assert not (tmp_path / "r").exists()


def test_the_demo_scores_the_month_before_and_says_what_it_did(default_demo: DemoRun) -> None:
    """The demo reviews the month before its own review, then its teams adopt a known part of
    that advice (every third recommended workload in full on day 7, every tenth other one half
    of its CPU change on day 14): the page must find exactly those, on those days."""
    payload = json.loads((default_demo.out / "monthly" / "report.json").read_text())
    led = payload["ledger"]
    assert led["ledger_month"] == "2026-09" and payload["month"] == "2026-10"
    found = {w["status"] for w in led["workloads"]}
    assert {"applied", "partly", "not adopted"} <= found
    days = {w["status"]: set() for w in led["workloads"]}
    for w in led["workloads"]:
        days[w["status"]].add(w["day"])
    # the change is at the day's start, so the day found is the day itself
    assert days["applied"] == {"2026-10-07"} and days["partly"] == {"2026-10-14"}
    adopted = sum(w["status"] in ("applied", "partly") for w in led["workloads"])
    note = next(n for n in payload["notes"] if n.startswith("Demo: the review of 2026-09"))
    assert f"adopted {adopted} of its {len(led['workloads'])} request recommendations" in note
    html = (default_demo.out / "monthly" / "report.html").read_text()
    c = led["totals"]["workloads"]
    assert f"{c['applied']} applied, {c['partly']} partly, {c['not adopted']} not adopted" in html
    for w in led["workloads"]:
        for side in ("predicted", "realised"):
            assert all(math.isfinite(v) for v in w[side].values())


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=12), kids, max_size=4)
    ),
    max_leaves=20,
)
_LEDGER_KEYS = ("schema_version", "month", "history_end", "workloads", "pools", "scheduler")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.dictionaries(st.sampled_from(_LEDGER_KEYS), _JSON, max_size=6))
def test_any_ledger_file_is_read_or_refused_in_one_line(tmp_path: Path, values: dict) -> None:
    """Whatever a ledger file holds, the reader returns it checked or ends in one InputError line
    naming the file: never another exception (the next review would crash on it)."""
    (tmp_path / "ledger").mkdir(exist_ok=True)
    path = tmp_path / "ledger" / "2026-09.json"
    path.write_text(json.dumps(values, allow_nan=True))
    try:
        data = read_ledger(tmp_path, "2026-09")
    except InputError as exc:
        assert "2026-09.json" in str(exc) and "\n" not in str(exc)
        return
    assert data is not None and data["history_end"] and isinstance(data.get("workloads", []), list)
