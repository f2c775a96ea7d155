"""Headroom per pod shape in the monthly review: the history's daily series (two months of a
shape whose fewest copies fall by one a day, and a second shape) through ``analyzer report
monthly``: report.json's figures are the truth written, and the page shows them, in Chromium,
with no impossible number (screenshot kept with ``HEADROOM_SHOT_MONTHLY=path``)."""

from __future__ import annotations

import base64
import json
import os
from datetime import date, timedelta
from pathlib import Path

import pandas as pd
import pytest
from cdp_client import Chromium, require_chromium
from click.testing import CliRunner
from monthly_history import PoolTruth, write_history

from analyzer.cli import main
from analyzer.history.headroom import write_headroom

START = date(2026, 9, 1)
DAYS = 61  # September and October


def _write(history: Path) -> None:
    """web: 100 copies on 1 September, one fewer each day (fewest = now − 3); batch: 7 always."""
    write_history(history, START, DAYS, [PoolTruth("a")])
    for t in range(DAYS):
        day = START + timedelta(days=t)
        at = pd.Timestamp(day, tz="UTC") + pd.Timedelta(hours=14)
        write_headroom(history, day, pd.DataFrame({
            "shape": ["web", "batch"], "source": ["declared", "declared"],
            "copies_now": [100 - t, 7], "copies_min": [97 - t, 7], "min_at": [at, at],
            "reason_now": ["Insufficient cpu (10)"] * 2, "reason_min": ["Insufficient cpu (10)"] * 2,
        }))  # fmt: skip


@pytest.fixture(scope="module")
def review(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("headroom-monthly")
    _write(base / "history")
    run = CliRunner().invoke(
        main, ["report", "monthly", str(base / "history"), "--out", str(base / "oct"),
               "--month", "2026-10"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    return base / "oct"


def test_report_json_holds_the_written_truth(review: Path) -> None:
    """October = days 30..60: web's last day (31 Oct, t = 60) had 40 copies, its fewest 37 on
    that day; September's fewest was 97 − 29 = 68; batch stays 7 in both."""
    payload = json.loads((review / "report.json").read_text())
    shapes = {s["shape"]: s for s in payload["headroom"]["shapes"]}
    assert shapes["web"] == {
        "shape": "web", "source": "declared", "days": 31, "copies_last_day": 40,
        "last_day": "2026-10-31", "copies_min": 37, "min_day": "2026-10-31",
        "reason_min": "Insufficient cpu (10)", "previous_min": 68,
    }  # fmt: skip
    assert (shapes["batch"]["copies_min"], shapes["batch"]["previous_min"]) == (7, 7)
    # the chart's series: both shapes on every day of the trend window's history
    assert len(payload["headroom"]["days"]) == 2 * DAYS


def test_the_page_shows_them_in_a_browser(review: Path, tmp_path: Path) -> None:
    require_chromium()
    browser = Chromium(tmp_path / "profile")
    read = """(() => {
      const t = document.querySelector('table[data-table=headroom_shapes]');
      return {sentence: document.querySelector('[data-headroom]').textContent,
              rows: [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent.trim())),
              chart: !!document.querySelector('#headroom-shapes img')};
    })()"""
    try:
        browser.open(review / "report.html")
        page = browser.evaluate(read)
        browser.evaluate("document.getElementById('headroom-shapes').scrollIntoView()")
        shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
    finally:
        browser.close()
    assert browser.console_errors() == []
    assert page["chart"]
    # shapes sorted by name: batch first, and the sentence speaks of the table's first row
    assert [r[0] for r in page["rows"]] == ["batch", "web"]
    assert page["rows"][1][2:7] == ["40", "2026-10-31", "37", "2026-10-31", "68"]
    assert page["sentence"].startswith("batch: 7 more copies fitted on 2026-10-31; the fewest")
    for row in page["rows"]:
        for cell in (row[2], row[4], row[6]):
            assert cell.isdigit(), row  # whole, non-negative counts
        # the month's fewest is at most the last day's fewest, itself at most that day's count
        assert int(row[4]) <= int(row[2]), row
    if os.environ.get("HEADROOM_SHOT_MONTHLY"):
        Path(os.environ["HEADROOM_SHOT_MONTHLY"]).write_bytes(shot)
