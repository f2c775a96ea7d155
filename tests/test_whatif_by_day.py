"""The what-if's pod usage read one day at a time (issue 27 item 3): the same figures as whole.

``analyzer whatif SNAPSHOT`` leaves the snapshot's pod usage on disk and hands the replay its grid
rows one UTC day of grid columns at a time (``analyzer.replay.podrows``). Every sum over a grid
column's rows must add the same values in the same order as the whole-table path, so the what-if's
report is identical, bit for bit. The snapshot spans three days and starts at 07:00, so the grid
has three day chunks and LoadAwareScheduling's 5-minute windows cross two midnights.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.snapshot import Snapshot, read_snapshot, write_snapshot
from analyzer.replay import podrows, projection
from analyzer.replay.engine import OBSERVED_STRATEGY, replay
from analyzer.replay.input import prepare
from analyzer.replay.podrows import day_chunks, group_blocks, read_for_replay, sampled_uids
from analyzer.replay.projection import attribute, project, projected_snapshot, usage_matrices
from analyzer.sources import SyntheticSpec, generate

DAY = pd.Timedelta(days=1)


@pytest.fixture(scope="module")
def snap_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 nodes, 2.5 days at 10 minutes from 07:00: three UTC days of grid columns."""
    spec = SyntheticSpec(
        seed=3, nodes=4, days=2.5, step=600, start=datetime(2026, 3, 2, 7, tzinfo=UTC)
    )
    snap = generate(spec).snapshot
    return write_snapshot(snap, tmp_path_factory.mktemp("byday") / "snap")


def _pair(path: Path) -> tuple[Snapshot, Snapshot]:
    """The snapshot with its pod usage left on disk, and read whole."""
    lazy = read_for_replay(path)
    assert lazy.pod_usage.empty and lazy.node_usage.empty and lazy.usage_dir == path
    return lazy, read_snapshot(path)


def test_day_chunks_are_whole_days_of_columns(snap_path: Path) -> None:
    lazy, whole = _pair(snap_path)
    mats = usage_matrices(prepare(lazy))
    chunks = mats.rows.chunks
    assert len(chunks) == 3  # 07:00 on the 2nd .. 19:00 on the 4th: parts of three UTC days
    assert chunks[0][0] == 0 and chunks[-1][1] == len(mats.times)
    assert all(a < b for a, b in chunks) and all(
        chunks[k][1] == chunks[k + 1][0] for k in range(len(chunks) - 1)
    )
    # a column at 00:00 closes the day before (docs/snapshot.md "Day partitions")
    first_end = pd.Timestamp(int(mats.times[chunks[0][1] - 1]), tz="UTC")
    assert first_end == pd.Timestamp("2026-03-03T00:00:00Z")
    assert day_chunks(mats.times[:0]) == []
    del whole


def test_day_rows_equal_the_whole_tables_rows(snap_path: Path) -> None:
    lazy, whole = _pair(snap_path)
    by_day, at_once = usage_matrices(prepare(lazy)), usage_matrices(prepare(whole))
    assert len(at_once.rows.chunks) == 1
    a, b = by_day.pod_rows, at_once.pod_rows
    assert len(a["pod"]) == len(b["pod"]) > 1000
    for key in ("pod", "col", "cpu", "memory"):
        assert np.array_equal(a[key], b[key]), key
    assert by_day.node == {}  # streamed: only the overhead is kept
    width = len(at_once.times)
    node = projection._node_matrices(prepare(lazy), width)  # node usage read day by day
    for r in ("cpu", "memory"):  # the node usage; the overhead: sums per (node, column)
        assert np.array_equal(node[r], at_once.node[r], equal_nan=True)
        assert np.isnan(at_once.node[r]).mean() < 0.5  # mostly sampled: a real comparison
        assert np.array_equal(by_day.overhead[r], at_once.overhead[r], equal_nan=True)
    # a window across midnight: the two days' rows joined in column order
    c = by_day.rows.chunks[1][0]
    part = by_day.rows.span(c - 3, c + 3)
    lo, hi = np.searchsorted(b["col"], [c - 3, c + 3])
    assert np.array_equal(part["pod"], b["pod"][lo:hi])
    assert len(by_day.rows._cache) <= 2  # never more than two days held for the feed


def test_projection_and_projected_pod_usage_equal(snap_path: Path) -> None:
    lazy, whole = _pair(snap_path)
    out = []
    for snap in (lazy, whole):
        inp = prepare(snap)
        mats = usage_matrices(inp)
        result = replay(inp, OBSERVED_STRATEGY)
        owner = attribute(inp, result, mats)
        usage = project(inp, result, mats, owner)
        projected = projected_snapshot(inp, result, mats, usage, owner=owner)
        out.append((usage, projected.pod_usage))
    for r in ("cpu", "memory"):
        assert np.array_equal(out[0][0][r], out[1][0][r], equal_nan=True)
    assert len(out[0][1]) > 1000
    pd.testing.assert_frame_equal(out[0][1], out[1][1])


def test_a_day_reads_only_the_row_groups_near_it(snap_path: Path) -> None:
    lazy, _ = _pair(snap_path)
    inp = prepare(lazy)
    mats = usage_matrices(inp)
    total = pq.ParquetFile(snap_path / "pod_usage.parquet").num_row_groups
    assert total >= 3  # one or more row groups per UTC day (docs/snapshot.md "Day partitions")
    c0, c1 = mats.rows.chunks[0]
    groups = list(group_blocks(snap_path, "pod_usage", mats.times, inp.step, c0, c1)(["timestamp"]))
    assert 1 <= len(groups) < total  # the last day's row groups are skipped unread
    last = max(int(pc.max(g.column("timestamp")).value) for g in groups)
    assert last > int(mats.times[c1 - 1])  # the next day's first group: within one step


def test_sampled_uids_match_the_table(snap_path: Path) -> None:
    lazy, whole = _pair(snap_path)
    pods = pd.concat([whole.pods["uid"], pd.Series(["not-a-pod"])], ignore_index=True)
    expected = pods.isin(set(whole.pod_usage["uid"].astype(str))).to_numpy()
    assert expected.any() and not expected.all()
    assert np.array_equal(sampled_uids(snap_path, pods), expected)
    del lazy


def _report(path: Path, out: Path) -> dict[str, object]:
    result = CliRunner().invoke(
        main,
        ["report", "whatif", str(path), "--out", str(out), "--strategy", "kube-default",
         "--strategy", "most-allocated", "--strategy", "koord-loadaware", "--workers", "1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads((out / "report.json").read_text())
    data.pop("generated_at", None)  # the wall clock: the only field that may differ
    return data


def test_whatif_report_identical_by_day_and_whole(
    snap_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_day = _report(snap_path, tmp_path / "by_day")
    monkeypatch.setattr(podrows, "BY_DAY", False)
    whole = _report(snap_path, tmp_path / "whole")
    assert by_day == whole
    rows = {r["strategy"]: r for r in whole["tables"]["comparison"]}  # type: ignore[index]
    assert set(rows) >= {"observed", "kube-default", "most-allocated", "koord-loadaware"}
