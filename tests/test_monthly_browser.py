"""The monthly review page in a real headless Chromium (issue 16): no console errors, every section
in order, charts decode, no impossible value on the page, and the page's sentences say what
report.json says. The first screen is saved under test-output/screenshots/."""

from __future__ import annotations

import base64
import json
import math
import os
import re
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cdp_client import Chromium, require_chromium
from click.testing import CliRunner
from monthly_history import PoolTruth, WorkloadTruth, const, line, write_history
from monthly_scenarios_case import MONTH, STRATEGIES, write_case

from analyzer.cli import main
from analyzer.report import format as fmt

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = Path(os.environ.get("ANALYZER_TEST_OUTPUT", REPO / "test-output")) / "screenshots"
BAD_WORDS = re.compile(r"\b(NaN|nan|undefined|Infinity|-?inf|None)\b")
SHARE = re.compile(r"(?<![+\-−±\d.,])(\d{1,3}(?:,\d{3})*(?:\.\d+)?)\s?%")
SECTIONS = ["last-month", "decisions", "scenarios", "rightsizing", "month-over-month", "n-plus-1", "forecasts",
            "headroom-shapes", "backtest", "workloads", "method"]  # fmt: skip


def _noisy(start: float, slope: float, weekly: float, sigma: float, seed: int) -> Any:
    noise = np.random.default_rng(seed).normal(0.0, sigma, 400)
    return lambda t: start + slope * t + weekly * math.sin(2 * math.pi * t / 7) + noise[t]


@pytest.fixture(scope="module")
def review(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three pools over August–October: one growing into its N+1 line, one idle, one N+1-broken;
    September is reviewed first (storing its forecast), then October, which back-tests it."""
    require_chromium()
    base = tmp_path_factory.mktemp("monthly")
    pools = [
        PoolTruth("general", nodes=20, requested_cpu=_noisy(90, 0.4, 3, 1.5, 1),
                  used_cpu_p95=_noisy(50, 0.2, 4, 2, 2), requested_memory=const(300.0),
                  used_memory_p95=const(250.0)),
        PoolTruth("batch", nodes=12, requested_cpu=_noisy(30, 0.0, 2, 1, 3),
                  used_cpu_p95=_noisy(12, 0.0, 1, 0.5, 4), requested_memory=const(120.0)),
        PoolTruth("gpu", nodes=3, requested_cpu=const(15.0), requested_memory=const(70.0)),
    ]  # fmt: skip
    workloads = [
        WorkloadTruth("api", "general", cpu_request=const(2.0), replicas=line(10, 0.05)),
        WorkloadTruth("worker", "batch", namespace="jobs", cpu_request=const(4.0), cpu_p95=const(0.4)),
    ]  # fmt: skip
    history = base / "out" / "history"
    write_history(history, date(2026, 8, 1), 92, pools, workloads)
    prices = base / "prices.yaml"
    prices.write_text("currency: EUR\npools:\n  general: {node_hour: 0.4}\n"
                      "default: {core_hour: 0.03, gib_hour: 0.004}\n")  # fmt: skip
    runner = CliRunner()
    for month in ("2026-09", "2026-10"):
        run = runner.invoke(main, ["report", "monthly", str(base / "out"), "--out",
                                   str(base / month), "--month", month, "--prices", str(prices)])  # fmt: skip
        assert run.exit_code == 0, run.output
    return base / "2026-10" / "report.html"


def test_monthly_page_in_chromium(review: Path, tmp_path: Path) -> None:
    payload = json.loads((review.parent / "report.json").read_text())
    browser = Chromium(tmp_path / "profile")
    try:
        browser.call("Emulation.setDeviceMetricsOverride", width=1280, height=1600,
                     deviceScaleFactor=1, mobile=False)  # fmt: skip
        browser.open(review)
        sections = browser.evaluate("[...document.querySelectorAll('section[id]')].map(s => s.id)")
        text = browser.evaluate("document.body.innerText")
        decisions = browser.evaluate(
            "Object.fromEntries([...document.querySelectorAll('[data-decision]')].map(d => "
            "[d.dataset.decision, d.querySelector('[data-sentence]').textContent]))"
        )
        headline = browser.evaluate("document.querySelector('[data-headline]').innerText")
        n1 = browser.evaluate("document.querySelector('[data-n1]').textContent")
        backtest = browser.evaluate("document.querySelector('[data-backtest]').textContent")
        images_ok = browser.evaluate(
            "[...document.querySelectorAll('img.chart')].map(i => i.complete && i.naturalWidth > 0)"
        )
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shot = browser.call("Page.captureScreenshot", format="png")
        (SCREENSHOTS / "monthly_review.png").write_bytes(base64.b64decode(shot["data"]))
        browser.call("Runtime.evaluate", expression="0")  # drain queued events
    finally:
        browser.close()
    assert browser.console_errors() == []
    assert sections == SECTIONS
    assert images_ok == [True, True, True]  # one chart per pool
    assert not BAD_WORDS.search(text)
    shares = [float(m.group(1).replace(",", "")) for m in SHARE.finditer(text)]
    assert shares and all(0 <= s <= 100 for s in shares)
    # The sentences are the JSON's values.
    assert decisions == {p["name"]: p["decision"]["sentence"] for p in payload["pools"]}
    c = payload["cluster"]
    for pair in ("allocatable", "requested", "used_p95", "idle", "slack"):
        assert f"{fmt.number(c[pair]['cpu_cores'])} cores and " \
               f"{fmt.number(c[pair]['memory_gib'])} GiB" in headline  # fmt: skip
    broken = [p["name"] for p in payload["pools"] if p["n_plus_1_ok"] is False]
    assert broken == ["gpu"] and n1.endswith(": gpu.")
    assert fmt.pct(payload["backtest"]["inside80_pct"]) in backtest
    assert fmt.count(payload["backtest"]["days_scored"]) + " pool-days" in backtest


@pytest.mark.parametrize("page", ["review", "scenario_review"])
def test_monthly_json_has_no_impossible_value(page: str, request: pytest.FixtureRequest) -> None:
    review = request.getfixturevalue(page)
    payload = json.loads((review.parent / "report.json").read_text())

    def walk(value: Any, path: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, f"{path}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")
        elif isinstance(value, float):
            assert math.isfinite(value), path
            if re.search(r"_pct(\.cpu|\.memory)?$", path) and "growth" not in path:
                assert 0 <= value <= 100 or "mape" in path, path
            if ".change." not in path and re.search(
                r"\.(allocatable|requested|used_p95|requested_peak)\.", path + "."
            ):
                assert value >= 0, path

    walk(payload)
    for pool in payload["pools"]:
        assert pool["nodes_mean"] > 0 and pool["days"] <= payload["month_days"]
        for key in ("cpu_cores", "memory_gib"):
            # idle never exceeds allocatable; slack never exceeds requested
            assert pool["idle"][key] <= pool["allocatable"][key]
            assert pool["slack"][key] <= pool["requested"][key]
        counts = ("nodes_peak", "nodes_removable", "violations", "pods_waited")
        for row in pool["scenarios"]:  # whole counts; a pool never needs more than it has
            assert all(isinstance(row[k], int) and row[k] >= 0 for k in counts)
        sim = {p["pool"]: p for p in payload["simulation"].get("pools", [])}
        rows = sim.get(pool["name"], {}).get("rows", [])
        for row, more in zip(pool["scenarios"], rows, strict=True):
            assert row["nodes_peak"] + row["nodes_removable"] == more["nodes_observed"]
            for key in ("core_hours", "gib_hours"):  # capacity: never negative, never more
                assert more[key] >= 0  # released than today held, released = today − this
                assert row[f"{key}_released"] <= rows[0][key]
                assert row[f"{key}_released"] == pytest.approx(rows[0][key] - more[key])
            for r in ("cpu", "memory"):  # idle and slack are shares of the same allocatable
                assert more["idle_pct"][r] + more["slack_pct"][r] <= 100 + 1e-9
    for w in payload["workloads"]:
        for key in ("current", "recommended"):
            assert all(v is None or v > 0 for v in w[key].values()), (w["owner_name"], key)


@pytest.mark.parametrize("page", ["review", "scenario_review"])
def test_monthly_page_fits_an_a4_page_when_printed(
    page: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    review = request.getfixturevalue(page)
    # A4 portrait at 10 mm margins is 190 mm ≈ 718 CSS px wide: in print media no table may be
    # wider than the page (the print CSS turns off the screen's horizontal scrolling).
    browser = Chromium(tmp_path / "profile")
    try:
        browser.call("Emulation.setDeviceMetricsOverride", width=718, height=1000,
                     deviceScaleFactor=1, mobile=False)  # fmt: skip
        browser.call("Emulation.setEmulatedMedia", media="print")
        browser.open(review)
        overflow = browser.evaluate(
            "[...document.querySelectorAll('table')].filter(t => t.scrollWidth > "
            "document.body.clientWidth + 1).map(t => t.dataset.table)"
        )
        nav_hidden = browser.evaluate("getComputedStyle(document.querySelector('nav')).display")
        browser.call("Runtime.evaluate", expression="0")
    finally:
        browser.close()
    assert overflow == []
    assert nav_hidden == "none"


@pytest.fixture(scope="module")
def scenario_review(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hand-built month of tests/monthly_scenarios_case.py, reviewed with its snapshot and a
    price of 0.2 EUR per node-hour for its one pool."""
    require_chromium()
    base = tmp_path_factory.mktemp("monthly17")
    out, snap = write_case(base)
    prices = base / "prices.yaml"
    prices.write_text("currency: EUR\npools:\n  pool: {node_hour: 0.2}\n")
    run = CliRunner().invoke(main, ["report", "monthly", str(out), "--out", str(base / "r"),
                                    "--month", MONTH, "--snapshot", str(snap),
                                    "--strategy", STRATEGIES[0], "--strategy", STRATEGIES[1],
                                    "--prices", str(prices)])  # fmt: skip
    assert run.exit_code == 0, run.output
    return base / "r" / "report.html"


def test_scenarios_and_rightsizing_in_chromium(scenario_review: Path, tmp_path: Path) -> None:
    payload = json.loads((scenario_review.parent / "report.json").read_text())
    browser = Chromium(tmp_path / "profile")
    try:
        browser.call("Emulation.setDeviceMetricsOverride", width=1280, height=1600,
                     deviceScaleFactor=1, mobile=False)  # fmt: skip
        browser.open(scenario_review)
        sections = browser.evaluate("[...document.querySelectorAll('section[id]')].map(s => s.id)")
        text = browser.evaluate("document.body.innerText")
        scenario_rows = browser.evaluate(
            "[...document.querySelectorAll('table[data-table=scenarios] tbody tr')].map(r => "
            "[...r.cells].map(c => c.textContent.trim()))"
        )
        simulated = browser.evaluate(
            "Object.fromEntries([...document.querySelectorAll('[data-simulated-decision]')].map("
            "d => [d.dataset.simulatedDecision, d.querySelector('[data-sentence]').textContent]))"
        )
        blocked = browser.evaluate(
            "[...document.querySelectorAll('table[data-table=blocked_nodes] tbody tr')].length"
        )
        headline = browser.evaluate(
            "document.querySelector('[data-scenarios-capacity]').textContent"
        )
        changes = browser.evaluate(
            "[...document.querySelectorAll('table[data-table=rightsizing_changes] tbody tr')]"
            ".length"
        )
        browser.evaluate("document.getElementById('scenarios').scrollIntoView()")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shot = browser.call("Page.captureScreenshot", format="png")
        (SCREENSHOTS / "monthly_scenarios.png").write_bytes(base64.b64decode(shot["data"]))
        browser.call("Runtime.evaluate", expression="0")
    finally:
        browser.close()
    assert browser.console_errors() == []
    assert sections == SECTIONS
    assert not BAD_WORDS.search(text)
    shares = [float(m.group(1).replace(",", "")) for m in SHARE.finditer(text)]
    assert shares and all(0 <= s <= 100 for s in shares)
    pool = payload["pools"][0]
    # the page's four rows are report.json's: nodes needed at peak and removable per scenario
    assert [(r[1], int(r[7]), int(r[8])) for r in scenario_rows] == [
        (x["name"], x["nodes_peak"], x["nodes_removable"]) for x in pool["scenarios"]]  # fmt: skip
    # capacity released and its money (0.2 EUR a node-hour, one node shape: money = node-hours
    # released × 0.2), as report.json has them
    assert [r[4:7] for r in scenario_rows] == [
        [f"{x['core_hours_released']:,.0f}", f"{x['gib_hours_released']:,.0f}",
         f"{x['cost_released']:,.2f}"] for x in pool["scenarios"]]  # fmt: skip
    both = pool["scenarios"][3]
    assert both["cost_released"] == pytest.approx(0.2 * 29 / 60)  # n0's 29 minutes freed
    # the headline is the whole cluster's: here the one pool's rows, each scenario named
    for x in pool["scenarios"][1:]:
        clause = (f"{x['name']} {x['core_hours_released']:,.0f} core-hours "
                  f"({x['core_hours_released_pct']:.1f} %) and {x['gib_hours_released']:,.0f} "
                  f"GiB-hours ({x['gib_hours_released_pct']:.1f} %), "
                  f"{x['cost_released']:,.2f} EUR")  # fmt: skip
        assert clause in headline, (clause, headline)
    for row in scenario_rows:  # idle and slack after are shares: 0..100 %, idle + slack ≤ 100
        idle_cpu, slack_cpu = (float(row[i].rstrip(" %")) for i in (11, 13))
        assert 0 <= idle_cpu <= 100 and 0 <= slack_cpu <= 100 and idle_cpu + slack_cpu <= 100.05
    assert simulated == {"pool": pool["simulated_decision"]["sentence"]}
    assert blocked == len(pool["blocked_nodes"]) == 2
    assert changes == payload["rightsizing"]["changed"] == 2
