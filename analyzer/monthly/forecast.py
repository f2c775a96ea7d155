"""Forecast one daily series against a capacity line: prediction intervals and days until exhaustion.

The rules (docs/monthly.md states them for users):

- **Gaps.** NaN days are dropped, not interpolated. The model regresses on the day number, so a
  missing day leaves no hole in time and invents no value.
- **Minimum history.** At least ``MIN_HISTORY_DAYS`` (21) days *with data*; below that there is no
  forecast and the reason says how many days there were.
- **Level shifts and outliers** (``robust=True``, the default; monthly/shifts.py states the
  search). The trend is fitted on the days since the last level shift found, without the outlier
  days; fewer than 21 such days is "too little history since the level shift on DATE", with no
  forecast and no date. ``robust=False`` is the issue-16 method (all days, no search), kept as
  the baseline bench/forecast_robust.py measures against.
- **Method.** Ordinary least squares on the day number (``linear_trend``). When the history holds
  at least three full weeks (always true past the minimum) the model is refitted with six
  day-of-week indicators; if an F-test says the weekly component is significant (p < 0.05) that
  model is kept (``linear_trend_weekly``), otherwise the plain line is. Both are linear models, so
  the prediction intervals are the exact OLS ones (``get_prediction(...).summary_frame``), pointwise
  per day; they widen with the horizon because the slope's uncertainty is extrapolated. The fit is
  closed-form: no random state, the same input gives the same output.
- **Trend.** The slope (units per day) with its 95 % confidence interval; when that interval
  includes 0 the trend is "not significant" and no expected date is given (a fake date is worse
  than none), though the earliest plausible date still is when the upper band crosses.
- **Exhaustion.** *Expected date*: the first forecast day the mean reaches the capacity.
  *Earliest plausible date*: the first forecast day the **upper 95 %** band reaches it. Neither
  within ``horizon_days``: "beyond the horizon". If the last observed day is already at or above
  capacity, the series is "already exhausted" and both dates are that day.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import numpy as np
import pandas as pd

from analyzer.monthly import shifts
from analyzer.monthly.shifts import LevelShift

MIN_HISTORY_DAYS = 21
WEEK = 7
SEASONAL_P_VALUE = 0.05


@dataclass(frozen=True)
class ForecastPoint:
    """One forecast day: the mean and the 80 % and 95 % prediction intervals, in the series' unit."""

    day: date
    mean: float
    lo80: float
    hi80: float
    lo95: float
    hi95: float


@dataclass(frozen=True)
class Exhaustion:
    """When a series reaches its capacity; dates are ``None`` when not within the horizon."""

    resource: str
    basis: str
    expected_date: date | None
    earliest_date: date | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """The ``report.json`` shape: dates as ISO strings or null."""
        return {
            "resource": self.resource,
            "basis": self.basis,
            "expected_date": _iso(self.expected_date),
            "earliest_date": _iso(self.earliest_date),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Forecast:
    """A forecast of one series, or the reason there is none (``method == "none"``).

    ``slope_per_day`` and its 95 % interval are in the series' unit per day; ``history_days``
    counts the days with data the fit used, from ``fit_start`` on; ``level_shifts`` and
    ``outlier_days`` are what the robust search found (empty with ``robust=False``).
    """

    resource: str
    method: str
    method_reason: str
    horizon_days: int
    history_days: int
    slope_per_day: float | None
    slope_lo95: float | None
    slope_hi95: float | None
    significant_trend: bool
    points: tuple[ForecastPoint, ...]
    exhaustion: Exhaustion
    level_shifts: tuple[LevelShift, ...] = ()
    outlier_days: tuple[date, ...] = ()
    fit_start: date | None = None

    def findings(self) -> str:
        """One sentence of what the search found, or "" when it found nothing."""
        return describe(self.level_shifts, self.outlier_days)

    def to_dict(self) -> dict[str, Any]:
        """The ``report.json`` ``forecast`` contract, plus the method's reason and the slope."""
        return {
            "method": self.method,
            "method_reason": self.method_reason,
            "horizon_days": self.horizon_days,
            "history_days": self.history_days,
            "slope_per_day": self.slope_per_day,
            "slope_lo95": self.slope_lo95,
            "slope_hi95": self.slope_hi95,
            "significant_trend": self.significant_trend,
            "fit_start": _iso(self.fit_start),
            "level_shifts": [shift.to_dict() for shift in self.level_shifts],
            "outlier_days": [d.isoformat() for d in self.outlier_days],
            "series": [
                {
                    "date": p.day.isoformat(),
                    self.resource: p.mean,
                    "lo80": p.lo80,
                    "hi80": p.hi80,
                    "lo95": p.lo95,
                    "hi95": p.hi95,
                }
                for p in self.points
            ],
            "exhaustion": [self.exhaustion.to_dict()],
        }


def describe(level_shifts: tuple[LevelShift, ...], outlier_days: tuple[date, ...]) -> str:
    """``level shift on 2026-03-04 (+12.5); 2 outlier days left out (…)``, or ""."""
    parts = [f"level shift on {s.day.isoformat()} ({s.size:+.3g})" for s in level_shifts]
    if outlier_days:
        count = len(outlier_days)
        listed = ", ".join(d.isoformat() for d in outlier_days[:3])
        more = f" and {count - 3} more" if count > 3 else ""
        parts.append(f"{count} outlier day{'s' if count > 1 else ''} left out ({listed}{more})")
    return "; ".join(parts)


def _iso(day: date | None) -> str | None:
    return None if day is None else day.isoformat()


def _daily(series: pd.Series) -> pd.Series:
    """The series with a sorted, unique UTC-date index and its NaN days dropped."""
    index = pd.DatetimeIndex(pd.to_datetime(series.index))
    if index.tz is not None:
        index = index.tz_convert("UTC").tz_localize(None)
    clean = pd.Series(series.to_numpy(dtype=float), index=index.normalize())
    if clean.index.has_duplicates:
        raise ValueError("the daily series has two values for one day")
    return clean.sort_index().dropna()


def _capacity_on(capacity: float | pd.Series, days: list[date]) -> np.ndarray:
    """The capacity on each day: a constant, or a series carried forward from its last value."""
    if not isinstance(capacity, pd.Series):
        return np.full(len(days), float(capacity))
    line = _daily(capacity)
    if line.empty:
        raise ValueError("the capacity series has no value")
    wanted = pd.DatetimeIndex([pd.Timestamp(d) for d in days])
    carried = line.reindex(line.index.union(wanted)).ffill().bfill()
    values: np.ndarray = carried.reindex(wanted).to_numpy(dtype=float)
    return values


def _first_day(reached: np.ndarray, days: list[date]) -> date | None:
    hits = np.flatnonzero(reached)
    return days[int(hits[0])] if hits.size else None


def forecast(
    series: pd.Series,
    capacity: float | pd.Series,
    *,
    horizon_days: int = 180,
    resource: str = "requested_cpu_cores",
    basis: str = "requested vs allocatable minus the N+1 buffer",
    robust: bool = True,
) -> Forecast:
    """Forecast ``series`` (daily values indexed by UTC date) ``horizon_days`` past its last day.

    ``capacity`` is the line the series must stay under, a constant or a daily series (carried
    forward past its last value). The module docstring states every rule.
    """
    if horizon_days < 1:
        raise ValueError("horizon_days must be at least 1")
    history = _daily(series)
    observed = len(history)
    if observed < MIN_HISTORY_DAYS:
        reason = f"no forecast: {observed} days with data, at least {MIN_HISTORY_DAYS} are needed"
        return _none(resource, basis, horizon_days, observed, reason)

    start = history.index[0]
    all_numbers = ((history.index - start).days).to_numpy()
    all_values = history.to_numpy()
    found = (
        shifts.find([d.date() for d in history.index], all_numbers, all_values)
        if robust
        else shifts.Findings((), (), np.ones(observed, dtype=bool))
    )
    day_numbers = all_numbers[found.keep]
    values = all_values[found.keep]
    fit_start = (
        history.index[int(np.flatnonzero(found.keep)[0])].date() if found.keep.any() else None
    )
    if len(values) < MIN_HISTORY_DAYS:
        last_shift = found.shifts[-1].day.isoformat() if found.shifts else None
        reason = (
            f"no forecast: too little history since the level shift on {last_shift}: "
            f"{len(values)} days with data, at least {MIN_HISTORY_DAYS} are needed"
            if last_shift
            else f"no forecast: {len(values)} days with data once outlier days are left out, "
            f"at least {MIN_HISTORY_DAYS} are needed"
        )
        return _none(resource, basis, horizon_days, len(values), reason, found, fit_start)

    # Imported here, not at the top: statsmodels takes seconds to import, and a review that ends
    # early (a damaged history file, a bad option) should not pay it.
    import statsmodels.api as sm

    line_fit = sm.OLS(values, shifts.design(day_numbers, False)).fit()
    # The weekly test needs every day of the week twice among the days fitted; outlier days or
    # gaps on one weekday can leave it short, and then the plain line is fitted.
    testable = int(np.bincount(day_numbers % WEEK, minlength=WEEK).min()) >= 2
    weekly_fit = sm.OLS(values, shifts.design(day_numbers, True)).fit() if testable else line_fit
    p_value = weekly_fit.compare_f_test(line_fit)[1] if testable else float("nan")
    # A line that fits exactly leaves nothing for a cycle to explain; the F-test would compare
    # two rounding errors.
    exact = line_fit.ssr <= 1e-12 * float(np.sum(values**2))
    weekly = bool(not exact and np.isfinite(p_value) and p_value < SEASONAL_P_VALUE)
    fit = weekly_fit if weekly else line_fit
    if weekly:
        method = "linear_trend_weekly"
        method_reason = (
            f"linear trend with a day-of-week component: the weekly cycle is significant "
            f"(F-test p = {p_value:.3g} < {SEASONAL_P_VALUE})"
        )
    else:
        method = "linear_trend"
        method_reason = (
            f"linear trend: no significant weekly cycle (F-test p = {p_value:.3g})"
            if np.isfinite(p_value) and not exact
            else "linear trend: the history lies on a straight line, no cycle to test"
            if exact
            else "linear trend: a day of the week has under 2 days of data, no cycle to test"
        )

    found_text = describe(found.shifts, found.outliers)
    if found_text:
        method_reason += f"; {found_text}; trend fitted from {fit_start}"
    slope = float(fit.params[1])
    slope_lo, slope_hi = (float(v) for v in fit.conf_int(alpha=0.05)[1])
    significant = not (slope_lo <= 0.0 <= slope_hi)

    last = int(all_numbers[-1])  # the day after the last observed day, outlier or not
    future = np.arange(last + 1, last + 1 + horizon_days)
    exog = shifts.design(future, weekly)
    prediction = fit.get_prediction(exog)
    frame80 = prediction.summary_frame(alpha=0.20)
    frame95 = prediction.summary_frame(alpha=0.05)
    start_day = start.date()
    days = [start_day + timedelta(days=int(n)) for n in future]
    # Plain floats column by column: a pandas lookup per point costs more than the fit.
    columns = zip(
        days,
        frame80["mean"].to_numpy(float).tolist(),
        frame80["obs_ci_lower"].to_numpy(float).tolist(),
        frame80["obs_ci_upper"].to_numpy(float).tolist(),
        frame95["obs_ci_lower"].to_numpy(float).tolist(),
        frame95["obs_ci_upper"].to_numpy(float).tolist(),
        strict=True,
    )
    points = tuple(ForecastPoint(d, m, lo8, hi8, lo9, hi9) for d, m, lo8, hi8, lo9, hi9 in columns)
    # An outlier day is left out here too: a one-day spike over the line is not an exhaustion.
    kept = history[found.keep]
    exhaustion = _exhaustion(kept, capacity, points, days, significant, resource, basis)
    exhaustion = _with_trend_note(exhaustion, significant, slope_lo, slope_hi)
    return Forecast(
        resource=resource,
        method=method,
        method_reason=method_reason,
        horizon_days=horizon_days,
        history_days=len(values),
        slope_per_day=slope,
        slope_lo95=slope_lo,
        slope_hi95=slope_hi,
        significant_trend=significant,
        points=points,
        exhaustion=exhaustion,
        level_shifts=found.shifts,
        outlier_days=found.outliers,
        fit_start=fit_start,
    )


def _none(
    resource: str,
    basis: str,
    horizon_days: int,
    days: int,
    reason: str,
    found: shifts.Findings | None = None,
    fit_start: date | None = None,
) -> Forecast:
    """No forecast, for ``reason`` (too little history), with what the search found if it ran."""
    return Forecast(
        resource=resource,
        method="none",
        method_reason=reason,
        horizon_days=horizon_days,
        history_days=days,
        slope_per_day=None,
        slope_lo95=None,
        slope_hi95=None,
        significant_trend=False,
        points=(),
        exhaustion=Exhaustion(resource, basis, None, None, reason),
        level_shifts=() if found is None else found.shifts,
        outlier_days=() if found is None else found.outliers,
        fit_start=fit_start,
    )


def _exhaustion(
    history: pd.Series,
    capacity: float | pd.Series,
    points: tuple[ForecastPoint, ...],
    days: list[date],
    significant: bool,
    resource: str,
    basis: str,
) -> Exhaustion:
    """Expected date (mean crosses), earliest plausible date (upper 95 % band crosses), or none.

    ``history`` is the days the fit kept: "already exhausted" is judged on the last of them."""
    last_day = history.index[-1].date()
    if history.iloc[-1] >= _capacity_on(capacity, [last_day])[0]:
        return Exhaustion(
            resource, basis, last_day, last_day, f"already exhausted on {last_day.isoformat()}"
        )
    limit = _capacity_on(capacity, days)
    mean = np.array([p.mean for p in points])
    hi95 = np.array([p.hi95 for p in points])
    expected = _first_day(mean >= limit, days) if significant else None
    earliest = _first_day(hi95 >= limit, days)
    horizon = f"{len(days)}-day horizon"
    if expected is not None:
        reason = f"the mean forecast reaches capacity on {expected.isoformat()}"
    elif significant:
        reason = f"the mean forecast stays below capacity: beyond the {horizon}"
    else:
        reason = "no expected date"
    if earliest is not None:
        reason += f"; the upper 95 % band reaches it on {earliest.isoformat()}"
    else:
        reason += f"; the upper 95 % band stays below it within the {horizon}"
    return Exhaustion(resource, basis, expected, earliest, reason)


def _with_trend_note(found: Exhaustion, significant: bool, lo: float, hi: float) -> Exhaustion:
    """Put "no significant trend" first in the reason when the slope's interval includes 0."""
    if significant or found.reason.startswith("already"):
        return found
    note = f"no significant trend (slope 95 % interval {lo:.3g} to {hi:.3g} per day includes 0)"
    return Exhaustion(
        found.resource,
        found.basis,
        found.expected_date,
        found.earliest_date,
        f"{note}: {found.reason}",
    )
