"""GPU presets in the replay: core plugins agree with the trace policies; whatif on GPU data."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.snapshot import Snapshot, write_snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling import load_strategy, select
from analyzer.scheduling.gpu.cluster import GpuState as TraceState
from analyzer.scheduling.gpu.devices import attach_devices
from analyzer.scheduling.gpu.fragments import target_workload
from analyzer.sources.alibaba import OpenbNodes, OpenbPods, load_nodes, load_pods, openb_snapshot
from analyzer.trace.registry import get_policy
from analyzer.whatif.compare import WhatIfSettings, run_whatif

PRESETS = {
    "fgd": "FGD",
    "bestfit": "BestFit",
    "gpu-packing": "GpuPacking",
    "gpu-clustering": "GpuClustering",
    "dotprod": "DotProd",
    "random": "Random",
}


def subset(obj: Any, index: np.ndarray) -> Any:
    """Rows ``index`` of an openb node or pod list."""
    fields = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, np.ndarray):
            value = value[index]
        elif isinstance(value, list):
            value = [value[i] for i in index]
        fields[f.name] = value
    return type(obj)(**fields)


def test_core_presets_decide_like_the_trace_policies() -> None:
    """Same state, same pod, same seed: the core preset (filters, score, normalisation, uniform
    ties, GPU choice) and the trace policy (uniform ties) pick the same node and GPUs; the pods
    are then bound in both states by the policies in turn, over 240 pods of the default trace."""
    nodes, pods = load_nodes(), load_pods()
    pods = subset(pods, np.arange(240))
    workload = target_workload(pods.cpu_milli, pods.num_gpu, pods.gpu_milli, pods.specs)
    trace = TraceState(nodes.gpu_nodes(), workload)  # node_rank None: uniform ties, like the core
    inp = prepare(openb_snapshot(nodes, pods))
    core = inp.fresh_state()
    attach_devices(core, workload)
    profiles = {preset: load_strategy(preset) for preset in PRESETS}
    names = list(PRESETS)
    for i in range(len(pods)):
        demand = pods.demand(i)
        feasible = np.flatnonzero(trace.nodes.feasible(demand))
        decisions = {}
        for preset, policy in PRESETS.items():
            evaluation = profiles[preset].evaluate(core, inp.demands[i])
            assert np.array_equal(np.flatnonzero(evaluation.feasible), feasible)
            rng_core, rng_trace = np.random.default_rng(i), np.random.default_rng(i)
            node = select(evaluation, rng_core)
            assert node is not None
            gpus = profiles[preset].choose_gpus(core, inp.demands[i], node, rng_core)
            expected = get_policy(policy)(trace, demand, feasible, rng_trace)
            assert (node, gpus) == (expected.node, expected.gpus), (i, preset)
            decisions[preset] = (node, gpus)
        node, gpus = decisions[names[i % len(names)]]
        trace.bind(node, demand, gpus)
        core.bind(node, inp.demands[i], gpus)
    assert core.devices is not None
    assert np.array_equal(core.devices.gpu.nodes.gpu_free, trace.nodes.gpu_free)
    assert core.devices.gpu.weighted_frag_total == trace.weighted_frag_total


def gpu_snapshot(node_count: int) -> Snapshot:
    """300 consecutive pods of the default trace (by creation; the 8 h window with the most
    arrivals) on its first ``node_count`` GPU nodes, times shifted to start at the first pod."""
    nodes: OpenbNodes = load_nodes()
    pods: OpenbPods = load_pods()
    created = np.sort(pods.creation)
    first = int(np.argmin(created[299:] - created[:-299]))
    order = np.argsort(pods.creation, kind="stable")[first : first + 300]
    snap = openb_snapshot(subset(nodes, np.arange(node_count)), subset(pods, order))
    start = pd.to_datetime(snap.pods["created"], utc=True).min()
    meta = dataclasses.replace(snap.meta, start=start.isoformat(), step_seconds=600)
    return dataclasses.replace(snap, meta=meta)


@pytest.fixture(scope="module")
def small_gpu_snapshot() -> Snapshot:
    return gpu_snapshot(3)


def test_gpu_replay_is_deterministic_and_conserves_pods(small_gpu_snapshot: Snapshot) -> None:
    inp = prepare(small_gpu_snapshot)
    for preset in PRESETS:
        strategy = Strategy(preset, load_strategy(preset), "preset")
        first, again = replay(inp, strategy, 7), replay(inp, strategy, 7)
        assert np.array_equal(first.node, again.node), preset
        assert np.array_equal(first.segments["start"], again.segments["start"])
        # every pod is placed, or reported never placed (pending at the end / left while pending)
        placed = first.node >= 0
        never = first.pending_at_end | first.abandoned
        assert (placed ^ never).all(), preset
        # three nodes are too few for the window: some pods wait under every policy
        assert first.waited.any(), preset


def test_gpu_replay_never_overcommits_a_gpu(small_gpu_snapshot: Snapshot) -> None:
    inp = prepare(small_gpu_snapshot)
    for preset in ("fgd", "random"):
        result = replay(inp, Strategy(preset, load_strategy(preset), "preset"), 3)
        assert result.node.max() < 3
        assert not any("did not fit" in note for note in result.notes)


def test_fgd_target_workload_is_the_replayed_pods_shapes(small_gpu_snapshot: Snapshot) -> None:
    inp = prepare(small_gpu_snapshot)
    workload = inp.gpu_workload()
    assert workload.pods == 300  # no DaemonSet/static pods in a trace snapshot
    assert workload.coverage >= 0.95
    # the kept shapes, minus the last one, cover less than 95 %: the cut is the first >= 95 %
    assert (workload.total - int(workload.weights[-1])) * 100 < 95 * 300


def test_whatif_cli_compares_gpu_presets(tmp_path: Path) -> None:
    directory = tmp_path / "snap"
    write_snapshot(gpu_snapshot(10), directory)
    done = CliRunner().invoke(
        main,
        ["whatif", str(directory), "--strategy", "fgd", "--strategy", "bestfit", "--workers", "1",
         "--format", "json"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert [s["name"] for s in data["strategies"]] == ["observed", "fgd", "bestfit"]
    for entry in data["strategies"][1:]:
        outcome = entry["outcomes"][0]
        assert outcome["placed"] + outcome["never_placed"] == outcome["pods"] == 300


def test_whatif_matches_run_whatif_spread(small_gpu_snapshot: Snapshot) -> None:
    result = run_whatif(
        small_gpu_snapshot, WhatIfSettings(strategies=("fgd", "random"), seeds=2, workers=1)
    )
    names = [c.name for c in result.strategies]
    assert names == ["observed", "fgd", "random"]
    assert [o.seed for o in result.strategies[2].outcomes] == [0, 1]


def test_invalid_gpu_core_request_exits_2(tmp_path: Path) -> None:
    snap = gpu_snapshot(3)
    pods = snap.pods.copy()
    pods["requests:koordinator.sh/gpu-core"] = 0
    pods.loc[0, "requests:koordinator.sh/gpu-core"] = 150
    pods["requests:alibaba.com/gpu-milli"] = 0
    directory = tmp_path / "bad"
    write_snapshot(dataclasses.replace(snap, pods=pods), directory)
    done = CliRunner().invoke(
        main, ["whatif", str(directory), "--strategy", "fgd", "--workers", "1"]
    )
    assert done.exit_code == 2
    assert "koordinator.sh/gpu-core: 150 is above one GPU (100)" in done.output
