"""Benchmark: the replay's CPU under two code trees, paired, on one snapshot.

Each round runs one child process per tree (``PYTHONPATH`` = the tree, so each imports its own
``analyzer``), alternating which goes first; a child reads the snapshot, prepares the replay input
and replays each strategy with its preset profile (the default ``percentageOfNodesToScore``),
reporting the CPU seconds of each ``replay`` call (``time.process_time``: other jobs on a shared
machine do not count, though they still slow a run through shared caches). The best of the rounds
counts for each tree; the ratio is TREE_B / TREE_A.

    .venv/bin/python bench/replay_ab.py SNAPSHOT TREE_A TREE_B [--strategies a,b] [--rounds 2]

The snapshot must be readable by both trees (write it with the older one). Prints a line per
child and a final JSON line per strategy.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

CHILD = r"""
import json, sys, time
from analyzer.core.snapshot import read_snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling import load_strategy
inp = prepare(read_snapshot(sys.argv[1]))
out = {}
for name in sys.argv[2].split(","):
    t0 = time.process_time()
    replay(inp, Strategy(name, load_strategy(name)), seed=0)
    out[name] = time.process_time() - t0
print(json.dumps(out))
"""


def main() -> None:
    """Run the benchmark (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot")
    parser.add_argument("tree_a")
    parser.add_argument("tree_b")
    parser.add_argument("--strategies", default="kube-default,most-allocated")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    trees = [args.tree_a, args.tree_b]
    cpu: dict[str, dict[str, list[float]]] = {tree: {} for tree in trees}
    for round_ in range(args.rounds):
        for tree in trees if round_ % 2 == 0 else trees[::-1]:
            env = {**os.environ, "PYTHONPATH": tree}
            done = subprocess.run(
                [sys.executable, "-c", CHILD, args.snapshot, args.strategies],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            seconds = json.loads(done.stdout.strip().splitlines()[-1])
            for name, value in seconds.items():
                cpu[tree].setdefault(name, []).append(round(value, 2))
            print(round_, tree, seconds, f"load {os.getloadavg()[0]:.1f}", flush=True)
    for name in args.strategies.split(","):
        a, b = min(cpu[args.tree_a][name]), min(cpu[args.tree_b][name])
        print(json.dumps({
            "strategy": name, "a": args.tree_a, "b": args.tree_b,
            "a_cpu_s": cpu[args.tree_a][name], "b_cpu_s": cpu[args.tree_b][name],
            "b_over_a": round(b / a, 3), "machine": platform.processor() or platform.machine(),
        }))  # fmt: skip


if __name__ == "__main__":
    main()
