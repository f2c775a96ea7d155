"""Benchmark: the joint right-size-then-repack scenarios of a 500-node pool's busiest week.

The cluster comes from the synthetic generator: ``--nodes`` nodes (default 900: the catalog's
``general`` pool gets 500 of them, ``memory`` and ``compute`` 200 each; no GPU pool) over
``--days`` days (default 8, so the busiest 7 are chosen) at a 5-minute step, the search bench's
density (11 app pods per node, half the usage). The recommendations are built by hand the way a
recipe would shape them: every workload's CPU request halved and memory request at 70 %. The
joint scenario (``analyzer.whatif.joint.run_joint``: four replays — today, right-size only,
repack only, both — in the process pool, then every pool's drain dry run in the same pool) is
timed against the plain sequential run of the same four scenarios and drains in one process
(``workers=1``), measured in the same run; both must give the same figures (checked). Wall
seconds of each, and CPU seconds (this process plus the pool's workers, which a shared machine's
load does not inflate).

    .venv/bin/python bench/joint.py [--nodes 500] [--days 7] [--workers N] [--no-drain]

Prints a human line and a final JSON line::

    {"nodes": N, "pods": P, "days": D, "joint_s": X, "sequential_s": Y, "speedup": Y/X,
     "joint_cpu_s": .., "sequential_cpu_s": .., "workers": W, "cpus": K, "peak_rss_mb": M,
     "load_1m": L, "both_nodes_peak": B, "repack_nodes_peak": R}
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np
import pandas as pd

from analyzer.core.workloads import KEY, workload_keys
from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.joint import BOTH, REPACK, JointSettings, run_joint


def recommendations(pods: pd.DataFrame) -> pd.DataFrame:
    """Per workload: current requests (the largest of its pods) and the hand-made recommendation."""
    frame = pd.concat([workload_keys(pods), pods[["requests:cpu", "requests:memory"]]], axis=1)
    recs = frame.groupby(KEY, as_index=False).agg(
        cpu_request_millicores=("requests:cpu", "max"),
        memory_request_bytes=("requests:memory", "max"),
    )
    cpu, memory = recs["cpu_request_millicores"], recs["memory_request_bytes"]
    recs["cpu_recommended_millicores"] = np.where(cpu > 0, np.ceil(cpu * 0.5), np.nan)
    recs["memory_recommended_bytes"] = np.where(memory > 0, np.ceil(memory * 0.7), np.nan)
    recs["skipped_reason"] = ""
    return recs


def _cpu() -> float:
    """CPU seconds of this process and of its finished children (the pool's workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    """Generate, run the joint scenario twice (pool, sequential), compare, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=900)
    parser.add_argument("--days", type=float, default=8.0)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--no-drain", action="store_true")
    args = parser.parse_args()
    spec = SyntheticSpec(
        seed=7,
        nodes=args.nodes,
        days=args.days,
        step=300,
        pods_per_node=11.0,
        usage_scale=0.5,
        hot_by_node=True,
        gpu_pool=False,
    )
    began = time.perf_counter()
    snapshot = generate(spec).snapshot
    generate_s = time.perf_counter() - began
    recs = recommendations(snapshot.pods)
    settings = JointSettings(workers=args.workers, drain=not args.no_drain)
    load = os.getloadavg()[0]
    began, cpu = time.perf_counter(), _cpu()
    pooled = run_joint(snapshot, recs, settings)
    joint_s, joint_cpu = time.perf_counter() - began, _cpu() - cpu
    began, cpu = time.perf_counter(), _cpu()
    sequential = run_joint(snapshot, recs, JointSettings(workers=1, drain=not args.no_drain))
    sequential_s, sequential_cpu = time.perf_counter() - began, _cpu() - cpu
    if json.dumps(pooled.to_dict(), default=str) != json.dumps(sequential.to_dict(), default=str):
        raise SystemExit("the pooled and sequential joint runs disagree")
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    pools = pooled.to_dict()["pools"]
    for pool in pools:
        rows = ", ".join(
            f"{s['name']} {s['nodes_peak']}/{s['nodes_observed']}" for s in pool["scenarios"]
        )
        drain = pool["drain"] or {}
        print(
            f"pool {pool['pool']}: {rows}; best {pool['best']}: "
            f"{len(pool['blocked_nodes'])} blocked, {drain.get('greedy_count', 0)} more drainable"
        )
    print(
        f"{args.nodes} nodes x {args.days:g} d ({len(snapshot.pods):,} pods, generated in "
        f"{generate_s:.0f} s): joint {joint_s:.1f} s, sequential {sequential_s:.1f} s "
        f"({sequential_s / joint_s:.2f}x); CPU {joint_cpu:.1f} s vs {sequential_cpu:.1f} s; "
        f"peak RSS {rss_mb:.0f} MB; load {load:.1f}"
    )
    line = {
        "nodes": args.nodes,
        "pods": len(snapshot.pods),
        "days": args.days,
        "window": [pooled.start, pooled.end],
        "joint_s": round(joint_s, 2),
        "sequential_s": round(sequential_s, 2),
        "speedup": round(sequential_s / joint_s, 2),
        "joint_cpu_s": round(joint_cpu, 1),
        "sequential_cpu_s": round(sequential_cpu, 1),
        "load_1m": round(load, 1),
        "workers": args.workers or os.cpu_count(),
        "cpus": os.cpu_count(),
        "peak_rss_mb": round(rss_mb, 1),
        "both_nodes_peak": pooled.run(BOTH).nodes_peak,
        "repack_nodes_peak": pooled.run(REPACK).nodes_peak,
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
