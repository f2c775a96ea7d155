"""Benchmark: what headroom per pod shape costs the nightly run, and what the closed form saves.

A generated day (``--nodes`` nodes, a tainted pool, 5-minute step). Every figure is CPU time
(``time.process_time``: other jobs on a shared machine do not count), measured in the same run:

- ``nightly``: ``run_nightly`` on the day as it is now (headroom of the 3 common shapes at each
  of the day's 24 points included), best of ``--repeat``;
- ``headroom``: ``headroom_day`` alone on the same day and points (the part of ``nightly`` it
  costs), best of ``--repeat``; reported as a share of ``nightly``;
- ``closed form`` vs ``one at a time``: at the day's last point, the 3 common shapes counted by
  ``count_copies`` (closed form) and by binding one copy at a time through
  ``Profile.evaluate`` + ``select`` (what cluster-capacity does, and the tests' reference); the
  counts are checked equal, the ratio is the loop's time over the closed form's.

    .venv/bin/python bench/headroom.py [--nodes 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from analyzer.nightly.headroom import ObservedPlacement, headroom_day
from analyzer.nightly.headroom_count import count_copies
from analyzer.nightly.headroom_shapes import common_shapes
from analyzer.nightly.run import NightlySettings, fragmentation_times, run_nightly, slice_snapshot
from analyzer.scheduling.framework import select
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate


def _best(repeat: int, work: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.process_time()
        result = work()
        best = min(best, time.process_time() - start)
    return best, result


def main() -> None:
    """Measure and print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spec = SyntheticSpec(
        seed=11, nodes=args.nodes, days=1.05, step=300, dedicated_pools=("general",)
    )
    snapshot = generate(spec).snapshot
    day = pd.Timestamp("2026-11-01", tz="UTC")
    nightly_s, result = _best(
        args.repeat, lambda: run_nightly(snapshot, NightlySettings(day=day.date()))
    )
    today = slice_snapshot(snapshot, day, day + pd.Timedelta(days=1), pod_usage=False)
    times = fragmentation_times(today, day, day + pd.Timedelta(days=1))
    headroom_s, _ = _best(args.repeat, lambda: headroom_day(today, times))
    placement = ObservedPlacement(today)
    state, present = placement.state_at(times[-1])
    inp = placement.inp
    shapes = common_shapes(inp.demands, ~inp.pinned & (inp.real_node >= 0))
    demands = [s.demand(state.resources) for s in shapes]
    profile = load_strategy("kube-default")
    now = times[-1].value / 1e9

    def closed() -> list[int]:
        return [count_copies(profile, state, d, now=now, present=present).copies for d in demands]

    def loop() -> list[int]:
        counts = []
        for demand in demands:
            rng, placed = np.random.default_rng(0), []
            while (n := select(profile.evaluate(state, demand, now, present), rng)) is not None:
                state.bind(n, demand)
                placed.append(n)
            for n in reversed(placed):
                state.unbind(n, demand)
            counts.append(len(placed))
        return counts

    closed_s, closed_counts = _best(args.repeat, closed)
    loop_s, loop_counts = _best(1, loop)
    assert closed_counts == loop_counts, (closed_counts, loop_counts)
    print(
        json.dumps(
            {
                "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpu",
                "python": platform.python_version(),
                "nodes": args.nodes,
                "pods": len(snapshot.pods),
                "points": len(times),
                "shapes": [s.name for s in shapes],
                "nightly_cpu_s": round(nightly_s, 3),
                "headroom_cpu_s": round(headroom_s, 3),
                "headroom_share_of_nightly": round(headroom_s / nightly_s, 3),
                "copies": closed_counts,
                "closed_form_cpu_s": round(closed_s, 5),
                "one_at_a_time_cpu_s": round(loop_s, 3),
                "one_at_a_time_over_closed_form": round(loop_s / closed_s, 1),
                "rows": len(result.shape_headroom.hourly),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
