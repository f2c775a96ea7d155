"""Benchmark ``analyzer collect`` against a plain sequential ``prometheus_api_client`` loop.

Generates a synthetic cluster (analyzer.sources), writes it as OpenMetrics, backfills it with
promtool into a real Prometheus on 127.0.0.1, then times, in the same run and on the same server:

- ``analyzer collect`` (a subprocess: wall time and its own peak RSS via ``os.wait4``);
- the baseline: the same rendered profile queries sent one after another with
  ``PrometheusConnect.custom_query_range``, one request per query per day, each response turned
  into a ``MetricRangeDataFrame`` (the library's default conversion), also a subprocess. Queries
  the collector evaluates from raw samples go out as the plain PromQL they reproduce:
  ``samples`` as ``equivalent_promql`` (a range query), ``times`` as the 5 m timestamp subquery.

Prints a final JSON line with the figures. Usage::

    .venv/bin/python bench/collect.py --nodes 50 --days 1 --step 60

``--stream-days D`` writes and backfills the OpenMetrics D days at a time into one TSDB directory
(``write_openmetrics(start_s=, end_s=)``), deleting each slice's text after its backfill, so disk
use stays at one slice of text plus the compressed blocks (the full 500 nodes × 7 days text would
be hundreds of GB). The server then runs with 2 h min/max block durations so it does not compact
the backfilled blocks while the benchmark queries it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def _measure(cmd: list[str]) -> tuple[float, float, str]:
    """Run ``cmd``; return (wall seconds, peak RSS MiB of that process, stdout)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read().decode()
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 3):
        raise SystemExit(f"{cmd[:3]} failed ({proc.returncode}): {err[-2000:]}")
    return wall, usage.ru_maxrss / 1024, out


def baseline(url: str, start: int, end: int, step: int) -> None:
    """The plain loop: every profile query, day by day, sequentially, default DataFrame conversion."""
    from prometheus_api_client import MetricRangeDataFrame, PrometheusConnect

    from analyzer.prom.fetch import FetchPlan, sample_rule
    from analyzer.prom.profile import load_profile
    from analyzer.prom.samples import equivalent_promql, subquery_promql
    from analyzer.prom.time_grid import make_grid

    grid = make_grid(start, end, step)
    plan = FetchPlan(grid)
    client = PrometheusConnect(url=url)
    rows = 0
    requests = 0
    for spec in load_profile().values():
        expr = spec.render(step_seconds=step, span_seconds=plan.span)
        if spec.kind == "samples":  # the same series as the PromQL the collector reproduces
            expr = equivalent_promql(expr, sample_rule(spec, grid))
        if spec.kind == "times":  # first/last seen as plain PromQL: the 5 m timestamp subquery
            expr = subquery_promql(expr, spec.by, spec.combine, "5m")
            spec = replace(spec, kind="window")
        if spec.kind in ("range", "samples"):
            windows = [
                (s, min(s + 86400 - step, grid.end), step)
                for s in range(grid.start, grid.end + 1, 86400)
            ]
        else:
            windows = plan.requests_for(spec)
        for s, e, st in windows:
            result = client.custom_query_range(
                expr,
                datetime.fromtimestamp(s, UTC),
                datetime.fromtimestamp(e, UTC),
                step=str(st),
            )
            requests += 1
            if result:
                rows += len(MetricRangeDataFrame(result))
    print(json.dumps({"rows": rows, "requests": requests}))


def _stream(
    cluster: Any, om: Path, blocks: Path, args: argparse.Namespace, write: dict[str, Any]
) -> dict[str, Any]:
    """Write and backfill ``cluster`` ``args.stream_days`` at a time; return the totals."""
    from conftest import backfill

    from analyzer.sources import write_openmetrics

    times = cluster.grid.times
    chunk = int(args.stream_days * 86400)
    totals: dict[str, Any] = {"samples": 0, "bytes": 0, "slices": 0}
    write_s = backfill_s = 0.0
    for lo in range(int(times[0]), int(times[-1]) + 1, chunk):
        t = time.perf_counter()
        stats = write_openmetrics(cluster, om, start_s=lo, end_s=lo + chunk - 1, **write)
        write_s += time.perf_counter() - t
        t = time.perf_counter()
        backfill(om, blocks)  # one more set of blocks in the same directory
        om.unlink()
        backfill_s += time.perf_counter() - t
        totals["samples"] += stats.samples
        totals["bytes"] += stats.bytes
        totals["slices"] += 1
        print(
            f"slice {totals['slices']}: {stats.samples} samples, {stats.bytes} bytes, "
            f"write {write_s:.0f} s, backfill {backfill_s:.0f} s so far",
            file=sys.stderr,
            flush=True,
        )
    totals["write_seconds"] = round(write_s, 1)
    totals["backfill_seconds"] = round(backfill_s, 1)
    totals["blocks_bytes"] = sum(f.stat().st_size for f in blocks.rglob("*") if f.is_file())
    return totals


def _build(
    args: argparse.Namespace, figures: dict[str, Any], blocks: Path
) -> tuple[int, int, tuple[str, ...]]:
    """Generate the cluster and backfill it into ``blocks``; return (start, end, server args)."""
    from conftest import backfill

    from analyzer.sources import SyntheticSpec, generate, write_openmetrics

    t = time.perf_counter()
    cluster = generate(
        SyntheticSpec(
            seed=1,
            nodes=args.nodes,
            days=args.days,
            step=args.step,
            pods_per_node=args.pods_per_node,
            **({"start": args.start} if getattr(args, "start", None) else {}),
        )
    )
    figures["generate_seconds_only"] = round(time.perf_counter() - t, 1)
    om = args.workdir / "cluster.om"
    write = {
        "instance_convention": "host-ip",
        "node_exporter_cpus": args.node_exporter_cpus,
        "constant_step": args.constant_step,
    }
    figures["constant_step"] = args.constant_step
    if args.stream_days > 0:
        figures["generate_seconds"] = round(time.perf_counter() - t, 1)
        figures["stream_days"] = args.stream_days
        figures["openmetrics"] = _stream(cluster, om, blocks, args, write)
        server_args: tuple[str, ...] = (
            "--storage.tsdb.min-block-duration=2h",
            "--storage.tsdb.max-block-duration=2h",
        )
    else:
        stats = write_openmetrics(cluster, om, **write)
        figures["generate_write_seconds"] = round(time.perf_counter() - t, 1)
        figures["openmetrics"] = {
            "series": stats.series,
            "samples": stats.samples,
            "bytes": stats.bytes,
        }
        t = time.perf_counter()
        backfill(om, blocks)
        om.unlink()  # the blocks hold the data now; free the disk
        figures["backfill_seconds"] = round(time.perf_counter() - t, 1)
        server_args = ()
    truth = cluster.snapshot
    return int(truth.start.timestamp()), int(truth.end.timestamp()), server_args


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--days", type=float, default=7)
    parser.add_argument("--step", type=int, default=60)
    parser.add_argument("--pods-per-node", type=float, default=8.0)
    parser.add_argument("--node-exporter-cpus", type=int, default=1)
    parser.add_argument("--constant-step", type=int, default=None)
    parser.add_argument("--stream-days", type=float, default=0.0)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/analyzer-bench-collect"))
    parser.add_argument("--skip-baseline", action="store_true")
    parser.add_argument("--blocks", type=Path, default=None, help="keep/reuse the TSDB here")
    parser.add_argument("--repeat", type=int, default=1, help="collect runs (the best is kept)")
    parser.add_argument(
        "--baseline-run", nargs=4, metavar=("URL", "START", "END", "STEP"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.baseline_run:
        url, start, end, step = args.baseline_run
        baseline(url, int(start), int(end), int(step))
        return

    from conftest import start_prometheus, stop_prometheus

    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    figures: dict[str, Any] = {
        "nodes": args.nodes,
        "days": args.days,
        "step": args.step,
        "pods_per_node": args.pods_per_node,
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, {platform.python_implementation()} {platform.python_version()}",
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
    }
    blocks = args.blocks or args.workdir / "blocks"
    params = {k: figures[k] for k in ("nodes", "days", "step", "pods_per_node")} | {
        "constant_step": args.constant_step,
        "node_exporter_cpus": args.node_exporter_cpus,
    }
    marker = blocks.with_name(blocks.name + ".json")
    reuse = args.blocks is not None and marker.exists()
    if reuse:
        recorded = json.loads(marker.read_text())
        if recorded["params"] != params:
            raise SystemExit(f"{blocks} holds another cluster: {recorded['params']}")
        figures.update(recorded["figures"])
        figures["reused_blocks"] = str(blocks)
        start, end = recorded["start"], recorded["end"]
        server_args: tuple[str, ...] = tuple(recorded["server_args"])
    else:
        shutil.rmtree(blocks, ignore_errors=True)
        start, end, server_args = _build(args, figures, blocks)
        marker.write_text(
            json.dumps(
                {
                    "params": params,
                    "start": start,
                    "end": end,
                    "server_args": list(server_args),
                    "figures": {
                        k: v
                        for k, v in figures.items()
                        if k not in params and k not in ("machine", "date")
                    },
                }
            )
        )
    server = start_prometheus(
        blocks,
        args.workdir / "server",
        ("--query.max-samples=200000000", *server_args),
    )
    try:
        out = args.workdir / "snapshot"
        analyzer = str(Path(sys.executable).parent / "analyzer")
        cmd = [
            analyzer,
            "collect",
            "--prometheus",
            server.url,
            "--start",
            str(start),
            "--end",
            str(end),
        ]
        figures["load_avg_before_collect"] = round(os.getloadavg()[0], 2)
        runs = []
        for _ in range(args.repeat):
            shutil.rmtree(out, ignore_errors=True)
            runs.append(_measure([*cmd, "--step", f"{args.step}s", "--out", str(out)])[:2])
            print(f"collect run: {runs[-1][0]:.1f} s, {runs[-1][1]:.0f} MB", file=sys.stderr)
        wall, rss = min(runs)
        figures["collect_runs"] = [[round(w, 2), round(r)] for w, r in runs]
        figures["collect_seconds"] = round(wall, 2)
        figures["collect_peak_rss_mb"] = round(rss)
        from analyzer.core.snapshot import read_snapshot

        snapshot = read_snapshot(out)
        figures["node_usage_rows"] = len(snapshot.node_usage)
        figures["pod_usage_rows"] = len(snapshot.pod_usage)
        figures["pods"] = len(snapshot.pods)
        if not args.skip_baseline:
            figures["load_avg_before_baseline"] = round(os.getloadavg()[0], 2)
            wall, rss, text = _measure(
                [
                    sys.executable,
                    __file__,
                    "--baseline-run",
                    server.url,
                    str(start),
                    str(end),
                    str(args.step),
                ]
            )
            figures["baseline_seconds"] = round(wall, 2)
            figures["baseline_peak_rss_mb"] = round(rss)
            figures["baseline_dataframe_rows"] = json.loads(text.strip().splitlines()[-1])["rows"]
            figures["speedup"] = round(figures["baseline_seconds"] / figures["collect_seconds"], 2)
    finally:
        stop_prometheus(server)
        shutil.rmtree(args.workdir, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
