"""Benchmark: the what-if, search and monthly charts (branch chartmargins), against a baseline tree.

Draws, in a fresh process per tree, alternately (base, new, base, new, ...) so that a change of
load hits both: the what-if page's five time-line charts (four strategies of ``CHART_POINTS``
points each, as ``whatif`` thins them), the search page's front (24 configurations) and the
monthly review's forecast chart of three pools (120 days of history, a 90-day forecast). The
inputs are synthetic and the same in both trees: the figure measured is the charts' own CPU, not
the replays'. Reports the CPU seconds (``time.process_time``) per drawing of all of them and the
ratio new/base of the medians, for all of them and per page (the machine is shared).

    .venv/bin/python bench/report_chart_margins.py --base /tmp/base [--runs 3] [--repeat 2]
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
from analyzer.monthly.forecast import forecast
from analyzer.monthly.series import SERIES
from analyzer.report.monthly_charts import forecast_chart
from analyzer.report.search import front_chart
from analyzer.report.whatif import CHART_POINTS, time_lines
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.search import SearchResult
from analyzer.whatif.search_grid import SearchGrid
from analyzer.whatif.search_rule import SearchRow
rng = np.random.default_rng(7)
times = pd.date_range("2026-11-01", periods=CHART_POINTS, freq="20min", tz="UTC")
strategies = ["observed", "kube-default", "most-allocated", "loadaware-65"]
series = {s: (times, rng.integers(20, 60, CHART_POINTS).astype(float)) for s in strategies}
def row(i):
    return SearchRow(f"config-{i}", "searched", {}, 40, 30, float(rng.integers(0, 50)), 0, 0,
        0.0, {}, core_hours_released=float(i), gib_hours_released=float(i),
        core_hours_released_pct=float(i), gib_hours_released_pct=float(i),
        on_front=i % 5 == 0, recommended=i == 10)
result = SearchResult(source="s", start="", end="", grid=SearchGrid(), seeds=1,
    thresholds=ThresholdConfig(), rows=[row(i) for i in range(25)], recommended="config-10",
    sentence="")
days = 120
rise = np.linspace(200.0, 320.0, days) + rng.normal(0, 4, days)
history = {"day": pd.date_range("2026-06-01", periods=days, freq="D").date}
for r in ("cpu", "memory"):
    history |= {f"requested_peak_{r}": rise, f"used_p95_{r}": rise * 0.6,
        f"allocatable_{r}": np.full(days, 480.0), f"largest_{r}": np.full(days, 32.0)}
history = pd.DataFrame(history)
capacity = {"cpu": 65, "memory": 65}
forecasts = {s.name: forecast(s.values(history), s.capacity(history, capacity), horizon_days=90,
    resource=s.name) for s in SERIES}
seconds, parts = [], {"whatif": [], "search": [], "monthly": []}
for _ in range(int(sys.argv[1])):
    began = time.process_time()
    for title in ("Active nodes", "Pending pods", "Violations", "Nodes", "Fragmentation"):
        time_lines(series, title=title, ylabel="count")
    searched = time.process_time()
    front_chart(result)
    monthly = time.process_time()
    for pool in ("general", "memory-optimized", "gpu"):
        forecast_chart(pool, history, forecasts, capacity)
    ended = time.process_time()
    seconds.append(ended - began)
    for key, s in (("whatif", searched - began), ("search", monthly - searched),
                   ("monthly", ended - monthly)):
        parts[key].append(s)
print(json.dumps({"seconds": seconds, "parts": parts, "charts": 9}))
"""


def run(tree: Path, repeat: int) -> dict[str, object]:
    """One fresh process in ``tree``: the chart drawings' CPU seconds."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(repeat)],
        cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    """Alternate base and new runs; print each and the ratio of the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    seen: dict[str, dict[str, list[float]]] = {"base": {}, "new": {}}
    for i in range(args.runs):
        for name, tree in (("base", args.base), ("new", NEW)):
            got = run(tree, args.repeat)
            parts: dict[str, list[float]] = {"all": got["seconds"], **got["parts"]}  # type: ignore[dict-item]
            for key, values in parts.items():
                seen[name].setdefault(key, []).extend(float(v) for v in values)
            print(f"run {i} {name}: {got['charts']} charts, CPU s per drawing {parts['all']}")
    for key in seen["base"]:
        base, new = statistics.median(seen["base"][key]), statistics.median(seen["new"][key])
        print(json.dumps({"charts": key, "base_median_s": round(base, 3),
                          "new_median_s": round(new, 3), "ratio": round(new / base, 3)}))  # fmt: skip


if __name__ == "__main__":
    main()
