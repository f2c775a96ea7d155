"""The FGD paper's curve averaging, and the mean ± std over seeds.

Per run: one point per integer arrived % x; the point is the mean of the per-pod rows whose
arrived % rounds to x (half up); if no row rounds to x, the rows within ±1 of x are used; if there
are none either, the run has no point at x. Over seeds: mean and population standard deviation
(ddof 0) of the runs that have a point at x.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
METRICS = ("alloc_pct", "frag_ratio_pct", "frag_amount_pct")


@dataclass(frozen=True)
class RunCurve:
    """One run's curve: x = 0..max, NaN where the run has no point."""

    x: NDArray[np.int64]
    values: dict[str, FloatArray]


def run_curve(arrived_pct: FloatArray, values: dict[str, FloatArray]) -> RunCurve:
    """Average per-row values onto integer arrived % (the paper's rule)."""
    if len(arrived_pct) == 0:
        return RunCurve(np.zeros(0, dtype=np.int64), {k: np.zeros(0) for k in values})
    rounded = np.floor(arrived_pct + 0.5).astype(np.int64)
    top = int(rounded.max())
    x = np.arange(top + 1, dtype=np.int64)
    counts = np.bincount(rounded, minlength=top + 1)
    out: dict[str, FloatArray] = {}
    for name, column in values.items():
        sums = np.bincount(rounded, weights=column, minlength=top + 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            point = sums / counts
        for gap in np.flatnonzero(counts == 0):
            near = np.abs(arrived_pct - gap) <= 1.0
            point[gap] = column[near].mean() if near.any() else np.nan
        out[name] = point
    return RunCurve(x, out)


@dataclass(frozen=True)
class CurvePoint:
    """One point of the averaged curve over seeds."""

    arrived_pct: int
    alloc_pct_mean: float
    alloc_pct_std: float
    frag_ratio_mean: float
    frag_amount_mean: float
    seeds: int


def average_curves(curves: list[RunCurve]) -> list[CurvePoint]:
    """Mean ± std over runs at every x some run reaches."""
    if not curves:
        return []
    width = max(len(c.x) for c in curves)

    def stack(metric: str) -> FloatArray:
        table = np.full((len(curves), width), np.nan)
        for i, curve in enumerate(curves):
            table[i, : len(curve.x)] = curve.values[metric]
        return table

    alloc, ratio, amount = stack("alloc_pct"), stack("frag_ratio_pct"), stack("frag_amount_pct")
    present = ~np.isnan(alloc)
    points = []
    for x in range(width):
        have = present[:, x]
        if not have.any():
            continue
        points.append(
            CurvePoint(
                arrived_pct=x,
                alloc_pct_mean=float(alloc[have, x].mean()),
                alloc_pct_std=float(alloc[have, x].std()),
                frag_ratio_mean=float(ratio[have, x].mean()),
                frag_amount_mean=float(amount[have, x].mean()),
                seeds=int(have.sum()),
            )
        )
    return points
