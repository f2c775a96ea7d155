"""Raw samples of a few series on the step grid: PromQL's gauge lookup and ``irate``, exactly.

The semantics are ``analyzer.prom.samples`` (the plain definition tests compare with, and with
Prometheus): a gauge at grid time ``t`` is the newest sample with ``t - lookback <= ts <= t``;
``irate`` at ``t`` uses the last two samples with ``t - window <= ts <= t``,
``(v2 - v1) / (t2 - t1)``, or ``v2 / (t2 - t1)`` after a counter reset; NaN is no value.

Here every sample answers a *run* of consecutive grid points: from the first grid time at or
after it until the next sample of its series takes over, or until it (gauge) or its predecessor
(irate) falls out of reach. Runs are computed in a few whole-array passes, with no search per grid
point; on data scraped about once a step almost every run is one point long. Times are whole
milliseconds after the grid's origin (Prometheus timestamps are whole milliseconds, grid times
whole seconds), so every bound is an exact integer comparison.

Callers pass a few thousand samples at a time (``analyzer.prom.sample_table``): the temporaries
then stay in the CPU cache and come from the malloc heap, where chunk-sized ones would each be a
fresh mapping to fault in (``analyzer.core.memory``), which cost more than the arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from analyzer.prom.samples import SampleRule

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]
_NEVER = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Grid:
    """An evenly spaced grid: index ``k`` is at ``origin + k * step_ms / 1000`` seconds."""

    origin: float
    step_ms: int

    @classmethod
    def of(cls, times: FloatArray) -> Grid:
        """The grid of ``times`` (evenly spaced unix seconds; ValueError otherwise)."""
        step = float(times[1] - times[0]) if len(times) > 1 else 1.0
        if len(times) > 1 and not np.array_equal(times, times[0] + step * np.arange(len(times))):
            raise ValueError("the grid must be evenly spaced")
        return cls(float(times[0]) if len(times) else 0.0, max(1, round(step * 1000)))

    def ms(self, seconds: FloatArray) -> IntArray:
        """Unix seconds → whole milliseconds after the origin."""
        out: IntArray = np.rint((seconds - self.origin) * 1000.0).astype(np.int64)
        return out

    def index_at_or_after(self, ms: IntArray) -> IntArray:
        """The first grid index at or after each time. Float division is exact here: ``ms`` is
        below 2**53 and a quotient that is not whole is at least 1 / step_ms away from one."""
        out: IntArray = np.ceil(ms / self.step_ms).astype(np.int64)
        return out

    def index_after_reach(self, ms: IntArray, reach_seconds: float) -> IntArray:
        """One past the last grid index whose time is at most ``ms + reach`` (exact, as above)."""
        out: IntArray = np.floor((ms + round(reach_seconds * 1000)) / self.step_ms).astype(np.int64)
        out += 1
        return out


def first_at_or_after(ts: FloatArray, starts: IntArray, stops: IntArray, t: float) -> IntArray:
    """Per segment ``ts[starts[s]:stops[s]]`` (ascending), the index of its first sample at or
    after ``t`` (``stops[s]`` if none): the samples at or after ``t`` are a suffix of each."""
    after = np.zeros(len(ts) + 1, dtype=np.int64)
    np.cumsum(ts >= t, out=after[1:])
    return stops - (after[stops] - after[starts])


def grid_rows(
    ts: FloatArray,
    vs: FloatArray,
    lengths: IntArray,
    grid: Grid,
    rule: SampleRule,
    lo: int,
    hi: int,
) -> tuple[IntArray, IntArray, FloatArray]:
    """Raw series laid end to end (segment ``s`` has ``lengths[s]`` samples, times ascending)
    at grid indices ``lo..hi-1``: (segment, grid index, value) rows, sorted by both."""
    n = len(ts)
    empty = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
    if n == 0 or hi <= lo:
        return empty
    stops = np.cumsum(lengths)
    nonempty = lengths > 0
    ms = grid.ms(ts)
    first = grid.index_at_or_after(ms)
    end = np.empty(n, dtype=np.int64)  # where the next sample of the segment takes over
    end[:-1] = first[1:]
    end[stops[nonempty] - 1] = _NEVER
    if rule.rate:
        limit = np.empty(n, dtype=np.int64)
        limit[0] = 0  # no predecessor
        limit[1:] = grid.index_after_reach(ms[:-1], rule.window)  # the predecessor's reach
        v2, v1 = vs[1:], vs[:-1]
        value = np.empty(n)
        value[0] = np.nan
        # pairs across two segments may divide by zero; they are set to NaN below
        with np.errstate(divide="ignore", invalid="ignore"):
            np.divide(np.where(v2 < v1, v2, v2 - v1), ts[1:] - ts[:-1], out=value[1:])
        value[(stops - lengths)[nonempty]] = np.nan  # a segment's first sample has none
    else:
        limit = grid.index_after_reach(ms, rule.lookback)
        value = vs
    np.minimum(end, limit, out=end)
    np.minimum(end, hi, out=end)
    np.maximum(first, lo, out=first)
    count = end - first
    take = np.flatnonzero((count > 0) & ~np.isnan(value))
    if not len(take):
        return empty
    segment_of = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    count = count[take]
    if bool((count == 1).all()):  # every run one grid point: the usual case
        return segment_of[take], first[take], value[take]
    owner = np.repeat(take, count)
    start = np.cumsum(count) - count  # row offset of each run
    index = np.arange(len(owner), dtype=np.int64)
    index += np.repeat(first[take] - start, count)  # run r's k-th row: first[r] + k
    return segment_of[owner], index, value[owner]
