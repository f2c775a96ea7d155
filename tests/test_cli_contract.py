"""tests/cli_contract.py measures what it claims: exit code, stderr lines, time, peak memory."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_contract import assert_contract, run_cli, temp_leftovers


def test_a_clean_refusal_keeps_the_contract(tmp_path: Path) -> None:
    outcome = run_cli(["score", str(tmp_path / "missing.yaml")], timeout=60)
    assert outcome.exit_code == 2
    assert len(outcome.stderr_lines) == 1
    assert_contract(outcome, max_seconds=60)


def test_time_and_peak_memory_are_measured() -> None:
    # Importing analyzer's CLI takes tens of MB and well under a minute; 0 would mean unmeasured.
    outcome = run_cli(["--version"], timeout=60)
    assert outcome.exit_code == 0
    assert 10 < outcome.peak_rss_mb < 400, outcome.peak_rss_mb
    assert 0 < outcome.seconds < 60


def test_a_traceback_breaks_the_contract() -> None:
    outcome = run_cli(["--version"], timeout=60)
    broken = type(outcome)(
        outcome.args, 1, "", "Traceback (most recent call last):\n  x\nValueError\n", 0.1, 50, False
    )
    with pytest.raises(AssertionError):
        assert_contract(broken)


def test_temp_leftovers_finds_atomic_write_temporaries(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".report.json.abcd1234.tmp").write_text("")
    (tmp_path / "keep.json").write_text("")
    assert [p.name for p in temp_leftovers([tmp_path])] == [".report.json.abcd1234.tmp"]


def test_peak_memory_is_not_the_test_processs() -> None:
    # Linux keeps ru_maxrss across exec: forked straight from a test process holding 600 MB,
    # `analyzer --version` would read as at least that. The launcher measures analyzer alone.
    ballast = bytearray(600 * 2**20)
    ballast[::4096] = b"x" * len(ballast[::4096])  # touch every page: resident, not reserved
    outcome = run_cli(["--version"], timeout=60)
    del ballast
    assert outcome.exit_code == 0
    assert outcome.peak_rss_mb < 300, outcome.peak_rss_mb
