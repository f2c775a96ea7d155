"""Whole-range query results folded response by response, so no query holds every chunk's series.

``run_profile`` used to keep every response of a ``window``, ``times`` or ``range`` query until the
last one arrived, then concatenate each series' chunks (``merge_series``): the memory of a long
range's summaries was every chunk's ``Series`` (labels, key, arrays) of every pod, and that of the
node-state range queries every step of every node. A fold takes each response as it arrives and
keeps only what its consumer reads:

- ``WindowFold`` (``kind: window``): per series, the time of its latest point and its ``combine``
  value (``last``: the value at that time; ``min``/``max``: the smallest/largest value), finished
  as one-point series — what ``collect.common.window_values`` reads from the merged series;
- ``TimesFold`` (``kind: times``): per group of ``by`` labels, the earliest (``min``) or latest
  (``max``) sample time — ``samples.sample_times`` of the merged series;
- ``RunsFold`` (``kind: range`` of the node-state queries): per series, its runs of equal values
  over consecutive grid points (``ValueRuns``) — enough for ``collect.node_state`` to find every
  interval a taint, cordon or not-ready state held.

Range queries whose consumer reads every point (node CPU) are still kept whole
(``fetch.merge_series``).

Every fold returns its series in the order ``merge_series`` gave them (first appearance by
chunk, then by position in its response), whatever order the responses arrived in.
Chunks of one query never overlap in time and a response never holds two series with one label
set (Prometheus refuses such a result), so a series' points are those of its chunks put end to
end, which is what each fold reduces.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from analyzer.prom.series import LabelKey, Series, series_key

Order = tuple[int, int]  # (chunk index, position in that chunk's response)


@dataclass(slots=True)
class ValueRuns:
    """One range-query series as runs of equal values over consecutive grid points.

    Run ``k`` holds the value ``values[k]`` at every grid point from ``firsts[k]`` to
    ``lasts[k]`` (unix seconds, inclusive); consecutive runs differ in value or leave a gap of
    more than one and a half steps between them.
    """

    labels: dict[str, str]
    firsts: np.ndarray
    lasts: np.ndarray
    values: np.ndarray


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise equality where NaN equals NaN (a run of missing values is one run)."""
    same: np.ndarray = (a == b) | (np.isnan(a) & np.isnan(b))
    return same


def _joined(
    firsts: np.ndarray, lasts: np.ndarray, values: np.ndarray, step: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs (sorted by time) with neighbours of one value and at most 1.5 steps apart joined."""
    if len(firsts) < 2:
        return firsts, lasts, values
    joins = (firsts[1:] - lasts[:-1] <= step * 1.5) & _same(values[1:], values[:-1])
    starts = np.concatenate(([0], np.flatnonzero(~joins) + 1))
    ends = np.concatenate((starts[1:] - 1, [len(firsts) - 1]))
    return firsts[starts], lasts[ends], values[starts]


def value_runs(series: Series, step: int) -> ValueRuns:
    """``series``' points (times on the step grid) as runs of equal values."""
    ts = np.asarray(series.timestamps, dtype=np.float64)
    values = np.asarray(series.values, dtype=np.float64)
    if len(ts) > 1 and np.any(np.diff(ts) < 0):  # a response's points ascend; others sorted
        order = np.argsort(ts, kind="stable")
        ts, values = ts[order], values[order]
    firsts, lasts, runs = _joined(ts, ts, values, step)
    return ValueRuns(series.labels, firsts, lasts, runs)


class _Keyed:
    """Per label key: where it first appeared (``Order``) and its labels, strings shared."""

    def __init__(self) -> None:
        self.first: dict[LabelKey, Order] = {}
        self.labels: dict[LabelKey, dict[str, str]] = {}
        self.strings: dict[str, str] = {}  # one copy of each label text across responses

    def seen(self, key: LabelKey, labels: dict[str, str], order: Order) -> bool:
        """Record ``key`` at ``order``; whether it was new."""
        known = self.first.get(key)
        if known is None:
            intern = self.strings.setdefault
            self.labels[key] = {intern(k, k): intern(v, v) for k, v in labels.items()}
            self.first[key] = order
            return True
        if order < known:
            self.first[key] = order
        return False

    def ordered(self) -> list[LabelKey]:
        """The keys in ``merge_series``' order."""
        return sorted(self.first, key=self.first.__getitem__)


def _summary(ts: list[float], values: list[float]) -> tuple[float, float, float, float]:
    """(latest time, the largest value at it, smallest value, largest value) of one response's
    points, NaN values ignored where another is there. Plain floats: a window response has one
    or two points per series, where numpy's per-call cost would be most of the fold's time."""
    if len(ts) == 1:
        return ts[0], values[0], values[0], values[0]
    top = max(ts)
    at = [v for t, v in zip(ts, values, strict=True) if t == top and v == v]
    real = [v for v in values if v == v]  # NaN != NaN
    return (
        top,
        max(at) if at else math.nan,
        min(real) if real else math.nan,
        max(real) if real else math.nan,
    )


def _nan_aware(pick: Callable[[float, float], float], held: float, new: float) -> float:
    """``pick`` of two values where NaN means none (``nanmin``/``nanmax`` over both)."""
    if math.isnan(held):
        return new
    return held if math.isnan(new) else pick(held, new)


class WindowFold(_Keyed):
    """A ``window`` query's series reduced to (latest time, combined value) as they arrive."""

    def __init__(self, combine: str) -> None:
        super().__init__()
        self.combine = combine
        self.state: dict[LabelKey, list[float]] = {}  # [latest time, value at it, min, max]

    def add(self, index: int, series: list[Series]) -> None:
        """Fold the series of chunk ``index``."""
        for position, one in enumerate(series):
            ts, values = one.timestamps, one.values
            if len(ts) == 0:
                continue  # ``window_values`` skips a series without points
            key = series_key(one)
            top, value, low, high = _summary(ts.tolist(), values.tolist())
            if self.seen(key, one.labels, (index, position)):
                self.state[key] = [top, value, low, high]
                continue
            held = self.state[key]
            if top > held[0]:
                held[0], held[1] = top, value
            elif top == held[0] and (math.isnan(held[1]) or value > held[1]):
                held[1] = value  # equal times keep the larger value, as ``merge_series``
            held[2] = _nan_aware(min, held[2], low)
            held[3] = _nan_aware(max, held[3], high)

    def finish(self) -> list[Series]:
        """One-point series: the latest time and the ``combine`` value (``window_values``' pair)."""
        out = []
        pick = {"min": 2, "max": 3}.get(self.combine, 1)
        for key in self.ordered():
            held = self.state[key]
            value = held[pick] if not math.isnan(held[pick]) else held[1]
            out.append(Series(self.labels[key], np.array([held[0]]), np.array([value])))
        self.state.clear()
        return out


class TimesFold(_Keyed):
    """A ``times`` query: per ``by`` group, the first (``min``) or last (``max``) sample time."""

    def __init__(self, by: tuple[str, ...], combine: str) -> None:
        super().__init__()
        self.by = by
        self.pick = min if combine == "min" else max
        self.best: dict[LabelKey, float] = {}

    def add(self, index: int, series: list[Series]) -> None:
        """Fold chunk ``index``'s series (already cut to their first and last sample times)."""
        for position, one in enumerate(series):
            if len(one.timestamps) == 0:
                continue
            values = tuple(one.labels.get(name, "") for name in self.by)
            labels = {name: v for name, v in zip(self.by, values, strict=True) if v}
            key: LabelKey = tuple(zip(self.by, values, strict=True))
            time = float(self.pick(one.timestamps.tolist()))
            if self.seen(key, labels, (index, position)):
                self.best[key] = time
            else:
                self.best[key] = self.pick(self.best[key], time)

    def finish(self) -> list[Series]:
        """One-point series per group, time as timestamp and value (``sample_times``' shape)."""
        out = []
        for key in self.ordered():
            time = self.best[key]
            out.append(Series(self.labels[key], np.array([time]), np.array([time])))
        self.best.clear()
        return out


class RunsFold(_Keyed):
    """A range query's series as ``ValueRuns``, each response reduced to its runs on arrival."""

    def __init__(self, step: int) -> None:
        super().__init__()
        self.step = step
        self.pieces: dict[LabelKey, list[tuple[int, ValueRuns]]] = {}

    def add(self, index: int, series: list[Series]) -> None:
        """Fold chunk ``index``'s series."""
        for position, one in enumerate(series):
            key = series_key(one)
            self.seen(key, one.labels, (index, position))
            self.pieces.setdefault(key, []).append((index, value_runs(one, self.step)))

    def finish(self) -> list[ValueRuns]:
        """Each series' runs over the whole range, chunk boundaries joined."""
        out = []
        for key in self.ordered():
            parts = [runs for _, runs in sorted(self.pieces.pop(key), key=lambda p: p[0])]
            firsts, lasts, values = _joined(
                np.concatenate([p.firsts for p in parts]),
                np.concatenate([p.lasts for p in parts]),
                np.concatenate([p.values for p in parts]),
                self.step,
            )
            out.append(ValueRuns(self.labels[key], firsts, lasts, values))
        return out
