"""``analyzer history backfill`` against a real Prometheus (the synthetic cluster, promtool-backfilled).

The acceptance line "backfill equals nightly": a day backfilled gives the same history files as
``analyzer report nightly --prometheus URL --date DAY`` writes for that day at the same step.
Both commands collect from the same server; they must agree row for row, because the nightly
report and the backfill record a day through the one function ``nightly.record.record_day``.
Then: resumability (present days skipped, ``--force`` rewrites, a missing file is filled), days
without data and partial days (exit 3), and bad input (one line, exit 2 or 1).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner, Result
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.core.paths import queries_dir
from analyzer.nightly.backfill import backfill_days
from analyzer.sources import SyntheticSpec, generate, write_openmetrics

pytestmark = pytest.mark.prometheus

DAYS = ("2026-11-01", "2026-11-02")  # the generator's two days (DEFAULT_START = 2026-11-01)
TABLES = ("rollups", "pools", "workloads")
NODES = 6


@pytest.fixture(scope="module")
def server_url(
    prometheus_from_openmetrics: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> str:
    cluster = generate(SyntheticSpec(seed=5, nodes=NODES, days=2, step=300))
    path = tmp_path_factory.mktemp("backfill") / "cluster.om"
    write_openmetrics(cluster, path)
    return str(prometheus_from_openmetrics(path).url)


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _backfill(url: str, out: Path, *extra: str, since: str = "2d", until: str = DAYS[1]) -> Result:
    return _run(
        "history", "backfill", "--prometheus", url, "--since", since, "--until", until,
        "--out", str(out), *extra,
    )  # fmt: skip


def _files(out: Path, day: str) -> dict[str, Path]:
    history = out / "history"
    files = {name: history / name / f"{day}.parquet" for name in TABLES}
    return {**files, "summary": history / "summary" / f"{day}.json"}


@pytest.fixture(scope="module")
def backfilled(server_url: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Result]:
    out = tmp_path_factory.mktemp("bf") / "out"
    return out, _backfill(server_url, out)


def test_backfilled_day_equals_the_nightly_run_of_that_day(
    server_url: str, backfilled: tuple[Path, Result], tmp_path: Path
) -> None:
    out, run = backfilled
    assert run.exit_code == 0, run.output
    assert run.output.splitlines()[-1] == (
        "backfill: 2 day(s) written, 0 skipped (already present), 0 partial"
    )
    nightly = tmp_path / "nightly"
    report = _run(
        "report", "nightly", "--prometheus", server_url, "--date", DAYS[1], "--step", "5m",
        "--out", str(nightly),
    )  # fmt: skip
    assert report.exit_code == 0, report.output
    ours, theirs = _files(out, DAYS[1]), _files(nightly, DAYS[1])
    for name in TABLES:
        left, right = pd.read_parquet(ours[name]), pd.read_parquet(theirs[name])
        assert len(left) > 0, name  # equal because both hold the day, not because both are empty
        pd.testing.assert_frame_equal(left, right, check_exact=True)
    assert json.loads(ours["summary"].read_text()) == json.loads(theirs["summary"].read_text())
    # The rows say what the cluster is: 6 nodes, every pool's day at a 5 m step is 288 samples.
    summary = json.loads(ours["summary"].read_text())
    assert summary["day"] == DAYS[1] and summary["nodes"] == NODES
    pools = pd.read_parquet(ours["pools"])
    assert pools["nodes_max"].sum() == NODES
    assert set(pools["used_samples"]) == {288}
    # No report folder: the backfill writes the history only.
    assert sorted(p.name for p in out.iterdir()) == ["history"]
    assert all(path.is_file() for path in _files(out, DAYS[0]).values())


def _stamps(out: Path) -> dict[str, int]:
    """The inode of every history file: an atomic rewrite replaces the file (a new inode)."""
    return {
        str(p.relative_to(out)): p.stat().st_ino for p in sorted((out / "history").rglob("*.*"))
    }


def test_second_run_skips_force_rewrites_missing_file_is_filled(
    server_url: str, backfilled: tuple[Path, Result], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(backfilled[0], out)
    before = _stamps(out)
    # 4 files × 2 days, each day's headroom-per-shape series, and the history's cluster.json
    assert len(before) == 11

    again = _backfill(server_url, out)
    assert again.exit_code == 0, again.output
    assert "0 day(s) written, 2 skipped" in again.output
    assert f"{DAYS[0]}: skipped" in again.output
    assert _stamps(out) == before  # nothing was touched

    kept = pd.read_parquet(_files(out, DAYS[0])["workloads"])
    _files(out, DAYS[0])["workloads"].unlink()
    filled = _backfill(server_url, out)
    assert filled.exit_code == 0, filled.output
    assert "1 day(s) written, 1 skipped" in filled.output
    pd.testing.assert_frame_equal(pd.read_parquet(_files(out, DAYS[0])["workloads"]), kept)
    after_fill = _stamps(out)
    day1 = [k for k in before if DAYS[1] in k]
    assert all(after_fill[k] == before[k] for k in day1)  # the present day was not rewritten

    forced = _backfill(server_url, out, "--force")
    assert forced.exit_code == 0, forced.output
    assert "2 day(s) written, 0 skipped" in forced.output
    after_force = _stamps(out)
    days = [k for k in before if k != "history/cluster.json"]  # the identity stays as it was
    assert all(after_force[k] != after_fill[k] for k in days)  # every day file replaced


def test_days_without_data_are_counted_and_exit_3(server_url: str, tmp_path: Path) -> None:
    # 2026-10-30 lies before the data (no kube-state-metrics at all); 2026-10-31 ends at the
    # first sample (00:00 closes the day before) and 2026-11-03 starts at the last: in neither
    # does a node exist for more than one step. None is written, the two data days are; exit 3.
    out = tmp_path / "out"
    run = _backfill(server_url, out, since="5d", until="2026-11-03")
    assert run.exit_code == documented_exit("backfill-no-data"), run.output
    assert run.output.splitlines()[-1] == (
        "backfill: 2 day(s) written, 0 skipped (already present), 0 partial, "
        "3 without data (2026-10-30 .. 2026-11-03; nothing written)"
    )
    assert "2026-10-30: no data, nothing written (no kube-state-metrics data" in run.output
    for day in ("2026-10-31", "2026-11-03"):
        assert f"{day}: no data, nothing written (no node existed during {day} for more " in (
            run.output
        )
    assert sorted(p.name for p in (out / "history" / "summary").iterdir()) == [
        f"{d}.json" for d in DAYS
    ]


def test_partial_day_is_written_and_exits_3(server_url: str, tmp_path: Path) -> None:
    # An optional query the server rejects: the collector records it as failed, the day's data
    # is partial (as in a nightly run), the day is still written.
    profile = tmp_path / "queries"
    shutil.copytree(queries_dir(), profile)
    broken = profile / "node_uname_info.promql"
    header = [line for line in broken.read_text().splitlines() if line.startswith("#")]
    broken.write_text("\n".join(header) + "\nmax by (instance, nodename) (node_uname_info[\n")
    out = tmp_path / "out"
    run = _backfill(server_url, out, "--queries-dir", str(profile), since="1d")
    assert run.exit_code == documented_exit("backfill-partial"), run.output
    assert run.output.splitlines()[-1] == (
        "backfill: 1 day(s) written, 0 skipped (already present), 1 partial"
    )
    assert f"{DAYS[1]}: written in" in run.output and "data PARTIAL" in run.output
    summary = json.loads(_files(out, DAYS[1])["summary"].read_text())
    assert summary["exit_code"] == 3  # the day's own record says partial, as a nightly's would


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (("--since", "90x"), "--since: '90x' is not a duration"),
        (("--since", "12h"), "--since: 12h holds no complete UTC day"),
        (("--since", "999999d"), "--since: 999999d is more than 36500d (100 years)"),
        (
            ("--since", "36500d", "--until", "0050-01-01"),
            "--since: 36500d reaches before the year 1",
        ),
        (
            ("--since", "2d", "--until", "2999-01-01"),
            "--until: 2999-01-01 is not a complete UTC day",
        ),
        (("--since", "2d", "--until", "someday"), "--until: 'someday' is not a day"),
        (("--since", "2d", "--step", "0s"), "--step: '0s' must be a whole number of seconds"),
    ],
)
def test_bad_input_is_one_line_exit_2(args: tuple[str, ...], text: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    run = _run(
        "history", "backfill", "--prometheus", "http://127.0.0.1:9", "--out", str(out), *args
    )
    assert run.exit_code == documented_exit("backfill-bad-range"), run.output
    assert text in run.output, run.output
    assert not out.exists()  # refused before any work


def test_unreachable_server_keeps_earlier_days(
    backfilled: tuple[Path, Result], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    shutil.copytree(backfilled[0], out)
    _files(out, DAYS[1])["pools"].unlink()
    before = _stamps(out)
    # The same cluster behind another (dead) URL: naming the history's cluster says so
    # (docs/history.md, "Which cluster"); without it the run is refused as another cluster's.
    cluster = json.loads((out / "history" / "cluster.json").read_text())["cluster"]
    run = _run(
        "history", "backfill", "--prometheus", "http://127.0.0.1:9", "--since", "2d",
        "--until", DAYS[1], "--out", str(out), "--timeout", "2", "--cluster", cluster,
    )  # fmt: skip
    assert run.exit_code == documented_exit("backfill-unreachable"), run.output
    assert "cannot reach http://127.0.0.1:9" in run.output
    assert _stamps(out) == before  # the present day untouched, nothing half-written


def test_missing_url_and_foreign_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANALYZER_PROMETHEUS_URL", raising=False)
    run = _run("history", "backfill", "--since", "2d", "--out", str(tmp_path / "o"))
    assert run.exit_code == 2 and "give --prometheus URL" in run.output
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    run = _backfill("http://127.0.0.1:9", foreign)
    assert run.exit_code == 2 and "analyzer never deletes what it did not write" in run.output
    assert (foreign / "notes.txt").read_text() == "keep"


def test_since_is_the_whole_days_ending_with_until() -> None:
    today = date(2026, 11, 25)
    days = backfill_days(timedelta(days=90), date(2026, 11, 24), today)
    # 90 days ending with 24 Nov: 27 Aug (5 in Aug, 30 in Sep, 31 in Oct, 24 in Nov = 90)
    assert len(days) == 90 and days[0] == date(2026, 8, 27) and days[-1] == date(2026, 11, 24)
    assert days == sorted(days) and len(set(days)) == 90
    # 36 h holds one whole day before the end of --until, not two
    assert backfill_days(timedelta(hours=36), date(2026, 11, 20), today) == [date(2026, 11, 20)]
    with pytest.raises(InputError, match="--until: 2026-11-25 is not a complete UTC day yet"):
        backfill_days(timedelta(days=1), today, today)


def test_progress_bar_on_a_terminal(
    server_url: str,
    backfilled: tuple[Path, Result],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    import analyzer.cli.history_cmds as history_cmds

    monkeypatch.setattr(history_cmds, "is_terminal", lambda: True)
    run = _backfill(server_url, backfilled[0])  # both days present: skipped, bar only
    assert run.exit_code == 0, run.output
    assert "backfill [" + "#" * 30 + "] 2/2 days" in run.output
    assert f"{DAYS[0]}: skipped" not in run.output  # per-day lines are for logs, not terminals
    assert run.output.splitlines()[-1].startswith("backfill: 0 day(s) written, 2 skipped")
    out = tmp_path / "out"
    run = _backfill(server_url, out, since="1d")  # a day collected: the bar follows its requests
    assert run.exit_code == 0, run.output
    assert f"] 0/1 days ({DAYS[1]}: 1/" in run.output and "requests)" in run.output
    assert "backfill [" + "#" * 30 + "] 1/1 days" in run.output
