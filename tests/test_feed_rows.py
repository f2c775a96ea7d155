"""LoadAwareScheduling's feed reads the streamed pod usage forward, one day and a tail at a time.

``analyzer.replay.feedrows.RecentRows`` hands the feed the rows of the columns the replay clock
has just passed and of the 5-minute usage window behind it, keeping only the current UTC day and
the previous day's last minutes. Walked forward like the feed's clock, every answer must be the
same arrays as the whole range's rows, no request may fall behind what is kept (a reread would
hide a too-short tail), and what is held never exceeds a day plus the tail. The what-if's
``report.json`` with koord-loadaware, streamed against whole, is tests/test_whatif_by_day.py's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from analyzer.core.snapshot import read_snapshot, write_snapshot
from analyzer.replay.feedrows import RecentColumns, RecentRows
from analyzer.replay.input import prepare
from analyzer.replay.loadfeed import NODE_USAGE_WINDOW_S, REPORT_INTERVAL_S, SECOND
from analyzer.replay.podrows import read_for_replay
from analyzer.replay.projection import usage_matrices
from analyzer.sources import SyntheticSpec, generate

KEYS = ("pod", "col", "cpu", "memory")


@pytest.fixture(scope="module")
def snap_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 nodes, 2.5 days at 1 minute from 07:00: three UTC days, two midnights crossed."""
    spec = SyntheticSpec(
        seed=5, nodes=3, days=2.5, step=60, start=datetime(2026, 3, 2, 7, tzinfo=UTC)
    )
    return write_snapshot(generate(spec).snapshot, tmp_path_factory.mktemp("feedrows") / "s")


def test_forward_walk_equals_the_whole_rows_and_holds_a_day(snap_path: Path) -> None:
    streamed = usage_matrices(prepare(read_for_replay(snap_path)))
    whole = usage_matrices(prepare(read_snapshot(snap_path))).rows
    assert len(streamed.rows.chunks) == 3 and len(whole.chunks) == 1
    times = streamed.times
    step = int(times[1] - times[0])
    keep = (NODE_USAGE_WINDOW_S + 2 * REPORT_INTERVAL_S) * SECOND + 2 * step
    recent = RecentRows(streamed.rows, keep)
    day_columns = max(b - a for a, b in streamed.rows.chunks)
    tail_columns = keep // step + 1
    done, crossed = 0, 0
    for now in range(int(times[0]) + 1, int(times[-1]) + 2 * step, 60 * SECOND):
        passed = int(np.searchsorted(times, now, side="left"))
        for a, b, part in recent.parts(done, passed):  # the feed's ``_finalise``
            expected = whole.span(a, b)
            assert all(np.array_equal(part[k], expected[k]) for k in KEYS)
        done = max(done, passed)
        report = now - 1 - (now - 1 - int(times[0])) % (REPORT_INTERVAL_S * SECOND)
        lo = int(np.searchsorted(times, report - NODE_USAGE_WINDOW_S * SECOND, side="right"))
        hi = min(int(np.searchsorted(times, report, side="right")), done)
        got, expected = recent.span(lo, hi), whole.span(lo, hi)  # the pod cache's window
        assert all(np.array_equal(got[k], expected[k]) for k in KEYS)
        crossed += len(recent.parts(lo, hi)) == 2  # a window across midnight
        held = sum(b - a for a, b, _ in recent.held)
        assert held <= day_columns + tail_columns
    assert done == len(times) and recent.rereads == 0
    assert crossed > 0  # the tail was read: windows crossed both midnights
    assert len(recent.held) <= 2


def test_a_request_behind_the_tail_is_read_again_the_same(snap_path: Path) -> None:
    streamed = usage_matrices(prepare(read_for_replay(snap_path)))
    whole = usage_matrices(prepare(read_snapshot(snap_path))).rows
    recent = RecentRows(streamed.rows, 0)
    width = len(streamed.times)
    recent.span(width - 2, width)  # the last day read: the first two are gone
    got, expected = recent.span(0, 10), whole.span(0, 10)
    assert recent.rereads == 1
    assert all(np.array_equal(got[k], expected[k]) for k in KEYS)


@pytest.mark.parametrize("keep", [1, 3, 40])
def test_recent_columns_read_as_the_whole_matrix(keep: int) -> None:
    """Writes of 1..1,500 columns at a time (a day's jump: written in pieces), each followed by reads of
    every window the feed may still ask for: the same values as the whole matrix's slice."""
    rng = np.random.default_rng(keep)
    count, width = 4, 3000
    whole = rng.normal(size=(2, count, width))
    whole[rng.random(whole.shape) < 0.1] = np.nan
    buffer = RecentColumns(("cpu", "memory"), count, width, keep)
    assert buffer.capacity < width  # it must slide
    done = 0
    while done < width:
        n = int(min(width - done, rng.choice([1, 2, 7, 90, 1500])))
        buffer.put(
            done, {"cpu": whole[0][:, done : done + n], "memory": whole[1][:, done : done + n]}
        )
        done += n
        for lo in range(max(done - keep, 0), done + 1):
            for k, r in enumerate(("cpu", "memory")):
                got = buffer.get(r, slice(lo, done))
                assert np.array_equal(got, whole[k][:, lo:done], equal_nan=True)
    with pytest.raises(ValueError, match="older than the kept"):
        buffer.get("cpu", slice(0, 5))
