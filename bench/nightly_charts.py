"""Benchmark: the nightly page's charts (``report.nightly_charts``), against a baseline tree.

Reads a demo's snapshot (``analyzer demo`` writes one to ``OUT/snapshot``), computes one nightly
result (``run_nightly``, not timed) and draws every chart of the page ``--repeat`` times
(``build_charts`` plus the trend chart over a 90-day history of that day's figures), in a fresh
process per tree, alternately (base, new, base, new, ...) so that a change of load hits both.
Reports the CPU seconds (``time.process_time``) per drawing of all charts; the ratio new/base of
the medians is the figure to read (the machine is shared).

    .venv/bin/python bench/nightly_charts.py --snapshot OUT/snapshot --base /tmp/base [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

NEW = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time
from dataclasses import replace
import pandas as pd
from analyzer.core.snapshot import read_snapshot
from analyzer.nightly.run import NightlySettings, run_nightly
from analyzer.report.nightly_charts import build_charts, trend_chart
snapshot = read_snapshot(sys.argv[1])
last = pd.Timestamp(snapshot.node_usage["timestamp"].max()).normalize() - pd.Timedelta(days=1)
result = run_nightly(snapshot, replace(NightlySettings(), day=last.date()))
days = pd.date_range(end=last, periods=90, freq="D")
history = pd.DataFrame({"day": [d.date() for d in days], "cpu_used_p95_pct": range(90),
    "cpu_requested_pct": [50.0] * 90, "fragmentation_pct": [10.0] * 90, "coverage_pct": [99.0] * 90})
times = []
for _ in range(int(sys.argv[2])):
    began = time.process_time()
    charts = build_charts(result, {}, {})
    trend_chart(history)
    times.append(time.process_time() - began)
print(json.dumps({"seconds": times, "charts": len(charts) + 1}))
"""


def run(tree: Path, snapshot: Path, repeat: int) -> dict[str, object]:
    """One fresh process in ``tree``: the chart drawings' CPU seconds."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(snapshot), str(repeat)],
        cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    """Alternate base and new runs; print each and the ratio of the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snapshot", type=Path, required=True)
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    seen: dict[str, list[float]] = {"base": [], "new": []}
    for i in range(args.runs):
        for name, tree in (("base", args.base), ("new", NEW)):
            got = run(tree, args.snapshot, args.repeat)
            seconds = [float(s) for s in got["seconds"]]  # type: ignore[attr-defined]
            seen[name].extend(seconds)
            print(f"run {i} {name}: {got['charts']} charts, CPU s per drawing {seconds}")
    base, new = statistics.median(seen["base"]), statistics.median(seen["new"])
    print(json.dumps({"base_median_s": base, "new_median_s": new, "ratio": new / base}))


if __name__ == "__main__":
    main()
