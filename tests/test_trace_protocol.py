"""FGD protocol order and inflation, determinism per seed, the paper's curve averaging, timeline."""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.scheduling.gpu.fragments import target_workload
from analyzer.sources.alibaba import OpenbNodes, load_nodes, load_pods
from analyzer.trace.curve import RunCurve, average_curves, run_curve
from analyzer.trace.protocol import RunSpec, fgd_order, run_fgd, run_timeline


@pytest.fixture(scope="module")
def pods():  # type: ignore[no-untyped-def]
    return load_pods()


def test_fgd_order_is_a_shuffle_then_clones_up_to_tune(pods) -> None:  # type: ignore[no-untyped-def]
    capacity = 6_212_000
    order = fgd_order(pods, 42, 1.3, capacity)
    n = len(pods)
    assert sorted(order[:n].tolist()) == list(range(n))  # every real pod once, first
    assert order[:n].tolist() != list(range(n))  # shuffled
    milli = pods.total_gpu_milli()
    total = int(milli[order].sum())
    assert total <= 1.3 * capacity
    # stopping rule: one more draw of the same stream would have pushed past the limit
    assert total + 1000 > 1.3 * capacity - 1000
    assert np.array_equal(order, fgd_order(pods, 42, 1.3, capacity))
    assert not np.array_equal(order, fgd_order(pods, 43, 1.3, capacity))


def small_cluster(size: int = 120) -> OpenbNodes:
    nodes = load_nodes()
    keep = slice(0, size)
    return OpenbNodes(
        nodes.names[keep],
        nodes.cpu_milli[keep],
        nodes.memory_mib[keep],
        nodes.gpus[keep],
        nodes.models[keep],
    )


@pytest.mark.parametrize(
    "policy",
    ["Random", "DotProd", "GpuClustering", "GpuPacking", "BestFit", "FGD", "MostAllocated"],
)
def test_same_seed_same_result(policy: str, pods) -> None:  # type: ignore[no-untyped-def]
    nodes = small_cluster()
    wl = target_workload(pods.cpu_milli, pods.num_gpu, pods.gpu_milli, pods.specs)
    first = run_fgd(nodes, pods, wl, RunSpec(policy, 7, tune=0.6))
    again = run_fgd(nodes, pods, wl, RunSpec(policy, 7, tune=0.6))
    assert np.array_equal(first.placed, again.placed)
    assert np.array_equal(first.alloc_pct, again.alloc_pct)
    # invariants: arrived never decreases, allocation never exceeds arrivals, ratio within 0..100
    assert (np.diff(first.arrived_pct) >= 0).all()
    assert (first.alloc_pct <= first.arrived_pct + 1e-9).all()
    assert ((first.frag_ratio_pct >= 0) & (first.frag_ratio_pct <= 100)).all()
    assert first.failed == int((~first.placed).sum())


def test_curve_averaging_by_hand() -> None:
    arrived = np.array([0.2, 0.6, 1.4, 1.45, 4.2])
    alloc = np.array([1.0, 3.0, 5.0, 7.0, 9.0])
    curve = run_curve(
        arrived, {"alloc_pct": alloc, "frag_ratio_pct": alloc, "frag_amount_pct": alloc}
    )
    values = curve.values["alloc_pct"]
    assert curve.x.tolist() == [0, 1, 2, 3, 4]
    assert values[0] == 1.0  # 0.2 rounds to 0
    assert values[1] == 5.0  # 0.6, 1.4, 1.45 round to 1 -> mean(3, 5, 7)
    assert values[2] == 6.0  # nothing rounds to 2 -> rows within ±1: 1.4, 1.45 -> mean(5, 7)
    assert np.isnan(values[3])  # nothing within ±1 of 3 (4.2 is 1.2 away)
    assert values[4] == 9.0
    other = RunCurve(
        np.array([0, 1]),
        {k: np.array([3.0, 7.0]) for k in ("alloc_pct", "frag_ratio_pct", "frag_amount_pct")},
    )
    points = average_curves([curve, other])
    assert points[0].alloc_pct_mean == 2.0 and points[0].alloc_pct_std == 1.0  # population std
    assert [p.arrived_pct for p in points] == [0, 1, 2, 4] and points[-1].seeds == 1


def test_timeline_departures_free_capacity(pods) -> None:  # type: ignore[no-untyped-def]
    nodes = small_cluster(8)
    wl = target_workload(pods.cpu_milli, pods.num_gpu, pods.gpu_milli, pods.specs)
    rows = run_timeline(nodes, pods, wl, RunSpec("BestFit", 42, protocol="timeline"))
    assert len(rows.arrived_pct) == len(pods)  # one row per arrival
    assert rows.pending_max > 0  # 8 nodes cannot hold the trace at once: pods wait
    # with departures, allocation falls below arrivals and ends below 100 % of capacity
    assert rows.alloc_pct[-1] < rows.arrived_pct[-1]
    assert rows.mean_wait_seconds > 0
