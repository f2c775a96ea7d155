"""VictoriaMetrics as a second real store: collecting from it equals collecting from Prometheus.

The same synthetic cluster is written once as OpenMetrics, backfilled into Prometheus 2.42 (promtool)
and imported into VictoriaMetrics 1.79 (``/api/v1/import/prometheus``); ``collect`` then reads both
with the same request. Everything the snapshot holds must agree: nodes, pods and their lifecycle,
node and pod usage (to floating-point noise: the two servers sum the same samples in another order).

VictoriaMetrics' windows are open on the left (as Prometheus 3.x's are since prometheus#13213), so a
raw sample stamped exactly at a chunk edge is a sample the collector has to ask for on both sides of
the edge. And VictoriaMetrics finds series through a per-day index that a range ending exactly at
00:00:00 UTC does not consult for that day: the day's range here starts and ends on midnights, and
the import registers some series twice at random (see tests/victoria.py), so a collect whose
requests ended there lost a different few midnight samples from each fresh server. The collector's
requests never end on a midnight; ``test_a_series_born_at_midnight_is_read_by_a_range_ending_there``
pins that down with a series whose only sample is at midnight, the same on every run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from victoria import import_openmetrics, require_victoria, start_victoria, stop_victoria

from analyzer.collect.run import CollectRequest, collect
from analyzer.core.snapshot import Snapshot
from analyzer.prom.client import PromClient
from analyzer.prom.fetch import FetchPlan, run_profile
from analyzer.prom.profile import QuerySpec
from analyzer.prom.settings import PromSettings
from analyzer.prom.time_grid import make_grid
from analyzer.sources import SyntheticSpec, generate, write_openmetrics

pytestmark = pytest.mark.prometheus

CONVENTIONS = ("node-name", "host-ip")


@pytest.fixture(scope="module")
def cluster() -> object:
    return generate(SyntheticSpec(seed=5, nodes=5, days=1, step=300))


# 48 points of 5 min = 4 h per raw-sample request: six chunk edges inside the day, each one a
# sample stamped exactly on the edge.
CHUNK_POINTS = 48


def _collect(url: str, truth: Snapshot) -> Snapshot:
    request = CollectRequest(
        PromSettings(url),
        truth.start.to_pydatetime(),
        truth.end.to_pydatetime(),
        step_seconds=truth.meta.step_seconds,
        priority_classes=tuple(truth.meta.extra["priority_classes"].items()),
        chunk_points=CHUNK_POINTS,
        window_points=CHUNK_POINTS,
    )
    return collect(request).snapshot


@pytest.fixture(scope="module", params=CONVENTIONS)
def pair(
    request: pytest.FixtureRequest,
    cluster: object,
    prometheus_from_openmetrics: Callable[..., object],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Snapshot, Snapshot, Snapshot]:
    """(ground truth, collected from Prometheus, collected from VictoriaMetrics)."""
    convention = request.param
    path = tmp_path_factory.mktemp("om") / f"{convention}.om"
    write_openmetrics(cluster, path, instance_convention=convention)  # type: ignore[arg-type]
    truth: Snapshot = cluster.snapshot  # type: ignore[attr-defined]
    prometheus = prometheus_from_openmetrics(path, keep=True)  # VictoriaMetrics imports it too
    require_victoria()
    # A fresh server per convention: the two data sets must not share series.
    server = start_victoria(tmp_path_factory.mktemp(f"victoria-{convention}"))
    try:
        assert import_openmetrics(server, path) > 0
        path.unlink()  # ~200 MB, read by both servers now
        from_prom = _collect(prometheus.url, truth)  # type: ignore[attr-defined]
        from_vm = _collect(server.url, truth)
    finally:
        stop_victoria(server)
    return truth, from_prom, from_vm


def _sorted(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return frame.sort_values(keys, kind="stable").reset_index(drop=True)


def test_same_nodes(pair: tuple[Snapshot, Snapshot, Snapshot]) -> None:
    _, prom, vm = pair
    a, b = _sorted(prom.nodes, ["node"]), _sorted(vm.nodes, ["node"])
    pd.testing.assert_frame_equal(a, b, check_dtype=False)


def test_same_pods(pair: tuple[Snapshot, Snapshot, Snapshot]) -> None:
    _, prom, vm = pair
    a, b = _sorted(prom.pods, ["uid"]), _sorted(vm.pods, ["uid"])
    pd.testing.assert_frame_equal(a, b, check_dtype=False)


def _assert_usage_equal(a: pd.DataFrame, b: pd.DataFrame, key: str) -> None:
    keys = [key, "timestamp"]
    assert len(a) > 0 and len(b) > 0
    merged = a.merge(b, on=keys, how="outer", suffixes=("_prom", "_vm"), indicator=True)
    only = merged[merged["_merge"] != "both"]
    assert only.empty, f"rows on one side only:\n{only[[*keys, '_merge']].head(10)}"
    for column in ("cpu", "memory"):
        x = merged[f"{column}_prom"].to_numpy(dtype=np.float64)
        y = merged[f"{column}_vm"].to_numpy(dtype=np.float64)
        assert np.array_equal(np.isnan(x), np.isnan(y)), f"{column}: gaps differ"
        ok = ~np.isnan(x)
        assert np.allclose(x[ok], y[ok], rtol=1e-12, atol=1e-9), (
            f"{column} differs:\n{merged.loc[ok][~np.isclose(x[ok], y[ok])][keys].head(10)}"
        )


def test_same_node_usage(pair: tuple[Snapshot, Snapshot, Snapshot]) -> None:
    _, prom, vm = pair
    _assert_usage_equal(prom.node_usage, vm.node_usage, "node")


def test_same_pod_usage(pair: tuple[Snapshot, Snapshot, Snapshot]) -> None:
    _, prom, vm = pair
    _assert_usage_equal(prom.pod_usage, vm.pod_usage, "uid")


@pytest.mark.parametrize("chunk", [0, 1, 3])
def test_memory_at_chunk_edges_matches_truth(
    pair: tuple[Snapshot, Snapshot, Snapshot], chunk: int
) -> None:
    """Samples stamped exactly at ``--start`` or on a chunk edge are where left-open windows lose
    data: node memory there is the ground truth's, from either server."""
    truth, _, vm = pair
    edge = truth.start + pd.Timedelta(seconds=chunk * CHUNK_POINTS * truth.meta.step_seconds)
    want = truth.node_usage[truth.node_usage["timestamp"] == edge].set_index("node")["memory"]
    got = vm.node_usage[vm.node_usage["timestamp"] == edge].set_index("node")["memory"]
    assert not want.empty and len(want) == len(truth.nodes)
    assert got.reindex(want.index).to_numpy() == pytest.approx(want.to_numpy(), rel=1e-12)


def test_import_converts_seconds_to_milliseconds(tmp_path: Path) -> None:
    from victoria import _millisecond_line

    assert _millisecond_line('up{job="a"} 1 1730419200.5') == 'up{job="a"} 1 1730419200500\n'
    assert _millisecond_line("x 2.5e3 1730419200") == "x 2.5e3 1730419200000\n"


# 2026-11-01T00:00:00Z: a UTC midnight, where VictoriaMetrics' per-day series index changes day.
MIDNIGHT = 1_793_491_200


@pytest.fixture(scope="module")
def midnight_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server holding ``edge_gauge`` for pod "old" (every 5 m up to midnight, which it crosses)
    and pod "new", whose only sample is stamped exactly at midnight."""
    require_victoria()
    workdir = tmp_path_factory.mktemp("victoria-midnight")
    data = workdir / "edge.om"
    lines = [f'edge_gauge{{pod="old"}} {10 + k} {MIDNIGHT - 300 * k}\n' for k in range(12)]
    lines.append(f'edge_gauge{{pod="new"}} 7 {MIDNIGHT}\n')
    data.write_text("".join(lines))
    server = start_victoria(workdir)
    try:
        assert import_openmetrics(server, data) == 13
        yield server.url
    finally:
        stop_victoria(server)


def test_a_series_born_at_midnight_is_read_by_a_range_ending_there(midnight_server: str) -> None:
    """VictoriaMetrics reads a range ending exactly at 00:00:00 UTC without that day's series
    index: a request ending there does not see pod "new". Every kind of request the collector
    sends for a grid ending at midnight must still give its sample, at the last grid point."""
    grid = make_grid(MIDNIGHT - 3600, MIDNIGHT, 300)
    plan = FetchPlan(grid, chunk_points=4)  # several raw requests, the last ending at midnight
    samples = QuerySpec(
        "gauge", "edge_gauge[{{span}}]", kind="samples", dedupe=("pod",), sum_by=("pod",)
    )
    last_seen = QuerySpec("last", "edge_gauge[{{span}}]", kind="times", by=("pod",), combine="max")
    ranged = QuerySpec("ranged", "max by (pod) (edge_gauge)", kind="range")
    with PromClient(PromSettings(midnight_server)) as client:
        results = run_profile(client, [samples, last_seen, ranged], plan)
    times = np.arange(grid.start, grid.end + 1, grid.step, dtype=np.float64)
    table = results["gauge"].table
    assert table is not None
    gauge = {s.labels["pod"]: s for s in table.series("gauge", times)}
    assert set(gauge) == {"old", "new"}
    assert gauge["new"].timestamps.tolist() == [MIDNIGHT] and gauge["new"].values.tolist() == [7]
    assert gauge["old"].values[-1] == 10  # the sample at midnight itself, not the one before
    seen = {s.labels["pod"]: float(s.values[0]) for s in results["last"].series}
    assert seen == {"old": MIDNIGHT, "new": MIDNIGHT}
    ranged_by_pod = {s.labels["pod"]: s for s in results["ranged"].series}
    assert set(ranged_by_pod) == {"old", "new"}
    assert ranged_by_pod["new"].timestamps.tolist() == [MIDNIGHT]
    assert ranged_by_pod["new"].values.tolist() == [7]
    # No point past the grid's end, though the range request reached one step further.
    assert ranged_by_pod["old"].timestamps.max() == MIDNIGHT
