"""Trace loaders: row counts and facts from the data READMEs; snapshots build and validate."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from analyzer.core.errors import InputError
from analyzer.fragmentation.gpu import cluster_fragmentation
from analyzer.scheduling.gpu.fragments import target_workload
from analyzer.sources.alibaba import ALL_NODES, load_nodes, load_pods, openb_snapshot
from analyzer.sources.bytedance import load_m3, m3_snapshot

DATA = Path(__file__).parent / "data" / "alibaba-gpu-v2023"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "alibaba-gpu-v2023"
# Row counts from the data README (alibaba-gpu-v2023/README.md, "Files").
README_ROWS = {
    "openb_pod_list_default.csv": 8152,
    "openb_pod_list_cpu0.csv": 7064,
    "openb_pod_list_cpu037.csv": 7336,
    "openb_pod_list_cpu050.csv": 7439,
    "openb_pod_list_cpu072.csv": 7608,
    "openb_pod_list_cpu100.csv": 7853,
    "openb_pod_list_cpu200.csv": 8832,
    "openb_pod_list_cpu235.csv": 9240,
    "openb_pod_list_cpu250.csv": 9420,
    "openb_pod_list_cpu300.csv": 10094,
    **{f"openb_pod_list_gpushare{n}.csv": 8152 for n in (20, 40, 60, 80, 100)},
    **{f"openb_pod_list_gpuspec{n:02d}.csv": 8152 for n in (5, 10, 20, 25, 33)},
    "openb_pod_list_multigpu20.csv": 8324,
    "openb_pod_list_multigpu30.csv": 8508,
    "openb_pod_list_multigpu40.csv": 8746,
    "openb_pod_list_multigpu50.csv": 9061,
}


def test_default_node_lists_match_readme() -> None:
    gpu = load_nodes()
    assert len(gpu.names) == 1213 and int(gpu.gpus.sum()) == 6212
    every = load_nodes(ALL_NODES)
    assert len(every.names) == 1523 and int((every.gpus == 0).sum()) == 310
    by_model = Counter()
    for model, count in zip(gpu.models, gpu.gpus, strict=True):
        by_model[model] += int(count)
    assert by_model == {
        "G2": 4392,
        "T4": 842,
        "P100": 265,
        "V100M16": 195,
        "G3": 312,
        "V100M32": 204,
        "A10": 2,
    }


def test_default_pod_list_matches_readme() -> None:
    pods = load_pods()
    assert len(pods) == 8152 and pods.has_times
    assert Counter(pods.num_gpu.tolist()) == {0: 1088, 1: 6989, 2: 16, 4: 15, 8: 44}
    assert int(((pods.num_gpu == 1) & (pods.gpu_milli < 1000)).sum()) == 3078
    assert int(pods.total_gpu_milli().sum()) == 6_086_800  # 6,086.8 GPUs
    assert round(int(pods.cpu_milli.sum()) / 1000) == 85_436  # "85,436 cores"
    assert all(s is None for s in pods.specs)


def test_empty_cluster_fragmentation_matches_independent_value() -> None:
    pods = load_pods()
    wl = target_workload(pods.cpu_milli, pods.num_gpu, pods.gpu_milli, pods.specs)
    # real-data.md §3: 91 shapes, top 35 cover 95.26 %; top shape (3152m, 810 x 1) p = 0.135
    assert wl.distinct_shapes == 91 and len(wl.weights) == 35
    assert round(100 * wl.coverage, 2) == 95.26
    assert (wl.cpu[0], wl.gpu_milli[0], wl.num_gpu[0]) == (3152, 810, 1)
    assert round(float(wl.popularity()[0]), 3) == 0.135
    assert round(float(wl.popularity()[wl.gpu_milli == 0].sum()), 3) == 0.136
    frag = cluster_fragmentation(load_nodes().gpu_nodes(), wl)
    assert round(frag.ratio_pct, 2) == 13.94  # the independently computed 13.94 % (866 GPUs)
    assert round(frag.amount_milli / 1000) == 866


def test_gpuspec_and_multigpu_variants() -> None:
    spec = load_pods(DATA / "openb_pod_list_gpuspec33.csv")
    assert len(spec) == 8152 and sum(s is not None for s in spec.specs) == 2388
    multi = load_pods(DATA / "openb_pod_list_multigpu20.csv")
    assert len(multi) == 8324 and not multi.has_times
    assert np.isnan(multi.creation).all() and all(s is None for s in multi.specs)


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared data folder not present")
@pytest.mark.parametrize("name", sorted(README_ROWS))
def test_every_variant_loads_with_readme_row_count(name: str) -> None:
    assert len(load_pods(SHARED / name)) == README_ROWS[name]


def test_bad_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        load_pods(tmp_path / "missing.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,10,1,0\n")
    with pytest.raises(InputError, match="gpu_milli"):
        load_pods(bad)
    bad.write_text("sn,cpu_milli\nn0,1\n")
    with pytest.raises(InputError, match="missing column"):
        load_nodes(bad)


def test_openb_snapshot_has_gpu_columns() -> None:
    snap = openb_snapshot(load_nodes(), load_pods())
    assert len(snap.nodes) == 1213 and len(snap.pods) == 8152
    assert int(snap.nodes["allocatable:nvidia.com/gpu"].sum()) == 6212
    assert int(snap.nodes["allocatable:alibaba.com/gpu-milli"].sum()) == 6_212_000
    assert int(snap.pods["requests:alibaba.com/gpu-milli"].sum()) == 6_086_800
    assert int(snap.pods["requests:memory"].iloc[0]) == 16384 * 1024 * 1024


def test_m3_matches_readme() -> None:
    m3 = load_m3()
    assert len(m3.machines) == 96 and len(m3.containers) == 3485
    assert len(set(m3.service)) == 547
    assert (m3.production >= 0).all()  # every container placed in production
    # the most common machine shape is scaled to 96 cores / 384 GiB
    assert Counter(
        zip(m3.machine_cpu.tolist(), m3.machine_memory.tolist(), strict=True)
    ).most_common(1)[0] == ((96000, 393216), 39)
    # containers request ~88.3 % of CPU, ~27.8 % of memory (README); rounding moves this < 0.1 pt
    assert abs(m3.container_cpu.sum() / m3.machine_cpu.sum() - 0.883) < 0.001
    assert abs(m3.container_memory.sum() / m3.machine_memory.sum() - 0.278) < 0.001
    snap = m3_snapshot(m3)
    assert snap.pods["node"].notna().all() and len(snap.nodes) == 96
