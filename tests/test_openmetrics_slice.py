"""Time slices of the OpenMetrics writer (``start_s``/``end_s``): adjacent slices together are
exactly the whole file's samples, each slice stays within its bounds, and series stay ascending."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from analyzer.sources import SyntheticCluster, SyntheticSpec, generate, write_openmetrics

SPEC = SyntheticSpec(seed=5, nodes=3, days=0.25, step=300, churn=3.0)
FINE = SyntheticSpec(seed=5, nodes=2, days=0.05, step=60)  # 1-minute grid for a 300 s stride


@cache
def _cluster(spec: SyntheticSpec = SPEC) -> SyntheticCluster:
    return generate(spec)


def _samples(path: Path) -> list[tuple[str, str, int]]:
    """(series, value, timestamp) of every sample line, in file order."""
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            continue
        rest, stamp = line.rsplit(" ", 1)
        series, value = rest.rsplit(" ", 1)
        rows.append((series, value, int(stamp)))
    return rows


def test_adjacent_slices_partition_the_samples(tmp_path: Path) -> None:
    cluster = _cluster()
    times = [int(t) for t in cluster.grid.times]
    cut = times[len(times) // 3]  # a grid point: it belongs to the second slice only
    write_openmetrics(cluster, tmp_path / "all.om", node_exporter_cpus=1)
    first = write_openmetrics(cluster, tmp_path / "a.om", node_exporter_cpus=1, end_s=cut - 1)
    second = write_openmetrics(cluster, tmp_path / "b.om", node_exporter_cpus=1, start_s=cut)
    whole, a, b = (_samples(tmp_path / n) for n in ("all.om", "a.om", "b.om"))
    assert all(t < cut for _, _, t in a) and all(t >= cut for _, _, t in b)
    # Every sample of the whole file is in exactly one slice, with the same value (counters
    # keep their cumulative totals), and nothing else is written.
    assert sorted(a + b) == sorted(whole)
    assert first.samples + second.samples == len(whole)
    for rows in (a, b):  # promtool drops out-of-order samples silently: keep series ascending
        last: dict[str, int] = {}
        for series, _, t in rows:
            assert last.get(series, -1) < t
            last[series] = t


@pytest.mark.parametrize("bounds", [(0, 10), (2**40, 2**41)])
def test_slice_outside_the_range_is_empty(tmp_path: Path, bounds: tuple[int, int]) -> None:
    stats = write_openmetrics(_cluster(), tmp_path / "x.om", start_s=bounds[0], end_s=bounds[1])
    assert stats.samples == 0
    assert (tmp_path / "x.om").read_text() == "# EOF\n"


def test_constant_series_keep_both_slice_ends(tmp_path: Path) -> None:
    """With ``constant_step`` a constant run cut by a slice still has a sample at each end of the
    slice, so Prometheus' lookback sees it throughout."""
    cluster = _cluster(FINE)
    times = [int(t) for t in cluster.grid.times]
    lo, hi = times[3], times[-4]  # not on the stride (every 5th grid point at 300 s / 60 s)
    write_openmetrics(cluster, tmp_path / "s.om", constant_step=300, start_s=lo, end_s=hi)
    stamps: dict[str, list[int]] = {}
    for series, _, t in _samples(tmp_path / "s.om"):
        stamps.setdefault(series, []).append(t)
    node_info = [s for s in stamps if s.startswith("kube_node_info{")]
    assert node_info
    for series in node_info:  # nodes exist for the whole range
        assert stamps[series][0] == lo and stamps[series][-1] == hi
