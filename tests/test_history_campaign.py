"""Cases of reliability-2026-11.md on the history store that held, kept held (rows 5, 22, 23, 25,
28, 32-34, 46, 48, 50, 51, 53): each reproduces the case through the real commands and asserts
its "expected" column. The damaged-file cases are tests/test_history_files.py.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cli_contract import run_cli, temp_leftovers
from click.testing import CliRunner, Result
from http_stub import Reply, serve
from monthly_history import PoolTruth, WorkloadTruth, write_history
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.core.prices import load_prices
from analyzer.core.snapshot import write_snapshot
from analyzer.history.identity import normalise_source
from analyzer.monthly.months import Month
from analyzer.monthly.review import ReviewSettings, build_review
from analyzer.sources import SyntheticSpec, generate, write_openmetrics


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def h(tmp_path: Path) -> Path:
    root = tmp_path / "h"
    write_history(root, date(2026, 10, 1), 31, [PoolTruth("general")],
                  [WorkloadTruth("api", "general")])  # fmt: skip
    return root


def test_a_truncated_workloads_day_stops_rightsize_naming_it(h: Path, tmp_path: Path) -> None:
    """Row 5."""
    path = h / "workloads" / "2026-10-31.parquet"
    path.write_bytes(path.read_bytes()[:300])
    run = _run("rightsize", str(h), "--recipe", "krr", "--out", str(tmp_path / "rs.csv"))
    assert run.exit_code == documented_exit("history-damaged"), run.output
    assert f"{path} is unreadable" in run.stderr and len(run.stderr.splitlines()) == 1
    assert not (tmp_path / "rs.csv").exists()


def test_missing_days_and_a_one_day_month_with_prices(h: Path, tmp_path: Path) -> None:
    """Rows 22 and 25: a review over the days present says how many; a month of one day is
    reviewed without a forecast, its money over 24 hours, no NaN."""
    for d in range(10, 20):
        for table in ("pools", "workloads"):
            (h / table / f"2026-10-{d}.parquet").unlink()
    payload = build_review(h, ReviewSettings()).payload
    assert payload["days_with_history"] == 21
    assert "2026-10 has history for 21 of its 31 days" in payload["notes"][0]
    one = tmp_path / "h1"
    write_history(one, date(2026, 10, 31), 1, [PoolTruth("general")])
    prices = tmp_path / "p.yaml"
    prices.write_text("currency: EUR\ndefault: {node_hour: 0.5}\n")
    settings = ReviewSettings(month=Month(2026, 10), prices=load_prices(prices))
    payload = build_review(one, settings).payload
    pool = payload["pools"][0]
    assert pool["days"] == 1 and pool["money"]["hours"] == 24
    assert "too few to forecast" in pool["decision"]["sentence"]
    assert math.isfinite(pool["money"]["idle"]["total"])


@pytest.mark.parametrize("month", ["0001-01", "9999-12"])
def test_a_month_far_outside_the_history_is_one_line(h: Path, tmp_path: Path, month: str) -> None:
    """Row 28."""
    run = _run("report", "monthly", str(h), "--month", month, "--out", str(tmp_path / "m"))
    assert run.exit_code == documented_exit("monthly-month-without-history"), run.output
    assert f"--month: {month} has no pool history" in run.stderr
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (("--months", "37"), "--months: 37 must be between 1 and 36"),
        (("--horizon-days", "500"), "--horizon-days: 500 must be between 90 and 180"),
        (("--workers", "2"), "--strategy/--workers/--executor: only with --snapshot"),
        (("--executor", "dask://127.0.0.1:8786"), "--executor: only with --snapshot"),
    ],
)
def test_bad_monthly_options_are_refused_before_work(
    h: Path, tmp_path: Path, extra: tuple[str, ...], says: str
) -> None:
    """Row 46."""
    run = _run("report", "monthly", str(h), "--out", str(tmp_path / "m"), *extra)
    assert run.exit_code == 2 and says in run.stderr, run.output
    assert not (tmp_path / "m").exists() and not (h / "forecasts").exists()


def test_monthly_out_that_is_a_file_etc_or_a_user_folder(h: Path, tmp_path: Path) -> None:
    """Rows 48, 50, 51: refused, nothing touched."""
    afile = tmp_path / "afile.txt"
    afile.write_text("keep")
    run = _run("report", "monthly", str(h), "--out", str(afile))
    assert run.exit_code == 2 and afile.read_text() == "keep"
    link = tmp_path / "etc-link"
    link.symlink_to("/etc")
    run = _run("report", "monthly", str(h), "--out", str(link))
    assert run.exit_code == documented_exit("out-not-ours"), run.output
    assert "is not a monthly review analyzer wrote" in run.stderr and link.is_symlink()
    user = tmp_path / "userdir"
    user.mkdir()
    (user / "important.txt").write_text("keep")
    run = _run("report", "monthly", str(h), "--out", str(user))
    assert run.exit_code == 2 and "(it holds important.txt)" in run.stderr
    assert (user / "important.txt").read_text() == "keep"


def test_monthly_out_a_link_to_an_empty_folder_replaces_the_link(h: Path, tmp_path: Path) -> None:
    """Row 53: no write through the link."""
    elsewhere = tmp_path / "emptyelsewhere"
    elsewhere.mkdir()
    link = tmp_path / "mon-link"
    link.symlink_to(elsewhere)
    run = _run("report", "monthly", str(h), "--out", str(link))
    assert run.exit_code == 0, run.output
    assert not link.is_symlink() and (link / "report.json").is_file()
    assert list(elsewhere.iterdir()) == []


# -- backfill against a real Prometheus: rows 23, 32, 33, 34 ----------------------------------------

DAYS = ("2026-11-01", "2026-11-02")


@pytest.fixture(scope="module")
def server_url(
    prometheus_from_openmetrics: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> str:
    cluster = generate(SyntheticSpec(seed=5, nodes=3, days=2, step=300))
    path = tmp_path_factory.mktemp("campaign") / "cluster.om"
    write_openmetrics(cluster, path)
    return str(prometheus_from_openmetrics(path).url)


def _backfill(url: str, out: Path, since: str, until: str, *extra: str) -> Result:
    return _run("history", "backfill", "--prometheus", url, "--since", since, "--until", until,
                "--out", str(out), *extra)  # fmt: skip


def _day_bytes(out: Path) -> dict[str, bytes]:
    history = out / "history"
    return {str(p.relative_to(history)): p.read_bytes() for p in sorted(history.rglob("*.parquet"))}


@pytest.mark.prometheus
def test_out_of_order_and_other_time_zone_backfills_write_the_same_files(
    server_url: str, tmp_path: Path
) -> None:
    """Rows 23 and 34: days backfilled out of order, and a run under TZ=America/New_York (the US
    DST end is 2026-11-01), give byte-identical day files."""
    in_order = tmp_path / "in-order"
    assert _backfill(server_url, in_order, "2d", DAYS[1]).exit_code == 0
    shuffled = tmp_path / "shuffled"
    for day in (DAYS[1], DAYS[0]):
        assert _backfill(server_url, shuffled, "1d", day).exit_code == 0
    assert _day_bytes(shuffled) == _day_bytes(in_order)
    zoned = tmp_path / "zoned"
    env = {**os.environ, "TZ": "America/New_York"}
    outcome = run_cli(["history", "backfill", "--prometheus", server_url, "--since", "2d",
                       "--until", DAYS[1], "--out", str(zoned)], env=env, timeout=120)  # fmt: skip
    assert outcome.exit_code == 0, outcome.stderr
    assert _day_bytes(zoned) == _day_bytes(in_order)


@pytest.mark.prometheus
def test_the_default_until_is_yesterday_in_utc_under_any_tz(
    server_url: str, tmp_path: Path
) -> None:
    """Row 33: under TZ=America/Los_Angeles the default --until is yesterday in UTC."""
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    env = {**os.environ, "TZ": "America/Los_Angeles"}
    outcome = run_cli(["history", "backfill", "--prometheus", server_url, "--since", "1d",
                       "--out", str(tmp_path / "bf")], env=env, timeout=120)  # fmt: skip
    assert outcome.exit_code == documented_exit("backfill-no-data"), outcome.stderr
    assert f"{yesterday}: no data, nothing written" in outcome.stdout


@pytest.mark.prometheus
def test_a_truncated_present_day_is_skipped_named_on_read_and_remade(
    server_url: str, tmp_path: Path
) -> None:
    """Row 32: present means skipped (documented); the next reader names the damaged file; once
    it is deleted, the backfill makes the day again."""
    out = tmp_path / "bf"
    assert _backfill(server_url, out, "2d", DAYS[1]).exit_code == 0
    path = out / "history" / "workloads" / f"{DAYS[0]}.parquet"
    whole = path.read_bytes()
    path.write_bytes(whole[:500])
    run = _backfill(server_url, out, "2d", DAYS[1])
    assert run.exit_code == 0 and f"{DAYS[0]}: skipped (already present" in run.output
    run = _run("rightsize", str(out), "--recipe", "krr")
    assert run.exit_code == documented_exit("history-damaged")
    assert f"{path} is unreadable" in run.stderr and "delete that file" in run.stderr
    path.unlink()
    run = _backfill(server_url, out, "2d", DAYS[1])
    assert run.exit_code == 0 and "1 day(s) written, 1 skipped" in run.output
    assert json.loads((out / "history" / "cluster.json").read_text())["cluster"] == (
        normalise_source(server_url)
    )


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_during_a_day_s_fetch_leaves_the_days_before_whole(
    h: Path, tmp_path: Path, signum: int, code: int
) -> None:
    """Rows 121 and 122: the run stops at once with one line and the shell's code; the days
    already in the history are untouched, nothing half-written is left (rerun resumes: the
    present days are skipped, tests/test_history_backfill.py)."""
    out = tmp_path / "out"
    out.mkdir()
    shutil.move(h, out / "history")
    before = {p: p.read_bytes() for p in sorted((out / "history").rglob("*")) if p.is_file()}
    release = threading.Event()

    def hang(_request: object) -> Reply:
        release.wait(120)
        return Reply(503, b"late")

    with serve(hang) as server:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        proc = subprocess.Popen(
            [sys.executable, "-m", "analyzer", "history", "backfill", "--prometheus", server.url,
             "--since", "2d", "--until", "2026-11-02", "--out", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        try:
            for _ in range(12000):  # wait (at most two minutes) for the first request
                if server.requests or proc.poll() is not None:
                    break
                time.sleep(0.01)
            assert server.requests, "the fetch never started"
            proc.send_signal(signum)
            _, stderr = proc.communicate(timeout=60)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == code
    assert len(stderr.strip().splitlines()) == 1 and "stopped by SIG" in stderr
    after = {p: p.read_bytes() for p in sorted((out / "history").rglob("*")) if p.is_file()}
    assert after == before and not temp_leftovers([out])


@contextlib.contextmanager
def _immutable(folder: Path) -> Iterator[None]:
    """``chattr +i`` on ``folder`` (the campaign's read-only fault; root writes through modes)."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    made = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"chattr +i is refused here: {made.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=False)


def test_unwritable_places_are_refused_before_any_work(h: Path, tmp_path: Path) -> None:
    """Rows 49, 52 and 120: ``--out`` under an immutable folder (monthly, backfill), an immutable
    HISTORY_DIR (the forecast store would fail), and a backfill ``--out`` linked to /etc."""
    ro = tmp_path / "ro"
    ro.mkdir()
    with _immutable(ro):
        run = _run("report", "monthly", str(h), "--out", str(ro / "review"))
        assert run.exit_code == documented_exit("out-unwritable"), run.output
        assert (
            f"--out {ro / 'review'}: cannot write to {ro} (operation not permitted)" in run.stderr
        )
        run = _backfill("http://127.0.0.1:9", ro / "bf", "1d", "2026-11-01")
        assert run.exit_code == documented_exit("out-unwritable"), run.output
    with _immutable(h):
        run = _run("report", "monthly", str(h), "--out", str(tmp_path / "m"))
        assert run.exit_code == 2 and "HISTORY_DIR" in run.stderr and "cannot write" in run.stderr
    assert not (tmp_path / "m").exists() and not (h / "forecasts").exists()
    link = tmp_path / "etc-link"
    link.symlink_to("/etc")
    run = _backfill("http://127.0.0.1:9", link, "1d", "2026-11-01")
    assert run.exit_code == documented_exit("out-not-ours"), run.output
    assert "is not a report folder analyzer wrote" in run.stderr
    assert not Path("/etc/history").exists()


def test_the_review_is_the_same_under_any_time_zone(
    h: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row 35: days are UTC days; the review under TZ=Pacific/Kiritimati (UTC+14) is the same."""
    utc = build_review(h, ReviewSettings()).payload
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")
    time.tzset()
    try:
        far = build_review(h, ReviewSettings()).payload
    finally:
        monkeypatch.undo()
        time.tzset()
    for payload in (utc, far):
        payload.pop("generated_at")
    assert far == utc and utc["month"] == "2026-10"


def test_a_truncated_scenario_snapshot_is_one_line(h: Path, tmp_path: Path) -> None:
    """Row 47: ``report monthly --snapshot`` with a truncated pods.parquet."""
    snapshot = generate(SyntheticSpec(seed=4, nodes=3, days=1, step=300)).snapshot
    snap = write_snapshot(snapshot, tmp_path / "snap")
    pods = snap / "pods.parquet"
    pods.write_bytes(pods.read_bytes()[:200])
    run = _run("report", "monthly", str(h), "--snapshot", str(snap), "--out", str(tmp_path / "m"))
    assert run.exit_code == documented_exit("snap-truncated-parquet"), run.output
    assert f"{pods}: not a readable parquet table" in run.stderr
    assert len(run.stderr.splitlines()) == 1 and not (tmp_path / "m").exists()


_BLOCK_AT = """
import sys, time
from pathlib import Path
import importlib
ready, release, module, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
target = importlib.import_module(module)
original = getattr(target, name)
def blocked(*args, **kwargs):
    ready.touch()
    while not release.exists():
        time.sleep(0.01)
    return original(*args, **kwargs)
setattr(target, name, blocked)
from analyzer.cli import main
main(sys.argv[5:], prog_name="analyzer")
"""


@pytest.mark.parametrize(
    ("module", "name", "says"),
    [
        ("analyzer.monthly.review", "daily_frame", "no output was being written"),  # row 57
        ("analyzer.report.monthly", "write_csv", "nothing half-written was left"),  # row 56
    ],
)
def test_sigterm_during_a_review_keeps_the_old_one_whole(
    h: Path, tmp_path: Path, module: str, name: str, says: str
) -> None:
    """Rows 56 and 57: SIGTERM while the review computes or while its folder is written ends
    with 143 and one line; the earlier review and the stored forecasts are as they were."""
    out = tmp_path / "m"
    out.mkdir()
    (out / "report.json").write_text('{"old": true}')
    (out / "report.html").write_text("old")
    ready, release = tmp_path / "ready", tmp_path / "release"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-c", _BLOCK_AT, str(ready), str(release), module, name,
         "report", "monthly", str(h), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        for _ in range(18000):  # at most three minutes on a loaded machine
            if ready.exists() or proc.poll() is not None:
                break
            time.sleep(0.01)
        assert ready.exists(), proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGTERM)
        release.touch()
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "by SIGTERM" in lines[0], stderr
    assert says in lines[0]
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json"]
    assert (out / "report.json").read_text() == '{"old": true}'
    assert not (h / "forecasts").exists() and not temp_leftovers([tmp_path])


@pytest.mark.prometheus
def test_two_backfills_into_one_out_at_once(server_url: str, tmp_path: Path) -> None:
    """Row 126: both end well, and the day files are byte-identical to a serial run's (the
    cluster identity is written atomically by whichever records first, the same by both)."""
    serial = tmp_path / "serial"
    assert _backfill(server_url, serial, "2d", DAYS[1]).exit_code == 0
    both = tmp_path / "both"
    args = ["history", "backfill", "--prometheus", server_url, "--since", "2d", "--until",
            DAYS[1], "--out", str(both)]  # fmt: skip
    outcomes: list[Any] = []
    runners = [
        threading.Thread(target=lambda: outcomes.append(run_cli(args, timeout=180)))
        for _ in range(2)
    ]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join()
    assert [o.exit_code for o in outcomes] == [0, 0], [o.stderr for o in outcomes]
    assert _day_bytes(both) == _day_bytes(serial) and not temp_leftovers([both])
    assert (both / "history" / "cluster.json").read_text() == (
        serial / "history" / "cluster.json"
    ).read_text()
