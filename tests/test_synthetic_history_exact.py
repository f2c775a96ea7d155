"""The coarse history's rollups computed with less work are the same rows (branch histexact).

- ``interval_mean_peak``'s per-group peak (a maximum over each group's run of the sorted events)
  equals the peak found by brute force: the total weight present just after every instant at
  which an interval starts, for random intervals in several groups, some groups empty.
- ``synthetic_history.day_rows`` (the day's pod intervals built once and read by both rollups)
  gives, frame for frame, exactly what ``pool_rollups``/``workload_rollups`` give when each
  builds its own, on every day of a small two-day cluster; and the same again on
  ``rollup_view`` (the snapshot with only the pod columns the rollups read), which drops columns.
"""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd
import pytest

from analyzer.core.snapshot import Snapshot
from analyzer.nightly.capacity_rollups import interval_mean_peak, pool_rollups, workload_rollups
from analyzer.nightly.run import DAY, slice_snapshot
from analyzer.nightly.synthetic_history import day_rows, rollup_view
from analyzer.sources.spec import SyntheticSpec
from analyzer.sources.synthetic import generate


def _brute_peak(groups: np.ndarray, starts: np.ndarray, ends: np.ndarray, weights: np.ndarray,
                lo: int, hi: int, n: int) -> list[int]:  # fmt: skip
    """The highest total weight present at any instant, per group, by the definition: the total
    can only rise where an interval starts, and [s, e) is present at t when s <= t < e."""
    peak = [0] * n
    s, e = np.clip(starts, lo, hi), np.clip(ends, lo, hi)
    for k in range(len(groups)):
        if e[k] <= s[k]:
            continue
        t = s[k]
        present = (groups == groups[k]) & (s <= t) & (e > t) & (e > s)
        peak[groups[k]] = max(peak[groups[k]], int(weights[present].sum()))
    return peak


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_interval_peak_per_group_equals_the_brute_force_peak(seed: int) -> None:
    rng = np.random.default_rng(seed)
    count, n = 60, 7
    groups = rng.choice([0, 2, 3, 6], size=count)  # groups 1, 4, 5 hold no interval
    starts = rng.integers(-10, 100, size=count)
    ends = starts + rng.integers(0, 40, size=count)  # some empty, some past hi
    weights = rng.integers(0, 5, size=count)
    _mean, peak = interval_mean_peak(groups, starts, ends, weights, lo=0, hi=100, n_groups=n)
    assert list(peak) == _brute_peak(groups, starts, ends, weights, 0, 100, n)
    assert peak[[1, 4, 5]].tolist() == [0, 0, 0]


@pytest.fixture(scope="module")
def cluster() -> Snapshot:
    return generate(SyntheticSpec(seed=4, nodes=6, days=2, step=3600)).snapshot


def test_day_rows_equal_each_rollup_on_its_own(cluster: Snapshot) -> None:
    snapshot = cluster
    first = pd.Timestamp(snapshot.start).floor("D")
    days = [first + k * DAY for k in range(3)]  # the range's two days and their neighbours
    checked = 0
    for start in days:
        day = date(start.year, start.month, start.day)
        pools, workloads = day_rows(snapshot, day)
        today = slice_snapshot(snapshot, start, start + DAY)
        pd.testing.assert_frame_equal(pools, pool_rollups(today, start, start + DAY))
        pd.testing.assert_frame_equal(workloads, workload_rollups(today, start, start + DAY))
        checked += len(workloads) > 0
    assert checked >= 2  # the cluster's days had workloads to compare


def test_rollups_of_the_narrow_view_equal_those_of_the_whole_snapshot(cluster: Snapshot) -> None:
    snapshot = cluster
    narrow = rollup_view(snapshot)
    assert len(narrow.pods.columns) < len(snapshot.pods.columns)
    first = pd.Timestamp(snapshot.start).floor("D")
    for k in range(3):
        start = first + k * DAY
        day = date(start.year, start.month, start.day)
        whole, part = day_rows(snapshot, day), day_rows(narrow, day)
        for a, b in zip(whole, part, strict=True):
            pd.testing.assert_frame_equal(a, b, check_exact=True)
