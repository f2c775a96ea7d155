"""Benchmark: the monthly review of a year of history (issue 16 target: < 15 s and < 2 GB peak).

Writes a synthetic history straight to parquet through the store's writer
(``analyzer.history.capacity.write_tables``): 5,000 nodes in 10 pools of 500, 2,000 workloads,
365 days (one pools and one workloads file per day), each pool's requests and usage a linear trend
with a weekly cycle and noise. Then, each in a fresh process so its peak memory is its own:

- ``baseline``: read every history file into pandas (``pd.read_parquet`` per file, concatenated) —
  the floor any report over this history pays;
- ``report``: ``analyzer report monthly`` as the CLI runs it (``build_review`` and
  ``write_monthly_report``: 40 forecasts, the page with 10 charts, report.json, CSVs, the stored
  forecast), default 6 months of trend.

Prints wall and CPU seconds and peak RSS per phase, the ratio report / baseline, and a final JSON
line. ``--keep DIR`` keeps the history.

    PYTHONPATH=$PWD .venv/bin/python bench/monthly.py [--days 365] [--nodes 5000] [--workloads 2000]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

GIB = 2**30
POOLS = 10
TARGET_S = 15.0
TARGET_BYTES = 2 * 10**9


def generate(root: Path, days: int, nodes: int, workloads: int, seed: int = 7) -> date:
    """Write the synthetic history under ``root``; returns the last day."""
    from analyzer.history.capacity import write_tables

    rng = np.random.default_rng(seed)
    start = date(2026, 10, 31) - timedelta(days=days - 1)
    per_pool = nodes // POOLS
    names = [f"pool-{i:02d}" for i in range(POOLS)]
    node_cpu, node_mem = 16_000, 64 * GIB
    alloc_cpu, alloc_mem = per_pool * node_cpu, per_pool * node_mem
    level = rng.uniform(0.35, 0.6, POOLS)  # requested share of allocatable on day 0
    growth = rng.uniform(0.0, 0.0015, POOLS)  # share per day
    w_pool = rng.integers(0, POOLS, workloads)
    w_req = rng.uniform(100, 4000, workloads)
    w_mem = rng.uniform(0.25, 8, workloads) * GIB
    w_rep = rng.uniform(1, 20, workloads)
    w_growth = rng.uniform(-0.001, 0.004, workloads)
    w_use = rng.uniform(0.1, 0.9, workloads)
    t_all = np.arange(days)
    for t in t_all:
        day = start + timedelta(days=int(t))
        cycle = np.sin(2 * np.pi * t / 7)
        share = level + growth * t + 0.02 * cycle + rng.normal(0, 0.005, POOLS)
        used = share * rng.uniform(0.45, 0.55, POOLS)
        pools = pd.DataFrame(
            {
                "day": pd.Timestamp(day, tz="UTC"),
                "pool": names,
                "nodes_mean": float(per_pool),
                "nodes_max": per_pool,
                **{
                    f"{r}_allocatable_{s}_{u}": float(a)
                    for r, u, a in (
                        ("cpu", "millicores", alloc_cpu),
                        ("memory", "bytes", alloc_mem),
                    )
                    for s in ("mean", "peak")
                },
                "cpu_requested_mean_millicores": share * alloc_cpu,
                "cpu_requested_peak_millicores": share * alloc_cpu * 1.03,
                "memory_requested_mean_bytes": share * 0.8 * alloc_mem,
                "memory_requested_peak_bytes": share * 0.8 * alloc_mem * 1.02,
                **{
                    f"cpu_used_{s}_millicores": used * alloc_cpu * f
                    for s, f in (("avg", 0.7), ("p95", 1.0), ("p99", 1.05), ("max", 1.1))
                },
                **{
                    f"memory_used_{s}_bytes": used * 1.2 * alloc_mem * f
                    for s, f in (("avg", 0.95), ("p95", 1.0), ("p99", 1.01), ("max", 1.02))
                },
                "used_samples": 288,
                **{
                    f"{r}_daemonset_requested_{s}_{u}": 100.0 * per_pool
                    for r, u in (("cpu", "millicores"), ("memory", "bytes"))
                    for s in ("mean", "peak")
                },
                "largest_node": [f"{n}-node-000" for n in names],
                "largest_node_cpu_allocatable_millicores": node_cpu,
                "largest_node_memory_allocatable_bytes": node_mem,
            }
        )
        replicas = w_rep * (1 + w_growth * t)
        p95 = w_req * w_use * (1 + 0.1 * cycle)
        work = pd.DataFrame(
            {
                "day": pd.Timestamp(day, tz="UTC"),
                "namespace": [f"team-{i % 40}" for i in range(workloads)],
                "owner_kind": "Deployment",
                "owner_name": [f"app-{i:04d}" for i in range(workloads)],
                "pool": [names[p] for p in w_pool],
                "pods": np.ceil(replicas).astype(int),
                "replicas_mean": replicas,
                "replicas_max": np.ceil(replicas).astype(int),
                "cpu_request_millicores": w_req,
                "cpu_limit_millicores": 0.0,
                "memory_request_bytes": w_mem,
                "memory_limit_bytes": 0.0,
                "cpu_used_p50_millicores": p95 * 0.5,
                "cpu_used_p90_millicores": p95 * 0.9,
                "cpu_used_p95_millicores": p95,
                "cpu_used_p99_millicores": p95 * 1.1,
                "cpu_used_max_millicores": p95 * 1.3,
                "memory_used_p99_bytes": w_mem * w_use,
                "memory_used_max_bytes": w_mem * w_use * 1.1,
                "cpu_samples": 288,
                "restarts": None,
                "oom_kills": None,
            }
        )
        write_tables(root, day, {"pools": pools, "workloads": work})
    return start + timedelta(days=days - 1)


def phase(name: str, root: Path, out: Path) -> dict[str, Any]:
    """Run one phase in this process (called in a child) and return its figures."""
    began, cpu = time.perf_counter(), time.process_time()
    if name == "baseline":
        frames = [
            pd.read_parquet(p) for folder in ("pools", "workloads")
            for p in sorted((root / folder).glob("*.parquet"))
        ]  # fmt: skip
        rows = len(pd.concat(frames, ignore_index=True))
        extra: dict[str, Any] = {"rows": rows}
    else:
        from analyzer.monthly.review import ReviewSettings, build_review
        from analyzer.report.monthly import write_monthly_report

        review = build_review(root, ReviewSettings())
        reviewed = time.perf_counter()
        paths = write_monthly_report(review, out, history=root)
        extra = {
            "review_s": round(reviewed - began, 3),
            "render_s": round(time.perf_counter() - reviewed, 3),
            "html_bytes": paths.html_bytes,
            "json_bytes": paths.json.stat().st_size,
            "month": review.payload["month"],
        }
    return {
        "phase": name,
        "wall_s": round(time.perf_counter() - began, 3),
        "cpu_s": round(time.process_time() - cpu, 3),
        # Linux reports ru_maxrss in KiB.
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        **extra,
    }


def child(name: str, root: Path, out: Path) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, __file__, "--phase", name, "--root", str(root), "--out", str(out)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    result: dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--phase", choices=["baseline", "report"], default=None)
    parser.add_argument("--root", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.root, args.out)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = (args.keep or Path(tmp)) / "history"
        began = time.perf_counter()
        if not (root / "pools").is_dir():
            generate(root, args.days, args.nodes, args.workloads)
        generated = time.perf_counter() - began
        baseline = child("baseline", root, Path(tmp) / "unused")
        report = child("report", root, Path(tmp) / "review")
    figures = {
        "bench": "monthly",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()} {platform.processor() or ''} Python {platform.python_version()}",
        "days": args.days, "nodes": args.nodes, "workloads": args.workloads,
        "generate_s": round(generated, 1),
        "baseline": baseline, "report": report,
        "wall_ratio_report_vs_baseline": round(report["wall_s"] / baseline["wall_s"], 2),
        "report_under_15s": report["wall_s"] < TARGET_S,
        "report_under_2gb": report["peak_rss_bytes"] < TARGET_BYTES,
    }  # fmt: skip
    print(f"history: {args.days} days, {args.nodes} nodes in {POOLS} pools, {args.workloads} "
          f"workloads (generated in {generated:.1f} s)")  # fmt: skip
    for p in (baseline, report):
        print(f"{p['phase']:>8}: {p['wall_s']:.2f} s wall, {p['cpu_s']:.2f} s CPU, peak RSS "
              f"{p['peak_rss_bytes'] / 2**20:,.0f} MiB")  # fmt: skip
    print(f"report / baseline: {figures['wall_ratio_report_vs_baseline']}×")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
