"""Chunk-by-chunk evaluation of raw samples equals evaluating the whole range at once.

``analyzer.prom.samples.evaluate`` is the plain definition (every raw series on the whole grid,
then ``max by`` dedupe labels, then ``sum by``), itself checked against a real Prometheus in
tests/test_collect_fast_paths.py. The accumulator sees the same raw data cut into disjoint time
chunks, delivered out of order, and keeps only short tails between chunks; every grid value must
come out identical, for counters (irate, with resets and gaps) and gauges (5 m lookback).
"""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.prom import sample_table
from analyzer.prom.client import Series
from analyzer.prom.sample_table import SampleAccumulator, SampleTable
from analyzer.prom.samples import SampleRule, evaluate

STEP = 60
GRID = np.arange(0, 240 * STEP + 1, STEP, dtype=np.float64)


def _raw(rng: np.random.Generator, pods: int, counter: bool) -> list[Series]:
    """Containers of a few pods: random lifetimes, jittered 30-90 s scrapes, gaps, HA copies."""
    out = []
    for p in range(pods):
        for c in range(int(rng.integers(1, 3))):
            begin = float(rng.integers(-20, 200)) * STEP
            length = float(rng.integers(2, 120)) * STEP
            times = np.cumsum(rng.uniform(30, 90, size=int(length / 30)))
            times = begin + times[times < length]
            times = times[(times < 140 * STEP) | (times > 150 * STEP)]  # a scrape gap
            values = rng.uniform(0, 5, size=len(times))
            if counter:
                values = np.cumsum(values)
                if len(values) > 10:
                    values[len(values) // 2 :] -= values[len(values) // 2] - 1.0  # a reset
            for replica in range(int(rng.integers(1, 3))):  # HA pair: same series twice
                labels = {"namespace": "ns", "pod": f"p{p}", "container": f"c{c}"}
                labels["replica"] = str(replica)
                jitter = rng.uniform(-5, 5) if replica else 0.0
                out.append(Series(labels, np.round(times + jitter, 3), values.copy()))
    return out


def _chunks(series: list[Series], ends: list[float]) -> list[list[Series]]:
    """Cut every raw series at the chunk ends: chunk i holds (ends[i-1], ends[i]]."""
    out: list[list[Series]] = []
    lower = -np.inf
    for end in ends:
        part = []
        for s in series:
            keep = (s.timestamps > lower) & (s.timestamps <= end)
            if keep.any():
                part.append(Series(s.labels, s.timestamps[keep], s.values[keep]))
        out.append(part)
        lower = end
    return out


def _keyed(series: list[Series]) -> dict[tuple[tuple[str, str], ...], Series]:
    return {tuple(sorted(s.labels.items())): s for s in series}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    ("chunk_minutes", "block_rows", "part_rows"),
    [(7, 8192, 1 << 19), (60, 8192, 1 << 19), (1000, 8192, 1 << 19), (1000, 13, 50), (60, 1, 1)],
)
def test_chunked_equals_whole_range(
    seed: int, chunk_minutes: int, block_rows: int, part_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A chunk's raw series are evaluated a block of whole label groups at a time and joined into
    # parts of about ``part_rows`` rows (13 / 1 rows: blocks of one or two pods, so group sums,
    # the HA max and the join all meet block and part boundaries).
    monkeypatch.setattr(sample_table, "BLOCK_ROWS", block_rows)
    monkeypatch.setattr(sample_table, "PART_ROWS", part_rows)
    rng = np.random.default_rng(seed)
    rules = {
        "cpu": SampleRule(
            True, 2 * STEP, 300, ("namespace", "pod", "container"), ("namespace", "pod")
        ),
        "mem": SampleRule(
            False, 2 * STEP, 300, ("namespace", "pod", "container"), ("namespace", "pod")
        ),
    }
    raw = {"cpu": _raw(rng, 8, counter=True), "mem": _raw(rng, 8, counter=False)}
    ends = [float(e) for e in np.arange(-20 * STEP, GRID[-1], chunk_minutes * STEP)][1:]
    ends.append(float(GRID[-1]))
    accumulator = SampleAccumulator(rules, GRID, ends)
    deliveries = [
        (name, i, part) for name in raw for i, part in enumerate(_chunks(raw[name], ends))
    ]
    for k in rng.permutation(len(deliveries)):  # out of order, as a thread pool returns them
        name, i, part = deliveries[k]
        accumulator.add(name, i, part)
    table = accumulator.finish()
    for name, rule in rules.items():
        want = _keyed(evaluate(raw[name], GRID, rule))
        got = _keyed(table.series(name, GRID))
        assert set(got) == set(want) and want
        for key, series in want.items():
            np.testing.assert_array_equal(got[key].timestamps, series.timestamps)
            np.testing.assert_array_equal(got[key].values, series.values)
    # every row carries a value of at least one query, and (group, step) is unique
    assert (~np.isnan(table.values["cpu"]) | ~np.isnan(table.values["mem"])).all()
    assert len(set(zip(table.group.tolist(), table.step.tolist(), strict=True))) == len(table)
    # each part is sorted by group, then step (consumers split parts into groups by that order)
    for group, step, _ in table.parts:
        key = group.astype(np.int64) * len(GRID) + step
        assert (np.diff(key) > 0).all()


def test_a_failed_query_leaves_its_column_empty() -> None:
    rule = SampleRule(False, 120, 300, ("pod",), ("pod",))
    accumulator = SampleAccumulator({"a": rule, "b": rule}, GRID[:11], [300.0, 600.0])
    a = Series({"pod": "x"}, np.array([0.0, 60.0, 400.0]), np.array([1.0, 2.0, 3.0]))
    accumulator.add("a", 1, [Series(a.labels, a.timestamps[2:], a.values[2:])])
    accumulator.add("b", 0, [Series({"pod": "y"}, np.array([30.0]), np.array([7.0]))])
    accumulator.abandon("b")
    accumulator.add("b", 1, [Series({"pod": "y"}, np.array([500.0]), np.array([8.0]))])  # ignored
    accumulator.add("a", 0, [Series(a.labels, a.timestamps[:2], a.values[:2])])
    table = accumulator.finish()
    got = _keyed(table.series("a", GRID[:11]))[(("pod", "x"),)]
    # gauge: newest sample within 5 m; t = 0, 60 .. 360 from the first two, 420 .. 600 from 400
    assert got.timestamps.tolist() == [float(t) for t in range(0, 601, 60)]
    assert got.values.tolist() == [1.0] + [2.0] * 6 + [3.0] * 4
    # b's first chunk was evaluated before it failed: y at t = 60 .. 300 (30 s + 5 m lookback)
    assert _keyed(table.series("b", GRID[:11]))[(("pod", "y"),)].values.tolist() == [7.0] * 5


def test_from_series_joins_on_group_and_step() -> None:
    a = Series({"pod": "x"}, np.array([60.0, 120.0]), np.array([1.0, 2.0]))
    b = Series({"pod": "x"}, np.array([120.0, 180.0]), np.array([5.0, 6.0]))
    table = SampleTable.from_series({"cpu": [a], "mem": [b]}, start=0, step=60)
    assert table.step.tolist() == [1, 2, 3]
    np.testing.assert_array_equal(table.values["cpu"], [1.0, 2.0, np.nan])
    np.testing.assert_array_equal(table.values["mem"], [np.nan, 5.0, 6.0])


def test_a_series_that_starts_where_another_ends() -> None:
    # A container restarted in place: the new series' first sample has the old one's last
    # timestamp (and value), so laid end to end the two meet at dt = 0. That pair must not count
    # (irate) nor warn; the grid values are the definition's (``max by`` merges the overlap).
    rule = SampleRule(True, 2 * STEP, 300, ("pod", "container"), ("pod",))
    old_times = np.arange(-120.0, 301.0, 60.0)
    new_times = np.arange(300.0, 900.0, 60.0)
    raw = [
        Series({"pod": "p", "container": "a", "id": "1"}, old_times, 5.0 * np.arange(8.0)),
        Series({"pod": "p", "container": "a", "id": "2"}, new_times, 35.0 + np.arange(10.0)),
    ]
    grid = GRID[:15]
    accumulator = SampleAccumulator({"cpu": rule}, grid, [float(grid[-1])])
    accumulator.add("cpu", 0, raw)
    got = accumulator.finish().series("cpu", grid)
    want = evaluate(raw, grid, rule)
    assert len(got) == len(want) == 1
    np.testing.assert_array_equal(got[0].timestamps, want[0].timestamps)
    np.testing.assert_array_equal(got[0].values, want[0].values)


def test_accumulator_on_steps_matches_the_grid_array() -> None:
    # The collector describes its grid by start, step and count (a range of years then costs no
    # grid-sized array); chunk bounds and the grid must be the array constructor's exactly, for
    # chunk ends before the grid, on a grid point, between two, and after the grid.
    rule = SampleRule(False, 2 * STEP, 300, ("pod",), ("pod",))
    ends = [-20.0 * STEP, -1.0, 0.0, 59.0, 60.0, 61.0, 121.0 * STEP, float(GRID[-1]), 1e9]
    by_array = SampleAccumulator({"m": rule}, GRID, ends)
    by_steps = SampleAccumulator.on_steps({"m": rule}, 0, STEP, len(GRID), ends)
    assert by_steps.bounds == by_array.bounds
    assert by_steps.spec == by_array.spec
    assert by_steps.bounds[2] == (0, 1) and by_steps.bounds[-1] == (len(GRID), len(GRID))
