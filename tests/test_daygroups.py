"""Day partitions of the usage tables: the layout, window reads, and same data -> same answer.

A snapshot written now keeps each usage table in row groups that never span a UTC day
(core/daygroups.py); a snapshot written before (one table, row groups across days, uid-major
order) must read the same and give every consumer the same result. Drives the real CLI.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.core.snapshot import iter_usage, read_snapshot, read_usage

DAY = pd.Timedelta(days=1)
ONE_NS = pd.Timedelta(1, "ns")
KEYS = {"node_usage": ["node", "timestamp"], "pod_usage": ["uid", "timestamp"]}


def invoke(args: list[str]) -> Result:
    return CliRunner().invoke(main, args)


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(day-partitioned snapshot from `generate`, the same data in the old one-group layout)."""
    root = tmp_path_factory.mktemp("layouts")
    new = root / "new"
    result = invoke(["generate", "--out", str(new), "--nodes", "4", "--days", "3", "--step", "5m"])
    assert result.exit_code == 0, result.output
    old = root / "old"
    shutil.copytree(new, old)
    for table, keys in KEYS.items():
        # the old writer: the whole table in one to_parquet, entity-major (as collect builds it)
        frame = pd.read_parquet(new / f"{table}.parquet").sort_values(keys, kind="stable")
        frame.to_parquet(old / f"{table}.parquet", index=False, row_group_size=10**9)
    meta = json.loads((old / "meta.json").read_text())
    meta["extra"].pop("usage_layout")
    (old / "meta.json").write_text(json.dumps(meta))
    return new, old


def _day(stamp: object) -> pd.Timestamp:
    moment = pd.Timestamp(stamp)  # type: ignore[arg-type]
    moment = moment.tz_convert("UTC") if moment.tzinfo else moment.tz_localize("UTC")
    return (moment - ONE_NS).floor("D")


def test_written_row_groups_never_span_a_day(layouts: tuple[Path, Path]) -> None:
    new, old = layouts
    assert json.loads((new / "meta.json").read_text())["extra"]["usage_layout"] == "day-row-groups"
    for table in KEYS:
        meta = pq.ParquetFile(new / f"{table}.parquet").metadata
        column = meta.schema.names.index("timestamp")
        days = []
        for group in range(meta.num_row_groups):
            stats = meta.row_group(group).column(column).statistics
            assert _day(stats.min) == _day(stats.max), (table, group)
            days.append(_day(stats.min))
        # three days of 5-minute samples from 11-01 00:00 to 11-04 00:00 inclusive: the first
        # sample (00:00) closes 10-31, the day before
        assert sorted(set(days)) == list(pd.date_range("2026-10-31", "2026-11-03", tz="UTC"))
        # the fixture's old copy really is the other layout: one group across all days
        assert pq.ParquetFile(old / f"{table}.parquet").metadata.num_row_groups == 1


def _sorted(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    frame = frame.assign(**{KEYS[table][0]: frame[KEYS[table][0]].astype(str)})
    return frame.sort_values(KEYS[table]).reset_index(drop=True)


def test_both_layouts_read_back_equal(layouts: tuple[Path, Path]) -> None:
    new, old = (read_snapshot(path) for path in layouts)
    pd.testing.assert_frame_equal(new.nodes, old.nodes)
    pd.testing.assert_frame_equal(new.pods, old.pods)
    for table in KEYS:
        assert len(getattr(new, table)) > 0
        pd.testing.assert_frame_equal(
            _sorted(getattr(new, table), table), _sorted(getattr(old, table), table)
        )


@pytest.mark.parametrize("which", [0, 1], ids=["day-groups", "old"])
def test_a_window_is_exactly_the_rows_inside_it(layouts: tuple[Path, Path], which: int) -> None:
    path = layouts[which]
    full = read_snapshot(path)
    start = pd.Timestamp("2026-11-01T22:00:00Z")  # straddles midnight: two days' row groups
    end = pd.Timestamp("2026-11-02T03:00:00Z")
    for table in KEYS:
        whole = getattr(full, table)
        stamps = whole["timestamp"]
        inside = whole[(stamps > start) & (stamps <= end)]
        window = read_usage(path, table, start, end)
        assert window["timestamp"].min() == start + pd.Timedelta(minutes=5)  # start excluded
        assert window["timestamp"].max() == end  # end included
        pd.testing.assert_frame_equal(_sorted(window, table), _sorted(inside, table))
        days = [d.date() for d in pd.date_range("2026-10-31", "2026-11-03")]
        parts = [frame for _day, frame in iter_usage(path, table, days)]
        assert sum(map(len, parts)) == len(whole)  # every sample in exactly one day
        pd.testing.assert_frame_equal(
            _sorted(pd.concat(parts, ignore_index=True), table), _sorted(whole, table)
        )


def _nightly(snapshot: Path, out: Path) -> dict[str, object]:
    result = invoke(["report", "nightly", str(snapshot), "--out", str(out), "--date", "2026-11-02"])
    assert result.exit_code in (0, 3), result.output
    tables = {p.name: p.read_text() for p in sorted((out / "2026-11-02").glob("*.csv"))}
    history = {
        f"{p.parent.name}/{p.name}": pd.read_parquet(p).to_csv()
        for p in sorted((out / "history").glob("*/*.parquet"))
    }
    assert tables and history
    return {"exit": result.exit_code, **tables, **history}


def test_consumers_give_the_same_answer_in_both_layouts(
    layouts: tuple[Path, Path], tmp_path: Path
) -> None:
    new, old = layouts
    assert _nightly(new, tmp_path / "a") == _nightly(old, tmp_path / "b")
    aggregates = [invoke(["aggregate", str(path), "--format", "csv"]) for path in layouts]
    assert aggregates[0].exit_code == 0 and aggregates[0].output.count("\n") > 4
    assert aggregates[0].output == aggregates[1].output
    args = ["--strategy", "most-allocated", "--format", "json", "--workers", "1"]
    whatifs = [invoke(["whatif", str(path), *args]) for path in layouts]
    assert whatifs[0].exit_code == 0, whatifs[0].output
    assert json.loads(whatifs[0].output) == json.loads(whatifs[1].output)


def test_usage_of_the_wrong_schema_is_one_line(layouts: tuple[Path, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(layouts[0], bad)
    frame = pd.read_parquet(bad / "pod_usage.parquet")
    frame["timestamp"] = frame["timestamp"].astype(str)
    frame.to_parquet(bad / "pod_usage.parquet", index=False)
    # nightly reads a window of it, aggregate none of its rows: both check its schema first
    for args in (
        ["report", "nightly", str(bad), "--out", str(tmp_path / "o")],
        ["aggregate", str(bad)],
    ):
        result = invoke(args)
        assert result.exit_code == documented_exit("snapshot-usage-schema")
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and "pod_usage.parquet" in lines[0] and "timestamp" in lines[0]
        assert "re-create the snapshot" in lines[0]
    assert not (tmp_path / "o").exists()  # nothing half-written


def test_a_day_without_data_is_one_line(layouts: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke(
        ["report", "nightly", str(layouts[0]), "--out", str(out), "--date", "2026-11-09"]
    )
    assert result.exit_code == documented_exit("snapshot-day-missing")
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "analyzer: error: --date: 2026-11-09 has no usage data"
    )
    assert "2026-10-31 to 2026-11-03" in lines[0]  # names the days that do have data


def test_day_group_writer_writes_what_write_day_groups_writes(
    layouts: tuple[Path, Path], tmp_path: Path
) -> None:
    # A streamed collect appends one day at a time; the file must read back as the one
    # write_day_groups makes from the whole table: same rows, same schema, same row groups.
    from analyzer.core.daygroups import DayGroupWriter, day_codes, write_day_groups
    from analyzer.core.snapshot_schema import coerce_table, empty_table

    usage = (
        read_snapshot(layouts[0]).pod_usage.iloc[::20].reset_index(drop=True)
    )  # every day, fewer rows
    whole, streamed = tmp_path / "whole.parquet", tmp_path / "streamed.parquet"
    write_day_groups(usage, whole)
    writer = DayGroupWriter(streamed)
    days = day_codes(usage["timestamp"])
    for day in np.unique(days):
        writer.append(coerce_table(usage[days == day], "pod_usage"))
        writer.append(coerce_table(usage.iloc[:0], "pod_usage"))  # an empty day adds nothing
    writer.close(empty_table("pod_usage"))
    assert writer.rows == len(usage)
    a, b = pq.ParquetFile(whole), pq.ParquetFile(streamed)
    assert a.schema_arrow == b.schema_arrow
    assert a.num_row_groups == b.num_row_groups == len(np.unique(days))
    pd.testing.assert_frame_equal(pd.read_parquet(whole), pd.read_parquet(streamed))
    # no day at all: the empty table of the schema, as write_day_groups writes an empty frame
    nothing = DayGroupWriter(tmp_path / "empty.parquet")
    nothing.close(empty_table("pod_usage"))
    assert pd.read_parquet(tmp_path / "empty.parquet").empty
