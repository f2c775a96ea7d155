"""Cases of the second fault campaign that held and keep holding: concurrent and killed monthly
reviews (rows 55, 58) and a backfill whose node usage is missing (row 110).

Each drives the real CLI in child processes, as the campaign did.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pytest
from monthly_history import PoolTruth, WorkloadTruth, line, write_history

from analyzer.sources import OpenMetricsOptions, SyntheticSpec, generate, write_openmetrics

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _history(root: Path) -> Path:
    history = root / "history"
    write_history(
        history,
        date(2026, 9, 1),
        61,
        [PoolTruth("general", requested_cpu=line(40.0, 0.1)), PoolTruth("memory")],
        [WorkloadTruth("api", "general"), WorkloadTruth("cache", "memory")],
    )
    return history


def _monthly(history: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "analyzer", "report", "monthly", str(history), "--out", str(out),
         "--month", "2026-10"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
    )  # fmt: skip


def _review_files(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.is_file()}


def _leftovers(folder: Path, name: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(f".{name}."))


def test_three_monthly_reviews_into_one_out_at_once_leave_one_whole_review(
    tmp_path: Path,
) -> None:
    # Row 55: concurrent runs each swap a whole folder in; the last one wins, none is mixed.
    history = _history(tmp_path)
    out = tmp_path / "m"
    runs = [_monthly(history, out) for _ in range(3)]
    results = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], [err for _, err in results]
    assert all(err == "" for _, err in results)
    assert _leftovers(tmp_path, "m") == []
    report = json.loads((out / "report.json").read_text())
    assert report["month"] == "2026-10"
    # one run alone writes the same set of files: nothing of a second run is mixed in
    alone = tmp_path / "alone"
    single = _monthly(history, alone)
    single.communicate(timeout=600)
    assert sorted(_review_files(out)) == sorted(_review_files(alone))


def test_sigkill_mid_write_keeps_the_old_review_and_the_next_run_clears_its_temp(
    tmp_path: Path,
) -> None:
    # Row 58: a SIGKILL while the folder is written leaves the old review whole and a temporary
    # folder, which the next write removes once it is over an hour old (docs: stale-temp).
    history = _history(tmp_path)
    out = tmp_path / "m"
    first = _monthly(history, out)
    assert first.communicate(timeout=600)[1] == "" and first.returncode == 0
    before = _review_files(out)
    second = _monthly(history, out)
    deadline = time.monotonic() + 300
    while not _leftovers(tmp_path, "m") and second.poll() is None:
        assert time.monotonic() < deadline, "the review's temporary folder never appeared"
        time.sleep(0.005)
    second.send_signal(signal.SIGKILL)
    second.communicate(timeout=60)
    if second.returncode == 0:
        pytest.skip("the write finished before the kill landed (too fast to interrupt here)")
    assert second.returncode == -signal.SIGKILL
    assert _review_files(out) == before  # the old review, byte for byte
    stale = _leftovers(tmp_path, "m")
    assert stale, "SIGKILL cannot clean up: a temporary folder stays until the next write"
    two_hours_ago = time.time() - 7200
    for name in stale:
        os.utime(tmp_path / name, (two_hours_ago, two_hours_ago))
    third = _monthly(history, out)
    assert third.communicate(timeout=600)[1] == "" and third.returncode == 0
    assert _leftovers(tmp_path, "m") == []


@pytest.mark.prometheus
def test_backfill_of_days_without_node_usage_writes_them_as_partial(
    prometheus_from_openmetrics: Callable[..., object], tmp_path: Path
) -> None:
    # Row 110: node-exporter's cpu series missing: each day is written, named PARTIAL with its
    # usage coverage, and the run exits 3 (docs/reliability.md backfill-partial).
    from click.testing import CliRunner
    from reliability_doc import documented_exit

    from analyzer.cli import main

    spec = SyntheticSpec(seed=4, nodes=3, days=2, step=300, pods_per_node=4)
    path = tmp_path / "cluster.om"
    options = OpenMetricsOptions(exclude_metrics=frozenset({"node_cpu_seconds_total"}))
    write_openmetrics(generate(spec), path, options)
    server = prometheus_from_openmetrics(path)
    out = tmp_path / "bf"
    run = CliRunner().invoke(
        main,
        ["history", "backfill", "--prometheus", server.url,  # type: ignore[attr-defined]
         "--since", "1d", "--until", "2026-11-01", "--step", "5m", "--out", str(out)],
    )  # fmt: skip
    assert run.exit_code == documented_exit("backfill-partial"), run.output
    assert "2026-11-01: written in" in run.output and "data PARTIAL (usage coverage 0.0 %" in (
        run.output
    )
    assert run.output.splitlines()[-1] == (
        "backfill: 1 day(s) written, 0 skipped (already present), 1 partial"
    )
    summary = json.loads((out / "history" / "summary" / "2026-11-01.json").read_text())
    assert summary["exit_code"] == 3
