"""Range planning, chunk merging and the query profile format (no server needed)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.core.errors import InputError
from analyzer.prom.client import Series
from analyzer.prom.fetch import FetchPlan, merge_series
from analyzer.prom.profile import QuerySpec, load_profile, parse_query_file
from analyzer.prom.samples import SampleRule, evaluate
from analyzer.prom.time_grid import MAX_POINTS, make_grid, range_chunks


@settings(deadline=None)  # 50,000-step grids: a loaded shared machine took 0.2-0.5 s per example
@given(
    start=st.integers(0, 10**6),
    steps=st.integers(0, 50_000),
    step=st.integers(1, 600),
    chunk=st.integers(1, 20_000),
)
def test_range_chunks_tile_the_grid_under_the_point_limit(
    start: int, steps: int, step: int, chunk: int
) -> None:
    end = start + steps * step
    chunks = range_chunks(start, end, step, chunk)
    assert chunks[0][0] == start and chunks[-1][1] == end
    for (_, e), (s2, _) in itertools.pairwise(chunks):
        assert s2 == e + step  # contiguous, no point requested twice
    for s, e in chunks:
        assert (e - s) % step == 0
        assert (e - s) // step + 1 <= min(chunk, MAX_POINTS)  # Prometheus allows 11,000 intervals


def test_make_grid_aligns_to_the_step_and_rejects_empty_ranges() -> None:
    grid = make_grid(1000.5, 2000.0, 60)
    assert (grid.start, grid.end, grid.points) == (1020, 1980, 17)
    with pytest.raises(InputError, match="range is empty"):
        make_grid(1030, 1000, 60)
    # a range shorter than one step is not empty, the step is too long: the message says so
    with pytest.raises(InputError, match=r"--step: 1m leaves no whole step inside"):
        make_grid(1000, 1030, 60)


def test_window_requests_cover_the_range_back_from_the_end() -> None:
    spec = QuerySpec("q", "x", kind="window")
    plan = FetchPlan(make_grid(0, 7 * 86400, 60), window_points=1440, parallelism=4)
    assert plan.span == 86400
    requests = plan.requests_for(spec)
    evaluations = [t for s, e, step in requests for t in range(s, e + 1, step)]
    # 7 evaluations, each summarising the day before it: exactly the 7 days, nothing twice.
    assert evaluations == [86400 * k for k in range(1, 8)]


def test_merge_series_concatenates_chunks_and_merges_duplicates() -> None:
    a1 = Series({"n": "a"}, np.array([0.0, 60.0]), np.array([1.0, 2.0]))
    a2 = Series({"n": "a"}, np.array([120.0]), np.array([3.0]))
    dup = Series({"n": "a"}, np.array([60.0]), np.array([5.0]))
    b = Series({"n": "b"}, np.array([0.0]), np.array([9.0]))
    merged = {s.labels["n"]: s for s in merge_series([[a1, b], [a2], [dup]])}
    assert merged["a"].timestamps.tolist() == [0.0, 60.0, 120.0]
    assert merged["a"].values.tolist() == [1.0, 5.0, 3.0]  # the larger duplicate wins
    assert merged["b"].values.tolist() == [9.0]


def test_bundled_profile_parses_with_headers() -> None:
    profile = load_profile()
    assert {"node_cpu_busy", "pod_info", "pod_container_requests"} <= set(profile)
    for spec in profile.values():
        assert spec.description, f"{spec.name} needs a header comment saying what it returns"
        rendered = spec.render(step_seconds=60, span_seconds=86400)
        assert "{{" not in rendered
    busy = profile["node_cpu_busy"]
    assert (busy.kind, busy.source, busy.required, busy.unit) == (
        "range",
        "node-exporter",
        True,
        "cores",
    )
    assert "[2m]" in busy.render(step_seconds=60, span_seconds=3600)  # irate over 2 x step


def test_profile_header_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "q.promql"
    bad.write_text("# what\n# kind: sometimes\nup\n")
    with pytest.raises(InputError, match=r"q\.promql: header 'kind: sometimes'"):
        parse_query_file(bad)
    bad.write_text("# what\nrate(x[{{nope}}])\n")
    with pytest.raises(InputError, match="unknown template variable"):
        parse_query_file(bad)
    bad.write_text("# only a comment\n")
    with pytest.raises(InputError, match="no PromQL expression"):
        parse_query_file(bad)


def test_samples_rule_irate_handles_counter_resets_and_gauge_lookback() -> None:
    grid = np.array([0.0, 60.0, 120.0, 180.0, 480.0, 500.0])
    counter = Series(
        {"pod": "p", "container": "a"}, np.array([0.0, 60.0, 120.0]), np.array([100.0, 160.0, 30.0])
    )
    rate = SampleRule(
        rate=True, window=120, lookback=300, dedupe=("pod", "container"), sum_by=("pod",)
    )
    [series] = evaluate([counter], grid, rate)
    # t=60: (160-100)/60; t=120: reset, 30/60; t=180: samples 60 and 120 still in [60, 180].
    assert series.timestamps.tolist() == [60.0, 120.0, 180.0]
    assert series.values.tolist() == [1.0, 0.5, 0.5]
    gauge = SampleRule(
        rate=False, window=120, lookback=300, dedupe=("pod", "container"), sum_by=("pod",)
    )
    other = Series({"pod": "p", "container": "b"}, np.array([0.0]), np.array([7.0]))
    [summed] = evaluate([counter, other], grid, gauge)
    # Newest sample within [t-300, t]: at 480 and 500 both series' last samples (120, 0) are too old.
    assert summed.timestamps.tolist() == [0.0, 60.0, 120.0, 180.0]
    assert summed.values.tolist() == [107.0, 167.0, 37.0, 37.0]
