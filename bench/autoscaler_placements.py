"""Benchmark: what one placement costs the scheduler with cluster-autoscaler in the loop and without.

Issue 25's speed figure (``bench/autoscaler.py``) is the CPU of the replay under CA over the
same replay without it. Part of the difference is not CA's own code: the scheduler's placements
themselves cost more in the CA run. This measures by how much, and where.

The cluster of ``bench/autoscaler.py`` (seed 1, ``--nodes``, ``--days`` at a 5-minute step) is
replayed without and with CA, in one process. Every ``ScoreCache._refresh`` (the scheduler's
work for one placement that is not the sampling of nodes: the rows changed since the pod's
shape was last scored, rescored) is timed (``perf_counter_ns``), with the number of distinct
rows it rescored and, in the CA run, how many placements came since CA's last scale-down pass
that ran (0: the first after it). Work of the same size is compared: the median time per call
for each number of rows (1-8), without CA and with CA by placements since the pass (0, 1, 2,
3 or more). A refresh is the same integer work for the same rows, so a difference at the same
row count is the cost of running it after other code (the CPU's caches and predictors), not
more work. Prints a table and a JSON line. Timing wrappers add the same cost to both runs.

    .venv/bin/python bench/autoscaler_placements.py [--nodes 500] [--days 7] [--strategy kube-default]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import statistics
import time
from collections import defaultdict
from typing import Any

from analyzer.replay import autoscale_loop, scoring
from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate

ROWS = range(1, 9)
AFTER = (0, 1, 2, 3)  # placements since the last pass that ran (3: three or more)


class _Timer:
    """Wraps ``ScoreCache._refresh`` and the loop's ``update_unneeded`` (restored by ``close``)."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int]] = []  # (rows, placements since a pass, ns)
        self.since = len(AFTER)
        refresh, passes = scoring.ScoreCache._refresh, autoscale_loop.update_unneeded
        self._saved = (refresh, passes)

        def timed_refresh(cache: Any, entry: Any) -> None:
            position = entry.position
            rows = len(set(cache.log[position:])) if position >= 0 else -1
            t0 = time.perf_counter_ns()
            refresh(cache, entry)
            self.calls.append((rows, min(self.since, AFTER[-1]), time.perf_counter_ns() - t0))
            self.since += 1

        def watched_pass(ca: Any, now: int) -> None:
            ran = ca.record.passes
            passes(ca, now)
            if ca.record.passes != ran:
                self.since = 0

        scoring.ScoreCache._refresh = timed_refresh  # type: ignore[method-assign]
        autoscale_loop.update_unneeded = watched_pass

    def close(self) -> None:
        scoring.ScoreCache._refresh, autoscale_loop.update_unneeded = self._saved  # type: ignore[method-assign]


def _medians(calls: list[tuple[int, int, int]]) -> dict[tuple[int, int], tuple[int, float]]:
    by: dict[tuple[int, int], list[int]] = defaultdict(list)
    for rows, since, ns in calls:
        if rows in ROWS:
            by[rows, since].append(ns)
    return {k: (len(v), statistics.median(v) / 1e3) for k, v in by.items()}


def main() -> None:
    """Run the benchmark (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--strategy", default="kube-default")
    args = parser.parse_args()
    cluster = generate(SyntheticSpec(seed=1, nodes=args.nodes, days=args.days, step=300))
    inp = prepare(cluster.snapshot)
    pools = set(cluster.snapshot.nodes["pool"].fillna("default").astype(str)) or {"default"}
    settings = dataclasses.replace(
        parse_settings(None), groups={p or "default": GroupBounds(min_size=0) for p in pools}
    )
    strategy = Strategy(args.strategy, load_strategy(args.strategy))
    auto, groups = with_node_groups(inp, settings)
    timer = _Timer()
    try:
        replay(inp, strategy, 0)
        without = _medians(timer.calls)
        timer.calls.clear()
        timer.since = len(AFTER)
        replay(auto, strategy, 0, autoscaler=(groups, settings))
        with_ca = _medians(timer.calls)
    finally:
        timer.close()
    print(
        "median µs per refresh (calls) by rows rescored; with CA by placements since its last pass"
    )
    print(
        "rows  without CA        | "
        + " | ".join(f"CA, {a}{'+' if a == AFTER[-1] else ''} after" for a in AFTER)
    )
    table = []
    for rows in ROWS:
        base = without.get((rows, AFTER[-1]))
        if base is None:
            continue
        cells = [with_ca.get((rows, a)) for a in AFTER]
        print(f"{rows:4d}  {base[1]:6.1f} ({base[0]:5d})  | " + " | ".join(
            f"{c[1]:6.1f} ({c[0]:5d})" if c else "  -  " for c in cells))  # fmt: skip
        table.append({"rows": rows, "without": base[1], "with_ca": [c and c[1] for c in cells]})
    print(json.dumps({
        "nodes": args.nodes, "days": args.days, "strategy": args.strategy, "table": table,
        "machine": f"{platform.machine()} {platform.python_version()}",
    }))  # fmt: skip


if __name__ == "__main__":
    main()
