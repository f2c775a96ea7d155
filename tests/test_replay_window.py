"""``--window DAYS``: the what-if replays the snapshot's busiest whole days and says which."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from reliability_doc import documented_exit
from replay_fixtures import T0, N, P, build

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot

DAY = 24 * 60  # minutes


@pytest.fixture(scope="module")
def three_days(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three days on two nodes; a 3-core pod runs only on the second day (its busiest)."""
    pods = [
        P("base", "n0", cpu=1000, start=0, end=None),
        P("spike", "n1", cpu=3000, start=DAY + 600, end=DAY + 700),
    ]
    snap = build([N("n0", cpu=8000), N("n1", cpu=8000)], pods, minutes=3 * DAY)

    # hourly samples, not the fixture's minutely ones: three days of replay in seconds
    def hourly(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["timestamp"].dt.minute == 0].reset_index(drop=True)

    snap = replace(
        snap,
        meta=replace(snap.meta, step_seconds=3600),
        node_usage=hourly(snap.node_usage),
        pod_usage=hourly(snap.pod_usage),
    )
    return write_snapshot(snap, tmp_path_factory.mktemp("window") / "snap")


def _whatif(path: Path, *extra: str) -> dict[str, object]:
    args = ["whatif", str(path), "--strategy", "most-allocated", "--format", "json"]
    result = CliRunner().invoke(main, [*args, "--workers", "1", *extra])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.output)
    return data


def test_window_replays_the_busiest_day_and_says_so(three_days: Path) -> None:
    data = _whatif(three_days, "--window", "1d")
    # the spike's day: the only one whose requested peak is 4 cores rather than 1
    assert pd.Timestamp(str(data["start"])) == T0 + pd.Timedelta(days=1)
    assert pd.Timestamp(str(data["end"])) == T0 + pd.Timedelta(days=2)
    first = str(data["notes"][0])  # type: ignore[index]
    assert first.startswith("Replayed the busiest 1 day of the snapshot,")
    assert "not its whole 3 days" in first


def test_without_window_the_whole_range_is_replayed(three_days: Path) -> None:
    whole = _whatif(three_days)
    assert pd.Timestamp(str(whole["start"])) == T0
    assert pd.Timestamp(str(whole["end"])) == T0 + pd.Timedelta(days=3)
    assert not any("busiest" in str(n) for n in whole["notes"])  # type: ignore[attr-defined]
    # a window as long as the snapshot is the snapshot: nothing cut, nothing said
    longer = _whatif(three_days, "--window", "5d")
    assert (longer["start"], longer["end"]) == (whole["start"], whole["end"])
    assert longer["notes"] == whole["notes"]


@pytest.mark.parametrize("value", ["2x", "0d", "-1", "d"])
def test_a_bad_window_is_one_line_naming_the_option(three_days: Path, value: str) -> None:
    args = ["whatif", str(three_days), "--strategy", "most-allocated", "--window", value]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == documented_exit("window-days")
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--window" in lines[0] and "2d" in lines[0]
    assert "Traceback" not in result.output


def test_monthly_window_needs_a_snapshot(tmp_path: Path) -> None:
    """``report monthly --window`` replays a snapshot's days: without one it is refused first."""
    args = ["report", "monthly", str(tmp_path), "--out", str(tmp_path / "m"), "--window", "2d"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == documented_exit("window-no-snapshot"), result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].endswith("--window: only with --snapshot SNAP (the window it replays)")
    assert not (tmp_path / "m").exists()
