"""Benchmark: percentageOfNodesToScore's cost and effect on a 5,000-node replay.

The cluster: the synthetic generator (seed 1, one day, 5-minute step, churn 1.3, three zones,
the memory pool dedicated as in the demo: ``ded-5k`` of research/scheduler-fidelity.md). Its node
names sort by pool (``general-0000`` ...), as GKE's and AKS's do, so the node tree's order is
pool-contiguous blocks with the zones interleaved inside them.

For each strategy, in one run of this script:

- *main*: the replay of ``--main`` (a checkout of main, default /work/main) in a subprocess with
  that checkout first on ``sys.path``, on the same snapshot: the same-run baseline;
- *sampled*: this branch's replay with the upstream default (adaptive percentage);
- *full*: this branch's replay with ``percentageOfNodesToScore: 100`` (every node scored);

CPU seconds of the ``replay`` call (best of ``--repeat``), and the ratio sampled / main. Then the
what-if outcome of sampled and full (``analyzer.whatif.evaluate``: peak active nodes, active
core-hours, violations, nodes in violation, pods that waited), and two approximations' costs:
the node order (the sampled replay with the node list in a random order instead of by name: the
order is inferred, not in the data) and upstream's 16 filter goroutines (K + 16 found instead of
K, the most a parallel filter can overshoot by before it cancels — an upper bound of the effect).

    PYTHONPATH=$PWD .venv/bin/python bench/sampling.py [--nodes 5000] [--snapshot DIR]
        [--timing-only] [--strategies kube-default,most-allocated]

Prints a line per measurement and a final JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

import analyzer.replay.node_tree as node_tree
from analyzer.core.snapshot import read_snapshot, write_snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import ReplayInput, prepare
from analyzer.replay.projection import usage_matrices
from analyzer.replay.result import ReplayResult
from analyzer.scheduling import load_strategy
from analyzer.sources import SyntheticSpec, generate
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.evaluate import evaluate

STRATEGIES = ("kube-default", "most-allocated", "rtcr-binpack")
HOUR_NS = 3600 * 10**9

_MAIN_RUNNER = """
import json, resource, sys, time
from analyzer.core.snapshot import read_snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling import load_strategy
inp = prepare(read_snapshot(sys.argv[1]))
out = {}
for name in sys.argv[3:]:
    best = None
    for _ in range(int(sys.argv[2])):
        t0 = time.process_time()
        replay(inp, Strategy(name, load_strategy(name)), seed=0)
        cpu = time.process_time() - t0
        best = cpu if best is None else min(best, cpu)
    out[name] = best
print(json.dumps(out))
"""


def _cpu(run: Any, repeat: int) -> tuple[float, ReplayResult]:
    best, result = None, None
    for _ in range(repeat):
        t0 = time.process_time()
        result = run()
        cpu = time.process_time() - t0
        best = cpu if best is None else min(best, cpu)
    assert best is not None and result is not None
    return best, result


def _core_hours(inp: ReplayInput, outcome: Any, result: ReplayResult) -> float:
    """Allocatable cores × hours of the nodes active in the replay (the same active matrix the
    outcome's node-hours come from, weighted by each node's cores)."""
    series = outcome.series
    del series  # the outcome keeps counts only; recompute per node from the segments
    seg = result.segments
    workload = ~inp.pinned[seg["pod"]]
    cores = inp.template.allocatable[:, inp.template.resources.index("cpu")] / 1000.0
    ends = np.minimum(np.where(seg["end"] == np.iinfo(np.int64).max, inp.end, seg["end"]), inp.end)
    starts = np.maximum(seg["start"], inp.start)
    spans: dict[int, list[tuple[int, int]]] = {}
    for node, a, b in zip(seg["node"][workload].tolist(), starts[workload].tolist(),
                          ends[workload].tolist(), strict=True):  # fmt: skip
        if b > a:
            spans.setdefault(node, []).append((a, b))
    total = 0.0
    for node, parts in spans.items():
        parts.sort()
        covered, current_a, current_b = 0, parts[0][0], parts[0][1]
        for a, b in parts[1:]:
            if a > current_b:
                covered += current_b - current_a
                current_a, current_b = a, b
            else:
                current_b = max(current_b, b)
        covered += current_b - current_a
        total += cores[node] * covered / HOUR_NS
    return total


def main() -> None:
    """Run the benchmark (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--snapshot", help="Keep/reuse the generated cluster in this folder.")
    parser.add_argument("--main", default="/work/main", help="A checkout of main (baseline).")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--timing-only", action="store_true", help="Skip the outcomes.")
    args = parser.parse_args()
    strategies = args.strategies.split(",")
    folder = Path(args.snapshot or f"/tmp/sampling_bench_{args.nodes}")
    if (folder / "meta.json").exists():
        snapshot = read_snapshot(folder)
    else:
        spec = SyntheticSpec(seed=1, nodes=args.nodes, days=1, step=300, churn=1.3, zones=3,
                             dedicated_pools=("memory",))  # fmt: skip
        t0 = time.time()
        snapshot = generate(spec).snapshot
        write_snapshot(snapshot, folder)
        print(f"generated {args.nodes} nodes in {time.time() - t0:.0f} s -> {folder}", flush=True)
    inp = prepare(snapshot)
    names = list(inp.node_names)
    print(f"nodes {len(names)}, pods {inp.pod_count}, names sorted by pool: "
          f"{names[:2]} ... {names[-2:]}", flush=True)  # fmt: skip
    env = {**os.environ, "PYTHONPATH": args.main}
    t0 = time.time()
    done = subprocess.run(
        [sys.executable, "-c", _MAIN_RUNNER, str(folder), str(args.repeat), *strategies],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    main_cpu = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"main replays: {main_cpu} ({time.time() - t0:.0f} s wall)", flush=True)
    mats = usage_matrices(inp)
    thresholds = ThresholdConfig()
    rows: dict[str, Any] = {}
    for name in strategies:
        profile = load_strategy(name)
        full_profile = replace(profile, percentage_of_nodes_to_score=100)
        sampled_strategy, full_strategy = Strategy(name, profile), Strategy(name, full_profile)
        sampled_cpu, sampled = _cpu(lambda s=sampled_strategy: replay(inp, s), args.repeat)
        full_cpu, full = _cpu(lambda s=full_strategy: replay(inp, s), args.repeat)
        row: dict[str, Any] = {
            "main_cpu_s": round(main_cpu[name], 2),
            "sampled_cpu_s": round(sampled_cpu, 2),
            "full_cpu_s": round(full_cpu, 2),
            "sampled_over_main": round(sampled_cpu / main_cpu[name], 3),
            "full_over_main": round(full_cpu / main_cpu[name], 3),
        }
        if args.timing_only:
            rows[name] = row
            print(name, json.dumps(row), flush=True)
            continue
        variants = {"full": full, "sampled": sampled}
        # approximation 1: the node order is inferred; a random order instead of by name
        original_begin = node_tree.NodeSampler.begin
        permutation = np.random.default_rng(7).permutation(len(names))

        def shuffled_begin(
            self: node_tree.NodeSampler, active: np.ndarray, order: Any = permutation
        ) -> None:
            for node in order.tolist():
                if active[node]:
                    self.tree.add(node)

        node_tree.NodeSampler.begin = shuffled_begin  # type: ignore[method-assign]
        try:
            variants["random order"] = replay(inp, Strategy(name, profile))
        finally:
            node_tree.NodeSampler.begin = original_begin  # type: ignore[method-assign]
        # approximation 2: 16 goroutines may find up to 16 more nodes than K
        original_wanted = node_tree.NodeSampler.wanted

        def overshoot(self: node_tree.NodeSampler, base: Any = original_wanted) -> int:
            return min(int(base.fget(self)) + 16, len(self.tree.members))

        node_tree.NodeSampler.wanted = property(overshoot)  # type: ignore[method-assign,assignment]
        try:
            variants["K + 16"] = replay(inp, Strategy(name, profile))
        finally:
            node_tree.NodeSampler.wanted = original_wanted  # type: ignore[method-assign]
        for label, result in variants.items():
            outcome = evaluate(inp, result, mats, thresholds)
            row[label] = {
                "active_nodes_peak": outcome.active_nodes_peak,
                "core_hours": round(_core_hours(inp, outcome, result)),
                "violations": outcome.violations,
                "nodes_with_violations": outcome.nodes_with_violations,
                "waited": outcome.waited,
                "never_placed": outcome.never_placed,
            }
        rows[name] = row
        print(name, json.dumps(row), flush=True)
    print(json.dumps({
        "bench": "sampling", "nodes": len(names), "pods": inp.pod_count,
        "machine": platform.processor() or platform.machine(), "python": platform.python_version(),
        "load_avg": round(os.getloadavg()[0], 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "strategies": rows,
    }))  # fmt: skip


if __name__ == "__main__":
    main()
