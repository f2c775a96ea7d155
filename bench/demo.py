"""Benchmark: ``analyzer demo`` (the default 200 nodes × 7 days), per phase, against a baseline tree.

Each run is a fresh Python process in its own empty output folder, started in the tree under
test (``--base``: another checkout of analyzer, e.g. ``git archive main | tar -x -C
/tmp/demo-base``; the tree this script is in is the new one), so the baseline and this code are
timed in the same session on the same machine, alternately (base, new, base, new, ...) so that a
change of load hits both. A run reports:

- wall seconds of the whole process (interpreter start, imports, the demo, exit);
- user and system CPU seconds of the process and every process it started (the what-if's and the
  history's process pools: ``RUSAGE_CHILDREN`` after the run, which counts every reaped
  descendant);
- per phase: wall and CPU (self + reaped children) between the demo's own progress lines,
  grouped by what the line says (generate, history, aggregates and violations, nightly reports,
  monthly review, what-if and search, portal). The child process records them with
  ``getrusage`` at each line; a pool's CPU is counted in the phase that shuts it down, and a
  finished forked process's (the what-if's) in the phase that reaps it: ``multiprocessing``
  reaps every finished child whenever it starts a new process, so compare the sum of the
  phases that start or reap processes (nightly, monthly) rather than each alone.

The load average before and after is printed: the machine is shared, so the CPU figures are the
comparable ones and the wall figures say how loaded it was.

    .venv/bin/python bench/demo.py --base /tmp/demo-base [--runs 1] [--nice 0] [--keep DIR]

Prints one human line per run and phase, then a final JSON line with every run and the ratios
new/base of the medians (wall, user+sys CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NEW = Path(__file__).resolve().parents[1]

# The child: imports the tree's demo, runs it with a progress callback that stamps each line with
# wall and CPU (self + reaped children) since the process began, and prints the stamps as JSON.
CHILD = r"""
import json, resource, sys, time
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
t0 = time.monotonic()
from pathlib import Path
from analyzer.cli.demo import DemoSettings, run_demo
lines = [(time.monotonic() - t0, cpu(), "imports")]
def say(msg):
    lines.append((time.monotonic() - t0, cpu(), msg))
run_demo(DemoSettings(out=Path(sys.argv[1])), say)
lines.append((time.monotonic() - t0, cpu(), "portal"))
print(json.dumps(lines))
"""

# A progress line -> the phase that ended with it (the first phrase it holds). The history's
# process pool is shut down (and its CPU counted) after its last line, so the history, the
# NodeMetric aggregates and the violations are one phase.
PHASES = (
    ("imports", "imports"),
    ("generating", "generate"),
    ("snapshot written", "generate"),
    ("history", "history+aggregates+violations"),
    ("NodeMetric", "history+aggregates+violations"),
    ("threshold breach", "history+aggregates+violations"),
    ("nightly report", "nightly reports"),
    ("monthly review", "monthly review"),
    ("what-if", "what-if+search"),
    ("search", "what-if+search"),
    ("portal", "portal"),
)


def phase_of(line: str) -> str:
    """The phase a progress line closes (``other`` for a line no phrase names)."""
    return next((phase for phrase, phase in PHASES if phrase in line), "other")


def run_once(tree: Path, nice: int, keep: Path | None = None) -> dict[str, Any]:
    """One demo in ``tree``'s code, in a fresh folder: wall, CPU, and per-phase figures.
    ``keep``: the demo's folder (left in place, to compare the two trees' pages), else a
    temporary one."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory(prefix="demo-bench-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(tree)}
        out = keep if keep is not None else Path(tmp) / "out"
        began = time.monotonic()
        done = subprocess.run(
            ["nice", "-n", str(nice), sys.executable, "-c", CHILD, str(out)],
            cwd=tree,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.monotonic() - began
    if done.returncode != 0:
        raise SystemExit(f"the demo in {tree} failed:\n{done.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = json.loads(done.stdout.strip().splitlines()[-1])
    phases: dict[str, dict[str, float]] = {}
    last_wall, last_cpu = 0.0, 0.0
    for t, c, msg in lines:
        entry = phases.setdefault(phase_of(msg), {"wall_s": 0.0, "cpu_s": 0.0})
        entry["wall_s"] += t - last_wall
        entry["cpu_s"] += c - last_cpu
        last_wall, last_cpu = t, c
    return {
        "tree": str(tree),
        "wall_s": wall,
        "user_s": after.ru_utime - before.ru_utime,
        "sys_s": after.ru_stime - before.ru_stime,
        "peak_rss_mb": after.ru_maxrss / 1024,
        "phases": {k: {n: round(v, 2) for n, v in e.items()} for k, e in phases.items()},
    }


def main() -> None:
    """Alternate base and new runs, print each, then the medians' ratios as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True, help="the baseline tree")
    parser.add_argument("--runs", type=int, default=1, help="runs of each tree")
    parser.add_argument("--nice", type=int, default=0)
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        help="keep each run's demo folder as KEEP/base-N and KEEP/new-N (to compare pages)",
    )
    args = parser.parse_args()
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {"base": [], "new": []}
    for n in range(args.runs):
        for label, tree in (("base", args.base.resolve()), ("new", NEW)):
            keep = args.keep / f"{label}-{n}" if args.keep is not None else None
            run = run_once(tree, args.nice, keep)
            runs[label].append(run)
            cpu = run["user_s"] + run["sys_s"]
            print(
                f"{label}: wall {run['wall_s']:.1f} s, user {run['user_s']:.1f} s, "
                f"sys {run['sys_s']:.1f} s (user+sys {cpu:.1f} s), "
                f"peak RSS {run['peak_rss_mb']:.0f} MB, load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
            for phase, e in run["phases"].items():
                print(f"    {phase:24s} wall {e['wall_s']:7.1f} s  cpu {e['cpu_s']:7.1f} s")

    def median(label: str, key: str) -> float:
        return statistics.median(
            r["user_s"] + r["sys_s"] if key == "cpu" else r[key] for r in runs[label]
        )

    summary = {
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "ratio_wall": median("new", "wall_s") / median("base", "wall_s"),
        "ratio_cpu": median("new", "cpu") / median("base", "cpu"),
        "runs": runs,
    }
    print(
        f"new/base: wall {summary['ratio_wall']:.2f}, user+sys CPU {summary['ratio_cpu']:.2f} "
        f"(load {load_before[0]:.2f} before, {summary['load_after'][0]:.2f} after)"
    )
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
