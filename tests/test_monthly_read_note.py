"""The monthly page states what it read: the history's days, and the step their usage was read at.

``report monthly`` reads only the history; a long range is the history's days, each recorded with
the ``step_seconds`` its usage was read from Prometheus at (history backfill: 5m by default; a
nightly run: 1m). The history below (tests/monthly_history.py) holds September 2026; its
summaries say September 1-10 were backfilled at 5m, 11-28 read nightly at 1m, and two days do
not say (one has no summary, one predates the field).
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

from click.testing import CliRunner
from monthly_history import PoolTruth, write_history

from analyzer.cli import main

START = date(2026, 9, 1)
DAYS = 30  # 2026-09-01 .. 2026-09-30: the review's month, the only one of its trend window


def _history(root: Path) -> None:
    write_history(root, START, DAYS, [PoolTruth("a")])
    summary = root / "summary"
    summary.mkdir(parents=True, exist_ok=True)
    for t in range(DAYS):
        day = START + timedelta(days=t)
        if day == date(2026, 9, 29):
            continue  # no summary at all
        record: dict[str, object] = {"day": day.isoformat()}
        if day.day <= 10:
            record["step_seconds"] = 300
        elif day.day <= 28:
            record["step_seconds"] = 60
        # 2026-09-30: a summary written before step_seconds existed
        (summary / f"{day.isoformat()}.json").write_text(json.dumps(record))


def test_the_page_and_json_say_what_was_read_at_which_step(tmp_path: Path) -> None:
    _history(tmp_path / "h")
    run = CliRunner().invoke(
        main, ["report", "monthly", str(tmp_path / "h"), "--out", str(tmp_path / "r")]
    )
    assert run.exit_code == 0, run.output
    payload = json.loads((tmp_path / "r" / "report.json").read_text())
    assert payload["month"] == "2026-09"
    read = payload["read"]
    assert read["days"] == 30 and read["source"] == "history"
    assert (read["first_day"], read["last_day"]) == ("2026-09-01", "2026-09-30")
    assert read["steps"] == [{"step_seconds": 60, "days": 18}, {"step_seconds": 300, "days": 10}]
    assert read["days_step_unknown"] == 2  # 10 + 18 + 2: every day counted once
    html = (tmp_path / "r" / "report.html").read_text()
    assert f"<p data-read>{read['sentence']}</p>" in html
    assert read["sentence"] == (
        "Read from the history only (not Prometheus): 30 days, 2026-09-01 to 2026-09-30 (every "
        "day of the history in the month and its trend months). Their usage was read from Prometheus at 1m on 18 days and "
        "at 5m on 10 days. 2 days do not record their step."
    )
