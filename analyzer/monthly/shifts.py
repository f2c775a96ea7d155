"""Level shifts and outlier days in a daily series, found before the forecast fits its trend.

Real cluster series are not one straight line: a team migrates in and the level steps up for
good, a batch job or an incident makes one day's peak twice the others, a holiday week runs low.
A least-squares line through all of it is bent by every one of them. The rules (docs/monthly.md
states them for users):

- **Model searched.** Intercept, one common slope on the day number, six day-of-week indicators,
  and one step indicator per level shift (``1`` from the shift's first day on). It is fitted by
  Huber M-estimation (iteratively reweighted least squares, tuning constant 1.345 σ, σ the
  residuals' median absolute deviation × 1.4826), so that an outlier day pulls with at most
  1.345 σ instead of its whole size.
- **Shift search.** Binary segmentation with a score test: for every candidate first day, the
  Huber-clipped residuals of the current model are correlated with the step indicator (after
  removing from it what the current model already explains); the statistic
  ``(ψ(r)·s̃)² / (var ψ(r) · s̃·s̃)`` is a χ²₁ under no shift for independent days; it is
  divided by (1 + ρ)/(1 − ρ), ρ the lag-1 autocorrelation of the residuals once the search's
  shifts are fitted (the shifts are kept, in the order found, while their statistic so divided
  still passes), because correlated days make it larger without any shift. The largest
  one, if above
  ``SHIFT_THRESHOLD`` (a scan over ~100 correlated candidates: the maximum's 99th percentile on
  Gaussian noise is 9–12, so 19 leaves room for non-Gaussian days; false shifts at most 1 %,
  docs/benchmarks.md "forecast-robust"), adds a shift, dated by the exact Huber fit's minimum
  within ±3 days of the scan's best day; at most ``MAX_SHIFTS``.
- **Segment lengths.** A level must hold at least ``MIN_EDGE_DAYS`` (7) days with data at either
  end of the history and ``MIN_INNER_DAYS`` (14) between two shifts: a low week in the middle of
  the history is an episode of outlier days, not two shifts; at the end it cannot be told from a
  shift, and the forecast then says there is too little history since it.
- **Outliers.** With the shifts found, a day whose residual exceeds ``OUTLIER_Z`` (3.5) robust σ
  is an outlier: reported, and left out of the forecast's fit like a missing day (the day number
  keeps time). Should that make more than ``MAX_OUTLIER_SHARE`` (10 %) of the days outliers, σ is
  raised to 1.2533 × the mean absolute residual (when larger): a series that repeats one value
  exactly on most days has a MAD of 0, and its ordinary changes are not outliers.
- **Daily cycle.** The series are daily values (a daily peak or a daily p95, monthly/series.py):
  the cycle within a day is absorbed by that daily statistic before this module sees it.

Closed-form steps only (least squares and medians): the same input gives the same output.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np

WEEK = 7
HUBER_K = 1.345
MAD_TO_SIGMA = 1.4826
SHIFT_THRESHOLD = 19.0
MAX_SHIFTS = 3
MIN_EDGE_DAYS = 7
MIN_INNER_DAYS = 14
OUTLIER_Z = 3.5
MAX_OUTLIER_SHARE = 0.10
MEAN_TO_SIGMA = 1.2533
REFINE_DAYS = 3


@dataclass(frozen=True)
class LevelShift:
    """A lasting step in the series' level: its first day and its size (new level − old level)."""

    day: date
    size: float

    def to_dict(self) -> dict[str, object]:
        """``{"date": "YYYY-MM-DD", "size": float}`` for ``report.json``."""
        return {"date": self.day.isoformat(), "size": self.size}


@dataclass(frozen=True)
class Findings:
    """What the search found: the shifts (oldest first), the outlier days, and which of the input
    days the trend is fitted on (``keep``: after the last shift and not an outlier)."""

    shifts: tuple[LevelShift, ...]
    outliers: tuple[date, ...]
    keep: np.ndarray


def design(day_numbers: np.ndarray, weekly: bool, breaks: list[int] | None = None) -> np.ndarray:
    """Intercept, day number, six day-of-week indicators when ``weekly``, and one step indicator
    per break (a position in ``day_numbers``: 1 from that position on)."""
    n = len(day_numbers)
    columns = [np.ones(n), day_numbers.astype(float)]
    if weekly:
        weekday = day_numbers % WEEK
        columns += [(weekday == k).astype(float) for k in range(1, WEEK)]
    for b in breaks or []:
        columns.append((np.arange(n) >= b).astype(float))
    return np.column_stack(columns)


def _sigma(residuals: np.ndarray, floor: float = 0.0) -> float:
    """Robust σ: the median absolute deviation from the median × 1.4826 (σ for normal noise),
    never under ``floor`` (a series on an exact line has rounding errors, not noise)."""
    mad = float(np.median(np.abs(residuals - np.median(residuals))))
    return max(MAD_TO_SIGMA * mad, floor)


def rounding_floor(y: np.ndarray) -> float:
    """The σ below which residuals are rounding (or fitting) errors, not noise: 1e-6 of the
    series' largest value (a MiB in a thousand GiB)."""
    return 1e-6 * max(1.0, float(np.max(np.abs(y)))) if len(y) else 1e-6


def huber_fit(
    x: np.ndarray, y: np.ndarray, scale: float | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """Huber M-estimate of ``y ~ x`` by iteratively reweighted least squares.

    Returns the coefficients, the residuals and the robust σ of the final residuals. σ is
    ``scale`` when given (fits to be compared on one loss), otherwise re-estimated from the
    residuals at every step (the MAD, so the outliers do not inflate it); at most 50 steps,
    stopping when no coefficient moves by more than 1e-9 of the data's scale.
    """
    beta = np.linalg.lstsq(x, y, rcond=None)[0]
    tolerance = 1e-9 * max(1.0, float(np.max(np.abs(y))))
    for _ in range(50):
        residuals = y - x @ beta
        # Never under the rounding floor: when most days lie exactly on the model (MAD 0) the
        # weights still push the fit onto them and away from the odd day (an L1-like fit).
        sigma = max(_sigma(residuals) if scale is None else scale, rounding_floor(y))
        scaled = np.abs(residuals) / (HUBER_K * sigma)
        weights = np.where(scaled <= 1.0, 1.0, 1.0 / np.maximum(scaled, 1e-300))
        new = _weighted_solve(x, y, weights)
        done = bool(np.max(np.abs(new - beta)) <= tolerance)
        beta = new
        if done:
            break
    residuals = y - x @ beta
    return beta, residuals, _sigma(residuals, rounding_floor(y))


def _weighted_solve(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted least squares by the normal equations (ten columns: fast and well within float
    precision), or by ``lstsq`` when they are singular (a weekday with no data)."""
    weighted = x * weights[:, None]
    try:
        return np.asarray(np.linalg.solve(weighted.T @ x, weighted.T @ y))
    except np.linalg.LinAlgError:
        root = np.sqrt(weights)
        return np.asarray(np.linalg.lstsq(x * root[:, None], y * root, rcond=None)[0])


def _huber_loss(residuals: np.ndarray, sigma: float) -> float:
    """Σ ρ(r/σ) with Huber's ρ: quadratic within ±1.345, linear beyond."""
    z = np.abs(residuals) / sigma
    return float(np.sum(np.where(z <= HUBER_K, 0.5 * z**2, HUBER_K * z - 0.5 * HUBER_K**2)))


def _allowed(n: int, breaks: list[int]) -> np.ndarray:
    """Candidate positions whose new step leaves every segment long enough.

    A new break only splits the segment it falls in, so only the two halves need checking: a half
    that touches an end of the history needs ``MIN_EDGE_DAYS``, one between breaks
    ``MIN_INNER_DAYS``."""
    edges = np.array(sorted(breaks), dtype=int)
    candidates = np.arange(n)
    slot = np.searchsorted(edges, candidates, side="right")
    before = np.concatenate([[0], edges])[slot]
    after = np.concatenate([edges, [n]])[slot]
    need_before = np.where(before == 0, MIN_EDGE_DAYS, MIN_INNER_DAYS)
    need_after = np.where(after == n, MIN_EDGE_DAYS, MIN_INNER_DAYS)
    ok = (candidates - before >= need_before) & (after - candidates >= need_after)
    ok[edges] = False
    return np.asarray(ok, dtype=bool)


def _scan(
    day_numbers: np.ndarray, y: np.ndarray, breaks: list[int]
) -> tuple[int | None, float, float]:
    """The best new break position by the score test, its statistic, and the current model's σ."""
    n = len(y)
    x = design(day_numbers, True, breaks)
    _, residuals, sigma = huber_fit(x, y)
    allowed = np.flatnonzero(_allowed(n, breaks))
    # Every day on the model within rounding: nothing to search (the statistic would compare
    # rounding errors). A noise-free step still scans: its clipped residuals are signs.
    if float(np.max(np.abs(residuals))) <= OUTLIER_Z * rounding_floor(y) or allowed.size == 0:
        return None, 0.0, sigma
    psi = np.clip(residuals, -HUBER_K * sigma, HUBER_K * sigma)
    steps = (np.arange(n)[:, None] >= allowed[None, :]).astype(float)
    q, _ = np.linalg.qr(x)
    projected = steps - q @ (q.T @ steps)
    spread = np.sum(projected**2, axis=0)
    variance = float(np.sum(psi**2)) / max(1, n - x.shape[1])
    usable = spread > 1e-9 * n
    if variance <= 0.0 or not usable.any():
        return None, 0.0, sigma
    stats = np.where(usable, (psi @ projected) ** 2 / (variance * np.maximum(spread, 1e-300)), 0.0)
    best = int(np.argmax(stats))
    return int(allowed[best]), float(stats[best]), sigma


def _autocorrelation_inflation(day_numbers: np.ndarray, y: np.ndarray, breaks: list[int]) -> float:
    """How much day-to-day correlation inflates the scan statistic: (1 + ρ) / (1 − ρ), ρ the
    lag-1 autocorrelation (0 to 0.9) of the clipped residuals *with* the provisional shifts
    fitted, so that a real shift's own step pattern is not mistaken for correlated noise."""
    _, residuals, sigma = huber_fit(design(day_numbers, True, breaks), y)
    if float(np.max(np.abs(residuals))) <= OUTLIER_Z * rounding_floor(y):
        return 1.0  # the model holds every day exactly: no noise to be correlated
    psi = np.clip(residuals, -HUBER_K * sigma, HUBER_K * sigma)
    psi = psi - psi.mean()
    denominator = float(np.sum(psi**2))
    if denominator <= 0.0:
        return 1.0
    rho = min(0.9, max(0.0, float(np.sum(psi[1:] * psi[:-1])) / denominator))
    return (1.0 + rho) / (1.0 - rho)


def _refine(day_numbers: np.ndarray, y: np.ndarray, breaks: list[int], guess: int) -> int:
    """The position within ±3 of ``guess`` whose exact Huber fit has the smallest loss."""
    allowed = _allowed(len(y), breaks)
    best, best_loss = guess, np.inf
    _, _, sigma = huber_fit(design(day_numbers, True, breaks), y)
    for candidate in range(guess - REFINE_DAYS, guess + REFINE_DAYS + 1):
        if not (0 <= candidate < len(y)) or not allowed[candidate]:
            continue
        _, residuals, _ = huber_fit(design(day_numbers, True, [*breaks, candidate]), y, sigma)
        loss = _huber_loss(residuals, sigma)
        if loss < best_loss:
            best, best_loss = candidate, loss
    return best


def _search(day_numbers: np.ndarray, y: np.ndarray) -> list[tuple[int, float]]:
    """Binary segmentation: add the best shift while its statistic passes; each shift found,
    in the order found, with its statistic."""
    found: list[tuple[int, float]] = []
    while len(found) < MAX_SHIFTS:
        breaks = [b for b, _ in found]
        candidate, statistic, _ = _scan(day_numbers, y, breaks)
        if candidate is None or statistic <= SHIFT_THRESHOLD:
            break
        found.append((_refine(day_numbers, y, breaks, candidate), statistic))
    return found


def find(days: list[date], day_numbers: np.ndarray, y: np.ndarray) -> Findings:
    """Search ``y`` (one value per day with data, day numbers from the first) as the module
    docstring says; ``days`` are the same days as dates."""
    found = _search(day_numbers, y)
    inflation = _autocorrelation_inflation(day_numbers, y, sorted(b for b, _ in found))
    # Searching again with every statistic ÷ inflation would take the same steps (where and
    # which day do not depend on it) and stop at the first that no longer passes: keep that
    # prefix.
    kept: list[int] = []
    for position, statistic in found:
        if statistic / inflation <= SHIFT_THRESHOLD:
            break
        kept.append(position)
    breaks = sorted(kept)
    beta, residuals, sigma = huber_fit(design(day_numbers, True, breaks), y)
    steps = beta[2 + WEEK - 1 :]
    shifts = tuple(LevelShift(days[b], float(s)) for b, s in zip(breaks, steps, strict=True))
    outlier = np.abs(residuals) > OUTLIER_Z * sigma
    if outlier.mean() > MAX_OUTLIER_SHARE:
        # Most days exactly on the fit (requests repeat a value for days: MAD 0) make every
        # ordinary change look extreme; outliers are rare by definition, so σ is then the
        # mean absolute residual's (× 1.2533, σ for normal noise) when that is larger.
        sigma = max(sigma, MEAN_TO_SIGMA * float(np.mean(np.abs(residuals))))
        outlier = np.abs(residuals) > OUTLIER_Z * sigma
    after = np.arange(len(y)) >= (breaks[-1] if breaks else 0)
    return Findings(
        shifts=shifts,
        outliers=tuple(d for d, o in zip(days, outlier, strict=True) if o),
        keep=after & ~outlier,
    )
