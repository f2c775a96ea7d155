"""Benchmark: score one pod against 5,000 nodes with the kube-default profile.

Compares the vectorised core (``Profile.evaluate`` + ``select``, numpy int64 over all nodes) with a
straightforward per-node Python loop of the same plugins (``analyzer.scheduling.reference``), in the
same run, and checks both give the same totals. Prints a human line per figure and a final JSON line.

    .venv/bin/python bench/score.py [--nodes 5000] [--repeat 300]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

from analyzer.scheduling import ClusterState, load_strategy, make_demand
from analyzer.scheduling.reference import kube_default_loop

GI = 2**30


def cluster(nodes: int, seed: int) -> ClusterState:
    """A synthetic cluster: mixed node shapes, 0–80 % requested."""
    rng = np.random.default_rng(seed)
    cpu = rng.choice([4_000, 8_000, 16_000, 32_000, 64_000], size=nodes)
    memory = rng.choice([16, 32, 64, 128, 256], size=nodes) * GI
    state = ClusterState.from_nodes(
        [f"node-{i}" for i in range(nodes)],
        [{"cpu": int(c), "memory": int(m), "pods": 110} for c, m in zip(cpu, memory, strict=True)],
    )
    share = rng.random((nodes, 2)) * 0.8
    state.requested[:, 0] = (cpu * share[:, 0]).astype(np.int64)
    state.requested[:, 1] = (memory * share[:, 1]).astype(np.int64)
    state.nonzero_requested[:] = state.requested[:, :2] + rng.integers(0, 3, size=(nodes, 1)) * [
        100,
        200 * 2**20,
    ]
    state.pod_count[:] = rng.integers(0, 100, size=nodes)
    return state


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    state = cluster(options.nodes, options.seed)
    profile = load_strategy("kube-default")
    pod = make_demand(
        state.resources,
        {"cpu": 500, "memory": 2 * GI},
        {"cpu": 500, "memory": 2 * GI},
        name="bench",
        namespace="default",
    )
    rng = np.random.default_rng(options.seed)

    evaluation = profile.evaluate(state, pod)
    feasible, totals = kube_default_loop(state, pod, taint_affinity=True)
    assert evaluation.total.tolist() == totals and evaluation.feasible.tolist() == feasible

    for _ in range(20):  # warm-up
        profile.select(profile.evaluate(state, pod), rng)
    start = time.perf_counter()
    for _ in range(options.repeat):
        profile.select(profile.evaluate(state, pod), rng)
    vectorised_ms = (time.perf_counter() - start) / options.repeat * 1000

    loops = max(3, options.repeat // 100)
    start = time.perf_counter()
    for _ in range(loops):
        kube_default_loop(state, pod, taint_affinity=True)
    loop_ms = (time.perf_counter() - start) / loops * 1000

    print(f"vectorised evaluate+select: {vectorised_ms:.3f} ms per pod ({options.nodes} nodes)")
    print(f"per-node Python loop:       {loop_ms:.1f} ms per pod")
    print(f"ratio:                      {loop_ms / vectorised_ms:.0f}x")
    print(
        json.dumps(
            {
                "benchmark": "score",
                "nodes": options.nodes,
                "profile": "kube-default",
                "vectorised_ms_per_pod": round(vectorised_ms, 4),
                "baseline_loop_ms_per_pod": round(loop_ms, 2),
                "ratio": round(loop_ms / vectorised_ms, 1),
                "python": platform.python_version(),
                "numpy": np.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
