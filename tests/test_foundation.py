"""Durations, times, atomic writes and the config file → option defaults."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.atomic import atomic_write_text
from analyzer.core.config import build_default_map
from analyzer.core.durations import format_duration, go_duration, parse_duration, parse_time
from analyzer.core.errors import InputError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5m", 300), ("1h30m", 5400), ("30d", 2_592_000), ("90s", 90), ("5m0s", 300), ("1w", 604800)],
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "5", "m5", "5 m", "1h-5m", "5x"])
def test_bad_duration(text: str) -> None:
    with pytest.raises(InputError, match="--since"):
        parse_duration(text, field="--since")


def test_duration_renderings() -> None:
    assert format_duration(timedelta(hours=1, minutes=30)) == "1h30m"
    assert go_duration(timedelta(minutes=5)) == "5m0s"  # NodeMetric's Go spelling
    assert go_duration(timedelta(hours=1)) == "1h0m0s"


def test_parse_time_is_utc() -> None:
    assert parse_time("2026-11-01T12:00:00Z") == datetime(2026, 11, 1, 12, tzinfo=UTC)
    assert parse_time("2026-11-01T13:00:00+01:00") == datetime(2026, 11, 1, 12, tzinfo=UTC)
    assert parse_time("0") == datetime(1970, 1, 1, tzinfo=UTC)
    with pytest.raises(InputError, match="--at"):
        parse_time("yesterday", field="--at")


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    atomic_write_text(path, "old")
    atomic_write_text(path, "new")
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_config_section_beats_top_level_and_unknown_keys_fail() -> None:
    commands = {
        "collect": {"step": "step", "prometheus": "prometheus", "header": "headers"},
        "report-nightly": {"out": "out"},
    }
    data = {"step": "5m", "collect": {"step": "1m"}, "out": "/r", "header": ["K=V"]}
    result = build_default_map(data, commands)
    assert result["collect"] == {"step": "1m", "headers": ["K=V"]}  # flag spelling → parameter
    assert result["report-nightly"] == {"out": "/r"}
    with pytest.raises(InputError, match="unknown option 'stepp'"):
        build_default_map({"stepp": 1}, commands)
    with pytest.raises(InputError, match=r"collect\.out"):
        build_default_map({"collect": {"out": 1}}, commands)


def test_cli_reports_bad_config_in_one_line_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "analyzer.yaml"
    config.write_text("no_such_option: 1\n")
    result = CliRunner().invoke(main, ["--config", str(config), "inspect", str(tmp_path)])
    assert result.exit_code == 2
    assert "unknown option 'no_such_option'" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_inspect_of_a_non_snapshot_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["inspect", str(tmp_path)])
    assert result.exit_code == 2
    assert "not a snapshot" in result.output
