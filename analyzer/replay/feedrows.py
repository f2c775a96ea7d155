"""The grid rows LoadAwareScheduling's feed reads, with only the recent columns kept.

``LoadFeed`` (``analyzer.replay.loadfeed``) reads the pod usage grid rows twice, both times
behind the replay clock, which only moves forward:

- ``_finalise(c0, c1)``: the rows of the grid columns the clock has just passed, once each, in
  column order (projected node usage of those columns);
- the pod-assign cache: the rows of the node-usage window, ``(report − 300 s, report]`` with the
  report less than a report interval before the clock: the last few finalised columns.

So the feed never needs a column older than a few minutes before the clock. When the pod usage
is streamed from disk (``PodRows.directory``, the what-if on a large snapshot), ``RecentRows``
reads it one UTC day of columns at a time (``PodRows.each``) and, before reading the next day,
keeps only the previous day's last ``keep_ns`` of columns (a copy: its big arrays are freed
first). At most one day is held, not the two (the day and the one before, for windows crossing
midnight) that ``PodRows.span`` keeps: 1.5 GB less on a 5,000-node week at 1 m.

Exactness: ``span`` returns the same arrays as ``PodRows.span`` — the same rows, in column order
with ties in table order, concatenated across midnight in day order — and ``parts`` splits a
column range where ``span`` would concatenate, so a sum per (node, column) (the columns of two
parts never share a cell) adds the same values in the same order. A snapshot held in memory
(one chunk) is read through ``PodRows.span`` as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from analyzer.replay.podrows import PodRows, Rows, column_slice

_KINDS = {"pod": np.int32, "col": np.int32, "cpu": np.float64, "memory": np.float64}


class RecentRows:
    """``PodRows`` read forward a day at a time, keeping the last ``keep_ns`` of columns."""

    def __init__(self, rows: PodRows, keep_ns: int) -> None:
        self.rows, self.keep_ns = rows, keep_ns
        self.streamed = rows.directory is not None
        # (c0, c1, rows) in column order: the previous day's kept tail, then the current day
        self.held: list[tuple[int, int, Rows]] = []
        self.days: Iterator[tuple[int, int, Rows]] | None = None
        self.read_to = 0  # every column before this one has been read
        self.rereads = 0  # requests older than what was kept (read again; the tests expect 0)

    def _read_through(self, c1: int) -> None:
        """Read days until every column before ``c1`` is held (or the grid ends)."""
        if self.days is None:
            self.days = self.rows.each()
        while self.read_to < c1:
            self._trim()
            nxt = next(self.days, None)
            if nxt is None:
                self.read_to = len(self.rows.times)
                return
            c0, end, day = nxt
            self.held.append((c0, end, dict(day)))  # ``each`` empties its own dict later
            self.read_to = end

    def _trim(self) -> None:
        """Keep only the columns within ``keep_ns`` of the newest held one (copies, so the
        rest of a day's arrays are freed before the next day is read)."""
        if not self.held:
            return
        times = self.rows.times
        newest = self.held[-1][1] - 1
        first = int(np.searchsorted(times, times[newest] - self.keep_ns, side="left"))
        kept: list[tuple[int, int, Rows]] = []
        for c0, c1, rows in self.held:
            if c1 <= first:
                continue
            lo = max(c0, first)
            part = column_slice(rows, lo, c1)
            kept.append((lo, c1, {key: values.copy() for key, values in part.items()}))
        self.held.clear()  # the old arrays go before the copies are kept
        self.held.extend(kept)

    def parts(self, c0: int, c1: int) -> list[tuple[int, int, Rows]]:
        """``[c0, c1)`` split where the held parts split: ``(a, b, rows of [a, b))`` in column
        order (views); each grid column lies in one part."""
        if not self.streamed or c1 <= c0:
            return [(c0, c1, self.rows.span(c0, c1))] if c1 > c0 else []
        self._read_through(c1)
        oldest = self.held[0][0] if self.held else self.read_to
        if c0 < oldest:  # behind what is kept (never, the clock only moves forward): reread
            self.rereads += 1
            return [(c0, c1, self.rows.span(c0, c1))]
        return [
            (max(c0, a), min(c1, b), column_slice(rows, max(c0, a), min(c1, b)))
            for a, b, rows in self.held
            if a < c1 and c0 < b
        ]

    def span(self, c0: int, c1: int) -> Rows:
        """The rows of columns ``[c0, c1)`` in column order (``PodRows.span``'s arrays)."""
        parts = self.parts(c0, c1)
        if len(parts) == 1:
            return parts[0][2]
        if not parts:
            return {key: np.zeros(0, dtype=kind) for key, kind in _KINDS.items()}
        return {key: np.concatenate([p[2][key] for p in parts]) for key in _KINDS}


class RecentColumns:
    """The feed's projected node usage (resource -> nodes × grid columns), holding only the
    columns its windows can still read.

    ``put`` writes columns in increasing order (the clock's finalised columns); ``get`` reads a
    window no older than ``keep`` columns before the newest written one. The buffer holds at
    most ``capacity`` columns and slides forward (the kept columns copied to its front) when a
    write passes its end: a 5,000-node week at 1 m is 0.8 GB as whole matrices, a few MB here.
    A window is a view of the same values in the same column order as the whole matrix's
    slice, so sums, means and percentiles over it are the same floats.
    """

    def __init__(self, resources: tuple[str, ...], count: int, width: int, keep: int) -> None:
        self.keep = max(int(keep), 1)
        self.capacity = min(width, self.keep + max(self.keep, 1024))
        self.width = width
        self.base = 0  # grid column of the buffer's first column
        self.buffer = {r: np.full((count, self.capacity), np.nan) for r in resources}

    def put(self, c0: int, values: dict[str, np.ndarray[Any, Any]]) -> None:
        """Columns ``[c0, c0 + n)`` of every resource (``values``: resource -> nodes × n); later
        calls never write an earlier column (the buffer slides; a long write goes in pieces
        that keep the last ``keep`` columns held)."""
        c1 = c0 + next(iter(values.values())).shape[1]
        piece = max(self.capacity - self.keep, 1)
        pos = c0
        while pos < c1:
            end = min(c1, pos + piece)
            if end - self.base > self.capacity:
                self._slide(end - self.capacity)
            for resource, part in values.items():
                block = part[:, pos - c0 : end - c0]
                self.buffer[resource][:, pos - self.base : end - self.base] = block
            pos = end

    def _slide(self, base: int) -> None:
        """Move the buffer's first column to grid column ``base`` (kept columns copied)."""
        shift = base - self.base
        for values in self.buffer.values():
            if shift < self.capacity:
                values[:, : self.capacity - shift] = values[:, shift:].copy()
            values[:, max(self.capacity - shift, 0) :] = np.nan
        self.base = base

    def get(self, resource: str, window: slice) -> np.ndarray[Any, Any]:
        """The columns ``window`` (grid columns; a view)."""
        lo, hi = int(window.start), int(window.stop)
        if hi <= lo:
            return self.buffer[resource][:, :0]
        if lo < self.base:
            raise ValueError(f"columns {lo}..{hi} are older than the kept {self.base}")
        return self.buffer[resource][:, lo - self.base : hi - self.base]
