"""Benchmark: forecast quality on synthetic daily histories whose truth is known (issue 16).

Each seed draws a 60-day history: a linear trend (slope 0.3–0.8 cores/day from 100 cores), a
weekly sine cycle (amplitude 2–6 cores) and Gaussian noise (σ 2 cores), and a capacity the
noiseless truth first reaches 30–120 days after the last history day. For each seed it measures

- the error in days of the expected exhaustion date against the true crossing (the first day the
  noiseless truth reaches capacity), and whether the earliest plausible date (upper 95 % band) comes
  on or before it;
- whether the 80 % and 95 % prediction intervals cover a fresh observation of the truth (trend +
  cycle + a new noise draw, what a prediction interval claims to cover) at horizons 7, 30, 60, 90;
- the same crossing error for a naive baseline in the same run: a least-squares line through the
  last 14 days extrapolated without intervals, as kubernetes-mixin's ``predict_linear`` alerts do.

With ``--with-ets`` it also measures the alternative the issue names, statsmodels' ETS with
additive error, trend and weekly season (``ETSModel``), on the same histories, so the choice of
method in ``analyzer/monthly/forecast.py`` rests on a measurement.

Prints the distribution per figure and a final JSON line.

    PYTHONPATH=$PWD .venv/bin/python bench/forecast_quality.py [--seeds 50] [--with-ets]
"""

from __future__ import annotations

import argparse
import json
import platform
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyzer.monthly.forecast import forecast

HISTORY_DAYS = 60
HORIZON_DAYS = 180
NOISE_CORES = 2.0
HORIZONS = (7, 30, 60, 90)
BASELINE_WINDOW = 14


@dataclass(frozen=True)
class Truth:
    """One seed's known truth: trend, cycle and noise, and the capacity line."""

    base: float
    slope: float
    amplitude: float
    capacity: float

    def mean(self, day: np.ndarray) -> np.ndarray:
        """The noiseless truth on day numbers ``day`` (day 0 is the first history day)."""
        return self.base + self.slope * day + self.amplitude * np.sin(2 * np.pi * day / 7)

    def crossing(self) -> int:
        """The first day number past the history on which the noiseless truth reaches capacity."""
        days = np.arange(HISTORY_DAYS, HISTORY_DAYS + HORIZON_DAYS)
        return int(days[np.flatnonzero(self.mean(days) >= self.capacity)[0]])


def draw(seed: int) -> tuple[Truth, pd.Series, np.random.Generator]:
    """The seed's truth and 60-day noisy history; the generator continues for fresh draws."""
    rng = np.random.default_rng(seed)
    slope = rng.uniform(0.3, 0.8)
    amplitude = rng.uniform(2.0, 6.0)
    ahead = rng.uniform(30, 120)
    capacity = 100.0 + slope * (HISTORY_DAYS - 1 + ahead)
    truth = Truth(100.0, slope, amplitude, capacity)
    day = np.arange(HISTORY_DAYS)
    values = truth.mean(day) + rng.normal(0.0, NOISE_CORES, HISTORY_DAYS)
    index = pd.date_range("2026-01-01", periods=HISTORY_DAYS, freq="D")
    return truth, pd.Series(values, index=index), rng


def baseline_crossing(history: pd.Series, capacity: float) -> int | None:
    """The day the last-14-days straight line reaches capacity (``predict_linear``), or None."""
    day = np.arange(HISTORY_DAYS - BASELINE_WINDOW, HISTORY_DAYS)
    slope, intercept = np.polyfit(day, history.to_numpy()[-BASELINE_WINDOW:], 1)
    future = np.arange(HISTORY_DAYS, HISTORY_DAYS + HORIZON_DAYS)
    hits = np.flatnonzero(intercept + slope * future >= capacity)
    return int(future[hits[0]]) if hits.size else None


def one_seed(seed: int) -> dict[str, object]:
    """All the figures of one seed."""
    truth, history, rng = draw(seed)
    result = forecast(history, truth.capacity, horizon_days=HORIZON_DAYS)
    start = history.index[0].date()
    true_day = truth.crossing()
    expected = result.exhaustion.expected_date
    earliest = result.exhaustion.earliest_date
    row: dict[str, object] = {
        "seed": seed,
        "method": result.method,
        "true_crossing_day": true_day,
        "error_days": None if expected is None else (expected - start).days - true_day,
        "earliest_on_or_before": earliest is not None and (earliest - start).days <= true_day,
    }
    base = baseline_crossing(history, truth.capacity)
    row["baseline_error_days"] = None if base is None else base - true_day
    for h in HORIZONS:
        point = result.points[h - 1]
        day = np.array([HISTORY_DAYS - 1 + h])
        observed = float(truth.mean(day)[0] + rng.normal(0.0, NOISE_CORES))
        row[f"cover80_h{h}"] = point.lo80 <= observed <= point.hi80
        row[f"cover95_h{h}"] = point.lo95 <= observed <= point.hi95
    return row


def ets_seed(seed: int) -> dict[str, object]:
    """The crossing error and 80 % coverage of statsmodels' ETS (A, A, A; period 7) on the seed."""
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    truth, history, rng = draw(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # optimizer convergence notes on short histories
        fit = ETSModel(
            history.asfreq("D"), error="add", trend="add", seasonal="add", seasonal_periods=7
        ).fit(disp=False)
    frame = fit.get_prediction(
        start=HISTORY_DAYS, end=HISTORY_DAYS + HORIZON_DAYS - 1
    ).summary_frame(alpha=0.20)
    mean = frame["mean"].to_numpy()
    hits = np.flatnonzero(mean >= truth.capacity)
    row: dict[str, object] = {
        "error_days": None if not hits.size else HISTORY_DAYS + int(hits[0]) - truth.crossing()
    }
    for h in HORIZONS:
        observed = float(truth.mean(np.array([HISTORY_DAYS - 1 + h]))[0])
        observed += float(rng.normal(0.0, NOISE_CORES))
        row[f"cover80_h{h}"] = bool(
            frame["pi_lower"].iloc[h - 1] <= observed <= frame["pi_upper"].iloc[h - 1]
        )
    return row


def summary(errors: list[int | None]) -> dict[str, object]:
    """Share within ±7 days, median and 90th percentile of the absolute error, misses."""
    found = np.array([abs(e) for e in errors if e is not None], dtype=float)
    return {
        "within_7_days": sum(1 for e in errors if e is not None and abs(e) <= 7) / len(errors),
        "median_abs_days": float(np.median(found)) if found.size else None,
        "p90_abs_days": float(np.percentile(found, 90)) if found.size else None,
        "max_abs_days": float(found.max()) if found.size else None,
        "no_date": sum(1 for e in errors if e is None),
    }


def main() -> None:
    """Run the seeds, print each figure, then one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--with-ets", action="store_true", help="also measure statsmodels ETS")
    args = parser.parse_args()
    rows = [one_seed(seed) for seed in range(args.seeds)]
    model = summary([r["error_days"] for r in rows])  # type: ignore[misc]
    baseline = summary([r["baseline_error_days"] for r in rows])  # type: ignore[misc]
    coverage = {
        f"{level}_h{h}": sum(bool(r[f"cover{level}_h{h}"]) for r in rows) / len(rows)
        for level in (80, 95)
        for h in HORIZONS
    }
    methods = {
        m: sum(r["method"] == m for r in rows) for m in sorted({str(r["method"]) for r in rows})
    }
    earliest_ok = sum(bool(r["earliest_on_or_before"]) for r in rows) / len(rows)
    print(f"seeds {args.seeds}, history {HISTORY_DAYS} d, horizon {HORIZON_DAYS} d")
    print(f"methods chosen: {methods}")
    print(f"expected date error (days): {model}")
    print(f"baseline (last {BASELINE_WINDOW} d straight line) error (days): {baseline}")
    print(f"earliest plausible date on or before the true crossing: {earliest_ok:.0%}")
    for key, share in coverage.items():
        print(f"interval coverage {key}: {share:.0%}")
    ets: dict[str, object] | None = None
    if args.with_ets:
        ets_rows = [ets_seed(seed) for seed in range(args.seeds)]
        ets = summary([r["error_days"] for r in ets_rows])  # type: ignore[misc]
        for h in HORIZONS:
            ets[f"cover80_h{h}"] = sum(bool(r[f"cover80_h{h}"]) for r in ets_rows) / len(rows)
        print(f"ETS (A,A,A, period 7) error (days) and 80 % coverage: {ets}")
    print(
        json.dumps(
            {
                "ets": ets,
                "bench": "forecast_quality",
                "seeds": args.seeds,
                "python": platform.python_version(),
                "methods": methods,
                "expected": model,
                "baseline": baseline,
                "earliest_on_or_before": earliest_ok,
                "coverage": coverage,
            }
        )
    )


if __name__ == "__main__":
    main()
