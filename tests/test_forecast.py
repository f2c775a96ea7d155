"""The monthly forecast: hand-computable lines and dates, the method rule, interval order, the
``report.json`` shape, and forecast quality on synthetic histories whose truth is known."""

from __future__ import annotations

import json
import math
from datetime import date, timedelta

import numpy as np
import pandas as pd
import pytest

from analyzer.monthly.forecast import MIN_HISTORY_DAYS, Forecast, forecast

START = date(2026, 1, 1)


def daily(values: np.ndarray | list[float], start: date = START) -> pd.Series:
    """``values`` on consecutive UTC days from ``start``."""
    return pd.Series(values, index=pd.date_range(start, periods=len(values), freq="D"))


def line(days: int) -> np.ndarray:
    """10 + 2·t cores on day t: the exact line the hand computations below use."""
    return 10.0 + 2.0 * np.arange(days)


def assert_sane(result: Forecast) -> None:
    """No NaN, and lo95 ≤ lo80 ≤ mean ≤ hi80 ≤ hi95 on every forecast day."""
    for p in result.points:
        values = [p.lo95, p.lo80, p.mean, p.hi80, p.hi95]
        assert all(math.isfinite(v) for v in values), p
        assert values == sorted(values), p


def test_an_exact_line_gives_the_line_and_the_hand_computed_crossing() -> None:
    # 10 + 2t reaches 99.5 at t = 44.75, so the first whole day at or above is t = 45:
    # 2026-01-01 + 45 days = 2026-02-15. The first forecast day is t = 30: 10 + 60 = 70.
    result = forecast(daily(line(30)), 99.5, horizon_days=60)
    assert result.method == "linear_trend"
    assert result.slope_per_day == pytest.approx(2.0)
    assert result.significant_trend
    assert result.points[0].day == date(2026, 1, 31)
    assert result.points[0].mean == pytest.approx(70.0)
    assert result.exhaustion.expected_date == date(2026, 2, 15)
    assert result.exhaustion.earliest_date == date(2026, 2, 15)
    assert_sane(result)


def test_gap_days_are_dropped_and_the_day_number_keeps_time() -> None:
    # Same line with ten missing days: the fit uses the day number, so the crossing is unchanged.
    values = line(40)
    values[[3, 4, 5, 11, 17, 22, 23, 30, 31, 38]] = np.nan
    result = forecast(daily(values), 99.5, horizon_days=60)
    assert result.history_days == 30
    assert result.points[0].day == date(2026, 2, 10)
    assert result.exhaustion.expected_date == date(2026, 2, 15)


def test_a_capacity_series_is_followed_and_carried_forward() -> None:
    # A node added on 2026-02-10 (day 40) lifts the line from 99.5 to 149.5: 10 + 2t reaches
    # 149.5 at t = 69.75, so day 70 = 2026-03-12; before day 40 the line stays under 99.5
    # only until t = 45, which is after the step, so the first capacity never bites.
    capacity = pd.Series([99.5, 149.5], index=pd.to_datetime(["2026-01-01", "2026-02-10"]))
    result = forecast(daily(line(30)), capacity, horizon_days=90)
    assert result.exhaustion.expected_date == date(2026, 3, 12)


def test_a_flat_noisy_series_has_no_significant_trend_and_no_expected_date() -> None:
    # A palindrome (day t equals day n−1−t) has zero covariance with t, so its OLS slope is 0
    # exactly and the slope's interval, widened by the noise, contains 0.
    half = 50.0 + np.random.default_rng(3).normal(0.0, 1.0, 30)
    result = forecast(daily(np.concatenate([half, half[::-1]])), 60.0, horizon_days=120)
    assert result.slope_per_day == pytest.approx(0.0, abs=1e-9)
    assert result.slope_lo95 is not None and result.slope_lo95 < 0.0
    assert result.slope_hi95 is not None and result.slope_hi95 > 0.0
    assert not result.significant_trend
    assert result.exhaustion.expected_date is None
    assert result.exhaustion.reason.startswith("no significant trend")
    # 60 is ten noise σ above the level of 50: even the upper 95 % band stays below it.
    assert result.exhaustion.earliest_date is None
    assert "stays below" in result.exhaustion.reason


def test_under_21_days_of_data_there_is_no_forecast_and_the_reason_says_so() -> None:
    result = forecast(daily(line(MIN_HISTORY_DAYS - 1)), 99.5)
    assert result.method == "none"
    assert result.points == ()
    assert result.exhaustion.expected_date is None
    assert "20 days" in result.exhaustion.reason and "21" in result.exhaustion.reason
    # 25 calendar days of which 5 are gaps is also 20 days with data.
    gappy = line(25)
    gappy[[1, 2, 3, 4, 5]] = np.nan
    assert forecast(daily(gappy), 99.5).method == "none"
    assert forecast(daily(line(MIN_HISTORY_DAYS)), 99.5).method == "linear_trend"


def test_a_weekly_cycle_is_detected_and_the_forecast_keeps_it() -> None:
    # Every seventh day (weekday offset 5) carries +10 cores on top of a slow trend and small noise.
    days = np.arange(42)
    rng = np.random.default_rng(7)
    values = 100.0 + 0.1 * days + 10.0 * (days % 7 == 5) + rng.normal(0.0, 0.5, days.size)
    result = forecast(daily(values), 1_000.0, horizon_days=28)
    assert result.method == "linear_trend_weekly"
    assert "significant" in result.method_reason
    means = np.array([p.mean for p in result.points])
    offsets = (np.arange(42, 42 + 28)) % 7
    # The peak weekday stands 10 cores above the others (the trend adds at most 0.6 in between).
    lift = means[offsets == 5].mean() - means[offsets != 5].mean()
    assert lift == pytest.approx(10.0, abs=1.0)
    assert_sane(result)


def test_intervals_widen_with_the_horizon() -> None:
    rng = np.random.default_rng(11)
    values = line(60) + rng.normal(0.0, 3.0, 60)
    result = forecast(daily(values), 10_000.0, horizon_days=120)
    assert result.method == "linear_trend"
    widths = np.array([p.hi95 - p.lo95 for p in result.points])
    # Past the history's centre the slope's uncertainty grows with distance: strictly wider.
    assert np.all(np.diff(widths) > 0)
    narrow = np.array([p.hi80 - p.lo80 for p in result.points])
    assert np.all(narrow < widths)
    assert_sane(result)


def test_already_above_capacity_and_beyond_the_horizon() -> None:
    done = forecast(daily(line(30)), 50.0, horizon_days=30)
    assert done.exhaustion.expected_date == START + timedelta(days=29)
    assert done.exhaustion.reason.startswith("already exhausted")
    # 10 + 2t reaches 1000 at t = 495, far past 30 + 30 days.
    far = forecast(daily(line(30)), 1_000.0, horizon_days=30)
    assert far.exhaustion.expected_date is None and far.exhaustion.earliest_date is None
    assert "beyond the 30-day horizon" in far.exhaustion.reason


def test_to_dict_has_the_report_json_contract_shape() -> None:
    result = forecast(daily(line(30)), 99.5, horizon_days=20)
    data = json.loads(json.dumps(result.to_dict()))
    assert data["method"] == "linear_trend"
    assert data["horizon_days"] == 20
    assert len(data["series"]) == 20
    assert set(data["series"][0]) == {
        "date",
        "requested_cpu_cores",
        "lo80",
        "hi80",
        "lo95",
        "hi95",
    }
    assert data["series"][0]["date"] == "2026-01-31"
    assert [set(e) for e in data["exhaustion"]] == [
        {"resource", "basis", "expected_date", "earliest_date", "reason"}
    ]
    assert data["exhaustion"][0]["expected_date"] == "2026-02-15"
    none = forecast(daily(line(5)), 99.5).to_dict()
    assert none["series"] == [] and none["exhaustion"][0]["expected_date"] is None


def test_forecast_quality_on_ten_seeds_of_known_truth() -> None:
    """A small version of bench/forecast_quality.py with its own generator.

    Truth: 100 cores + slope·t (0.3–0.8/day) + a weekly sine (2–6 cores) + N(0, 2²) noise over 60
    days; capacity reached by the noiseless truth 30–120 days later. Thresholds and margins:
    - expected date within ±7 days of the true crossing in at least 8 of 10 seeds ("most"; the
      50-seed bench measured 50 of 50, so 8 leaves room without accepting a coin toss);
    - over 10 seeds × 4 horizons (7, 30, 60, 90 days) = 40 checks, the 80 % interval covers a fresh
      observation at least 28 times (70 %, the acceptance figure): a calibrated 80 % interval falls
      below that with probability ≈ 4 % (binomial); the 95 % interval at least 34 times (85 %,
      ≈ 0.3 % for a calibrated one). These seeds measured 10 of 10, 36 of 40 and 40 of 40.
    """
    within = covered80 = covered95 = 0
    for seed in range(10):
        rng = np.random.default_rng(1_000 + seed)
        slope, amplitude = rng.uniform(0.3, 0.8), rng.uniform(2.0, 6.0)
        capacity = 100.0 + slope * (59 + rng.uniform(30, 120))

        def truth(t: np.ndarray) -> np.ndarray:
            return 100.0 + slope * t + amplitude * np.sin(2 * np.pi * t / 7)  # noqa: B023

        history = truth(np.arange(60)) + rng.normal(0.0, 2.0, 60)
        result = forecast(daily(history), capacity, horizon_days=180)
        future = np.arange(60, 240)
        true_day = int(future[np.flatnonzero(truth(future) >= capacity)[0]])
        expected = result.exhaustion.expected_date
        if expected is not None and abs((expected - START).days - true_day) <= 7:
            within += 1
        for h in (7, 30, 60, 90):
            point = result.points[h - 1]
            observed = float(truth(np.array([59 + h]))[0] + rng.normal(0.0, 2.0))
            covered80 += point.lo80 <= observed <= point.hi80
            covered95 += point.lo95 <= observed <= point.hi95
        assert_sane(result)
    assert within >= 8
    assert covered80 >= 28
    assert covered95 >= 34


def test_a_shuffled_tz_aware_index_is_read_as_utc_days_and_a_repeated_day_is_refused() -> None:
    # Midnight UTC written as 01:00+01:00, in reverse order: the same days, the same crossing.
    index = pd.date_range("2026-01-01 01:00", periods=30, freq="D", tz="Europe/Paris")
    shuffled = pd.Series(line(30), index=index)[::-1]
    result = forecast(shuffled, 99.5, horizon_days=60)
    assert result.exhaustion.expected_date == date(2026, 2, 15)
    twice = pd.Series([1.0, 2.0], index=pd.to_datetime(["2026-01-01 03:00", "2026-01-01 09:00"]))
    with pytest.raises(ValueError, match="two values for one day"):
        forecast(twice, 99.5)
