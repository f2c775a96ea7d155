"""The whole-range folds (``analyzer.prom.folds``) give what the merged chunks gave.

``run_profile`` used to keep every response of a window, times or node-state range query and
merge them at the end (``merge_series``, then ``sample_times`` for times); it now folds each
response on arrival. Here seeded random series — pods appearing and vanishing between chunks,
label sets that recur, NaN values, gaps in the grid — are cut into disjoint time chunks that
arrive in a shuffled order, and each fold must give exactly what the old merge gave: the same
series in the same order with the same ``window_values``, the same first/last times, the same
node-state intervals.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from analyzer.collect.common import window_values
from analyzer.collect.node_state import NODE_STATE_QUERIES, build_node_state
from analyzer.prom.fetch import QueryResult, merge_series
from analyzer.prom.folds import RunsFold, TimesFold, ValueRuns, WindowFold, value_runs
from analyzer.prom.profile import QuerySpec
from analyzer.prom.samples import sample_times
from analyzer.prom.series import Series
from analyzer.prom.time_grid import TimeGrid

STEP = 60
START = 1_800_000_000 - 1_800_000_000 % STEP


def _chunked(seed: int, chunks: int, points: int) -> list[list[Series]]:
    """``chunks`` disjoint time chunks of ``points`` grid points; in each, a random subset of
    12 label sets with random values (some NaN, some points missing)."""
    rng = np.random.default_rng(seed)
    out = []
    for c in range(chunks):
        times = START + (c * points + np.arange(points)) * STEP
        part = []
        for k in rng.permutation(12):
            if rng.random() < 0.3:
                continue  # the series is not in this chunk
            keep = rng.random(points) < 0.8
            values = rng.choice([0.0, 1.0, 2.0, np.nan], size=points, p=[0.3, 0.5, 0.1, 0.1])
            labels = {"node": f"n{k % 5}", "key": f"k{k}", "uid": f"u{k % 7}"}
            part.append(Series(labels, times[keep].astype(float), values[keep]))
        out.append(part)
    return out


def _arrivals(chunks: list[list[Series]], seed: int) -> list[int]:
    order = list(range(len(chunks)))
    random.Random(seed).shuffle(order)
    return order


def _spec(kind: str, name: str = "q", combine: str = "last", by: tuple[str, ...] = ()) -> QuerySpec:
    return QuerySpec(name=name, kind=kind, expr="x", combine=combine, by=by)


def _values(series: list[Series], combine: str) -> list[tuple[object, float, float]]:
    result = QueryResult(_spec("window", combine=combine), "x", series=series)
    return [(sorted(w.labels.items()), w.value, w.time) for w in window_values(result)]


@pytest.mark.parametrize("combine", ["last", "min", "max"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_window_fold_equals_the_merged_chunks(combine: str, seed: int) -> None:
    chunks = _chunked(seed, chunks=5, points=4)
    fold = WindowFold(combine)
    for index in _arrivals(chunks, seed):
        fold.add(index, chunks[index])
    folded = fold.finish()
    merged = merge_series(chunks)
    # the same series, in merge_series' order, each one point: (latest time, combined value)
    assert [sorted(s.labels.items()) for s in folded] == [sorted(s.labels.items()) for s in merged]
    assert all(len(s.timestamps) == 1 for s in folded)
    got, want = _values(folded, combine), _values(merged, combine)
    assert len(want) == len(merged) > 5
    np.testing.assert_equal(got, want)  # NaN equals NaN here, nothing else is loose


def _ends(series: Series) -> np.ndarray:
    return np.array([series.timestamps.min(), series.timestamps.max()])


@pytest.mark.parametrize("combine", ["min", "max"])
def test_times_fold_equals_sample_times_of_the_merged_chunks(combine: str) -> None:
    chunks = [[s for s in part if len(s.timestamps)] for part in _chunked(7, 6, 3)]
    # what ``time_bounds`` hands over per response: first and last time, as times and values
    bounds = [[Series(s.labels, _ends(s), _ends(s)) for s in part] for part in chunks]
    fold = TimesFold(("uid",), combine)
    for index in _arrivals(bounds, 7):
        fold.add(index, bounds[index])
    got = [(s.labels, float(s.timestamps[0]), float(s.values[0])) for s in fold.finish()]
    want = [
        (s.labels, float(s.timestamps[0]), float(s.values[0]))
        for s in sample_times(merge_series(bounds), ("uid",), combine)
    ]
    assert got == want
    assert len({t for _, t, _ in got}) > 1  # the groups' times differ: a real comparison


def _node_state(result: QueryResult) -> pd.DataFrame | None:
    grid = TimeGrid(START, START + 5 * 4 * STEP - STEP, STEP)
    return build_node_state({result.spec.name: result}, pd.DataFrame(), grid)


@pytest.mark.parametrize("name", NODE_STATE_QUERIES)
@pytest.mark.parametrize("seed", [4, 5])
def test_runs_fold_gives_the_node_state_of_the_merged_points(name: str, seed: int) -> None:
    chunks = _chunked(seed, chunks=5, points=4)
    fold = RunsFold(STEP)
    for index in _arrivals(chunks, seed):
        fold.add(index, chunks[index])
    runs = fold.finish()
    merged = merge_series(chunks)
    # the runs say the same points: expanded on the grid they are the merged series
    for one, whole in zip(runs, merged, strict=True):
        assert one.labels == whole.labels
        times = np.concatenate(
            [np.arange(a, b + 1, STEP) for a, b in zip(one.firsts, one.lasts, strict=True)]
        )
        values = np.repeat(one.values, ((one.lasts - one.firsts) // STEP + 1).astype(int))
        np.testing.assert_array_equal(times, whole.timestamps)
        np.testing.assert_array_equal(values, whole.values)
    spec = _spec("range", name)
    folded = _node_state(QueryResult(spec, "x", runs=runs))
    whole_state = _node_state(QueryResult(spec, "x", series=merged))
    assert folded is not None and whole_state is not None and len(whole_state) > 3
    pd.testing.assert_frame_equal(folded, whole_state, check_exact=True)


def test_value_runs_break_at_gaps_and_value_changes() -> None:
    ts = START + STEP * np.array([0, 1, 2, 4, 5, 6, 7], dtype=float)
    series = Series({}, ts, np.array([1, 1, 1, 1, 0, np.nan, np.nan]))
    runs: ValueRuns = value_runs(series, STEP)
    # a gap of two steps after the third point, then a change to 0, then two NaN points
    assert (runs.firsts - START).tolist() == [0, 4 * STEP, 5 * STEP, 6 * STEP]
    assert (runs.lasts - START).tolist() == [2 * STEP, 4 * STEP, 5 * STEP, 7 * STEP]
    np.testing.assert_equal(runs.values, [1.0, 1.0, 0.0, np.nan])
