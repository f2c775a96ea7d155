"""Benchmark: the replay's speed with NodePorts and the preemption offset, against a baseline.

Runs the whole replay of one synthetic cluster (the generator's, one day, churn) under the
given strategies and prints, per strategy, the best CPU seconds of ``repeat`` runs of the
``replay`` call (``time.process_time``: other jobs on a shared machine do not count) and a digest
of the result (sha256 over every pod's node, placement time, wait, and the preemptions), so
that two checkouts can be compared run for run:

    # the baseline: main's code, the same script (PYTHONPATH puts main's analyzer first)
    PYTHONPATH=/work/main .venv/bin/python bench/nodeports.py --snapshot /tmp/snap
    .venv/bin/python bench/nodeports.py --snapshot /tmp/snap
    .venv/bin/python bench/nodeports.py --snapshot /tmp/snap --ports-share 0.2

``--snapshot``: written by the first run, read by the others (run main first: its snapshot has
no ``host_ports`` column and reads as "no host ports" here). ``--ports-share S`` gives a share S of
the non-DaemonSet pods one host port (TCP 0.0.0.0:8080, so two never share a node) before
preparing — this checkout only. ``--share`` cuts every node's cpu and memory to that share so
pods wait and preempt (the priority mix of the generator), to time the dry runs too.

Prints one JSON line per strategy: {"strategy", "nodes", "pods", "ported", "cpu_s", "cpu_runs",
"digest", "waited", "preemptions", "load_avg"}.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import analyzer
from analyzer.core.snapshot import Snapshot, read_snapshot, write_snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling import load_strategy
from analyzer.sources import SyntheticSpec, generate

PORT_CELL = '[["TCP","0.0.0.0",8080]]'


def _cluster(args: argparse.Namespace) -> Snapshot:
    folder = Path(args.snapshot) if args.snapshot else None
    if folder is not None and (folder / "meta.json").exists():
        return read_snapshot(folder)
    spec = SyntheticSpec(seed=args.seed, nodes=args.nodes, days=1, step=300, churn=args.churn)
    snapshot = generate(spec).snapshot
    if folder is not None:
        write_snapshot(snapshot, folder)
    return snapshot


def _shaped(snapshot: Snapshot, args: argparse.Namespace) -> tuple[Snapshot, int]:
    pods = snapshot.pods.copy()
    ported = 0
    if args.ports_share > 0:
        movable = (pods["owner_kind"].fillna("") != "DaemonSet").to_numpy()
        step = max(1, round(1 / args.ports_share))
        cells = ["[]"] * len(pods)
        for i in [i for i, m in enumerate(movable) if m][::step]:
            cells[i] = PORT_CELL
            ported += 1
        pods["host_ports"] = cells
    nodes = snapshot.nodes.copy()
    if args.share < 1:
        for column in ("allocatable:cpu", "allocatable:memory"):
            nodes[column] = (nodes[column] * args.share).astype(nodes[column].dtype)
    return replace(snapshot, pods=pods, nodes=nodes), ported


def main() -> None:
    """Run the replays and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--churn", type=float, default=1.3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--snapshot", help="Keep/reuse the generated cluster in this folder.")
    parser.add_argument("--ports-share", type=float, default=0.0)
    parser.add_argument("--share", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--strategies", default="kube-default,most-allocated")
    args = parser.parse_args()
    snapshot, ported = _shaped(_cluster(args), args)
    inp = prepare(snapshot)
    print(f"analyzer from {Path(analyzer.__file__).parent}", file=sys.stderr)
    for name in args.strategies.split(","):
        strategy = Strategy(name, load_strategy(name))
        cpus = []
        for _ in range(args.repeat):
            began = time.process_time()
            result = replay(inp, strategy, seed=3)
            cpus.append(time.process_time() - began)
        digest = hashlib.sha256()
        for array in (result.node, result.placed_at, result.wait):
            digest.update(array.tobytes())
        for key in sorted(result.preemptions):
            digest.update(result.preemptions[key].tobytes())
        line = {
            "strategy": name,
            "nodes": len(inp.node_names),
            "pods": inp.pod_count,
            "ported": ported,
            "cpu_s": round(min(cpus), 2),
            "cpu_runs": [round(c, 2) for c in cpus],
            "digest": digest.hexdigest()[:16],
            "waited": int(result.waited.sum()),
            "preemptions": len(next(iter(result.preemptions.values()), [])),
            "load_avg": round(os.getloadavg()[0], 1),
        }
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
