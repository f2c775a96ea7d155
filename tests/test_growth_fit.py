"""Growth rates fitted from a history store (``analyzer.monthly.growth_rates``, the rates
``whatif --growth --history DIR`` replays): a namespace whose replicas grow on a known straight
line, under a weekly cycle as real series have, fits that line's rate."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from monthly_history import PoolTruth, WorkloadTruth, const, line, write_history

from analyzer.monthly.growth_rates import DAYS_PER_MONTH, namespace_rates


def test_straight_line_with_weekly_cycle_fits_its_rate(tmp_path: Path) -> None:
    """Namespace shop: 20 replicas on the last of 56 days, +20 % of that a month (4 replicas per
    30.4375 days), ± 1.2 replicas over each week (a sine: no net level). The fitted rate is the
    slope over the last day's level, so 0.20; within 0.01 (5 %), since eight weeks of a cycle
    whose mean is 0 cannot move a least-squares slope by more than that (bench/growth.py
    --fitted measures the same on 50 noisy histories). Namespace flat never changes: rate 0."""
    per_day = 4 / DAYS_PER_MONTH
    write_history(tmp_path, date(2026, 9, 1), 56, [PoolTruth("pool")], [
        WorkloadTruth("web", "pool", namespace="shop",
                      replicas=line(20 - 55 * per_day, per_day, weekly=1.2)),
        WorkloadTruth("db", "pool", namespace="flat", replicas=const(6.0)),
    ])  # fmt: skip
    rates = {r.namespace: r for r in namespace_rates(tmp_path)}
    assert abs(rates["shop"].rate - 0.20) <= 0.01, rates["shop"]
    assert rates["flat"].rate == 0.0
