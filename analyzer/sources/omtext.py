"""Low-level OpenMetrics text output for ``promtool tsdb create-blocks-from openmetrics``.

promtool's rules (research/prometheus.md §3.6): every sample carries a timestamp in seconds, no
blank lines, each series in ascending time order (older samples are dropped silently), and the
file ends with ``# EOF``. ``SeriesWriter`` writes whole series at once from the grid's
pre-rendered timestamps with ``str.join`` (C speed) and flushes in large chunks, so the full text
is never held in memory.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from itertools import islice
from typing import Any, TextIO

import numpy as np

_FLUSH = 8 << 20  # characters buffered before a write


def escape(value: str) -> str:
    """An OpenMetrics label value: backslash, double quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def series_head(name: str, labels: Mapping[str, str]) -> str:
    """``name{k="v",...}``; empty values are left out, as Prometheus stores no empty labels."""
    body = ",".join(f'{k}="{escape(v)}"' for k, v in labels.items() if v != "")
    return f"{name}{{{body}}}" if body else name


def cores(millis: int) -> str:
    """Millicores as KSM renders cores (``MilliValue()/1000``), shortest round-trip text."""
    return repr(millis / 1000)


class SeriesWriter:
    """Buffered series output over a fixed grid of timestamps (unix seconds)."""

    def __init__(
        self,
        handle: TextIO,
        times: np.ndarray,
        exclude: frozenset[str] = frozenset(),
        stride: int = 1,
    ) -> None:
        self.handle = handle
        self.exclude = exclude  # metric names left out (a size knob)
        self.stride = stride  # constant series: every stride-th grid point, plus both ends
        self.extra_label = ""  # e.g. 'prometheus_replica="a"', added to every series
        self.ts = [str(int(t)) for t in times]
        # Grid indices written (inclusive): a time slice of every series, so a long range can be
        # written and backfilled a chunk at a time; the whole grid by default.
        self.window = (0, len(self.ts) - 1)
        self.buffer: list[str] = []
        self.buffered = 0
        self.series = 0
        self.samples = 0

    def _put(self, text: str) -> None:
        self.buffer.append(text)
        self.buffered += len(text)
        if self.buffered >= _FLUSH:
            self.flush()

    def flush(self) -> None:
        """Write out what is buffered."""
        self.handle.write("".join(self.buffer))
        self.buffer.clear()
        self.buffered = 0

    def const(self, head: str, value: str, lo: int, hi: int, *, new: bool = True) -> None:
        """Samples of one value at grid indices ``lo..hi`` (inclusive); nothing if empty.

        ``new=False`` continues the series of the previous call (a later run of it)."""
        lo, hi = max(lo, self.window[0]), min(hi, self.window[1])
        if hi < lo or (self.exclude and head.partition("{")[0] in self.exclude):
            return
        prefix = f"{self._with_extra(head)} {value} "
        stamps = self._stamps(lo, hi)
        self._put(prefix + ("\n" + prefix).join(stamps) + "\n")
        self.series += new
        self.samples += len(stamps)

    def _with_extra(self, head: str) -> str:
        if not self.extra_label:
            return head
        if head.endswith("}"):
            return f"{head[:-1]},{self.extra_label}}}"
        return f"{head}{{{self.extra_label}}}"

    def _stamps(self, lo: int, hi: int) -> list[str]:
        """Timestamps of a constant run ``lo..hi``: all of them, or with a stride both ends kept
        (so first/last-seen times stay exact) and every stride-th grid point between."""
        if self.stride <= 1:
            return self.ts[lo : hi + 1]
        first = -(-lo // self.stride) * self.stride
        inner = self.ts[first : hi + 1 : self.stride]
        last = first + (len(inner) - 1) * self.stride if inner else -1
        head = [self.ts[lo]] if first != lo else []
        tail = [self.ts[hi]] if last != hi and hi != lo else []
        return head + inner + tail

    def runs(self, head: str, values: np.ndarray, lo: int) -> None:
        """One series whose (few distinct) values change over time: written run by run."""
        if len(values) == 0:
            return
        cuts = np.flatnonzero(np.diff(values)) + 1
        starts = np.concatenate([[0], cuts])
        ends = np.concatenate([cuts, [len(values)]])
        for k, (s, e) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
            self.const(head, str(int(values[s])), lo + s, lo + e - 1, new=k == 0)

    def values(self, head: str, values: Iterable[str], lo: int, count: int) -> None:
        """One series with a value per grid index ``lo..lo+count−1``."""
        first, last = max(lo, self.window[0]), min(lo + count - 1, self.window[1])
        if last < first:
            return
        if first > lo or last < lo + count - 1:
            values = islice(values, first - lo, last - lo + 1)
            lo, count = first, last - first + 1
        if count <= 0 or (self.exclude and head.partition("{")[0] in self.exclude):
            return
        head = self._with_extra(head)
        sep = f"\n{head} "
        body = sep.join(map(" ".join, zip(values, self.ts[lo : lo + count], strict=False)))
        self._put(f"{head} {body}\n")
        self.series += 1
        self.samples += count

    def counter(self, head: str, millicore_seconds: np.ndarray, lo: int) -> None:
        """A core-seconds counter from cumulative millicore-seconds (exact decimal text)."""
        millicore_seconds, lo = self._clip(millicore_seconds, lo)
        self.values(
            head, map(repr, (millicore_seconds / 1000).tolist()), lo, len(millicore_seconds)
        )

    def gauge(self, head: str, integers: np.ndarray, lo: int) -> None:
        """An integer-valued gauge series."""
        integers, lo = self._clip(integers, lo)
        self.values(head, map(str, integers.tolist()), lo, len(integers))

    def _clip(self, values: np.ndarray, lo: int) -> tuple[np.ndarray, int]:
        """``values`` (from grid index ``lo``) cut to the window, before any text is rendered."""
        first = max(lo, self.window[0])
        end = max(min(lo + len(values), self.window[1] + 1), first)
        return values[first - lo : end - lo], first

    def close(self) -> None:
        """Terminate the exposition (``# EOF``) and flush."""
        self._put("# EOF\n")
        self.flush()


class SizeEstimate(SeriesWriter):
    """A ``SeriesWriter`` that renders nothing and adds up the bytes it would have written.

    Series heads, timestamps and sample counts are exact; the text of varying values (counters,
    gauges) is the mean length of ``_PROBES`` evenly spaced samples of each series times its
    sample count, so an estimate costs a few operations per series, not one per sample.
    """

    _PROBES = 33

    def __init__(
        self, times: np.ndarray, exclude: frozenset[str] = frozenset(), stride: int = 1
    ) -> None:
        super().__init__(io.StringIO(), times, exclude, stride)
        self.bytes = 0

    def _put(self, text: str) -> None:
        self.bytes += len(text.encode("utf-8"))

    def flush(self) -> None:
        """Nothing is buffered."""

    def const(self, head: str, value: str, lo: int, hi: int, *, new: bool = True) -> None:
        lo, hi = max(lo, self.window[0]), min(hi, self.window[1])
        if hi < lo or (self.exclude and head.partition("{")[0] in self.exclude):
            return
        prefix = f"{self._with_extra(head)} {value} "
        stamps = self._stamps(lo, hi)
        # "prefix stamp\n" per sample
        self.bytes += len(stamps) * (len(prefix.encode("utf-8")) + 1) + sum(map(len, stamps))
        self.series += new
        self.samples += len(stamps)

    def _sampled(self, head: str, values: np.ndarray, lo: int, text: Callable[[Any], str]) -> None:
        values, lo = self._clip(values, lo)
        count = len(values)
        if count == 0 or (self.exclude and head.partition("{")[0] in self.exclude):
            return
        probes = np.unique(np.linspace(0, count - 1, min(count, self._PROBES)).astype(np.int64))
        value_chars = np.mean([len(text(v)) for v in values[probes].tolist()])
        stamp_chars = sum(map(len, self.ts[lo : lo + count]))
        # "head value stamp\n" per sample
        line = len(self._with_extra(head).encode("utf-8")) + 3
        self.bytes += round(count * (line + value_chars)) + stamp_chars
        self.series += 1
        self.samples += count

    def counter(self, head: str, millicore_seconds: np.ndarray, lo: int) -> None:
        self._sampled(head, millicore_seconds, lo, lambda v: repr(v / 1000))

    def gauge(self, head: str, integers: np.ndarray, lo: int) -> None:
        self._sampled(head, integers, lo, str)
