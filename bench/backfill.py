"""Benchmark ``analyzer history backfill`` against one plain ``analyzer collect`` of the same days.

Generates a synthetic cluster (analyzer.sources, seed 1), writes it as OpenMetrics and backfills
it with promtool into a real Prometheus on 127.0.0.1 (``bench/collect.py``'s builder: sliced with
``--stream-days``, blocks kept with ``--blocks``), then times, in the same run and on the same
server, each as a subprocess (wall, user + system CPU and peak RSS of that process via
``os.wait4``; the server's CPU from ``/proc/PID/stat`` before and after):

- the baseline: ``analyzer collect --start S --end E --step STEP`` of the whole range (the raw
  fetch of the same days into one snapshot, no analysis);
- ``analyzer history backfill --since Nd --until LAST --step STEP --out DIR``: every day
  collected with its 1 h look-back, analysed by the nightly run and recorded.

Prints one JSON line. Usage (the issue's size; building the blocks takes long, they are reused)::

    .venv/bin/python bench/backfill.py --nodes 500 --days 30 --step 300 --pods-per-node 3 \\
        --constant-step 300 --stream-days 3 --blocks /work/bench-blocks/b500x30
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

_TICKS = os.sysconf("SC_CLK_TCK")


def _server_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _run_child(cmd: list[str], server_pid: int) -> dict[str, Any]:
    """Run ``cmd``: wall s, its own CPU s and peak RSS MiB (``os.wait4``), the server's CPU s."""
    server_before = _server_cpu(server_pid)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read().decode()
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    # Linux carries the forked parent's peak into the child's ru_maxrss across exec: a child's
    # figure at or below this process's own peak may be this process's, not the child's.
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 3):
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}): {err[-2000:]}")
    return {
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "peak_rss_is_parent_floor": usage.ru_maxrss <= floor,
        "server_cpu_seconds": round(_server_cpu(server_pid) - server_before, 1),
        "exit": proc.returncode,
        "last_line": out.strip().splitlines()[-1] if out.strip() else err.strip()[-300:],
        # backfill's per-day lines: "2026-11-01: written in 17.2 s"
        "day_seconds": [
            float(line.split(" in ")[1].split(" s")[0])
            for line in out.splitlines()
            if ": written in " in line
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--days", type=float, default=30)
    parser.add_argument("--step", type=int, default=300)
    parser.add_argument("--pods-per-node", type=float, default=3.0)
    parser.add_argument("--node-exporter-cpus", type=int, default=1)
    parser.add_argument("--constant-step", type=int, default=300)
    parser.add_argument("--stream-days", type=float, default=0.0)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/analyzer-bench-backfill"))
    parser.add_argument("--blocks", type=Path, default=None, help="keep/reuse the TSDB here")
    parser.add_argument(
        "--start",
        type=lambda text: datetime.fromisoformat(text.replace("Z", "+00:00")),
        default=None,
        help="the generated range's first instant (UTC, e.g. 2026-10-25T00:00:00Z; default: the "
        "generator's 2026-11-01), so that all the days are complete before today",
    )
    args = parser.parse_args()

    from collect import _build  # bench/collect.py: generate, write OpenMetrics, promtool
    from conftest import start_prometheus, stop_prometheus

    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    figures: dict[str, Any] = {
        "nodes": args.nodes,
        "days": args.days,
        "step": args.step,
        "pods_per_node": args.pods_per_node,
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, "
        f"{platform.python_implementation()} {platform.python_version()}",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    blocks = args.blocks or args.workdir / "blocks"
    params = {k: figures[k] for k in ("nodes", "days", "step", "pods_per_node")} | {
        "constant_step": args.constant_step,
        "node_exporter_cpus": args.node_exporter_cpus,
    }
    if args.start is not None:  # older markers have no start: the generator's default
        params["start"] = args.start.isoformat()
    marker = blocks.with_name(blocks.name + ".json")
    if args.blocks is not None and marker.exists():
        recorded = json.loads(marker.read_text())
        if recorded["params"] != params:
            raise SystemExit(f"{blocks} holds another cluster: {recorded['params']}")
        figures.update(recorded["figures"])
        figures["reused_blocks"] = str(blocks)
        start, end = recorded["start"], recorded["end"]
        server_args = tuple(recorded["server_args"])
    else:
        shutil.rmtree(blocks, ignore_errors=True)
        blocks.parent.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        start, end, server_args = _build(args, figures, blocks)
        figures["build_seconds"] = round(time.perf_counter() - t, 1)
        keep = {
            k: v for k, v in figures.items() if k not in params and k not in ("machine", "date")
        }
        marker.write_text(
            json.dumps(
                {"params": params, "start": start, "end": end,
                 "server_args": list(server_args), "figures": keep}
            )
        )  # fmt: skip
    print(f"blocks ready: {json.dumps(figures)}", file=sys.stderr, flush=True)
    first = datetime.fromtimestamp(start, UTC).date()
    last = (datetime.fromtimestamp(end, UTC) - timedelta(seconds=1)).date()
    # The generator starts on 2026-11-01: days not complete yet (today or later) cannot be
    # backfilled, so both sides stop at yesterday (UTC).
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    if last > yesterday:
        last = yesterday
        end = int(datetime(last.year, last.month, last.day, tzinfo=UTC).timestamp()) + 86400
        figures["clipped_to_yesterday"] = last.isoformat()
    days = (last - first).days + 1
    server = start_prometheus(
        blocks, args.workdir / "server", ("--query.max-samples=200000000", *server_args)
    )
    analyzer = [sys.executable, "-m", "analyzer"]
    env_note = os.environ.get("PYTHONPATH", "")
    figures["pythonpath"] = env_note
    try:
        pid = server.process.pid
        figures["load_avg_before_collect"] = round(os.getloadavg()[0], 2)
        collect = _run_child(
            [*analyzer, "collect", "--prometheus", server.url, "--start", str(start),
             "--end", str(end), "--step", f"{args.step}s", "--out",
             str(args.workdir / "snapshot")],
            pid,
        )  # fmt: skip
        figures["baseline_collect"] = collect
        shutil.rmtree(args.workdir / "snapshot", ignore_errors=True)
        figures["load_avg_before_backfill"] = round(os.getloadavg()[0], 2)
        out = args.workdir / "out"
        backfill = _run_child(
            [*analyzer, "history", "backfill", "--prometheus", server.url,
             "--since", f"{days}d", "--until", last.isoformat(), "--step", f"{args.step}s",
             "--out", str(out)],
            pid,
        )  # fmt: skip
        figures["backfill"] = backfill
        # the last day alone, into a fresh folder: peak memory must not grow with the days
        one = _run_child(
            [*analyzer, "history", "backfill", "--prometheus", server.url, "--since", "1d",
             "--until", last.isoformat(), "--step", f"{args.step}s",
             "--out", str(args.workdir / "one")],
            pid,
        )  # fmt: skip
        figures["backfill_one_day"] = one
        figures["backfill_days"] = days
        figures["history_bytes"] = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        figures["wall_ratio"] = round(backfill["wall_seconds"] / collect["wall_seconds"], 2)
        figures["cpu_ratio"] = round(backfill["cpu_seconds"] / max(collect["cpu_seconds"], 0.1), 2)
        figures["rss_ratio"] = round(backfill["peak_rss_mb"] / max(collect["peak_rss_mb"], 1), 2)
    finally:
        stop_prometheus(server)
        shutil.rmtree(args.workdir, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
