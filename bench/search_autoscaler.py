"""Benchmark: ``whatif --search`` under cluster-autoscaler against the same search without it.

A synthetic cluster (``analyzer.sources``; ``--nodes`` nodes, ``--days`` days at a 5-minute step)
is generated once; then, in the same process and run, ``run_search`` of a small grid (scoring
LeastAllocated and MostAllocated, no LoadAware, baseline kube-default: 3 replays and observed)
with one worker — so the process's CPU time is the whole search's:

- the baseline: the search on the data's nodes (``--autoscaler none``);
- with CA: the same search, every row also replayed under cluster-autoscaler (node groups at
  ``minSize 0``) and ranked on that (``analyzer.whatif.search_autoscaled``).

CPU seconds of this process, best of ``--repeat``. Prints a human line and a JSON line::

    {"nodes": N, "days": D, "rows": R, "cpu_s": C, "ca_cpu_s": A, "ratio": A / C,
     "recommended": ..., "recommended_ca": ...}

    .venv/bin/python bench/search_autoscaler.py [--nodes 50] [--days 1] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from typing import Any

from analyzer.replay.autoscale_setup import GroupBounds, parse_settings
from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.search import SearchSettings, run_search
from analyzer.whatif.search_grid import SearchGrid


def _cpu(func: Any, repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        out = func()
        best = min(best, time.process_time() - t0)
    return best, out


def main() -> None:
    """Run the benchmark (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--days", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    snapshot = generate(SyntheticSpec(seed=1, nodes=args.nodes, days=args.days, step=300)).snapshot
    pools = set(snapshot.nodes["pool"].fillna("default").astype(str)) or {"default"}
    settings = parse_settings(None)
    settings = type(settings)(**{**vars(settings), "groups": {p: GroupBounds(0) for p in pools}})
    grid = SearchGrid(
        scoring=("LeastAllocated", "MostAllocated"),
        loadaware_thresholds=(None,),
        baselines=("kube-default",),
    )
    plain = SearchSettings(grid=grid, workers=1)
    with_ca = SearchSettings(grid=grid, workers=1, autoscaler="cluster-autoscaler",
                             autoscaling=settings)  # fmt: skip
    cpu, result = _cpu(lambda: run_search(snapshot, plain), args.repeat)
    ca_cpu, ca_result = _cpu(lambda: run_search(snapshot, with_ca), args.repeat)
    line = {
        "nodes": args.nodes,
        "days": args.days,
        "rows": len(result.rows) - 1,
        "cpu_s": round(cpu, 2),
        "ca_cpu_s": round(ca_cpu, 2),
        "ratio": round(ca_cpu / cpu, 3),
        "recommended": result.recommended,
        "recommended_ca": ca_result.recommended,
        "machine": f"{platform.machine()} {platform.processor() or platform.system()}",
    }
    print(
        f"search of {line['rows']} rows, {args.nodes} nodes × {args.days} d: {cpu:.1f} s CPU, "
        f"under cluster-autoscaler {ca_cpu:.1f} s ({line['ratio']:.2f}×); recommended "
        f"{result.recommended} / under CA {ca_result.recommended}"
    )
    print(json.dumps(line))


if __name__ == "__main__":
    main()
