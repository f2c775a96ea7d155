"""Benchmark: the pool and workload rollups of one coarse history week (the demo's last chunk),
this tree against a baseline tree.

``bench/demo_history.py`` times the whole history (placements, headroom, rollups); the rollups are
about a tenth of it, so a change to them alone is within that figure's noise on a shared machine.
Here each tree, in a fresh process, generates the demo's last coarse week once (the same cluster:
the generator is not changed) and then computes its seven days' rows ``--repeats`` times the way
its own ``synthetic_history._chunk_rows`` does (``rollup_view`` where the tree has it, then
``day_rows`` per day); the processes alternate (base, new, base, new, ...). Reports the median CPU
seconds (``time.process_time``) of a week's rollups per run, the ratio new/base of the medians,
and whether both trees' rows are identical (every frame, exactly, dtypes included).

    .venv/bin/python bench/history_rollups.py --base /tmp/base [--runs 3] [--repeats 5]
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
import json, pickle, statistics, sys, time
from datetime import timedelta
from analyzer.cli import demo
from analyzer.cli.demo import DemoSettings, demo_crowded, demo_spec
try:  # where the tree keeps the coarse days' span and cluster (cli/demo_coarse since demoship)
    from analyzer.cli import demo_coarse as coarse
except ImportError:
    coarse = demo
from analyzer.nightly import synthetic_history as sh
from analyzer.sources.constrained_placement import constrained_crowding_place
from analyzer.sources.history_chunks import chunk_specs
from analyzer.sources.synthetic import generate
settings = DemoSettings(out="unused")
spec = demo_spec(settings.seed, settings.nodes, settings.days, settings.step_seconds)
span_of = coarse.history_span if hasattr(coarse, "history_span") else coarse._history_span
first, last = span_of(spec, settings)
history = getattr(coarse, "history_spec", lambda spec, _settings: spec)(spec, settings)
(days, chunk), = chunk_specs(history, last - timedelta(days=6), last,
                             step=settings.history_step, chunk_days=7)
snapshot = generate(chunk, place=constrained_crowding_place(demo_crowded(spec))).snapshot
view = getattr(sh, "rollup_view", lambda s: s)
method = settings.settings.method
seconds = []
for _ in range(int(sys.argv[1])):
    began = time.process_time()
    narrow = view(snapshot)
    rows = [sh.day_rows(narrow, day, method=method) for day in days]
    seconds.append(time.process_time() - began)
with open(sys.argv[2], "wb") as out:
    pickle.dump(rows, out)
print(json.dumps({"seconds": statistics.median(seconds), "days": len(rows)}))
"""


def run(tree: Path, repeats: int, rows: Path) -> float:
    """One fresh process in ``tree``: the median CPU seconds of a week's rollups."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(repeats), str(rows)],
        cwd=tree, env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


def same_rows(a: Path, b: Path) -> int:
    """The number of frames compared; raises when the two trees' rows differ in anything."""
    with a.open("rb") as fa, b.open("rb") as fb:
        left, right = pickle.load(fa), pickle.load(fb)
    frames = 0
    for day_a, day_b in zip(left, right, strict=True):
        for frame_a, frame_b in zip(day_a, day_b, strict=True):
            pd.testing.assert_frame_equal(frame_a, frame_b, check_exact=True)
            frames += 1
    return frames


def main() -> None:
    """Alternate base and new runs; print each, the ratio of the medians and the rows check."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="a baseline tree (git archive)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5, help="the week's rollups per process")
    args = parser.parse_args()
    times: dict[str, list[float]] = {"base": [], "new": []}
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.runs):
            for name, tree in (("base", args.base), ("new", NEW)):
                seconds = run(tree, args.repeats, Path(tmp) / f"{name}.pkl")
                times[name].append(seconds)
                print(f"run {k + 1} {name}: {seconds:.3f} s CPU a week", flush=True)
        frames = same_rows(Path(tmp) / "base.pkl", Path(tmp) / "new.pkl")
    base, new = (statistics.median(times[n]) for n in ("base", "new"))
    print(f"median CPU s a week: base {base:.3f}, new {new:.3f}, new/base {new / base:.2f}x")
    print(f"rows: {frames} frames identical (pools and workloads of each day)")


if __name__ == "__main__":
    main()
