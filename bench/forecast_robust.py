"""Benchmark: forecasts on series with level shifts, outliers and cycles (issue 28 item 4).

The generator draws, per seed, a 120-day history built the way the review's series are: **hourly**
values (a level, a linear trend, a weekly cycle, a daily cycle and hourly noise), reduced to the
**daily peak** as ``requested_peak`` is (analyzer/monthly/series.py). On top of that:

- level shifts: 40 of 50 seeds have one (4 of those a second), ±8–25 % of the base level, the
  last one 45 days or more before the end (so that there is history to fit after it);
- outliers: 3–6 days on which one hour spikes by 30–80 % of the base (a batch job), and one day in
  three seeds whose peak is only half the level (a scrape gap);
- a holiday week (7 days 15–30 % low) in 18 of the 50 seeds, not in the last 21 days;
- a weekly cycle (weekend dip 0–10 %) and a daily cycle (sine of 5–15 % of the base).

Ground truth: the *expected daily peak* on day t = level(t) + weekly(t) + E[max over the day's
hours of (daily cycle + noise)], the last term computed once per seed by 4,000 simulated days of
a separate seeded generator; the true exhaustion day is the first day after the history on which
the expected daily peak reaches the capacity, which is drawn 30–120 days past the history.

Figures, for the robust forecast and — same histories, same run — the issue-16 method
(``forecast(..., robust=False)``):

- expected exhaustion date within ±7 days of the true one (issue: ≥ 45 of 50);
- 80 % interval coverage of fresh daily peaks drawn from the same process (future outlier days
  included at the history's rate, since a prediction interval is about days as they come) at
  horizons 7–90 days, per bucket 7–14, 15–30, 31–60, 61–90 (issue: between 75 % and 90 %), and
  the same without the spike days (how well the band fits the process itself);
- level shifts found: dated within ±1 day of a true one, missed, and false ones;
- on 50 more seeds of **pure noise** (no trend, no shift, same cycles and outliers): how often a
  significant trend or a shift is reported;
- the median time of one ``forecast`` call of each method, and their ratio (the search's cost).

Deterministic (seeded); prints the figures and one final JSON line.

    PYTHONPATH=$PWD .venv/bin/python bench/forecast_robust.py [--seeds 50]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import dataclass, field
from datetime import date

import numpy as np
import pandas as pd

from analyzer.monthly.forecast import Forecast, forecast

HISTORY_DAYS = 120
HORIZON_DAYS = 180
BUCKETS = ((7, 14), (15, 30), (31, 60), (61, 90))
START = date(2026, 1, 1)
HOURS = np.arange(24)


@dataclass
class History:
    """One seed: the daily peaks, the truth, and what is needed to draw fresh future days."""

    values: np.ndarray
    base: float
    slope: float
    shifts: list[tuple[int, float]]
    weekend_dip: float
    daily_amplitude: float
    noise: float
    outlier_rate: float
    peak_offset: float
    capacity: float
    holiday: int | None
    outlier_days: list[int] = field(default_factory=list)

    def level(self, day: np.ndarray) -> np.ndarray:
        """Base + trend + the shifts in force on ``day`` (no cycle, no noise)."""
        out = self.base + self.slope * day
        for first, size in self.shifts:
            out = out + size * (day >= first)
        return out

    def weekly(self, day: np.ndarray) -> np.ndarray:
        """The weekend dip: days 5 and 6 of each week (START is a Thursday: Tue/Wed, no matter)."""
        return -self.weekend_dip * (day % 7 >= 5)

    def expected_peak(self, day: np.ndarray) -> np.ndarray:
        """The truth: the expected daily peak on ``day``."""
        return self.level(day) + self.weekly(day) + self.peak_offset

    def true_crossing(self) -> int | None:
        """The first day after the history on which the expected peak reaches the capacity."""
        days = np.arange(HISTORY_DAYS, HISTORY_DAYS + HORIZON_DAYS)
        hits = np.flatnonzero(self.expected_peak(days) >= self.capacity)
        return int(days[hits[0]]) if hits.size else None


def _day_peak(rng: np.random.Generator, centre: float, amplitude: float, noise: float) -> float:
    """One day's peak of 24 hourly values: centre + a daily sine + hourly noise."""
    hourly = centre + amplitude * np.sin(2 * np.pi * HOURS / 24) + rng.normal(0.0, noise, 24)
    return float(hourly.max())


def _spike(rng: np.random.Generator, base: float) -> float:
    return float(rng.uniform(0.3, 0.8) * base)


def draw(seed: int, pure_noise: bool = False) -> tuple[History, np.random.Generator]:
    """The seed's history; the returned generator continues for fresh future days."""
    rng = np.random.default_rng(seed)
    base = float(rng.uniform(50.0, 200.0))
    slope = 0.0 if pure_noise else float(rng.uniform(0.003, 0.008) * base)
    shifts: list[tuple[int, float]] = []
    if not pure_noise and seed % 5 != 4:  # 40 of 50 seeds
        first = int(rng.integers(20, HISTORY_DAYS - 45))
        shifts.append((first, float(rng.choice([-1.0, 1.0]) * rng.uniform(0.08, 0.25) * base)))
        if seed % 4 == 0 and first > 45:  # a second, earlier shift
            shifts.insert(
                0,
                (int(rng.integers(10, first - 20)), float(rng.uniform(0.08, 0.25) * base)),
            )
    noise = float(rng.uniform(0.01, 0.03) * base)
    daily_amplitude = float(rng.uniform(0.05, 0.15) * base)
    history = History(
        values=np.zeros(HISTORY_DAYS),
        base=base,
        slope=slope,
        shifts=shifts,
        weekend_dip=float(rng.uniform(0.0, 0.10) * base),
        daily_amplitude=daily_amplitude,
        noise=noise,
        outlier_rate=0.0,
        peak_offset=_peak_offset(seed, daily_amplitude, noise),
        capacity=0.0,
        holiday=int(rng.integers(10, HISTORY_DAYS - 28)) if rng.uniform() < 0.33 else None,
    )
    days = np.arange(HISTORY_DAYS)
    centre = history.level(days) + history.weekly(days)
    if history.holiday is not None:
        low = rng.uniform(0.15, 0.30) * base
        centre[history.holiday : history.holiday + 7] -= low
    values = np.array([_day_peak(rng, c, daily_amplitude, noise) for c in centre])
    outliers = rng.choice(HISTORY_DAYS, size=int(rng.integers(3, 7)), replace=False)
    for day in outliers:
        values[day] += _spike(rng, base)
    if seed % 17 == 3:  # a scrape gap: half the day's peak
        gap = int(rng.integers(0, HISTORY_DAYS))
        values[gap] *= 0.5
        outliers = np.append(outliers, gap)
    history.values = values
    history.outlier_days = sorted(int(d) for d in outliers)
    history.outlier_rate = len(outliers) / HISTORY_DAYS
    last_level = float(history.expected_peak(np.array([HISTORY_DAYS - 1]))[0])
    ahead = float(rng.uniform(30.0, 120.0))
    history.capacity = (
        last_level + slope * ahead if slope > 0 else last_level + 0.5 * base  # never crossed
    )
    return history, rng


def _peak_offset(seed: int, amplitude: float, noise: float) -> float:
    """E[max over 24 hours of (daily sine + noise)], by 4,000 simulated days (own seed)."""
    rng = np.random.default_rng(10_000 + seed)
    sine = amplitude * np.sin(2 * np.pi * HOURS / 24)
    return float(np.mean(np.max(sine + rng.normal(0.0, noise, (4_000, 24)), axis=1)))


def fresh(history: History, rng: np.random.Generator, day: int) -> tuple[float, bool]:
    """A new daily peak on future ``day`` from the same process, outliers at the history's rate;
    and whether it is a spike day."""
    centre = float(history.level(np.array([day]))[0] + history.weekly(np.array([day]))[0])
    value = _day_peak(rng, centre, history.daily_amplitude, history.noise)
    spiked = bool(rng.uniform() < history.outlier_rate)
    if spiked:
        value += _spike(rng, history.base)
    return value, spiked


def score(
    history: History, result: Forecast, observed: dict[int, tuple[float, bool]]
) -> dict[str, object]:
    """Date error, coverage per bucket and shift dating of one forecast."""
    truth = history.true_crossing()
    expected = result.exhaustion.expected_date
    error = None if expected is None or truth is None else (expected - START).days - truth
    covered: dict[str, list[bool]] = {}
    clean: dict[str, list[bool]] = {}  # the same, spike days left out
    for lo, hi in BUCKETS:
        hits, plain = [], []
        for h in range(lo, hi + 1):
            value, spiked = observed[HISTORY_DAYS - 1 + h]
            point = result.points[h - 1] if result.points else None
            hit = point is not None and point.lo80 <= value <= point.hi80
            hits.append(hit)
            if not spiked:
                plain.append(hit)
        covered[f"{lo}-{hi}"] = hits
        clean[f"{lo}-{hi}"] = plain
    found = [(s.day - START).days for s in result.level_shifts]
    true = [first for first, _ in history.shifts]
    dated = sum(any(abs(f - t) <= 1 for f in found) for t in true)
    return {
        "error_days": error,
        "has_truth": truth is not None,
        "covered": covered,
        "covered_clean": clean,
        "shifts_true": len(true),
        "shifts_dated": dated,
        "shifts_false": sum(not any(abs(f - t) <= 1 for t in true) for f in found),
        "significant": result.significant_trend,
        "method": result.method,
    }


def run(seed: int, pure_noise: bool = False) -> dict[str, dict[str, object]]:
    """Both methods on one seed, scored against the same fresh future days."""
    history, rng = draw(seed, pure_noise)
    observed = {day: fresh(history, rng, day) for day in range(HISTORY_DAYS, HISTORY_DAYS + 91)}
    series = pd.Series(history.values, index=pd.date_range(START, periods=HISTORY_DAYS))
    out = {}
    for name, robust in (("robust", True), ("baseline", False)):
        began = time.perf_counter()
        result = forecast(series, history.capacity, horizon_days=HORIZON_DAYS, robust=robust)
        seconds = time.perf_counter() - began
        out[name] = score(history, result, observed) | {"seconds": seconds}
    return out


def summarise(rows: list[dict[str, object]]) -> dict[str, object]:
    """The figures over all seeds of one method."""
    errors = [r["error_days"] for r in rows if r["has_truth"]]
    found = np.array([abs(e) for e in errors if e is not None], dtype=float)  # type: ignore[arg-type]
    coverage, coverage_clean = {}, {}
    for lo, hi in BUCKETS:
        key = f"{lo}-{hi}"
        hits = [h for r in rows for h in r["covered"][key]]  # type: ignore[index]
        coverage[key] = round(float(np.mean(hits)), 3)
        plain = [h for r in rows for h in r["covered_clean"][key]]  # type: ignore[index]
        coverage_clean[key] = round(float(np.mean(plain)), 3)
    return {
        "within_7_days": sum(1 for e in errors if e is not None and abs(e) <= 7),  # type: ignore[arg-type]
        "of": len(errors),
        "median_abs_days": float(np.median(found)) if found.size else None,
        "p90_abs_days": float(np.percentile(found, 90)) if found.size else None,
        "no_date": sum(1 for e in errors if e is None),
        "coverage80": coverage,
        "coverage80_without_spike_days": coverage_clean,
        "shifts_dated": sum(int(r["shifts_dated"]) for r in rows),  # type: ignore[call-overload]
        "shifts_true": sum(int(r["shifts_true"]) for r in rows),  # type: ignore[call-overload]
        "shifts_false": sum(int(r["shifts_false"]) for r in rows),  # type: ignore[call-overload]
        "forecast_ms_median": round(
            1000 * float(np.median([float(r["seconds"]) for r in rows])),  # type: ignore[arg-type]
            1,
        ),
    }


def main() -> None:
    """Run the seeds (shaped and pure noise), print the figures, then one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    args = parser.parse_args()
    began = time.perf_counter()
    runs = [run(seed) for seed in range(args.seeds)]
    noise = [run(1_000 + seed, pure_noise=True) for seed in range(args.seeds)]
    result: dict[str, object] = {"bench": "forecast_robust", "seeds": args.seeds}
    for name in ("robust", "baseline"):
        figures = summarise([r[name] for r in runs])
        noise_rows = [r[name] for r in noise]
        figures["pure_noise_significant"] = sum(bool(r["significant"]) for r in noise_rows)
        figures["pure_noise_shifts"] = sum(int(r["shifts_false"]) for r in noise_rows)  # type: ignore[call-overload]
        result[name] = figures
        print(f"{name}: {json.dumps(figures)}")
    robust, baseline = result["robust"], result["baseline"]
    result["time_ratio"] = round(
        robust["forecast_ms_median"] / baseline["forecast_ms_median"],  # type: ignore[index]
        2,
    )
    result["seconds"] = round(time.perf_counter() - began, 1)
    result["python"] = platform.python_version()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
