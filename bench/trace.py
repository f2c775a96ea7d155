"""Benchmark: the FGD protocol on the default openb trace (1,213 GPU nodes, ≈10.8k pods per seed).

Figures: one seed of BestFit and of FGD (targets: under 2 s and under 10 s), the six paper
policies × 10 seeds on a 2-process pool (target: under 5 minutes), and — as the baseline measured in
the same run — FGD scoring per pod by straightforward per-node, per-GPU Python recomputation of
F_n(M) (what the artifact's plugin does for every node) against our incremental vectorised
scoring, on the first pods of seed 42 (both must pick the same scores). Prints a final JSON line.

    .venv/bin/python bench/trace.py [--seeds 42-51] [--workers 2] [--baseline-pods 150]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time

import numpy as np

from analyzer.scheduling.gpu.cluster import GpuState
from analyzer.scheduling.gpu.fgd_score import fgd_candidates
from analyzer.scheduling.gpu.fragments import TargetWorkload
from analyzer.scheduling.gpu.model import GpuDemand
from analyzer.trace.protocol import RunSpec, fgd_order, run_fgd
from analyzer.trace.registry import PAPER_POLICIES, get_policy
from analyzer.trace.runner import TraceConfig, load_inputs, parse_seeds, run_trace


def naive_node_fragment(cpu: int, gpus: list[int], wl: TargetWorkload) -> float:
    """F_n(M) for one node by loops over shapes and GPUs (no caches), in GPU milli."""
    idle = sum(gpus)
    total = 0.0
    for m in range(len(wl.weights)):
        r, k, c = int(wl.gpu_milli[m]), int(wl.num_gpu[m]), int(wl.cpu[m])
        fits = sum(1 for g in gpus if g >= r)
        satisfied = r > 0 and cpu >= c and fits >= k  # openb default: no model constraints
        frag = sum(g for g in gpus if g < r) if satisfied else idle
        total += wl.weights[m] / wl.total * frag
    return total


def naive_scores(state: GpuState, demand: GpuDemand, feasible: np.ndarray) -> int:
    """Best FGD score over nodes × GPU choices, recomputing every node's F_n(M) from scratch."""
    best = -1
    for n in feasible:
        cpu = int(state.nodes.cpu_free[n])
        gpus = [int(g) for g in state.nodes.gpu_free[n]]
        before = naive_node_fragment(cpu, gpus, state.workload)
        choices = (
            [[j] for j, g in enumerate(gpus) if g >= demand.gpu_milli] if demand.shared else [[]]
        )
        for choice in choices:
            after_gpus = list(gpus)
            if demand.shared:
                after_gpus[choice[0]] -= demand.gpu_milli
            else:
                for j in state.nodes.pick_gpus(int(n), demand):
                    after_gpus[j] -= demand.gpu_milli
            after = naive_node_fragment(cpu - demand.cpu, after_gpus, state.workload)
            best = max(best, int(100 / (1 + math.exp((after - before) / 1000))))
    return best


def baseline(pods_to_score: int) -> dict[str, float]:
    """Per-pod FGD scoring time: naive loops vs incremental vectorised, same states."""
    inputs = load_inputs(TraceConfig())
    state = GpuState(inputs.nodes.gpu_nodes(), inputs.workload)
    order = fgd_order(inputs.pods, 42, 1.3, state.nodes.gpu_capacity_milli())
    policy, rng = get_policy("FGD"), np.random.default_rng([42, 1])
    naive_time = fast_time = 0.0
    for pod in order[:pods_to_score]:
        demand = inputs.pods.demand(int(pod))
        feasible = np.flatnonzero(state.nodes.feasible(demand))
        start = time.perf_counter()
        _, _, scores = fgd_candidates(state, demand, feasible)
        fast_time += time.perf_counter() - start
        start = time.perf_counter()
        slow_best = naive_scores(state, demand, feasible)
        naive_time += time.perf_counter() - start
        assert slow_best == int(scores.max()), "naive and vectorised FGD disagree"
        decision = policy(state, demand, feasible, rng)
        state.bind(decision.node, demand, decision.gpus)
    return {
        "pods": pods_to_score,
        "naive_ms_per_pod": 1000 * naive_time / pods_to_score,
        "vectorised_ms_per_pod": 1000 * fast_time / pods_to_score,
        "ratio": naive_time / fast_time,
    }


def main() -> None:
    """Run the figures and print one JSON line."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", default="42-51")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--baseline-pods", type=int, default=150)
    args = parser.parse_args()
    inputs = load_inputs(TraceConfig())
    single, cpu = {}, {}
    for name in ("BestFit", "FGD"):
        start, start_cpu = time.perf_counter(), time.process_time()
        rows = run_fgd(inputs.nodes, inputs.pods, inputs.workload, RunSpec(name, 42))
        single[name] = time.perf_counter() - start
        cpu[name] = time.process_time() - start_cpu
        print(
            f"{name}: one seed, {rows.pods} pods on {len(inputs.nodes.names)} nodes: "
            f"{single[name]:.2f} s wall, {cpu[name]:.2f} s CPU"
        )
    seeds = parse_seeds(args.seeds)
    start = time.perf_counter()
    result = run_trace(
        TraceConfig(policies=PAPER_POLICIES, seeds=seeds, workers=args.workers), inputs
    )
    sweep = time.perf_counter() - start
    print(f"six policies x {len(seeds)} seeds, {args.workers} workers: {sweep:.1f} s")
    base = baseline(args.baseline_pods)
    print(
        f"FGD scoring per pod, first {base['pods']} pods: naive {base['naive_ms_per_pod']:.1f} ms, "
        f"vectorised {base['vectorised_ms_per_pod']:.2f} ms, ratio {base['ratio']:.0f}x"
    )
    table = {
        name: r["table"].get("130", {}).get("alloc_pct_mean")
        for name, r in result.to_json()["policies"].items()
    }
    print(
        json.dumps(
            {
                "bench": "trace",
                "machine": f"{platform.machine()} {os.cpu_count()} cpus, python {platform.python_version()}",
                "date": time.strftime("%Y-%m-%d", time.gmtime()),
                "bestfit_one_seed_s": round(single["BestFit"], 3),
                "fgd_one_seed_s": round(single["FGD"], 3),
                "bestfit_one_seed_cpu_s": round(cpu["BestFit"], 3),
                "fgd_one_seed_cpu_s": round(cpu["FGD"], 3),
                "load_average_1m": round(os.getloadavg()[0], 2),
                "six_policies_x_seeds": len(seeds),
                "sweep_s": round(sweep, 1),
                "workers": args.workers,
                "fgd_baseline": {k: round(v, 3) for k, v in base.items()},
                "alloc_pct_at_130": table,
            }
        )
    )


if __name__ == "__main__":
    main()
