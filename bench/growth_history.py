"""The history store behind ``bench/growth.py --fitted``: a seed's growth written as daily rows.

Each of the seed's two namespaces gets one Deployment whose daily mean replicas follow the
generator's own line backwards from today — r0 · (1 + g · (t − today) / 30.4375 days), so the
last day holds today's r0 and a month earlier r0 · (1 − g) — times a weekly cycle (± 6 %, a sine
over 7 days: its mean over a week is 1, so it moves no level) and day-to-day noise (seeded
Gaussian, 4 % standard deviation), the two things real series have and the declared rates lack.
Requests stay at the seed's pod shape. One pool row per day, as the nightly run writes. Rows go
through the store's own writer (``analyzer.history.capacity.write_tables``) via the tests'
history builder (``tests/monthly_history.py``), one file per day.
"""

from __future__ import annotations

import math
import sys
from datetime import date, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from monthly_history import PoolTruth, WorkloadTruth, const, write_history

from analyzer.monthly.growth_rates import DAYS_PER_MONTH

GI = 2**30
DAYS = 56  # eight weeks: at the fastest rate (40 %/month) the line is still 0.26 · r0 at day 0
WEEKLY = 0.06
NOISE = 0.04


def write(root: Path, h: dict[str, object], seed: int) -> None:
    """Write ``DAYS`` days ending on the day before the bench's snapshot under ``root``."""
    rng = np.random.default_rng(10_000 + seed)
    shapes, replicas, rates = h["shapes"], h["replicas"], h["rates"]
    assert isinstance(shapes, list) and isinstance(replicas, list) and isinstance(rates, list)
    workloads = []
    for w, ((cpu, memory), r0, g) in enumerate(zip(shapes, replicas, rates, strict=True)):
        noise = rng.normal(0.0, NOISE, DAYS)
        phase = rng.uniform(0, 2 * math.pi)
        series = [
            max(0.0, r0 * (1 + g * (t - (DAYS - 1)) / DAYS_PER_MONTH))
            * (1 + WEEKLY * math.sin(2 * math.pi * t / 7 + phase))
            * (1 + noise[t])
            for t in range(DAYS)
        ]
        workloads.append(
            WorkloadTruth(
                f"app{w}",
                "pool",
                namespace=f"ns{w}",
                cpu_request=const(cpu / 1000),
                memory_request=const(memory / GI),
                replicas=lambda t, s=series: s[t],  # type: ignore[misc]
            )
        )
    pool = PoolTruth(
        "pool",
        nodes=int(h["nodes"]),  # type: ignore[call-overload]
        node_cpu=int(h["cpu"]) / 1000,  # type: ignore[call-overload]
        node_memory=int(h["memory"]) / GI,  # type: ignore[call-overload]
    )
    start = date(2026, 11, 1) - timedelta(days=DAYS)
    write_history(root, start, DAYS, [pool], workloads)
