"""Peak memory of the snapshot consumers on large snapshots, this tree against a baseline tree.

For each snapshot given and each command (``nightly``, ``aggregate``, ``whatif``: one strategy;
``whatif-loadaware``: koord-loadaware, one worker; ``whatif-loadaware-w2``: two), runs the
command as a subprocess with this tree's interpreter and, as the same-run baseline, with
``--baseline-tree``'s (e.g. ``/work/main`` with its ``.venv``): peak RSS (``wait4``'s
``ru_maxrss`` of the process, children included), wall and CPU seconds, exit code. Every run is
watched: when its process group's resident memory passes ``--kill-gb`` (default 10 GB, the
machine is shared) it is killed and recorded as ``killed at N GB``; past ``--timeout`` seconds
likewise ``timeout``. Nothing is guessed: a run that did not finish says so.

The snapshots come from ``bench/synth_snapshot.py`` (synthetic, written straight to disk), since
backfilling a real Prometheus at 5,000 nodes is impractical here.

Usage::

    python bench/memory.py /work/ms-bench/s5000x1 /work/ms-bench/s5000x7 \
        --baseline-tree /work/main --commands nightly,aggregate --timeout 1200

Prints one JSON line per run and a final summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent.parent


def _group_rss(pgid: int) -> int:
    """Resident bytes of every process in group ``pgid`` (read from /proc)."""
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with Path(f"/proc/{entry.name}/stat").open() as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:  # field 5 (pgrp), after pid, comm, state
                continue
            total += int(fields[21]) * os.sysconf("SC_PAGE_SIZE")  # field 24: rss pages
        except (OSError, ValueError, IndexError):
            continue
    return total


def _last_day(snapshot: Path) -> str:
    stamps = pq.read_table(snapshot / "node_usage.parquet", columns=["timestamp"])["timestamp"]
    last = pd.Timestamp(pc.max(stamps).as_py())
    return str((last - pd.Timedelta(1, "ns")).floor("D").date())


def _command(name: str, snapshot: Path, out: Path) -> list[str]:
    if name == "nightly":
        day = _last_day(snapshot)
        return ["report", "nightly", str(snapshot), "--out", str(out), "--date", day]
    if name == "aggregate":
        return ["aggregate", str(snapshot), "--format", "csv"]
    if name == "whatif":
        return ["whatif", str(snapshot), "--strategy", "most-allocated", "--format", "json",
                "--workers", "1"]  # fmt: skip
    if name in ("whatif-loadaware", "whatif-loadaware-w2"):  # with LoadAwareScheduling's feed
        workers = "2" if name.endswith("w2") else "1"
        return ["whatif", str(snapshot), "--strategy", "koord-loadaware", "--format", "json",
                "--workers", workers]  # fmt: skip
    raise SystemExit(f"--commands: unknown command {name!r}")


def run(tree: Path, args: list[str], kill_bytes: int, timeout: float) -> dict[str, Any]:
    """Run ``python -m analyzer ARGS`` from ``tree``; peak RSS, times, outcome."""
    python = tree / ".venv" / "bin" / "python"
    wall = time.perf_counter()
    proc = subprocess.Popen(
        [str(python), "-m", "analyzer", *args],
        cwd=tree,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    outcome = {"why": ""}
    watched_peak = [0]

    def watch() -> None:
        while proc.poll() is None:
            rss = _group_rss(proc.pid)
            watched_peak[0] = max(watched_peak[0], rss)
            if rss > kill_bytes:
                outcome["why"] = f"killed at {rss / 2**30:.1f} GB"
            elif time.perf_counter() - wall > timeout:
                outcome["why"] = f"timeout after {timeout:.0f} s"
            if outcome["why"]:
                os.killpg(proc.pid, signal.SIGKILL)
                return
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    _pid, status, usage = os.wait4(proc.pid, 0)
    watcher.join()
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    return {
        "exit": code,
        "outcome": outcome["why"] or ("ok" if code in (0, 3, 4) else "failed"),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "wall_s": round(time.perf_counter() - wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        # the process group's resident memory summed over its processes (a pool's parent and
        # workers together), sampled every 0.2 s: ``ru_maxrss`` is one process's peak
        "group_peak_mb_sampled": round(watched_peak[0] / 2**20),
        "stderr_tail": stderr.strip().splitlines()[-1:] if code not in (0, 3, 4) else [],
    }


def main() -> None:
    """Parse flags, run every (snapshot, command, tree), print JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshots", nargs="+", type=Path)
    parser.add_argument("--baseline-tree", type=Path, default=None)
    parser.add_argument("--commands", default="nightly,aggregate,whatif")
    parser.add_argument("--kill-gb", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--scratch", type=Path, default=Path("/work/ms-bench"),
                        help="where each run's --out directory is made (and removed)")  # fmt: skip
    args = parser.parse_args()
    trees = [("this", HERE)] + ([("baseline", args.baseline_tree)] if args.baseline_tree else [])
    rows = []
    for snapshot in args.snapshots:
        rows_n = pq.ParquetFile(snapshot / "pod_usage.parquet").metadata.num_rows
        for name in args.commands.split(","):
            for label, tree in trees:
                with tempfile.TemporaryDirectory(dir=args.scratch) as tmp:
                    cmd = _command(name, snapshot.resolve(), Path(tmp) / "out")
                    load = os.getloadavg()[0]
                    result = run(tree, cmd, int(args.kill_gb * 2**30), args.timeout)
                row = {"snapshot": snapshot.name, "pod_usage_rows": rows_n, "command": name,
                       "tree": label, "load1": round(load, 2), **result}  # fmt: skip
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(json.dumps({"bench": "memory", "python": sys.version.split()[0], "runs": len(rows)}))


if __name__ == "__main__":
    main()
