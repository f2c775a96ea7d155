"""Benchmark: the demo's coarse history (``nightly.synthetic_history.history_rows``) against a
baseline tree.

Computes the pool, workload and headroom rows of the last ``--days`` of the demo's coarse
history (the days before its snapshot, 1 h step, the demo's spec and placer: what
``cli/demo.py``'s ``_history_rows`` computes, there in a 2-worker pool, here in one process so
that the CPU is the process's own) in a fresh process per tree, alternately (base, new, base,
new, ...) so that a change of the shared machine's load hits both. Reports the CPU seconds
(``time.process_time``, imports excluded) of each run and the ratio new/base of the medians, and
whether both trees computed the same rows (every frame compared exactly, dtypes included).

Each tree's own coarse-day cluster (``cli/demo_coarse.history_spec`` or ``cli/demo.history_spec`` where it exists).
``--new-rollouts R`` measures an option not taken (docs/benchmarks.md "demohist2"): this tree's
coarse days with R rollouts per Deployment a day (``SyntheticSpec.rollouts``) instead of the
churn's 0.5. Whenever the rows differ, the largest relative difference of each pool column is
printed instead of the exact check.

``--new-placer crowding`` measures an option not taken (docs/benchmarks.md "demohist"): this
tree's history placed by the crowding heuristic alone, without the required constraints' filters
(``constrained_placement.RequiredFilters``); the rows then differ and the largest relative
difference of each pool column is printed instead.

    .venv/bin/python bench/demo_history.py --base /tmp/base [--days 14] [--runs 3] [--new-rollouts 0.1]
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

NEW = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, pickle, sys, time
from dataclasses import replace
from datetime import timedelta
from analyzer.cli import demo
from analyzer.cli.demo import DemoSettings, demo_crowded, demo_spec
try:  # where the tree keeps the coarse days' span and cluster (cli/demo_coarse since demoship)
    from analyzer.cli import demo_coarse as coarse
except ImportError:
    coarse = demo
from analyzer.nightly.synthetic_history import history_rows
from analyzer.sources.constrained_placement import constrained_crowding_place
from analyzer.sources.placement import crowding_place
settings = DemoSettings(out="unused")
spec = demo_spec(settings.seed, settings.nodes, settings.days, settings.step_seconds)
span_of = coarse.history_span if hasattr(coarse, "history_span") else coarse._history_span
first, last = span_of(spec, settings)
first = max(first, last - timedelta(days=int(sys.argv[1]) - 1))
# the coarse days' own cluster where the tree has one (cli/demo_coarse or cli/demo.history_spec)
history = getattr(coarse, "history_spec", lambda spec, _settings: spec)(spec, settings)
if sys.argv[4] != "-":
    history = replace(history, rollouts=float(sys.argv[4]))
began = time.process_time()
rows = history_rows(history, first, last, step=settings.history_step,
                    place=(crowding_place(demo_crowded(spec)) if sys.argv[3] == "crowding"
                           else constrained_crowding_place(demo_crowded(spec))),
                    method=settings.settings.method, workers=1)
seconds = time.process_time() - began
with open(sys.argv[2], "wb") as out:
    pickle.dump(rows, out)
print(json.dumps({"seconds": seconds, "days": sum(len(chunk) for chunk in rows)}))
"""


def run(tree: Path, days: int, rows: Path, placer: str, rollouts: str = "-") -> float:
    """One fresh process in ``tree``: the history rows' CPU seconds (rows pickled to ``rows``;
    ``rollouts``: a rollout rate for the coarse days, "-" for the tree's own)."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(days), str(rows), placer, rollouts],
        cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


def same_rows(a: Path, b: Path) -> int:
    """The number of frames compared; raises when the two runs' rows differ in anything."""
    with a.open("rb") as fa, b.open("rb") as fb:
        left, right = pickle.load(fa), pickle.load(fb)
    flat_a = [row for chunk in left for row in chunk]
    flat_b = [row for chunk in right for row in chunk]
    if [r[0] for r in flat_a] != [r[0] for r in flat_b]:
        raise AssertionError("the two trees computed different days")
    frames = 0
    for ra, rb in zip(flat_a, flat_b, strict=True):
        for fa_, fb_ in zip(ra[1:], rb[1:], strict=True):
            pd.testing.assert_frame_equal(fa_, fb_, check_exact=True)
            frames += 1
    return frames


def pool_differences(a: Path, b: Path) -> dict[str, float]:
    """The largest relative difference of each numeric pool column between the two runs."""
    with a.open("rb") as fa, b.open("rb") as fb:
        left, right = pickle.load(fa), pickle.load(fb)
    pools = [pd.concat([row[1] for chunk in rows for row in chunk]) for rows in (left, right)]
    both = pools[0].merge(pools[1], on=["day", "pool"], suffixes=("_a", "_b"))
    out = {}
    for column in pools[0].columns:
        if pools[0][column].dtype.kind in "if":
            x, y = both[f"{column}_a"].astype(float), both[f"{column}_b"].astype(float)
            out[column] = float(((y - x).abs() / x.abs().clip(lower=1e-9)).max())
    return out


def main() -> None:
    """Alternate base and new runs; print each, the ratio of the medians and the rows check."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="a baseline tree (git archive)")
    parser.add_argument("--days", type=int, default=14, help="the last N coarse days (max 83)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--new-placer", choices=("constrained", "crowding"), default="constrained")
    parser.add_argument("--new-rollouts", default="-", help="rollouts a day (default: the tree's)")
    args = parser.parse_args()
    placers = {"base": "constrained", "new": args.new_placer}
    times: dict[str, list[float]] = {"base": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.runs):
            for name, tree in (("base", args.base), ("new", NEW)):
                rollouts = args.new_rollouts if name == "new" else "-"
                seconds = run(tree, args.days, Path(tmp) / f"{name}.pkl", placers[name], rollouts)
                times[name].append(seconds)
                print(f"run {k + 1} {name}: {seconds:.2f} s CPU", flush=True)
        try:
            frames = same_rows(Path(tmp) / "base.pkl", Path(tmp) / "new.pkl")
            said = f"rows: {frames} frames identical (pools, workloads, headroom of each day)"
        except AssertionError:
            differences = pool_differences(Path(tmp) / "base.pkl", Path(tmp) / "new.pkl")
            said = "rows differ; largest relative difference per pool column:\n" + "\n".join(
                f"  {column}: {value:.2%}" for column, value in differences.items() if value
            )
    base, new = (statistics.median(times[n]) for n in ("base", "new"))
    print(f"median CPU s: base {base:.2f}, new {new:.2f}, new/base {new / base:.2f}x")
    print(said)


if __name__ == "__main__":
    main()
