"""The monthly page names a pool whose forecast decision and growth replay disagree within the
replay's horizon (and only such a pool), with both answers: worked by hand below."""

from __future__ import annotations

import pandas as pd

from analyzer.report.monthly_growth_check import growth_against_forecast
from analyzer.whatif.growth_result import GrowthMonth, GrowthResult, PoolMonth


def _row(pool: str, add: int) -> PoolMonth:
    return PoolMonth(pool, 4, 16.0, 64.0, 4.0, 16.0, 8.0, 8.0, 0, add)


def _growth(adds: dict[str, list[int]]) -> GrowthResult:
    months = [
        GrowthMonth(m, 10, 0, [_row(pool, series[m]) for pool, series in adds.items()])
        for m in range(7)  # today and six months
    ]
    t = pd.Timestamp("2026-11-07", tz="UTC")
    return GrowthResult("kube-default", "none", t, t + pd.Timedelta(days=1), [], months)


def _pool(name: str, action: str, by_date: str | None = None, nodes: int = 3) -> dict[str, object]:
    return {"name": name, "decision": {"action": action, "by_date": by_date, "nodes": nodes}}


def test_only_pools_whose_two_answers_differ_are_named() -> None:
    growth = _growth({
        "a": [0] * 7,                  # the replay adds nothing in six months
        "b": [0, 0, 0, 2, 2, 3, 3],    # the replay needs 2 nodes in month 3
        "c": [0] * 7,
        "d": [0] * 7,
        "e": [0, 0, 0, 0, 0, 1, 1],    # month 5, and the forecast adds by month 4: agree
    })  # fmt: skip
    pools = [
        # 2027-02-27 is 119 days after 2026-10-31: 119 / 30.44 = 3.9, so month 4 <= 6
        _pool("a", "add", "2027-02-27", 7),
        _pool("b", "release"),
        # 400 days: month 14, beyond the six replayed months: no disagreement to show
        _pool("c", "add", "2027-12-05"),
        _pool("d", "release"),
        _pool("e", "add", "2027-02-27"),
    ]
    lines = growth_against_forecast(pools, growth, "2026-10-31")
    assert [line.split(":")[0] for line in lines] == ["a", "b"]
    assert "adds 7 nodes by 2027-02-27 (month 4)" in lines[0] and "needs none within 6" in lines[0]
    assert "needs 2 more node(s) in month 3" in lines[1] and "forecast adds none" in lines[1]


def test_no_history_day_means_no_forecast_month() -> None:
    growth = _growth({"a": [0] * 7})
    assert growth_against_forecast([_pool("a", "add", "2027-02-27")], growth, None) == []
