"""Benchmark: ``whatif --search --autoscaler karpenter`` (finalists only) against the same search
without an autoscaler, and against every row replayed under Karpenter.

A synthetic cluster (``analyzer.sources``; ``--nodes`` nodes, ``--days`` days at a 5-minute step)
is generated once; then, in the same process and run, one worker (so the process's CPU time is
the whole search's), the default grid (8 configurations and the kube-default baseline):

- the baseline: the search on the data's nodes (``--autoscaler none``);
- finalists: the search under Karpenter as ``whatif --search`` runs it (``search_finalists``: the
  baseline and the 3 best configurations replayed under Karpenter);
- every row: the same two rounds with all 8 configurations as finalists — what replaying the
  grid point by point under Karpenter would cost.

CPU seconds of this process, best of ``--repeat``. Prints a human line and a JSON line::

    {"nodes": N, "days": D, "rows": R, "cpu_s": C, "finalists_cpu_s": F, "all_cpu_s": A,
     "finalists_ratio": F / C, "all_ratio": A / C, ...}

    .venv/bin/python bench/search_karpenter.py [--nodes 30] [--days 1] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from typing import Any

from analyzer.replay.karpenter_setup import KarpenterSettings
from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.search import SearchSettings, run_search
from analyzer.whatif.search_finalists import run_any, run_finalists


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
    parser.add_argument("--nodes", type=int, default=30)
    parser.add_argument("--days", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    snapshot = generate(SyntheticSpec(seed=1, nodes=args.nodes, days=args.days, step=300)).snapshot
    plain = SearchSettings(workers=1)
    karpenter = SearchSettings(workers=1, autoscaler="karpenter", autoscaling=KarpenterSettings())
    cpu, result = _cpu(lambda: run_search(snapshot, plain), args.repeat)
    fin_cpu, fin = _cpu(lambda: run_any(snapshot, karpenter), args.repeat)
    configs = plain.grid.count()
    all_cpu, every = _cpu(lambda: run_finalists(snapshot, karpenter, count=configs), args.repeat)
    line = {
        "nodes": args.nodes,
        "days": args.days,
        "rows": len(result.rows) - 1,
        "finalists": len(fin.finalists or []),
        "cpu_s": round(cpu, 2),
        "finalists_cpu_s": round(fin_cpu, 2),
        "all_cpu_s": round(all_cpu, 2),
        "finalists_ratio": round(fin_cpu / cpu, 1),
        "all_ratio": round(all_cpu / cpu, 1),
        "recommended": result.recommended,
        "recommended_finalists": fin.recommended,
        "recommended_all": every.recommended,
        "machine": f"{platform.machine()} {platform.processor() or platform.system()}",
    }
    print(
        f"search of {line['rows']} rows, {args.nodes} nodes × {args.days} d: {cpu:.1f} s CPU; "
        f"under karpenter, {line['finalists']} finalists {fin_cpu:.1f} s "
        f"({line['finalists_ratio']}×), every row {all_cpu:.1f} s ({line['all_ratio']}×); "
        f"recommended {result.recommended} / {fin.recommended} / {every.recommended}"
    )
    print(json.dumps(line))


if __name__ == "__main__":
    main()
