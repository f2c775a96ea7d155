"""The demo writes its nightly pages before the coarse history days (``cli/demo.py``): a nightly
page must then read nothing of those days. Checked by writing the same two nightly days into two
history folders, one already holding coarse days before them (pools, workloads and headroom, as
``write_synthetic_history`` stores them) and one empty: every side file and the page are the same
but for the time they were generated. (A page reads the store: its previous day's summary and
node rollups, ``tests/test_demo_history.py`` checks that the first nightly day finds none.)"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

from analyzer.nightly.run import NightlySettings, run_nightly
from analyzer.nightly.synthetic_history import write_synthetic_history
from analyzer.report.nightly_report import write_nightly_report
from analyzer.sources.spec import SyntheticSpec
from analyzer.sources.synthetic import generate

SPEC = SyntheticSpec(seed=5, nodes=6, days=1, step=1800)  # 2026-11-01
DAYS = [date(2026, 11, 1)]


def _without_times(text: str) -> str:
    """The page or side file with its generation time removed (the one thing that may differ)."""
    return "\n".join(line for line in text.splitlines() if "generated" not in line.lower())


def test_nightly_pages_read_no_coarse_history_day(tmp_path: Path) -> None:
    snapshot = generate(SPEC).snapshot
    results = [run_nightly(snapshot, NightlySettings(day=day)) for day in DAYS]
    with_coarse, without = tmp_path / "with", tmp_path / "without"
    coarse = write_synthetic_history(
        SPEC, with_coarse / "history", DAYS[0] - timedelta(days=2), DAYS[0] - timedelta(days=1)
    )
    assert len(coarse) == 2 and len(list((with_coarse / "history" / "pools").iterdir())) == 2
    for out in (with_coarse, without):
        for result in results:
            write_nightly_report(result, out)
    for day in DAYS:
        folder = day.isoformat()
        names = sorted(p.name for p in (without / folder).iterdir())
        assert sorted(p.name for p in (with_coarse / folder).iterdir()) == names
        assert "report.html" in names and "report.json" in names
        for name in names:
            a = (with_coarse / folder / name).read_text()
            b = (without / folder / name).read_text()
            assert _without_times(a) == _without_times(b), (folder, name)
