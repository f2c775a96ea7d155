"""Benchmark: one 24-replay what-if sweep on a Dask LocalCluster vs the local pool vs sequential.

The sweep: three strategies (kube-default, most-allocated, most-allocated-loadaware) × 8 tie-break
seeds = 24 replays (plus ``observed``, once) over a synthetic cluster written to a snapshot
folder (default 60 nodes × 1 day at 5 minutes). In the same run, the same ``run_whatif``:

- ``sequential``: ``--workers 1`` (the baseline of both ratios);
- ``local``: ``--executor local --workers W`` (a ``ProcessPoolExecutor``, the snapshot handed
  to each process by its initializer);
- ``dask``: ``--executor dask://…`` on a ``distributed.LocalCluster`` of W worker processes, one
  thread each, on 127.0.0.1; the workers read the snapshot from the folder themselves. Timed
  twice, each on its own new cluster: with workers that imported analyzer at their start
  (``--preload analyzer.whatif.compare``, as docs/executor.md runs them: a real cluster is
  already running, so the start is timed apart) — the figure of the ratios — and with fresh
  workers, whose first task also imports analyzer (a local pool's forked processes inherit the
  parent's imports, so this is the cost a cold cluster adds).

All three must give the same comparison (checked). Needs the ``dask`` extra.

    .venv/bin/python bench/sweep.py [--nodes 60] [--days 1] [--workers 2]

Prints a human line and a final JSON line::

    {"nodes": N, "pods": P, "replays": 24, "sequential_s": S, "local_s": L, "dask_s": D,
     "local_speedup": S/L, "dask_speedup": S/D, "dask_vs_local": L/D,
     "dask_fresh_workers_s": F, "cluster_start_s": C, ...}
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from distributed import LocalCluster

from analyzer.core.executor import ExecutorSpec
from analyzer.core.snapshot import read_snapshot, write_snapshot
from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.compare import WhatIfSettings, run_whatif

STRATEGIES = ("kube-default", "most-allocated", "most-allocated-loadaware")
SEEDS = 8
# what a worker started with ``dask worker --preload analyzer.whatif.compare`` imports at its start
PRELOAD = "analyzer.whatif.compare"


def main() -> None:
    """Generate, write, sweep three ways, compare, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=60)
    parser.add_argument("--days", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    spec = SyntheticSpec(seed=11, nodes=args.nodes, days=args.days, step=300, hot_nodes=0.2)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_snapshot(generate(spec).snapshot, Path(tmp) / "snap")
        snapshot = read_snapshot(path)
        base = WhatIfSettings(strategies=STRATEGIES, seeds=SEEDS)

        def sweep(settings: WhatIfSettings) -> tuple[float, dict[str, object]]:
            began = time.perf_counter()
            result = run_whatif(snapshot, settings, source=path)
            return time.perf_counter() - began, result.to_dict()

        sequential_s, sequential = sweep(replace(base, workers=1))
        local_s, local = sweep(replace(base, workers=args.workers))
        timings: dict[str, float] = {}
        remote = []
        for preload in ((), (PRELOAD,)):  # fresh workers; then workers that imported analyzer
            began = time.perf_counter()
            with LocalCluster(  # type: ignore[no-untyped-call]
                n_workers=args.workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",
                preload=list(preload),
            ) as cluster:
                name = "warm" if preload else "cold"
                timings[f"start_{name}"] = time.perf_counter() - began
                address = cluster.scheduler_address.removeprefix("tcp://")
                timings[name], result = sweep(replace(base, executor=ExecutorSpec(address)))
                remote.append(result)
    if not sequential == local == remote[0] == remote[1]:
        raise SystemExit("the sweeps disagree")
    dask_s = timings["warm"]
    replays = len(STRATEGIES) * SEEDS
    print(
        f"{args.nodes} nodes × {args.days:g} day(s), {len(snapshot.pods)} pods, {replays} "
        f"replays + observed: sequential {sequential_s:.1f} s, local pool ({args.workers}) "
        f"{local_s:.1f} s (×{sequential_s / local_s:.2f}), dask LocalCluster ({args.workers}) "
        f"{dask_s:.1f} s (×{sequential_s / dask_s:.2f}; workers that imported analyzer at "
        f"their start, {timings['start_warm']:.1f} s apart), fresh workers {timings['cold']:.1f} s"
    )
    print(
        json.dumps(
            {
                "nodes": args.nodes,
                "pods": len(snapshot.pods),
                "replays": replays,
                "sequential_s": round(sequential_s, 2),
                "local_s": round(local_s, 2),
                "dask_s": round(dask_s, 2),
                "local_speedup": round(sequential_s / local_s, 2),
                "dask_speedup": round(sequential_s / dask_s, 2),
                "dask_vs_local": round(local_s / dask_s, 2),
                "dask_fresh_workers_s": round(timings["cold"], 2),
                "cluster_start_s": round(timings["start_warm"], 2),
                "workers": args.workers,
                "cpus": os.cpu_count(),
                "load_1m_before": round(os.getloadavg()[0], 1),
            }
        )
    )


if __name__ == "__main__":
    main()
