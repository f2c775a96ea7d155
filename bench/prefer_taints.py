"""Benchmark: kube-default replays when PreferNoSchedule taints make TaintToleration's score vary.

kube-default scores TaintToleration (weight 3) and NodeAffinity (2). On a cluster without
PreferNoSchedule taints (the synthetic generator's) their raw scores are equal on every node and
the replay's cache drops them; with such taints the cache normalises the raw count over the
currently feasible nodes at every choice (one numpy pass over all nodes per pod). This runs the
same replay twice in one process — the generated cluster as is (the baseline), and the same
cluster with a ``spot=true:PreferNoSchedule`` taint on every ``--every``-th node — and reports
placements/s of both and their ratio. ``bench/replay.py``'s per-node loop (which scores the taint
too) checks the fast path's first ``--baseline-pods`` choices on the tainted cluster.

    .venv/bin/python bench/prefer_taints.py [--nodes 5000] [--every 5] [--snapshot DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from replay import cluster, run

from analyzer.core.snapshot import Snapshot
from analyzer.replay.input import prepare

SPOT = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}


def with_prefer_taints(snapshot: Snapshot, every: int) -> Snapshot:
    """The snapshot with ``SPOT`` added to every ``every``-th node's taints."""
    nodes = snapshot.nodes.copy()
    texts = nodes["taints"].fillna("[]").astype(str).tolist()
    for i in range(0, len(texts), every):
        taints = json.loads(texts[i] or "[]")
        texts[i] = json.dumps([*taints, SPOT])
    nodes["taints"] = texts
    return dataclasses.replace(snapshot, nodes=nodes)


def main() -> None:
    """Run both replays and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--churn", type=float, default=1.3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--every", type=int, default=5)
    parser.add_argument("--snapshot", help="Keep/reuse the generated cluster in this folder.")
    parser.add_argument("--baseline-pods", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--loadaware-events", type=int, default=0)
    args = parser.parse_args()
    snapshot = cluster(args)
    figures = {}
    for label, snap in (
        ("plain", snapshot),
        ("prefer-taints", with_prefer_taints(snapshot, args.every)),
    ):
        result = run(prepare(snap), "kube-default", args)
        figures[label] = result
        print(
            f"{label}: {result['scored']} placements in {result['cpu_s']:.2f} CPU s "
            f"(runs: {', '.join(f'{c:.2f}' for c in result['cpu_runs'])}): "
            f"{result['placements_per_s']:.0f}/s; waited {result['waited']}",
            file=sys.stderr,
        )
    plain = figures["plain"]["placements_per_s"]
    tainted = figures["prefer-taints"]["placements_per_s"]
    print(
        json.dumps(
            {
                "benchmark": "prefer_taints",
                "nodes": args.nodes,
                "every": args.every,
                "plain_placements_per_s": round(plain, 1),
                "prefer_taints_placements_per_s": round(tainted, 1),
                "ratio": round(tainted / plain, 3),
                "python": platform.python_version(),
                "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            }
        )
    )


if __name__ == "__main__":
    main()
