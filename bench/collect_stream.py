"""Peak memory of ``analyzer collect`` by number of days: this tree against a baseline tree.

The blocks are a real Prometheus TSDB that ``bench/collect.py --blocks DIR`` built (a synthetic
cluster written as OpenMetrics and backfilled with promtool; ``DIR.json`` beside it records the
cluster and its range). One Prometheus serves them; then, in the same run, for each ``--days N``
the first N days of the data are collected by ``python -m analyzer collect`` of this tree and of
``--baseline-tree`` (a checkout of main, put first on ``PYTHONPATH``), alternating which goes
first, ``--repeat`` times each. Each run's wall time and peak RSS (``os.wait4``'s ``ru_maxrss`` of
that process) are recorded; with ``--compare`` the two snapshots of the largest N are compared
table by table (sorted, exactly). Prints one JSON line::

    .venv/bin/python bench/collect_stream.py --blocks /work/cs-bench/b500x3 \\
        --baseline-tree /work/cs-bench/main-tree --days 1 3 --repeat 2 --compare
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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
DAY = 86_400
KEYS = {
    "nodes": ["node"],
    "pods": ["uid"],
    "node_usage": ["node", "timestamp"],
    "pod_usage": ["uid", "timestamp"],
}


def run(tree: Path, args: list[str]) -> tuple[float, float, float, str]:
    """``python -m analyzer ARGS`` from ``tree``: (wall s, peak RSS MiB, CPU s, stdout); the
    child is reaped with ``os.wait4`` for its own peak and CPU."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANALYZER_")}
    env["PYTHONPATH"] = str(tree)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "analyzer", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=tree,
    )
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read().decode()
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 3):
        raise SystemExit(f"{tree}: collect failed ({proc.returncode}): {err[-2000:]}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime, out


def same_snapshot(a: Path, b: Path) -> dict[str, Any]:
    """Table by table, sorted: equal exactly? (and the row counts)."""
    import pandas as pd

    from analyzer.core.snapshot import read_snapshot

    left, right = read_snapshot(a), read_snapshot(b)
    verdict: dict[str, Any] = {}
    for table, keys in KEYS.items():
        x = getattr(left, table).sort_values(keys).reset_index(drop=True)
        y = getattr(right, table).sort_values(keys).reset_index(drop=True)
        try:
            pd.testing.assert_frame_equal(x, y, check_exact=True)
            verdict[table] = {"rows": len(x), "equal": True}
        except AssertionError as exc:
            verdict[table] = {"rows": [len(x), len(y)], "equal": False, "why": str(exc)[:300]}
    return verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=Path, required=True)
    parser.add_argument("--baseline-tree", type=Path, required=True)
    parser.add_argument("--days", type=int, nargs="+", default=[1])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--compare", action="store_true")
    parser.add_argument(
        "--baseline-first", dest="branch_first", action="store_false", help="round 0 order"
    )
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/analyzer-bench-stream"))
    args = parser.parse_args()

    from conftest import start_prometheus, stop_prometheus

    recorded = json.loads(args.blocks.with_name(args.blocks.name + ".json").read_text())
    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    figures: dict[str, Any] = {
        "cluster": recorded["params"],
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, "
        f"{platform.python_implementation()} {platform.python_version()}",
        "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "runs": [],
    }
    server = start_prometheus(
        args.blocks,
        args.workdir / "server",
        ("--query.max-samples=200000000", *recorded["server_args"]),
    )
    trees = {"branch": ROOT, "baseline": args.baseline_tree.resolve()}
    try:
        for days in args.days:
            start = recorded["start"]
            end = min(recorded["end"], start + days * DAY)
            for round_ in range(args.repeat):
                first = ["branch", "baseline"] if args.branch_first else ["baseline", "branch"]
                order = first if round_ % 2 == 0 else first[::-1]
                for side in order:
                    out = args.workdir / f"{side}-{days}d"
                    shutil.rmtree(out, ignore_errors=True)
                    load = round(os.getloadavg()[0], 2)
                    wall, rss, cpu, text = run(
                        trees[side],
                        [
                            "collect",
                            "--prometheus",
                            server.url,
                            "--start",
                            str(start),
                            "--end",
                            str(end),
                            "--step",
                            f"{recorded['params']['step']}s",
                            "--out",
                            str(out),
                        ],
                    )
                    row = {"days": days, "side": side, "round": round_, "wall_s": round(wall, 1),
                           "cpu_s": round(cpu, 1), "peak_rss_mb": round(rss),
                           "load_before": load, "wrote": text.strip().splitlines()[-1][:200]}  # fmt: skip
                    figures["runs"].append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
        # Only after every run: the comparison grows this process, and a child forked from it
        # starts with the parent's ``ru_maxrss`` (Linux keeps it across exec).
        if args.compare:
            days = max(args.days)
            figures[f"equal_{days}d"] = same_snapshot(
                args.workdir / f"baseline-{days}d", args.workdir / f"branch-{days}d"
            )
    finally:
        stop_prometheus(server)
        shutil.rmtree(args.workdir, ignore_errors=True)
    best: dict[str, dict[int, float]] = {"branch": {}, "baseline": {}}
    for row in figures["runs"]:
        side, days = row["side"], row["days"]
        best[side][days] = min(best[side].get(days, 1e12), row["peak_rss_mb"])
    figures["peak_rss_mb_best"] = best
    figures["ratio_branch_to_baseline"] = {
        days: round(best["branch"][days] / best["baseline"][days], 3) for days in args.days
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
