"""Benchmark: the fleet page over 50 clusters × 500 nodes × 90 days (issue 27 target: ≤ 60 s, ≤ 2 GB).

The history is **synthetic**, written straight to parquet by ``analyzer.sources.fleet_history``
(the history store's own writers; fsync skipped while generating, since the files are the input,
not what is measured; ``--distinct`` clusters, default 5, are generated and the others are hard
links of their files under their own ``cluster=NAME`` and ``cluster.json``, so every file is still
read): per cluster ``cluster=NAME/history/`` with, per day, ``pools/`` (5 pools of
100 nodes), ``rollups/`` (node × cpu/memory × 5 stats: 5,000 rows) and ``summary/``. 50 × 90 days is
4,500 days, 22.5 M rollup rows. Then, each in a fresh process so its peak memory is its own:

- ``fleet``: the page as ``analyzer report fleet`` makes it (``fleet_month`` with DuckDB, then
  ``write_fleet_report``: page, JSON, CSVs);
- ``one-cluster``: the same over a root holding one of the clusters (the same-run baseline: what
  one cluster costs, so the ratio says how the fleet scales);
- ``checks``: the per-file checks alone (``analyzer/history/fleet_checks.py``: footers, then one
  SQL scan of the month's pools and rollups), which the ``fleet`` phase also runs;
- ``pandas``: the pool means and the hottest node-day with pandas reading the same files (the
  newest month's ``pools/`` and ``rollups/``, ``pd.read_parquet`` per file, concatenated) — the
  obvious way without DuckDB, and less than the page computes.

    PYTHONPATH=$PWD .venv/bin/python bench/fleet.py [--clusters 50] [--nodes 500] [--days 90]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TARGET_S = 60.0
TARGET_BYTES = 2 * 10**9


def generate(root: Path, clusters: int, nodes: int, days: int, distinct: int) -> None:
    """Write the synthetic fleet (fsync off in this process only: see the docstring): ``distinct``
    clusters generated, the others hard links of their files under their own names (their pools
    files copied, stamped with their own cluster)."""
    from analyzer.core.atomic import atomic_write_text
    from analyzer.history.fleet_source import cluster_dir
    from analyzer.history.identity import IDENTITY_FILE, ClusterIdentity
    from analyzer.sources.fleet_history import FleetSpec, cluster_names, write_fleet

    os.fsync = lambda fd: None  # type: ignore[assignment]
    made = min(distinct, clusters)
    write_fleet(root, FleetSpec(clusters=made, nodes=nodes, pools=5, days=days))
    sources = [root / cluster_dir(n) for n in cluster_names(FleetSpec(clusters=made))]
    for i in range(made, clusters):
        name = f"cluster-{i:02d}"
        source, target = sources[i % made], root / cluster_dir(name)
        for path in source.rglob("*"):
            if path.is_file() and path.name != IDENTITY_FILE:
                (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
                if path.parent.name == "pools":  # small; its footer must name its own cluster
                    stamped_copy(path, target / path.relative_to(source), name)
                else:
                    os.link(path, target / path.relative_to(source))
        history = target / "history"
        atomic_write_text(history / IDENTITY_FILE, ClusterIdentity(name, None, True).to_json())


def stamped_copy(path: Path, target: Path, cluster: str) -> None:
    """``path`` written at ``target`` with ``cluster``'s stamp in its parquet metadata (the fleet
    page refuses a pools file stamped with another cluster than its folder's)."""
    import pyarrow.parquet as pq

    from analyzer.history.identity import CLUSTER_KEY

    table = pq.read_table(path)
    metadata = {**(table.schema.metadata or {}), CLUSTER_KEY: cluster.encode("utf-8")}
    pq.write_table(table.replace_schema_metadata(metadata), target)


def phase(name: str, root: Path, out: Path) -> dict[str, Any]:
    """Run one phase in this process (called in a child) and return its figures."""
    began, cpu = time.perf_counter(), time.process_time()
    extra: dict[str, Any] = {}
    if name in ("fleet", "one-cluster"):
        from analyzer.history.fleet import fleet_month
        from analyzer.history.fleet_source import FleetSource
        from analyzer.report.fleet import write_fleet_report

        fleet = fleet_month(FleetSource(str(root)))
        computed = time.perf_counter()
        write_fleet_report(fleet, out)
        extra = {
            "query_s": round(computed - began, 3),
            "clusters": len(fleet.clusters),
            "pools": len(fleet.pools),
            "html_bytes": (out / "report.html").stat().st_size,
        }
    elif name == "checks":
        # the per-file checks alone, over the files the page reads (fleetcheck): their share
        # of the page's time is the figure; the page itself runs them too
        from dataclasses import replace

        from analyzer.history.fleet import _relation, latest_month
        from analyzer.history.fleet_checks import (
            POOL_QUANTITIES,
            ROLLUP_QUANTITIES,
            check_footers,
            check_rows,
        )
        from analyzer.history.fleet_source import FleetSource

        source = FleetSource(str(root))
        clusters = source.clusters()
        prefix = latest_month(source, clusters) + "-"
        clusters = [
            replace(c, files={t: [p for p in ps if p.rsplit("/", 1)[-1].startswith(prefix)]
                              for t, ps in c.files.items()})
            for c in clusters
        ]  # fmt: skip
        check_footers(source, clusters)
        footers = time.perf_counter()
        con = source.connect()
        for table, columns in (("pools", POOL_QUANTITIES), ("rollups", ROLLUP_QUANTITIES)):
            relation = _relation(source, clusters, table, "read_parquet",
                                 ", union_by_name=true, filename=true")  # fmt: skip
            check_rows(con, relation, columns, lambda c, sql: c.execute(sql).df())
        extra = {"footers_s": round(footers - began, 3)}
    else:
        import pandas as pd

        # the same files the page reads: the newest month's days
        month = max(p.name for p in root.glob("*/history/pools/*.parquet"))[:7]
        pools = pd.concat(
            [pd.read_parquet(p) for p in sorted(root.glob(f"*/history/pools/{month}-*.parquet"))]
        )
        figures = pools.groupby("pool")[["cpu_allocatable_mean_millicores"]].mean()
        frames = []
        for path in sorted(root.glob(f"*/history/rollups/{month}-*.parquet")):
            frames.append(pd.read_parquet(path).assign(cluster=path.parts[-4]))
        rollups = pd.concat(frames, ignore_index=True)
        p95 = rollups[rollups["stat"] == "p95"]
        share = 100 * p95["value"] / p95["allocatable"]
        extra = {"rollup_rows": len(rollups), "top_pct": float(share.max()), "pools": len(figures)}
    return {
        "phase": name,
        "wall_s": round(time.perf_counter() - began, 3),
        "cpu_s": round(time.process_time() - cpu, 3),
        # Linux reports ru_maxrss in KiB; DuckDB's threads are in this process, so counted.
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
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--distinct", type=int, default=5,
                        help="Clusters generated; the others are hard links of their files.")  # fmt: skip
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--skip-pandas", action="store_true")
    parser.add_argument(
        "--phase", choices=["fleet", "one-cluster", "pandas", "checks"], default=None
    )
    parser.add_argument("--root", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, args.root, args.out)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = (args.keep or Path(tmp)) / "fleet"
        began = time.perf_counter()
        if not root.is_dir():
            generate(root, args.clusters, args.nodes, args.days, args.distinct)
        generated = time.perf_counter() - began
        one = Path(tmp) / "one"
        one.mkdir()
        first = sorted(root.iterdir())[0]
        (one / first.name).symlink_to(first)
        phases = [
            child("fleet", root, Path(tmp) / "page"),
            child("one-cluster", one, Path(tmp) / "p1"),
            child("checks", root, Path(tmp) / "unused"),
        ]
        if not args.skip_pandas:
            phases.append(child("pandas", root, Path(tmp) / "unused"))
    fleet, single = phases[0], phases[1]
    figures = {
        "bench": "fleet",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()} {os.cpu_count()} cores Python {platform.python_version()}",
        "clusters": args.clusters, "distinct": min(args.distinct, args.clusters),
        "nodes": args.nodes, "days": args.days,
        "generate_s": round(generated, 1),
        "phases": phases,
        "wall_ratio_fleet_vs_one_cluster": round(fleet["wall_s"] / single["wall_s"], 2),
        "fleet_under_60s": fleet["wall_s"] <= TARGET_S,
        "fleet_under_2gb": fleet["peak_rss_bytes"] <= TARGET_BYTES,
    }  # fmt: skip
    # the per-file checks (inside the fleet phase's time) as a share of the whole page
    figures["wall_ratio_checks_vs_fleet"] = round(phases[2]["wall_s"] / fleet["wall_s"], 2)
    if len(phases) > 3:
        figures["wall_ratio_fleet_vs_pandas"] = round(fleet["wall_s"] / phases[3]["wall_s"], 2)
    print(f"fleet: {args.clusters} clusters x {args.nodes} nodes x {args.days} days, synthetic "
          f"(generated in {generated:.1f} s)")  # fmt: skip
    for p in phases:
        print(f"{p['phase']:>12}: {p['wall_s']:.2f} s wall, {p['cpu_s']:.2f} s CPU, peak RSS "
              f"{p['peak_rss_bytes'] / 2**20:,.0f} MiB")  # fmt: skip
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
