"""Benchmark: the replay with node state in time, against another code tree in the same run.

One synthetic cluster (``--nodes``, one day, 5-minute step, the generator's ``node_events``:
two cordons, cluster-autoscaler taints of minutes on a third of the open nodes, a not-ready
join) is written twice: with its node_state table (``events/``) and without it (``plain/``, as
a snapshot collected before intervals existed). Each code tree (this one, and ``--baseline``,
e.g. a checkout of main) replays both under kube-default in a child process of its own
(``PYTHONPATH`` = the tree), best of ``--repeat`` runs by CPU seconds of the ``replay`` call.
A tree that does not know the table (main) reads ``events/`` as ``plain/``.

    .venv/bin/python bench/node_state.py --baseline /work/main [--nodes 5000] [--snapshot DIR]

Prints one JSON line per (tree, snapshot) and the ratios this/baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys, time
from analyzer.core.snapshot import read_snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling import load_strategy
snap = read_snapshot(sys.argv[1])
inp = prepare(snap)
strategy = Strategy("kube-default", load_strategy("kube-default"))
best = None
for _ in range(int(sys.argv[2])):
    t0 = time.process_time()
    result = replay(inp, strategy)
    cpu = time.process_time() - t0
    best = cpu if best is None else min(best, cpu)
placed = int((result.node >= 0).sum())
print(json.dumps({"cpu_s": round(best, 3), "placed": placed, "evicted": int(result.evicted),
                  "pods": inp.pod_count, "nodes": len(inp.node_names)}))
"""


def _write(folder: Path, nodes: int, seed: int) -> None:
    from analyzer.core.snapshot import write_snapshot
    from analyzer.sources import SyntheticSpec, generate

    cluster = generate(
        SyntheticSpec(seed=seed, nodes=nodes, days=1, step=300, churn=1.3, node_events=True)
    )
    write_snapshot(cluster.snapshot, folder / "events")
    table = cluster.snapshot.node_state
    assert table is not None
    # the same intervals without the PreferNoSchedule taints: what the scoring of those costs
    cluster.snapshot.node_state = table[table["effect"] != "PreferNoSchedule"]
    write_snapshot(cluster.snapshot, folder / "events-hard")
    cluster.snapshot.node_state = None
    write_snapshot(cluster.snapshot, folder / "plain")


def _run(tree: Path, snapshot: Path, repeat: int) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(snapshot), str(repeat)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        cwd=tree,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    """Parse the options, write the snapshots if needed, time every (tree, snapshot)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="Root of the other code tree.")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--snapshot", help="Keep/reuse the two snapshots in this folder.")
    args = parser.parse_args()
    folder = Path(args.snapshot or tempfile.mkdtemp(prefix="node-state-bench-"))
    if not (folder / "events-hard" / "meta.json").is_file():
        _write(folder, args.nodes, args.seed)
    rows = {}
    for tree_name, tree in (("this", HERE), ("baseline", Path(args.baseline))):
        for snap in ("plain", "events", "events-hard"):
            row = _run(tree, folder / snap, args.repeat)
            row |= {"tree": tree_name, "snapshot": snap}
            rows[(tree_name, snap)] = row
            print(json.dumps(row), flush=True)
    for snap in ("plain", "events", "events-hard"):
        ratio = float(rows[("this", snap)]["cpu_s"]) / float(rows[("baseline", snap)]["cpu_s"])  # type: ignore[arg-type]
        print(f"{snap}: this/baseline CPU = {ratio:.3f}")
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, python {platform.python_version()}"
    )


if __name__ == "__main__":
    main()
