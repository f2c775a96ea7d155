"""Benchmark: charts with one labelled row per node (``charts.heatmap``, ``breach_timeline``),
against a baseline tree.

Draws each case ``--repeat`` times in a fresh process per tree, alternately (base, new, base,
new, ...) so that a change of the shared machine's load hits both, and prints the CPU seconds
(``time.process_time``) per chart and the ratio new/base of the medians. The cases: the demo's
nightly heatmaps (30 hottest nodes + 4 pool rows × 24 hours, and × 7 days), a 200-row × 288-column
heatmap, and a 40-node breach timeline (the nightly page's top 40). Synthetic inputs, the same in
both trees.

    .venv/bin/python bench/chart_rows.py --base /tmp/base [--runs 3] [--repeat 3]
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
import numpy as np, pandas as pd
from analyzer.report import charts
rng = np.random.default_rng(1)
def heatmap(rows, cols):
    values = rng.uniform(0, 110, (rows, cols))
    values[::7, ::5] = np.nan
    names = [f"worker-{i:04d}.eu-west-1.compute.internal" for i in range(rows - 4)]
    names += [f"pool pool-{i} (mean)" for i in range(4)]
    hours = [f"{h % 24:02d}:00" for h in range(cols)]
    return lambda: charts.heatmap(values, names, hours, title="t", alt="a", xlabel="hour",
                                  colorbar_label="% of allocatable")
def timeline(rows):
    start = pd.Timestamp("2026-11-07", tz="UTC")
    nodes = [f"worker-{i:04d}.eu-west-1.compute.internal" for i in range(rows)]
    begin = [start + pd.Timedelta(minutes=int(m)) for m in rng.integers(0, 1300, 3 * rows)]
    frame = pd.DataFrame({"node": nodes * 3, "resource": ["cpu", "memory", "cpu"] * rows,
                          "start": begin})
    frame["end"] = frame["start"] + pd.Timedelta(minutes=90)
    return lambda: charts.breach_timeline(frame, nodes, start=start,
                                          end=start + pd.Timedelta(days=1), title="breaches")
cases = {"heatmap 34x24": heatmap(34, 24), "heatmap 34x7": heatmap(34, 7),
         "heatmap 200x288": heatmap(200, 288), "timeline 40": timeline(40)}
out = {}
for name, draw in cases.items():
    draw()  # warm: fonts, caches
    seconds = []
    for _ in range(int(sys.argv[1])):
        began = time.process_time()
        draw()
        seconds.append(time.process_time() - began)
    out[name] = seconds
print(json.dumps(out))
"""


def run(tree: Path, repeat: int) -> dict[str, list[float]]:
    """One fresh process in ``tree``: CPU seconds per drawing of each case."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(repeat)],
        cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return {k: [float(s) for s in v] for k, v in json.loads(done.stdout.splitlines()[-1]).items()}


def main() -> None:
    """Alternate base and new runs; print each case's medians and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    seen: dict[str, dict[str, list[float]]] = {"base": {}, "new": {}}
    for i in range(args.runs):
        for name, tree in (("base", args.base), ("new", NEW)):
            for case, seconds in run(tree, args.repeat).items():
                seen[name].setdefault(case, []).extend(seconds)
            print(f"run {i} {name} done", flush=True)
    for case in seen["base"]:
        base, new = statistics.median(seen["base"][case]), statistics.median(seen["new"][case])
        print(json.dumps({"case": case, "base_median_s": round(base, 4),
                          "new_median_s": round(new, 4), "ratio": round(new / base, 3)}))  # fmt: skip


if __name__ == "__main__":
    main()
