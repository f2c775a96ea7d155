"""Benchmark: ``analyzer whatif --search`` on a synthetic cluster, pool vs one process.

The cluster comes from the synthetic generator (default 500 nodes × 1 day, 5-minute usage, the
demo's density without its crowded nodes). The search replays every configuration of the default
grid plus the baseline (kube-default) and observed, through the what-if comparison's process pool
(``--workers``, default: all cores). The baseline, in the same run, replays the same
configurations sequentially in one process (``workers=1``). Both must give the same rows
(checked); wall-clock seconds of each, the speed-up, and the peak RSS of this process are
reported.

    .venv/bin/python bench/search.py [--nodes 500] [--days 1] [--workers N]

Prints a human line and a final JSON line::

    {"nodes": N, "pods": P, "configurations": C, "search_s": X, "sequential_s": Y,
     "speedup": Y/X, "workers": W, "cpus": K, "peak_rss_mb": M}
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.search import SearchSettings, run_search
from analyzer.whatif.search_grid import DEFAULT_GRID


def main() -> None:
    """Generate, search twice (pool, sequential), compare, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--days", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    spec = SyntheticSpec(
        seed=7,
        nodes=args.nodes,
        days=args.days,
        step=300,
        pods_per_node=11.0,
        usage_scale=0.5,
        dedicated_pools=("memory",),
        hot_by_node=True,
    )
    snapshot = generate(spec).snapshot
    pods = len(snapshot.pods)
    began = time.perf_counter()
    pooled = run_search(snapshot, SearchSettings(grid=DEFAULT_GRID, workers=args.workers))
    search_s = time.perf_counter() - began
    began = time.perf_counter()
    sequential = run_search(snapshot, SearchSettings(grid=DEFAULT_GRID, workers=1))
    sequential_s = time.perf_counter() - began
    same = [r.to_dict() for r in pooled.rows] == [r.to_dict() for r in sequential.rows]
    if not same:
        raise SystemExit("the pooled and sequential searches disagree")
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    workers = args.workers or os.cpu_count() or 1
    configurations = len(pooled.rows) - 1
    print(
        f"{args.nodes} nodes × {args.days:g} day(s), {pods} pods, {configurations} configurations"
        f" + observed: search {search_s:.1f} s ({workers} workers), sequential "
        f"{sequential_s:.1f} s, ×{sequential_s / search_s:.2f}; {pooled.sentence}"
    )
    print(
        json.dumps(
            {
                "nodes": args.nodes,
                "pods": pods,
                "configurations": configurations,
                "search_s": round(search_s, 2),
                "sequential_s": round(sequential_s, 2),
                "speedup": round(sequential_s / search_s, 2),
                "workers": workers,
                "cpus": os.cpu_count(),
                "peak_rss_mb": round(rss_mb, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
