"""The Prometheus server's own CPU and memory while ``analyzer collect`` reads it, against a plain
range read of the same data, in the same run on the same server (issue 27 item 3).

A synthetic cluster (analyzer.sources) is written as OpenMetrics and backfilled with promtool into
a real Prometheus on 127.0.0.1 (the test harness's recipe, tests/conftest.py, via
bench/collect.py's ``_build``). Then, one after another on that server:

- a warm-up plain read (not counted: the first read pulls the blocks into the page cache);
- ``analyzer collect`` at the default query budget (720 points per request, 4 in flight);
- the plain range read: every query of the bundled profile as the plain PromQL it stands for
  (``samples`` as ``equivalent_promql``, ``times`` as the 5 m timestamp subquery), one
  ``query_range`` per query per day at the collect's step, sent one after another, each body read
  and dropped (no parsing, no processing);
- ``analyzer collect`` at a tight budget (``--max-points-per-request 120 --max-in-flight 2``).

``--rounds 2`` runs the three phases again with the plain read first (the order alternates, so
neither side always follows the other's memory); every round is reported, the ratios per round.

During each phase a sampler reads the server's ``/proc/PID/stat`` (user + system CPU) and
``/proc/PID/status`` (``VmRSS`` every 50 ms; ``VmHWM`` after resetting it through
``/proc/PID/clear_refs`` at the phase's start, so it is that phase's peak). The collector's own
peak RSS comes from ``os.wait4``. Prints one JSON line. Usage::

    .venv/bin/python bench/prom_server.py --nodes 100 --days 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

_TICKS = os.sysconf("SC_CLK_TCK")
SAMPLE_SECONDS = 0.05
TIGHT = ("--max-points-per-request", "120", "--max-in-flight", "2")


def _cpu(pid: int) -> float:
    """User + system CPU seconds of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _status_kb(pid: int, key: str) -> int:
    """A ``kB`` field of ``/proc/PID/status`` (``VmRSS``, ``VmHWM``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


class ServerWatch:
    """Samples the server's resident memory during one phase; CPU and peak from /proc."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.stop = threading.Event()
        self.peak_rss_kb = 0
        self.thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self.stop.is_set():
            self.peak_rss_kb = max(self.peak_rss_kb, _status_kb(self.pid, "VmRSS"))
            self.stop.wait(SAMPLE_SECONDS)

    def __enter__(self) -> ServerWatch:
        # "5" resets the peak resident set (VmHWM) to the current one (Linux >= 4.0)
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")
        self.rss_before_kb = _status_kb(self.pid, "VmRSS")
        self.cpu_before = _cpu(self.pid)
        self.started = time.perf_counter()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.wall = time.perf_counter() - self.started
        self.cpu = _cpu(self.pid) - self.cpu_before
        self.hwm_kb = _status_kb(self.pid, "VmHWM")

    def figures(self) -> dict[str, Any]:
        return {
            "wall_seconds": round(self.wall, 1),
            "server_cpu_seconds": round(self.cpu, 1),
            "server_rss_before_mb": round(self.rss_before_kb / 1024),
            "server_peak_rss_sampled_mb": round(self.peak_rss_kb / 1024),
            "server_peak_rss_hwm_mb": round(self.hwm_kb / 1024),
        }


def plain_read(url: str, start: int, end: int, step: int) -> dict[str, int]:
    """Every profile query as plain PromQL, one range request per query per day, sequentially;
    bodies read and dropped."""
    from analyzer.prom.fetch import FetchPlan, sample_rule
    from analyzer.prom.profile import load_profile
    from analyzer.prom.samples import equivalent_promql, subquery_promql
    from analyzer.prom.time_grid import make_grid

    grid = make_grid(start, end, step)
    plan = FetchPlan(grid)
    requests = received = 0
    for spec in load_profile().values():
        expr = spec.render(step_seconds=step, span_seconds=plan.span)
        if spec.kind == "samples":
            expr = equivalent_promql(expr, sample_rule(spec, grid))
        if spec.kind == "times":
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
            body = urllib.parse.urlencode({"query": expr, "start": s, "end": e, "step": st})
            request = urllib.request.Request(
                f"{url}/api/v1/query_range",
                data=body.encode(),
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
            with urllib.request.urlopen(request, timeout=600) as response:
                while chunk := response.read(1 << 20):
                    received += len(chunk)
            requests += 1
    return {"requests": requests, "bytes": received}


def _measured(cmd: list[str]) -> dict[str, Any]:
    """Run ``cmd`` and reap it with ``os.wait4``: exit, collector's peak RSS MiB and CPU s."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read().decode()
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3):
        raise SystemExit(f"collect failed ({code}): {err[-2000:]}")
    return {
        "exit": code,
        "collector_peak_rss_mb": round(usage.ru_maxrss / 1024),
        "collector_cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
        "last_line": out.strip().splitlines()[-1][:300],
    }


def _round(
    pid: int,
    order: list[str],
    base: list[str],
    url: str,
    start: int,
    end: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """The phases in ``order``, each watched; their figures and the ratios to the plain read."""
    phases: dict[str, dict[str, Any]] = {}
    for name in order:
        out = args.workdir / name
        load = round(os.getloadavg()[0], 2)
        with ServerWatch(pid) as watch:
            if name == "plain_range_read":
                result: dict[str, Any] = plain_read(url, start, end, args.step)
            else:
                extra = TIGHT if name == "collect_tight_budget" else ()
                result = _measured([*base, "--out", str(out), *extra])
        phases[name] = {"load_avg_before": load, **watch.figures(), **result}
        print(f"{name}: {json.dumps(phases[name])}", file=sys.stderr, flush=True)
        shutil.rmtree(out, ignore_errors=True)
    plain = phases["plain_range_read"]
    ratios = {}
    for name in ("collect", "collect_tight_budget"):
        phase = phases[name]
        ratios[f"{name}_server_cpu"] = round(
            phase["server_cpu_seconds"] / max(plain["server_cpu_seconds"], 0.1), 2
        )
        ratios[f"{name}_server_peak_rss"] = round(
            phase["server_peak_rss_hwm_mb"] / max(plain["server_peak_rss_hwm_mb"], 1), 2
        )
    return {"order": order, "phases": phases, "ratios_to_plain_read": ratios}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--days", type=float, default=2)
    parser.add_argument("--step", type=int, default=60)
    parser.add_argument("--pods-per-node", type=float, default=3.0)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/analyzer-bench-promserver"))
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    # bench/collect.py's builder reads these
    args.node_exporter_cpus, args.constant_step, args.stream_days = 1, 300, 0.0

    from collect import _build
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
    blocks = args.workdir / "blocks"
    start, end, server_args = _build(args, figures, blocks)
    print(f"built: {json.dumps(figures)}", file=sys.stderr, flush=True)
    server = start_prometheus(
        blocks, args.workdir / "server", ("--query.max-samples=200000000", *server_args)
    )
    pid = server.process.pid
    analyzer = str(Path(sys.executable).parent / "analyzer")
    base = [analyzer, "collect", "--prometheus", server.url, "--start", str(start)]
    base += ["--end", str(end), "--step", f"{args.step}s"]
    try:
        plain_read(server.url, start, end, args.step)  # warm-up: the page cache, not counted
        figures["rounds"] = []
        for number in range(args.rounds):
            order = ["collect", "plain_range_read", "collect_tight_budget"]
            if number % 2:
                order[:2] = order[1::-1]
            figures["rounds"].append(_round(pid, order, base, server.url, start, end, args))
    finally:
        stop_prometheus(server)
        shutil.rmtree(args.workdir, ignore_errors=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
