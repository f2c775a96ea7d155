"""VictoriaMetrics as a second real store: collecting from it equals collecting from Prometheus.

The same synthetic cluster is written once as OpenMetrics, backfilled into Prometheus 2.42 (promtool)
and imported into VictoriaMetrics 1.79 (``/api/v1/import/prometheus``); ``collect`` then reads both
with the same request. Everything the snapshot holds must agree: nodes, pods and their lifecycle,
node and pod usage (to floating-point noise: the two servers sum the same samples in another order).

VictoriaMetrics' windows are open on the left (as Prometheus 3.x's are since prometheus#13213), so a
raw sample stamped exactly at a chunk edge is a sample the collector has to ask for on both sides of
the edge; the first grid point (``--start`` itself) is the case that lost it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from victoria import import_openmetrics, require_victoria, start_victoria, stop_victoria

from analyzer.collect.run import CollectRequest, collect
from analyzer.core.snapshot import Snapshot
from analyzer.prom.settings import PromSettings
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
    prometheus = prometheus_from_openmetrics(path)
    require_victoria()
    # A fresh server per convention: the two data sets must not share series.
    server = start_victoria(tmp_path_factory.mktemp(f"victoria-{convention}"))
    try:
        assert import_openmetrics(server, path) > 0
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
