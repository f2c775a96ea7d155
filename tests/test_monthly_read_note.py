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
from reliability_doc import documented_exit

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


def test_generated_days_are_said_as_generated_and_a_summary_wins(tmp_path: Path) -> None:
    """The demo's months before its snapshot are generated (no summary: they are no nightly run).
    Recorded as generated at 1 h for 2026-09-25..30, the two days without a step (29: no
    summary, 30: no field) are said as generated; 25-28 keep their own summaries' 1m."""
    from analyzer.history.generated import write_generated

    _history(tmp_path / "h")
    write_generated(tmp_path / "h", date(2026, 9, 25), date(2026, 9, 30), 3600, "synthetic:seed=1")
    run = CliRunner().invoke(
        main, ["report", "monthly", str(tmp_path / "h"), "--out", str(tmp_path / "r")]
    )
    assert run.exit_code == 0, run.output
    read = json.loads((tmp_path / "r" / "report.json").read_text())["read"]
    assert read["steps"] == [{"step_seconds": 60, "days": 18}, {"step_seconds": 300, "days": 10}]
    assert read["generated"] == [{"step_seconds": 3600, "days": 2}]
    assert read["days_step_unknown"] == 0
    assert read["sentence"].endswith(
        "Their usage was read from Prometheus at 1m on 18 days and at 5m on 10 days. "
        "Generated (synthetic, not read from Prometheus) at 1h on 2 days."
    )


def test_a_damaged_generated_record_is_one_line_exit_2(tmp_path: Path) -> None:
    _history(tmp_path / "h")
    (tmp_path / "h" / "generated.json").write_text('{"spans": [{"first": "yesterday"}]}')
    run = CliRunner().invoke(
        main, ["report", "monthly", str(tmp_path / "h"), "--out", str(tmp_path / "r")]
    )
    assert run.exit_code == documented_exit("history-generated-damaged")
    line = run.output.strip()
    assert "\n" not in line and "generated.json" in line and "delete that file" in line
    assert not (tmp_path / "r").exists()
