"""Fragmentation: FGD ratio generalised, stranded capacity, headroom, over time, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from h4_snapshots import GI, T0, build

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot
from analyzer.fragmentation.measure import (
    Shapes,
    TypicalPod,
    fit_counts,
    fragmentation,
    measure,
    workload_shapes,
)

RES = ("cpu", "memory")


def test_fit_counts_take_the_scarcest_resource() -> None:
    free = np.array([[4000, 8 * GI], [500, 64 * GI], [-100, GI]], dtype=np.int64)
    demand = np.array([[1000, 3 * GI], [0, GI]], dtype=np.int64)
    fits = fit_counts(free, demand)
    # node 0: min(4000/1000, 8/3) = 2; node 1: 0 (cpu); over-committed node 2: 0.
    # Memory-only shape: 8, 64, 1 (cpu not asked).
    assert fits.tolist() == [[2, 8], [0, 64], [0, 1]]


def test_fgd_measure_and_stranded_by_hand() -> None:
    free = np.array([[3000, 1 * GI], [500, 8 * GI]], dtype=np.int64)
    shapes = Shapes(
        RES,
        np.array([[1000, 2 * GI], [250, GI // 2]], dtype=np.int64),
        np.array([0.5, 0.5]),
        np.array([10, 10]),
    )
    typical = TypicalPod(np.array([625.0, 1.25 * GI]), None)
    point = measure(free, shapes, typical)
    # Shape A fits nowhere (n1 lacks memory, n2 cpu): all free is fragment for A. Shape B fits
    # both: nothing. F(M) = 0.5 × free on each node → ratio 0.5 for both resources.
    assert point.frag_amount.tolist() == [0.5 * 3500, 0.5 * 9 * GI]
    assert point.frag_ratio.tolist() == [0.5, 0.5]
    # Stranded cpu: n1's 3000m (its 1Gi < the median 1.25Gi); stranded memory: n2's 8Gi (500m < 625m).
    assert point.stranded.tolist() == [3000, 8 * GI]
    # Headroom: A 0 + 0; B: n1 min(12, 2) = 2, n2 min(2, 16) = 2.
    assert point.fits.sum(axis=0).tolist() == [0, 4]


def test_gpu_idle_is_fragment_for_cpu_only_shapes() -> None:
    # FGD: a task that asks no GPU cannot use idle GPUs, whether or not it fits.
    resources = ("cpu", "memory", "nvidia.com/gpu")
    free = np.array([[8000, 32 * GI, 2], [1000, 32 * GI, 4]], dtype=np.int64)
    shapes = Shapes(
        resources,
        np.array([[1000, GI, 0], [4000, 8 * GI, 1]], dtype=np.int64),
        np.array([0.75, 0.25]),
        np.array([3, 1]),
    )
    typical = TypicalPod(np.array([1000.0, GI, 0.0]), np.array([4000.0, 8 * GI, 1.0]))
    point = measure(free, shapes, typical)
    # GPU fragments: cpu-only shape (p .75) → all 6 idle GPUs; GPU shape (p .25) fits n1 (0)
    # but not n2 (cpu 1000 < 4000) → n2's 4. 0.75 × 6 + 0.25 × 4 = 5.5 of 6.
    assert point.frag_amount[2] == pytest.approx(5.5)
    assert point.frag_ratio[2] == pytest.approx(5.5 / 6)
    # Stranded GPUs: n2's 4 (free cpu 1000 < the median GPU pod's 4000).
    assert point.stranded[2] == 4


def test_workload_shapes_cover_95_percent() -> None:
    pods = []
    for count, cpu in ((60, 100), (30, 200), (6, 300), (4, 400)):
        pods += [{"cpu": cpu, "memory": GI}] * count
    pods += [{"cpu": 5000, "owner_kind": "DaemonSet"}] * 50  # pinned: not the target workload
    pods += [{"cpu": 0, "memory": 0}] * 50  # asks for nothing: always fits, left out
    snap = build(nodes=[{"node": "n1"}], pods=[{**p, "uid": f"u{i}"} for i, p in enumerate(pods)])
    shapes = workload_shapes(snap.pods, RES)
    # Cumulative 60 %, 90 %, 96 % → the first three shapes; shares renormalised over 96 pods.
    assert shapes.demand[:, 0].tolist() == [100, 200, 300]
    assert shapes.share.tolist() == pytest.approx([60 / 96, 30 / 96, 6 / 96])
    assert shapes.pods.tolist() == [60, 30, 6]


def test_fragmentation_over_time_follows_the_placement() -> None:
    # Two 4-cpu nodes; a 3-cpu pod on n1 finishes at 02:00 → free cpu 5000 then 8000.
    snap = build(
        nodes=[{"node": "n1"}, {"node": "n2"}],
        pods=[
            {"uid": "big", "cpu": 3000, "memory": GI, "finished": T0 + pd.Timedelta("2h")},
            {"uid": "small", "cpu": 1000, "memory": GI, "node": "n2"},
        ],
        node_usage={"n1": [1.0] * 4, "n2": [1.0] * 4},
        step="1h",
    )
    result = fragmentation(snap)
    cpu = result.over_time[result.over_time["resource"] == "cpu"].set_index("time")
    assert cpu.loc[T0 + pd.Timedelta("1h"), "free"] == 4000  # 1000 (n1) + 3000 (n2)
    assert cpu.loc[T0 + pd.Timedelta("3h"), "free"] == 7000  # 4000 + 3000
    # Shapes: 3000m and 1000m, each half the pods. At 1h: the 3-cpu shape fits only n2 → n1's
    # 1000m free is a fragment for it (p .5) → frag 500 of 4000.
    assert cpu.loc[T0 + pd.Timedelta("1h"), "frag_ratio"] == pytest.approx(500 / 4000)
    head = result.headroom[result.headroom["time"] == T0 + pd.Timedelta("3h")].set_index("label")
    assert head.loc["3 cpu, 1Gi memory", "fit"] == 2  # n1: 4000//3000 = 1, n2: 3000//3000 = 1
    assert head.loc["1 cpu, 1Gi memory", "fit"] == 7
    assert list(result.per_node["node"]) == ["n1", "n2"]
    assert result.per_node["free:cpu"].tolist() == [4000, 3000]
    json.dumps(result.to_dict())  # every number serialisable for the report


def test_cli_fragmentation_json(tmp_path: Path) -> None:
    snap = build(
        nodes=[{"node": "n1"}], pods=[{"cpu": 1000}], node_usage={"n1": [1.0] * 3}, step="1h"
    )
    path = write_snapshot(snap, tmp_path / "snap")
    out = CliRunner().invoke(main, ["fragmentation", str(path), "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["shapes"][0]["cpu"] == 1000
    assert data["headroom"][-1]["fit"] == 3  # 3000m free / 1000m
    table = CliRunner().invoke(main, ["fragmentation", str(path)])
    assert table.exit_code == 0, table.output
    assert "1 cpu, 1Gi memory" in table.output


def test_gpu_fragmentation_agrees_with_the_fgd_module_on_whole_gpus() -> None:
    """On whole GPUs with memory not binding, the generalised measure is FGD's (analyzer.scheduling.gpu.fragments)."""
    from analyzer.scheduling.gpu.fragments import target_workload, weighted_node_fragments
    from analyzer.scheduling.gpu.model import GpuNodes

    rng = np.random.default_rng(11)
    n = 40
    gpus = rng.integers(0, 9, size=n)
    free_gpus = np.array([rng.integers(0, g + 1) for g in gpus])
    cpu_free = rng.integers(0, 64_000, size=n)
    nodes = GpuNodes.create([f"n{i}" for i in range(n)], [96_000] * n, [2**40] * n, gpus,
                            ["A100" if g else "" for g in gpus])  # fmt: skip
    nodes.cpu_free = cpu_free.astype(np.int64)
    slots = np.arange(nodes.gpu_free.shape[1])[None, :]
    nodes.gpu_free = np.where(slots < free_gpus[:, None], 1000, 0).astype(np.int64)
    # Pods: CPU-only and whole-GPU shapes with uneven popularity.
    cpu = rng.choice([2000, 4000, 8000, 16000], size=300)
    k = rng.choice([0, 0, 1, 2, 4, 8], size=300)
    workload = target_workload(cpu, k, np.where(k > 0, 1000, 0), [None] * 300)
    access = np.ones((n, len(workload.cpu)), dtype=bool)
    theirs = weighted_node_fragments(nodes.cpu_free, nodes.gpu_free, access, workload)
    expected = theirs.sum() / workload.total / 1000  # whole GPUs
    shapes = Shapes(
        ("cpu", "memory", "nvidia.com/gpu"),
        np.stack([workload.cpu, np.ones_like(workload.cpu), workload.num_gpu], axis=1),
        workload.popularity(),
        workload.weights,
    )
    free = np.stack([cpu_free, np.full(n, 2**40), free_gpus], axis=1).astype(np.int64)
    point = measure(free, shapes, TypicalPod(np.zeros(3), None))
    assert point.frag_amount[2] == pytest.approx(expected, rel=1e-12)
    assert point.frag_ratio[2] == pytest.approx(expected / free_gpus.sum(), rel=1e-12)


def test_shape_pod_counts_survive_a_pods_allocatable() -> None:
    """With ``allocatable:pods`` the measure has a ``pods`` resource (1 per pod); its column must
    not overwrite the shapes' pod counts (it did: every shape read 1 pod)."""
    pods = [{"cpu": 100, "memory": GI}] * 7 + [{"cpu": 200, "memory": GI}] * 3
    snap = build(
        nodes=[{"node": "n1", "allocatable:pods": 110}],
        pods=[{**p, "uid": f"p{i}"} for i, p in enumerate(pods)],
        node_usage={"n1": [1.0] * 2},
        step="1h",
    )
    result = fragmentation(snap)
    assert result.shapes["pods"].tolist() == [7, 3]
    # The shapes cover every pod considered here (two shapes, 100 %).
    assert result.shapes["pods"].sum() == result.pods_considered == 10
    assert list(result.shapes.columns) == ["shape", "label", "pods", "share", "cpu", "memory"]
