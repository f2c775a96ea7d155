"""The replay under cluster-autoscaler on many small seeded clusters: its records, kept to compare
two trees (a speed change to CA's loop must leave every record as it was).

Each run is the generator's cluster (``--nodes`` nodes, ``--hours`` hours, 5-minute step) for one
seed, one strategy and one bound: each pool's minSize 0, 2 under its size, at its size, or the
default bounds (the data's observed range; with this generator every pool at its minimum). Every
third seed sets ``max-scale-down-parallelism 1`` and a 2-minute unremovable recheck (the limit and
the rechecks act), every fourth adds pod constraints (spreading, affinity), every fifth (since
2026-11-30) sets ``ignore-daemonsets-utilization`` with DaemonSet pods of 1.5 cores (the screen
takes them off: ``autoscale_screen.taken_off``). The records: the
node trajectory (presence, removals, additions, scale-ups), the evictions, the per-run reasons,
the pass counters, and every pod's node, placement time and wait.

    .venv/bin/python bench/ca_records.py OUT.pkl [--seeds 32]          # run this tree
    PYTHONPATH=/path/to/other/tree .venv/bin/python bench/ca_records.py OLD.pkl
    .venv/bin/python bench/ca_records.py --compare OLD.pkl OUT.pkl [--skip passes,skipped]

``--compare`` prints each run whose records differ (its first differing field) and exits 1 if
any does. The runs take ~1 minute at the defaults (32 seeds, 192 runs) on a 2-core VM.
"""

from __future__ import annotations

import argparse
import dataclasses
import pickle
import sys
from pathlib import Path
from typing import Any

from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate

COUNTERS = ("passes", "skipped", "simulated", "reused", "hinted", "reused_by_hints",
            "reused_over_epochs")  # fmt: skip
RECORDS = ("presence", "removed", "added", "scale_ups", "evictions", "reasons")
LIMITED = {"max-scale-down-parallelism": 1, "unremovable-node-recheck-timeout": "2m"}


def run(seed: int, strategy: str, below: int | None, nodes: int, hours: float) -> dict[str, Any]:
    """One replay's records. ``below``: each pool's minSize that many under its node count
    (None: the default bounds)."""
    spec = SyntheticSpec(seed=seed, nodes=nodes, days=hours / 24, step=300,
                         pod_constraints=seed % 4 == 1)  # fmt: skip
    cluster = generate(spec)
    flags = dict(LIMITED) if seed % 3 == 0 else {}
    if seed % 5 == 0:
        pods = cluster.snapshot.pods
        daemons = pods["owner_kind"] == "DaemonSet"
        pods.loc[daemons, "requests:cpu"] = 1500.0
        pods.loc[daemons, "nonzero_requests:cpu"] = 1500.0
        flags["ignore-daemonsets-utilization"] = True
    inp = prepare(cluster.snapshot)
    settings = parse_settings(flags or None)
    if below is not None:
        sizes = cluster.snapshot.nodes["pool"].fillna("default").astype(str).value_counts()
        groups = {p or "default": GroupBounds(min_size=max(0, int(n) - below))
                  for p, n in sizes.to_dict().items()}  # fmt: skip
        settings = dataclasses.replace(settings, groups=groups)
    auto, groups_ = with_node_groups(inp, settings)
    result = replay(auto, Strategy(strategy, load_strategy(strategy)), seed,
                    autoscaler=(groups_, settings))  # fmt: skip
    record = result.autoscaler
    out: dict[str, Any] = {k: getattr(record, k) for k in RECORDS + COUNTERS}
    for name in ("node", "placed_at", "wait"):
        out[name] = getattr(result, name).tobytes()
    return out


def compare(old: dict[str, Any], new: dict[str, Any], skip: set[str]) -> int:
    """The number of runs whose records differ (each printed with its first differing field)."""
    differing = 0
    for key in sorted(set(old) | set(new)):
        if key not in old or key not in new:
            print(f"{key}: in one file only")
            differing += 1
            continue
        for field in old[key]:
            if field not in skip and old[key][field] != new[key][field]:
                print(f"{key}: {field} differs")
                differing += 1
                break
    print(f"{len(old)} and {len(new)} runs, {differing} differing")
    return differing


def main() -> None:
    """Run or compare (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument("--seeds", type=int, default=32)
    parser.add_argument("--nodes", type=int, default=24)
    parser.add_argument("--hours", type=float, default=12.0)
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"))
    parser.add_argument("--skip", default="", help="fields not compared, comma-separated")
    args = parser.parse_args()
    if args.compare:
        old, new = (pickle.loads(Path(name).read_bytes()) for name in args.compare)
        sys.exit(1 if compare(old, new, set(filter(None, args.skip.split(",")))) else 0)
    if not args.out:
        parser.error("OUT.pkl or --compare OLD NEW")
    runs: dict[str, Any] = {}
    for seed in range(1, args.seeds + 1):
        for strategy in ("kube-default", "most-allocated"):
            for below in (0 if seed % 2 else 2, None, 10**6):  # at/under its size, default, 0
                key = f"seed={seed} {strategy} below={below}"
                runs[key] = run(seed, strategy, below, args.nodes, args.hours)
    Path(args.out).write_bytes(pickle.dumps(runs))
    print(f"{len(runs)} runs written to {args.out}")


if __name__ == "__main__":
    main()
