"""Forecasts on series shaped like real ones (issue 28 item 4): a step up, a step down, one spike,
a holiday week, pure noise, correlated noise, a shift too recent to fit after; and the monthly
review's page and JSON naming the shift. Each test states the fact the shape must show."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from monthly_history import PoolTruth, const, write_history

from analyzer.cli import main
from analyzer.monthly.forecast import MIN_HISTORY_DAYS, forecast
from analyzer.monthly.months import Month
from analyzer.monthly.review import ReviewSettings, build_review

START = date(2026, 1, 1)


def daily(values: np.ndarray) -> pd.Series:
    """``values`` on consecutive UTC days from 2026-01-01."""
    return pd.Series(values, index=pd.date_range(START, periods=len(values), freq="D"))


def trend(days: int, seed: int, slope: float = 0.5, noise: float = 1.0) -> np.ndarray:
    """100 + slope·t with N(0, noise²) days and a weekend 3 units low: a growing pool."""
    t = np.arange(days)
    rng = np.random.default_rng(seed)
    return 100.0 + slope * t - 3.0 * (t % 7 >= 5) + rng.normal(0.0, noise, days)


@pytest.mark.parametrize(("step", "first"), [(20.0, 50), (-15.0, 38)])
def test_a_step_is_dated_within_a_day_and_the_trend_is_fitted_after_it(
    step: float, first: int
) -> None:
    # A team moves in (+20 from day 50) or out (−15 from day 38): steps of 15–20 noise σ.
    values = trend(90, seed=first)
    values[first:] += step
    result = forecast(daily(values), 1_000.0, horizon_days=60)
    assert len(result.level_shifts) == 1
    shift = result.level_shifts[0]
    assert abs((shift.day - (START + timedelta(days=first))).days) <= 1
    assert shift.size == pytest.approx(step, abs=2.0)
    # The fit starts at the shift and uses only the days since (none is an outlier here).
    assert result.fit_start == shift.day
    assert result.history_days == (START + timedelta(days=89) - shift.day).days + 1
    # The slope is the true 0.5/day: inside its 95 % interval, which a line bent by the step
    # (the issue-16 fit over all 90 days) misses.
    assert result.slope_lo95 is not None and result.slope_hi95 is not None
    assert result.slope_lo95 <= 0.5 <= result.slope_hi95
    bent = forecast(daily(values), 1_000.0, horizon_days=60, robust=False)
    assert bent.slope_lo95 is not None and bent.slope_hi95 is not None
    assert not bent.slope_lo95 <= 0.5 <= bent.slope_hi95
    assert f"level shift on {shift.day.isoformat()}" in result.method_reason
    data = json.loads(json.dumps(result.to_dict()))
    assert data["level_shifts"] == [{"date": shift.day.isoformat(), "size": shift.size}]
    assert data["fit_start"] == shift.day.isoformat()


def test_a_single_spike_is_left_out_and_does_not_move_the_slope() -> None:
    # One day 200 units high (a batch job) on day 50 of 60. An OLS slope moves by
    # spike·(j − t̄)/Σ(t − t̄)² = 200 × (50 − 29.5) / (60 × (60² − 1)/12) = 4100/17995 ≈ 0.228
    # per day; the robust fit leaves the day out, so its slope is the spike-free one (± 0.01).
    values = trend(60, seed=5)
    clean = forecast(daily(values), 1_000.0, horizon_days=30)
    values[50] += 200.0
    robust = forecast(daily(values), 1_000.0, horizon_days=30)
    ols = forecast(daily(values), 1_000.0, horizon_days=30, robust=False)
    assert robust.outlier_days == (START + timedelta(days=50),)
    assert robust.level_shifts == ()
    assert clean.slope_per_day is not None and robust.slope_per_day is not None
    assert ols.slope_per_day is not None
    assert abs(robust.slope_per_day - clean.slope_per_day) < 0.01
    assert ols.slope_per_day - clean.slope_per_day == pytest.approx(4100 / 17995, abs=0.01)
    assert "1 outlier day left out (2026-02-20)" in robust.method_reason


def test_a_spike_on_the_last_day_over_the_line_is_not_an_exhaustion() -> None:
    # The line is 160; the trend reaches it at 100 + 0.5·t ≥ 160 → t = 120, 61 days past day 59.
    # Day 59 peaks at 400 (an incident): an outlier, not "already exhausted".
    values = trend(60, seed=6)
    values[59] = 400.0
    result = forecast(daily(values), 160.0, horizon_days=120)
    assert result.outlier_days == (START + timedelta(days=59),)
    assert not result.exhaustion.reason.startswith("already exhausted")
    assert result.exhaustion.expected_date is not None
    assert abs((result.exhaustion.expected_date - START).days - 120) <= 7


def test_a_holiday_week_is_seven_outlier_days_not_two_shifts() -> None:
    # Days 40–46 run 25 units (25 σ) low: a level must hold 14 days between two shifts, so the
    # week is not a segment of its own; its days are outliers and the slope stays the true 0.5.
    values = trend(84, seed=7)
    values[40:47] -= 25.0
    result = forecast(daily(values), 1_000.0, horizon_days=30)
    assert result.level_shifts == ()
    holiday = {START + timedelta(days=d) for d in range(40, 47)}
    assert holiday <= set(result.outlier_days)
    assert result.slope_lo95 is not None and result.slope_hi95 is not None
    assert result.slope_lo95 <= 0.5 <= result.slope_hi95


def test_pure_noise_has_no_shift_and_no_significant_trend() -> None:
    # 100 + N(0, 2²) for 120 days, no trend: no shift, the slope's interval holds 0, no date.
    rng = np.random.default_rng(8)
    result = forecast(daily(100.0 + rng.normal(0.0, 2.0, 120)), 110.0, horizon_days=90)
    assert result.level_shifts == ()
    assert not result.significant_trend
    assert result.exhaustion.expected_date is None
    assert result.exhaustion.reason.startswith("no significant trend")


def test_correlated_noise_is_not_taken_for_shifts() -> None:
    # AR(1) noise with ρ = 0.6 wanders in runs that an independent-days test reads as steps (the
    # scan statistic's 99th percentile roughly triples: docs/benchmarks.md "forecast-robust");
    # the statistic is deflated by (1 + ρ̂)/(1 − ρ̂), so these five 120-day series show none.
    for seed in range(5):
        rng = np.random.default_rng(100 + seed)
        noise = np.zeros(120)
        for k, z in enumerate(rng.normal(0.0, 2.0, 120)):
            noise[k] = (0.6 * noise[k - 1] if k else 0.0) + z
        result = forecast(daily(100.0 + 0.3 * np.arange(120) + noise), 1_000.0)
        assert result.level_shifts == (), seed


def test_a_shift_too_recent_to_fit_after_gives_no_forecast_and_says_so() -> None:
    # The step is 10 days before the end: 10 days since it, fewer than 21, so no forecast and
    # no date, and the reason names the shift's day.
    values = trend(90, seed=9)
    values[80:] += 30.0
    result = forecast(daily(values), 150.0, horizon_days=60)
    assert result.method == "none"
    assert result.points == ()
    assert result.exhaustion.expected_date is None and result.exhaustion.earliest_date is None
    shift = START + timedelta(days=80)
    assert [s.day for s in result.level_shifts] == [shift]
    assert (
        f"too little history since the level shift on {shift.isoformat()}: 10 days with data, "
        f"at least {MIN_HISTORY_DAYS} are needed" in result.exhaustion.reason
    )


def test_the_monthly_page_and_json_name_the_level_shift(tmp_path: Path) -> None:
    # Pool "a" requests 20 cores at peak until 15 August (t = 45), 35 from 16 August (t = 46,
    # a team moving in) on top of 0.05 cores/day; 92 days of history from 1 July to 30
    # September. The review of September must date the shift on 2026-08-16.
    def peak(t: int) -> float:
        return 20.0 + 0.05 * t + (15.0 if t >= 46 else 0.0) + (0.3 if t % 3 == 0 else 0.0)

    write_history(tmp_path / "h", date(2026, 7, 1), 92,
                  [PoolTruth("a", requested_cpu=const(15.0), requested_cpu_peak=peak)])  # fmt: skip
    run = CliRunner().invoke(
        main,
        ["report", "monthly", str(tmp_path / "h"), "--out", str(tmp_path / "r"),
         "--month", "2026-09"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    pool = json.loads((tmp_path / "r" / "report.json").read_text())["pools"][0]
    shifts = pool["forecast"]["level_shifts"]
    assert [s["date"] for s in shifts] == ["2026-08-16"]
    assert shifts[0]["size"] == pytest.approx(15.0, abs=0.5)
    assert pool["forecast"]["fit_start"] == "2026-08-16"
    page = (tmp_path / "r" / "report.html").read_text()
    assert "level shift on 2026-08-16" in page
    assert "Found in a requested CPU (daily peak): level shift on 2026-08-16" in page


def test_a_review_after_a_recent_shift_takes_no_forecast_action_and_names_the_shift(
    tmp_path: Path,
) -> None:
    # Requests peak at 20 cores (+0.3 on every third day) until 20 September, 30 from 21
    # September (t = 82 from 1 July): 10 days at the new level, fewer than 21. 10 nodes of 8
    # cores leave 72 under N+1, so N+1 holds and the decision is "no forecast".
    def peak(t: int) -> float:
        return 20.0 + (10.0 if t >= 82 else 0.0) + (0.3 if t % 3 == 0 else 0.0)

    write_history(tmp_path, date(2026, 7, 1), 92,
                  [PoolTruth("a", requested_cpu=const(15.0), requested_cpu_peak=peak)])  # fmt: skip
    review = build_review(tmp_path, ReviewSettings(month=Month(2026, 9)))
    decision = review.payload["pools"][0]["decision"]
    assert decision["rule"] == "no_forecast"
    assert "10 days since the level shift on 2026-09-21 are too few" in decision["sentence"]
    cpu = review.forecasts["a"]["requested_cpu_cores"]
    assert cpu.method == "none" and cpu.exhaustion.expected_date is None
