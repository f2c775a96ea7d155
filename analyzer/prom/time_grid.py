"""The collect range's time grid and how a range is cut into requests.

``TimeGrid`` (``start``, ``end`` on the step), ``make_grid`` (a range aligned to the step, or one
line naming the option at fault), ``range_chunks`` and ``budget_chunks`` (requests of at most N
grid points: the query budget's N, never more than Prometheus' 11,000) and ``range_reach`` (the
extra step of a request ending on a UTC midnight, for VictoriaMetrics' per-day index). Split from
``prom.fetch``, which runs the requests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from analyzer.core.errors import InputError
from analyzer.prom.settings import DEFAULT_MAX_POINTS, MAX_POINTS_LIMIT

DAY_SECONDS = 86_400
MAX_POINTS = MAX_POINTS_LIMIT  # Prometheus: end-start/step must not exceed this many intervals
DEFAULT_CHUNK_POINTS = DEFAULT_MAX_POINTS  # 12 h at 1 m: small responses, many in parallel


@dataclass(frozen=True)
class TimeGrid:
    """The collect range: unix seconds, ``start`` and ``end`` multiples of ``step``."""

    start: int
    end: int
    step: int

    @property
    def points(self) -> int:
        return (self.end - self.start) // self.step + 1


def make_grid(
    start: float,
    end: float,
    step: int,
    *,
    range_option: str = "--start/--end",
    step_option: str = "--step",
) -> TimeGrid:
    """Align ``[start, end]`` to the step grid (start rounded up, end down); reject empty ranges.

    The messages name the options the caller read the range and the step from (``--since``,
    a backfill's day): a step too long for its range is the step's fault, not the range's.
    """
    if step <= 0:
        raise InputError(f"{step_option}: {step}s must be positive")
    first = math.ceil(start / step) * step
    last = math.floor(end / step) * step
    if last <= first:
        if end > start and end - start < 2 * step:
            raise InputError(
                f"{step_option}: {_span(step)} leaves no whole step inside {range_option} "
                f"({_span(end - start)}); give a step of at most half of that, e.g. 5m"
            )
        raise InputError(
            f"{range_option}: the range is empty (end must be at least one step after start)"
        )
    return TimeGrid(int(first), int(last), int(step))


def _span(seconds: float) -> str:
    """Seconds as ``1d2h`` (whole seconds; the grid's arithmetic is in seconds)."""
    total, parts = int(seconds), []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, total = divmod(total, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


def range_chunks(
    start: int, end: int, step: int, chunk_points: int = DEFAULT_CHUNK_POINTS
) -> list[tuple[int, int]]:
    """Non-overlapping ``[s, e]`` chunks covering ``start..end`` on the step grid, each ≤ limit."""
    points = min(max(1, chunk_points), MAX_POINTS)
    chunks = []
    s = start
    while s <= end:
        e = min(end, s + (points - 1) * step)
        chunks.append((s, e))
        s = e + step
    return chunks


def budget_chunks(grid: TimeGrid, points: int) -> list[tuple[int, int]]:
    """``range_chunks`` of ``grid`` whose requests hold at most ``points`` points each, counting
    the extra step a request ending on a UTC midnight is sent with (``range_reach``): such a
    chunk ends one step earlier, and the next one starts at the midnight."""
    limit = min(max(2, points), MAX_POINTS)
    chunks = []
    s = grid.start
    while s <= grid.end:
        e = min(grid.end, s + (limit - 1) * grid.step)
        if range_reach(e, grid.step) != e and e - s >= (limit - 1) * grid.step:
            e -= grid.step  # sent with one step more: still ``limit`` points
        chunks.append((s, e))
        s = e + grid.step
    return chunks


def range_reach(end: int, step: int) -> int:
    """The ``end`` a range request ending at grid point ``end`` is sent with.

    VictoriaMetrics finds series through a per-day index and reads a range ending exactly at
    00:00:00 UTC as ending the day before (it subtracts 1 ms), so a series first stored at that
    millisecond is missing from the last point. A request ending on a UTC midnight therefore
    asks for one more step, and the extra point is dropped (both servers keep the same points:
    rounding the end to the step would not move it past the midnight).
    """
    return end + step if end % DAY_SECONDS == 0 else end
