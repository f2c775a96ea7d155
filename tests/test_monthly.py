"""The monthly review (issue 16) on synthetic histories whose truth is known (tests/monthly_history.py).

Every expected value below is computed by hand from the truth the test writes, as its comment says.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from monthly_history import PoolTruth, WorkloadTruth, const, line, write_history
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.core.prices import load_prices
from analyzer.history.forecasts import SCHEMA_VERSION, read_forecast, write_forecast
from analyzer.monthly.months import Month
from analyzer.monthly.review import ReviewSettings, build_review

SEP = Month(2026, 9)


def _pool(payload: dict, name: str) -> dict:
    return next(p for p in payload["pools"] if p["name"] == name)


def _review(root: Path, **kw: object) -> dict:
    return build_review(root, ReviewSettings(**kw)).payload  # type: ignore[arg-type]


def test_idle_and_slack_by_hand(tmp_path: Path) -> None:
    # 10 nodes × 8 cores / 32 GiB = 80 cores, 320 GiB. CPU: requested 50, used 30 → idle
    # 80 − max(50, 30) = 30, slack 50 − 30 = 20. Memory: requested 200, used 250 (above the
    # requests) → idle 320 − 250 = 70, slack 200 − 250 = −50.
    write_history(tmp_path, date(2026, 9, 1), 30, [PoolTruth("a", requested_cpu=const(50.0),
        used_cpu_p95=const(30.0), requested_memory=const(200.0), used_memory_p95=const(250.0))])  # fmt: skip
    a = _pool(_review(tmp_path, month=SEP), "a")
    assert a["allocatable"] == {"cpu_cores": 80.0, "memory_gib": 320.0}
    assert a["idle"] == {"cpu_cores": 30.0, "memory_gib": 70.0}
    assert a["slack"] == {"cpu_cores": 20.0, "memory_gib": -50.0}
    assert a["change"]["idle"] is None  # no August in the history


def test_used_is_the_p95_of_the_daily_p95(tmp_path: Path) -> None:
    # Daily used p95 = 1, 2, …, 30 cores over September. koordlet's nearest rank: index
    # int(30 × 0.95) − 1 = 27 of the ascending values → 28 cores (the mean would be 15.5).
    write_history(tmp_path, date(2026, 9, 1), 30, [PoolTruth("a", used_cpu_p95=line(1.0, 1.0))])
    assert _pool(_review(tmp_path, month=SEP), "a")["used_p95"]["cpu_cores"] == 28.0


def test_change_against_the_previous_month(tmp_path: Path) -> None:
    # requested = 40 + 0.1·t from 1 August (t = 0): August is t 0..30 (mean t 15 → 41.5),
    # September t 31..60 (mean t 45.5 → 44.55): +3.05 cores; allocatable unchanged.
    write_history(tmp_path, date(2026, 8, 1), 61, [PoolTruth("a", requested_cpu=line(40.0, 0.1))])
    a = _pool(_review(tmp_path, month=SEP), "a")
    assert a["requested"]["cpu_cores"] == pytest.approx(44.55)
    assert a["previous_month"]["requested"]["cpu_cores"] == pytest.approx(41.5)
    assert a["change"]["requested"]["cpu_cores"] == pytest.approx(3.05)
    assert a["change"]["allocatable"] == {"cpu_cores": 0.0, "memory_gib": 0.0}


def test_n_plus_1_on_a_hand_built_pool(tmp_path: Path) -> None:
    # 4 nodes × 8 cores = 32 cores, largest node 8: the requests may peak at 24. Pool "tight"
    # peaks at 25 on 11 September (t = 10): margin 32 − 8 − 25 = −1 core → broken, and one node
    # of 8 cores covers the shortfall. Pool "exact" peaks at 24: margin 0 → N+1 holds. Memory:
    # 4 × 32 GiB − 32 − 50 requested = 46 GiB of margin in both.
    def peak(top: float) -> object:
        return lambda t: top if t == 10 else 20.0

    write_history(tmp_path, date(2026, 9, 1), 30, [
        PoolTruth("tight", nodes=4, requested_cpu=const(20.0), requested_cpu_peak=peak(25.0),
                  requested_memory=const(50.0)),
        PoolTruth("exact", nodes=4, requested_cpu=const(20.0), requested_cpu_peak=peak(24.0),
                  requested_memory=const(50.0)),
    ])  # fmt: skip
    payload = _review(tmp_path, month=SEP)
    tight, exact = _pool(payload, "tight"), _pool(payload, "exact")
    assert tight["n_plus_1_ok"] is False
    assert tight["n_plus_1"]["smallest_margin"]["cpu_cores"] == -1.0
    assert tight["n_plus_1"]["worst_day"]["cpu_cores"] == "2026-09-11"
    assert tight["decision"]["action"] == "add" and tight["decision"]["nodes"] == 1
    assert tight["decision"]["rule"] == "n_plus_1"
    assert exact["n_plus_1_ok"] is True
    assert exact["n_plus_1"]["smallest_margin"] == {"cpu_cores": 0.0, "memory_gib": 46.0}


def test_exhaustion_date_of_a_known_line(tmp_path: Path) -> None:
    # requested peak = 40.25 + 0.5·t cores from 1 August (61 days, to 30 September). The line
    # is allocatable 80 − the largest node 8 = 72 cores: 40.25 + 0.5·t ≥ 72 first at t = 64
    # (72.25; t = 63 gives 71.75) → 1 August + 64 days = 4 October. The history is an exact line,
    # so the band has no width and the earliest plausible date is the same day. Nodes to add:
    # at the horizon's end (t = 60 + 180) the requests are 160.25; 72 + 8k ≥ 160.25 → k = 12.
    write_history(tmp_path, date(2026, 8, 1), 61,
                  [PoolTruth("a", requested_cpu=line(40.25, 0.5), used_cpu_p95=const(10.0))])  # fmt: skip
    a = _pool(_review(tmp_path, month=SEP), "a")
    cpu = next(e for e in a["forecast"]["exhaustion"] if e["resource"] == "requested_cpu_cores")
    assert cpu["expected_date"] == "2026-10-04"
    assert cpu["earliest_date"] == "2026-10-04"
    assert a["decision"] | {} == a["decision"]
    assert (a["decision"]["action"], a["decision"]["nodes"], a["decision"]["by_date"]) == (
        "add", 12, "2026-10-04",
    )  # fmt: skip
    assert "by 2026-10-04 (4 days after the history ends)" in a["decision"]["sentence"]
    # The series starts the day after the reviewed month and spans the horizon.
    series = a["forecast"]["series"]
    assert series[0]["date"] == "2026-10-01" and len(series) == 180
    assert series[0]["requested_cpu_cores"] == pytest.approx(40.25 + 0.5 * 61)


def test_release_when_every_band_stays_far_below(tmp_path: Path) -> None:
    # 10 nodes of 8 cores / 32 GiB, flat requests 20 cores / 50 GiB, usage 10 cores / 40 GiB.
    # With k fewer nodes: requests need 20 ≤ 80 − 8k − 8 (k ≤ 6.5) and 50 ≤ 320 − 32k − 32
    # (k ≤ 7.4); usage 10 ≤ 0.65·(80 − 8k) (k ≤ 8.07) and 40 ≤ 0.95·(320 − 32k) (k ≤ 8.7);
    # at least two nodes stay (k ≤ 8): release 6.
    write_history(tmp_path, date(2026, 8, 1), 61, [PoolTruth("a", requested_cpu=const(20.0),
        requested_memory=const(50.0), used_cpu_p95=const(10.0), used_memory_p95=const(40.0))])  # fmt: skip
    d = _pool(_review(tmp_path, month=SEP), "a")["decision"]
    assert (d["action"], d["nodes"], d["rule"]) == ("release", 6, "release")


def test_no_forecast_under_21_days(tmp_path: Path) -> None:
    write_history(tmp_path, date(2026, 9, 16), 15, [PoolTruth("a")])
    a = _pool(_review(tmp_path, month=SEP), "a")
    assert a["forecast"]["method"] == "none" and a["forecast"]["series"] == []
    assert "15 days with data" in a["forecast"]["exhaustion"][0]["reason"]
    assert a["decision"]["rule"] == "no_forecast"


def test_workload_requests_usage_and_growth(tmp_path: Path) -> None:
    # 1 core and 2 GiB per pod; 2 replicas in August, 3 in September; per-pod CPU p95 0.5 and
    # memory max 1 GiB. September: requested 3 cores / 6 GiB, used 1.5 cores / 3 GiB, slack
    # 1.5 cores / 3 GiB; growth +1 core on August's 2 (+50 %), over one month.
    write_history(tmp_path, date(2026, 8, 1), 61, [PoolTruth("a")],
                  [WorkloadTruth("web", "a", replicas=lambda t: 2.0 if t < 31 else 3.0)])  # fmt: skip
    (w,) = _review(tmp_path, month=SEP)["workloads"]
    assert w["requested"] == {"cpu_cores": 3.0, "memory_gib": 6.0}
    assert w["usage_per_pod"]["cpu_p95_cores"] == 0.5
    assert w["slack"] == {"cpu_cores": 1.5, "memory_gib": 3.0}
    assert w["growth"]["cpu_cores_vs_previous_month"] == 1.0
    assert w["growth"]["cpu_pct_vs_previous_month"] == 50.0
    assert w["growth"]["cpu_cores_per_month"] == 1.0 and w["growth"]["since_month"] == "2026-08"


def test_prices_put_idle_and_slack_in_money(tmp_path: Path) -> None:
    # Node price 0.5/h: half to 8 cores → 0.03125 per core-hour, half to 32 GiB → 0.0078125 per
    # GiB-hour; 30 days = 720 h. Idle 30 cores → 675, 70 GiB → 393.75. Slack 20 cores → 450;
    # slack memory −50 GiB counts as 0.
    write_history(tmp_path, date(2026, 9, 1), 30, [PoolTruth("a", requested_cpu=const(50.0),
        used_cpu_p95=const(30.0), requested_memory=const(200.0), used_memory_p95=const(250.0))])  # fmt: skip
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: EUR\npools:\n  a: {node_hour: 0.5}\n")
    money = _pool(_review(tmp_path, month=SEP, prices=load_prices(prices)), "a")["money"]
    assert money["idle"] == {"cpu": 675.0, "memory": 393.75, "total": 1068.75}
    assert money["slack"] == {"cpu": 450.0, "memory": 0.0, "total": 450.0}


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("pools:\n  a: {node_hour: 1}\n", "currency"),
        ("currency: EUR\npools:\n  a: {node_hour: 1, core_hour: 1}\n", "pools.a"),
        ("currency: EUR\npools:\n  a: {core_hour: -1, gib_hour: 1}\n", "pools.a.core_hour"),
        ("currency: EUR\npools:\n  a: {core_hour: 1}\n", "pools.a.gib_hour"),
        ("currency: EUR\npools:\n  a: {node_hours: 1}\n", "pools.a.node_hours"),
        ("currency: EUR\npools:\n  a: {node_hour: cheap}\n", "pools.a.node_hour"),
    ],
)
def test_bad_prices_are_one_line_naming_the_field(tmp_path: Path, text: str, names: str) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        load_prices(path)
    assert names in str(err.value) and "\n" not in str(err.value)


def test_backtest_of_a_hand_built_forecast(tmp_path: Path) -> None:
    # October: requested peak 40 cores every day. The stored September forecast says 41 (error
    # +1 core, 2.5 %); its 80 % interval is [40.5, 42] on the first 10 days (40 outside) and
    # [39, 42] on the other 21 (inside): 21 of 31 = 67.7 %; its 95 % interval [30, 50] always.
    write_history(tmp_path, date(2026, 8, 1), 92, [PoolTruth("a", requested_cpu=const(40.0))])
    days = [date(2026, 10, 1) + timedelta(days=i) for i in range(31)]
    series = [
        {
            "date": d.isoformat(),
            "mean": 41.0,
            "lo80": 40.5 if i < 10 else 39.0,
            "hi80": 42.0,
            "lo95": 30.0,
            "hi95": 50.0,
        }
        for i, d in enumerate(days)
    ]
    write_forecast(tmp_path, "2026-09", {"history_end": "2026-09-30", "pools": {
        "a": {"requested_cpu_cores": {"method": "linear_trend", "series": series}}}})  # fmt: skip
    backtest = _review(tmp_path, month=Month(2026, 10))["backtest"]
    (row,) = backtest["rows"]
    assert (row["pool"], row["series"], row["days"]) == ("a", "requested_cpu_cores", 31)
    assert row["mean_error"] == 1.0 and row["mape_pct"] == pytest.approx(2.5)
    assert row["inside80_pct"] == pytest.approx(100 * 21 / 31)
    assert row["inside95_pct"] == 100.0
    assert backtest["forecast_history_end"] == "2026-09-30"


def test_a_review_stores_its_forecast_and_the_next_scores_it(tmp_path: Path) -> None:
    history = tmp_path / "out" / "history"
    write_history(history, date(2026, 8, 1), 92,
                  [PoolTruth("a", requested_cpu=line(30.0, 0.2, weekly=2.0))])  # fmt: skip
    runner = CliRunner()
    first = runner.invoke(main, ["report", "monthly", str(tmp_path / "out"), "--out",
                                 str(tmp_path / "sep"), "--month", "2026-09"])  # fmt: skip
    assert first.exit_code == 0, first.output
    assert "backtest" not in json.loads((tmp_path / "sep" / "report.json").read_text())
    assert "No previous forecast" in (tmp_path / "sep" / "report.html").read_text()
    stored = read_forecast(history, "2026-09")
    assert stored is not None and stored["schema_version"] == SCHEMA_VERSION
    assert stored["history_end"] == "2026-09-30"
    # HISTORY_DIR may be OUT/history too; October (the last complete month) is the default.
    second = runner.invoke(
        main, ["report", "monthly", str(history), "--out", str(tmp_path / "oct")]
    )
    assert second.exit_code == 0, second.output
    payload = json.loads((tmp_path / "oct" / "report.json").read_text())
    assert payload["month"] == "2026-10"
    # Four series stored for one pool, each scored on October's 31 days.
    assert payload["backtest"]["days_scored"] == 4 * 31
    assert 0 <= payload["backtest"]["inside80_pct"] <= payload["backtest"]["inside95_pct"] <= 100


def test_report_json_has_the_issue_contract(tmp_path: Path) -> None:
    write_history(tmp_path / "h", date(2026, 8, 1), 61, [PoolTruth("a"), PoolTruth("b")],
                  [WorkloadTruth("web", "a")])  # fmt: skip
    run = CliRunner().invoke(main, ["report", "monthly", str(tmp_path / "h"), "--out",
                                    str(tmp_path / "r")])  # fmt: skip
    assert run.exit_code == 0, run.output
    payload = json.loads((tmp_path / "r" / "report.json").read_text())
    pair = {"cpu_cores", "memory_gib"}
    for pool in payload["pools"]:
        for key in ("allocatable", "requested", "used_p95", "idle", "slack"):
            assert set(pool[key]) == pair
        assert isinstance(pool["n_plus_1_ok"], bool)
        f = pool["forecast"]
        assert {"method", "horizon_days", "series", "exhaustion"} <= set(f)
        assert {"date", "requested_cpu_cores", "lo80", "hi80", "lo95", "hi95"} == set(
            f["series"][0]
        )
        assert {e["resource"] for e in f["exhaustion"]} == {
            "requested_cpu_cores", "requested_memory_gib", "used_cpu_cores", "used_memory_gib"}  # fmt: skip
        for e in f["exhaustion"]:
            assert set(e) == {"resource", "basis", "expected_date", "earliest_date", "reason"}
        for p in f["series"]:
            assert p["lo95"] <= p["lo80"] <= p["requested_cpu_cores"] <= p["hi80"] <= p["hi95"]
    assert payload["workloads"][0]["owner_name"] == "web"
    # issue 17: without --snapshot the scenario lists are empty; workloads carry their requests
    assert payload["pools"][0]["scenarios"] == [] and payload["pools"][0]["blocked_nodes"] == []
    assert set(payload["workloads"][0]["current"]) == pair
    assert set(payload["workloads"][0]["recommended"]) == pair
    names = {p.name for p in (tmp_path / "r").iterdir()}
    assert {"report.html", "report.json", "month_over_month_cpu.csv", "workloads.csv",
            "forecast.csv", "exhaustion.csv", "n_plus_1.csv"} <= names  # fmt: skip


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["report", "monthly", *args])
    return result.exit_code, result.output


def test_no_history_is_one_line_and_exit_2(tmp_path: Path) -> None:
    code, out = _run(str(tmp_path / "nothing"), "--out", str(tmp_path / "r"))
    assert code == documented_exit("monthly-no-history")
    assert "HISTORY_DIR" in out and "does not exist" in out
    (tmp_path / "empty").mkdir()
    code, out = _run(str(tmp_path / "empty"), "--out", str(tmp_path / "r"))
    assert code == 2 and "holds no pool history" in out


def test_bad_month_is_one_line_and_exit_2(tmp_path: Path) -> None:
    write_history(tmp_path / "h", date(2026, 9, 1), 30, [PoolTruth("a")])
    code, out = _run(str(tmp_path / "h"), "--out", str(tmp_path / "r"), "--month", "2026-9x")
    assert code == documented_exit("monthly-bad-month") and "--month" in out and "YYYY-MM" in out
    code, out = _run(str(tmp_path / "h"), "--out", str(tmp_path / "r"), "--month", "2025-01")
    assert code == documented_exit("monthly-month-without-history")
    assert "2025-01 has no pool history" in out and "2026-09-01 to 2026-09-30" in out


def test_no_complete_month_says_which_month_to_pass(tmp_path: Path) -> None:
    write_history(tmp_path / "h", date(2026, 9, 1), 15, [PoolTruth("a")])
    code, out = _run(str(tmp_path / "h"), "--out", str(tmp_path / "r"))
    assert code == documented_exit("monthly-no-complete-month")
    assert "no complete month" in out and "--month 2026-09" in out


def test_bad_prices_file_exits_2(tmp_path: Path) -> None:
    write_history(tmp_path / "h", date(2026, 9, 1), 30, [PoolTruth("a")])
    (tmp_path / "p.yaml").write_text("currency: EUR\npools:\n  a: {core_hour: 1}\n")
    code, out = _run(str(tmp_path / "h"), "--out", str(tmp_path / "r"),
                     "--prices", str(tmp_path / "p.yaml"))  # fmt: skip
    assert code == documented_exit("monthly-prices-invalid") and "pools.a.gib_hour" in out
    assert not (tmp_path / "r").exists()


def test_horizon_outside_3_to_6_months_is_refused(tmp_path: Path) -> None:
    write_history(tmp_path / "h", date(2026, 9, 1), 30, [PoolTruth("a")])
    code, out = _run(str(tmp_path / "h"), "--out", str(tmp_path / "r"), "--horizon-days", "30")
    assert code == 2 and "--horizon-days" in out


def test_a_newer_stored_forecast_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = write_forecast(tmp_path, "2026-09", {"pools": {}})
    path.write_text(json.dumps({"schema_version": SCHEMA_VERSION + 1}))
    with pytest.raises(InputError, match="upgrade analyzer"):
        read_forecast(tmp_path, "2026-09")


def test_a_line_already_crossed_means_add_now(tmp_path: Path) -> None:
    # Used CPU p95 60 cores on 80 allocatable: over 65 % × 80 = 52 already (N+1 holds: 40
    # requested ≤ 72). Nodes to add: (80 + 8k) × 0.65 ≥ 60 → k ≥ 1.54 → 2, by no future date.
    write_history(tmp_path, date(2026, 8, 1), 61, [PoolTruth("a", used_cpu_p95=const(60.0))])
    a = _pool(_review(tmp_path, month=SEP), "a")
    used = next(e for e in a["forecast"]["exhaustion"] if e["resource"] == "used_cpu_cores")
    assert used["reason"] == "already exhausted on 2026-09-30"
    d = a["decision"]
    assert (d["action"], d["nodes"], d["by_date"], d["rule"]) == ("add", 2, None, "exhaustion")
    assert " now: " in d["sentence"]


def test_review_of_a_history_the_nightly_run_wrote(tmp_path: Path) -> None:
    """The nightly report's own history (tests/test_history_capacity.py's hand-built day, 1
    November 2026) is read as it is: pool a offers a-small (2 cores) + a-big (8 cores) = 10 cores
    and peaks at 4.2 requested cores, so losing a-big leaves 10 − 8 − 4.2 = −2.2 cores: N+1 is
    broken and one node of a-big's size covers it. One day is too few to forecast."""
    from test_history_capacity import _cluster

    from analyzer.nightly.run import NightlySettings, run_nightly
    from analyzer.report.nightly_report import write_nightly_report

    write_nightly_report(run_nightly(_cluster(), NightlySettings()), tmp_path / "nightly")
    code, out = _run(str(tmp_path / "nightly"), "--out", str(tmp_path / "r"), "--month", "2026-11")
    assert code == 0, out
    payload = json.loads((tmp_path / "r" / "report.json").read_text())
    assert [p["name"] for p in payload["pools"]] == ["a", "b"]
    a = _pool(payload, "a")
    assert a["allocatable"]["cpu_cores"] == 10.0 and a["requested_peak"]["cpu_cores"] == 4.2
    assert a["n_plus_1"]["largest_node"] == "a-big"
    assert a["n_plus_1"]["smallest_margin"]["cpu_cores"] == pytest.approx(-2.2)
    assert (a["decision"]["action"], a["decision"]["nodes"]) == ("add", 1)
    assert a["forecast"]["method"] == "none"
    assert payload["notes"] == ["2026-11 has history for 1 of its 30 days; the month's figures "
                                "are over those days."]  # fmt: skip
