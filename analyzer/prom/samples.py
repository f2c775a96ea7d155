"""Evaluate raw samples on the step grid client-side, exactly as PromQL would.

Range queries make Prometheus evaluate a function at every step for every series; for the largest
queries (per-container cAdvisor usage) fetching the raw samples (``selector[span]``) and evaluating
here with numpy costs the server a fraction of that for the same data. Semantics (Prometheus 2.x):

- gauge at ``t``: the newest sample with ``t - lookback <= ts <= t``;
- ``irate`` at ``t`` over ``[t - window, t]`` (closed): the last two samples in the window,
  ``(v2 - v1) / (t2 - t1)``, or ``v2 / (t2 - t1)`` after a counter reset;
- then ``max by (dedupe labels)`` (HA pairs, restart overlap) and ``sum by (sum labels)``.

``times`` queries (first/last seen) need only each series' first and last raw sample time: the
subquery ``min_over_time(timestamp(x)[span:5m])`` makes the server evaluate ``x`` at every 5 m step
(and is 5 m coarse for the first sample), while ``x[span]`` only reads the samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analyzer.prom.client import Series


@dataclass(frozen=True)
class SampleRule:
    """How to turn raw series into grid series."""

    rate: bool  # True: counter → irate; False: gauge → last sample
    window: float  # irate window (seconds)
    lookback: float  # gauge lookback (seconds)
    dedupe: tuple[str, ...]  # max by these labels
    sum_by: tuple[str, ...]  # then sum by these labels


def equivalent_promql(selector_expr: str, rule: SampleRule) -> str:
    """The PromQL range query the client-side evaluation reproduces (for checks and baselines)."""
    selector = selector_expr.rsplit("[", 1)[0].strip()
    inner = f"irate({selector}[{rule.window:g}s])" if rule.rate else selector
    return f"sum by ({', '.join(rule.sum_by)}) (max by ({', '.join(rule.dedupe)}) ({inner}))"


def _on_grid(series: Series, grid: np.ndarray, rule: SampleRule) -> np.ndarray:
    """One raw series evaluated at every grid time (NaN where PromQL returns nothing)."""
    ts, values = series.timestamps, series.values
    out = np.full(len(grid), np.nan)
    if len(ts) == 0:
        return out
    last = np.searchsorted(ts, grid, side="right") - 1
    if not rule.rate:
        ok = (last >= 0) & (ts[np.clip(last, 0, None)] >= grid - rule.lookback)
        out[ok] = values[last[ok]]
        return out
    prev = last - 1
    ok = (prev >= 0) & (ts[np.clip(prev, 0, None)] >= grid - rule.window)
    v2, v1 = values[last[ok]], values[prev[ok]]
    dt = ts[last[ok]] - ts[prev[ok]]
    out[ok] = np.where(v2 < v1, v2, v2 - v1) / dt
    return out


def evaluate(series: list[Series], grid: np.ndarray, rule: SampleRule) -> list[Series]:
    """``sum by (sum_by) (max by (dedupe) (f(raw)))`` on ``grid``; steps with no value are dropped."""
    deduped: dict[tuple[str, ...], np.ndarray] = {}
    for raw in series:
        key = tuple(raw.labels.get(name, "") for name in rule.dedupe)
        values = _on_grid(raw, grid, rule)
        if key in deduped:
            deduped[key] = np.fmax(deduped[key], values)
        else:
            deduped[key] = values
    summed: dict[tuple[str, ...], np.ndarray] = {}
    present: dict[tuple[str, ...], np.ndarray] = {}
    positions = [rule.dedupe.index(name) for name in rule.sum_by]
    for key, values in deduped.items():
        group = tuple(key[i] for i in positions)
        have = ~np.isnan(values)
        if group in summed:
            summed[group] += np.where(have, values, 0.0)
            present[group] |= have
        else:
            summed[group] = np.where(have, values, 0.0)
            present[group] = have
    out = []
    for group, total in summed.items():
        mask = present[group]
        if mask.any():
            labels = {name: value for name, value in zip(rule.sum_by, group, strict=True) if value}
            out.append(Series(labels, grid[mask], total[mask]))
    return out


def time_bounds(series: list[Series], since: float) -> list[Series]:
    """Each raw series reduced to its first and last sample time at or after ``since``.

    Applied to every response of a ``times`` query, so raw samples never pile up in memory.
    """
    out = []
    for raw in series:
        ts = raw.timestamps[raw.timestamps >= since]
        if len(ts):
            bounds = np.array([ts.min(), ts.max()])
            out.append(Series(raw.labels, bounds, bounds.copy()))
    return out


def sample_times(series: list[Series], by: tuple[str, ...], combine: str) -> list[Series]:
    """Per group of ``by`` labels, the first (``min``) or last (``max``) sample time.

    Each group becomes a one-point series whose timestamp and value are that time (unix seconds),
    the shape a ``window`` query with ``combine: min|max`` returns.
    """
    best: dict[tuple[str, ...], float] = {}
    for raw in series:
        if len(raw.timestamps) == 0:
            continue
        key = tuple(raw.labels.get(name, "") for name in by)
        value = float(raw.timestamps.min() if combine == "min" else raw.timestamps.max())
        if key not in best:
            best[key] = value
        else:
            best[key] = min(best[key], value) if combine == "min" else max(best[key], value)
    return [
        Series(
            {name: v for name, v in zip(by, key, strict=True) if v},
            np.array([time]),
            np.array([time]),
        )
        for key, time in best.items()
    ]


def subquery_promql(selector_expr: str, by: tuple[str, ...], combine: str, lookback: str) -> str:
    """The plain-PromQL window query a ``times`` query replaces (5 m coarse for first samples)."""
    selector = selector_expr.rsplit("[", 1)[0].strip()
    span = selector_expr.rsplit("[", 1)[1].rstrip("]").strip()
    return (
        f"{combine} by ({', '.join(by)}) "
        f"({combine}_over_time(timestamp({selector})[{span}:{lookback}]))"
    )
