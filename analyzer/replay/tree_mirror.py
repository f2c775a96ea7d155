"""One score-cache entry's totals in kube-scheduler's node list order, for the sampled choice.

With ``percentageOfNodesToScore`` below 100 the scheduler scores only the first K feasible nodes
from its rotating start index (``node_tree``). Reading that window of the node list for every pod
costs O(K) numpy work per choice; the full path picks from a cached best in O(1). The mirror keeps
what the window's answer needs current under the few rows each bind changes:

- ``values``: the totals in node list order, twice in a row (a window is one slice);
- ``feasible``: the feasible positions, ascending (a list: about two rows turn feasible or
  infeasible per choice, each an insertion) — the K-th feasible node from the start index,
  hence how many nodes were processed, is one bisection;
- ``top``: every (total, row) at or above a floor, highest first, rows ascending inside a total —
  at least a few dozen rows, so the window almost always holds one of them; the first one inside
  the window is the window's highest total and the ones after it with the same total are its ties
  (every row at or above the floor is listed, so none is missed). When none is inside, or the
  list had to be given up (more rows tied at the top than is worth walking), one slice of
  ``values`` answers instead.

Rebuilt from the entry's row-order totals after a bulk rewrite. A node list change (a node
joining or leaving: cluster-autoscaler's scale-ups and removals) moves positions but no total:
``relist`` re-reads ``values`` and ``feasible`` and keeps ``top`` (it holds totals and rows, no
positions), adding or dropping only the rows that joined or left.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import numpy as np

Int64Array = np.ndarray[Any, np.dtype[np.int64]]

TOP_ROWS = 64  # rows a refill aims at (the window holds one of them unless K is tiny)
TOP_LEAST = 8  # fewer left: refill at the next choice
TOP_MOST = 256  # more rows tied at or above the floor than this: not worth walking


class TreeMirror:
    """See the module docstring. ``masked``: the entry's totals by state row, ``lowest`` where
    infeasible (flushed before ``rebuild`` reads it)."""

    def __init__(self, masked: Int64Array, lowest: int) -> None:
        self.masked = masked
        self.lowest = lowest
        self.version = -2  # the node list version it was built for (negative: rebuild first)
        self.size = 0
        self.values: Int64Array = np.zeros(0, dtype=np.int64)
        self.position: list[int] = []  # state row -> position in the node list (-1: absent)
        self.doubled: Int64Array = np.zeros(0, dtype=np.int64)  # position -> state row, twice
        self.feasible: list[int] = []
        self.top: list[tuple[int, int]] = []  # (-total, row), ascending
        self.floor = 0  # every row with a total >= floor is in ``top``
        self.refill_due = False
        self.wide = False  # the last refill met a wide tie: no refill until the next rebuild

    def invalidate(self) -> None:
        """The totals were rewritten in bulk: rebuild at the next choice."""
        self.version = -2

    def rebuild(self, version: int, position: list[int], doubled: Int64Array) -> None:
        """Copy the totals into the node list order ``doubled`` (its rows twice)."""
        self._list(version, position, doubled)
        self.refill()

    def _list(self, version: int, position: list[int], doubled: Int64Array) -> None:
        """The node list ``version`` (positions, rows twice) and the totals in its order."""
        self.version = version
        self.size = len(doubled) // 2
        self.position = position
        self.doubled = doubled
        self.values = self.masked[doubled]
        self.feasible = np.flatnonzero(self.values[: self.size] != self.lowest).tolist()

    def relist(
        self, version: int, position: list[int], doubled: Int64Array, moved: Sequence[int]
    ) -> None:
        """As ``rebuild`` after a node list change only (rows ``moved`` joined or left; every
        total is mirrored): ``top`` is kept, the rows that left leave it, those that joined
        enter it when at or above the floor — the same set a full scan above the floor finds.
        A mirror not built, or whose last refill met a wide tie, is rebuilt."""
        if self.version < 0 or self.wide:
            self.rebuild(version, position, doubled)
            return
        old, floor, top, mirrored = self.position, self.floor, self.top, self.values
        for row in set(moved):
            was, now = old[row] >= 0, position[row] >= 0
            if was and not now:
                value = int(mirrored[old[row]])
                if value >= floor:  # listed (every listed row is at or above the floor)
                    del top[bisect.bisect_left(top, (-value, row))]
            elif now and not was:
                value = int(self.masked[row])
                if value >= floor:  # the floor is above ``lowest``: a feasible row
                    bisect.insort(top, (-value, row))
        self._list(version, position, doubled)
        if len(top) < TOP_LEAST:
            self.refill_due = True

    def refill(self) -> None:
        """``top`` from the whole list: the TOP_ROWS highest totals and every row tied with
        them (given up when more than TOP_MOST rows tie at or above that floor)."""
        self.refill_due = False
        self.wide = False
        count = len(self.feasible)
        if count == 0:
            self.top, self.floor = [], self.lowest + 1
            return
        first = self.values[: self.size]
        wanted = min(TOP_ROWS, count)
        floor = int(np.partition(first, self.size - wanted)[self.size - wanted])
        at = np.flatnonzero(first >= floor)
        if len(at) > TOP_MOST:  # a wide tie: only the totals above the tied one are listed
            floor += 1
            at = at[first[at] >= floor]
            self.wide = True
        self.floor = floor
        rows = self.doubled[at].tolist()
        self.top = sorted(zip((-first[at]).tolist(), rows, strict=True))

    def write(self, rows: Sequence[int], values: Sequence[int]) -> None:
        """Rows ``rows`` now hold ``values`` (a small refresh): mirror them."""
        if self.version < 0:
            return  # rebuilt before it is read
        lowest, size, position, floor = self.lowest, self.size, self.position, self.floor
        mirrored, top, feasible = self.values, self.top, self.feasible
        for row, value in zip(rows, values, strict=True):
            at = position[row]
            if at < 0:
                continue  # not in the node list: a join rebuilds the mirror
            old = int(mirrored[at])
            if old == value:
                continue
            mirrored[at] = mirrored[at + size] = value
            if old == lowest:
                bisect.insort(feasible, at)
            elif value == lowest:
                del feasible[bisect.bisect_left(feasible, at)]
            if old >= floor:
                del top[bisect.bisect_left(top, (-old, row))]
            if value >= floor:
                bisect.insort(top, (-value, row))
        if len(top) < TOP_LEAST and not self.wide:
            self.refill_due = True

    def highest(self, start: int, processed: int) -> list[int]:
        """The rows (ascending) holding the highest total among positions ``start`` ..
        ``start + processed - 1`` (wrapping round), at least one of them feasible."""
        if self.refill_due and len(self.top) < len(self.feasible):
            # (every listed row is feasible: as many as feasible rows is all of them, which a
            # refill would list again — under cluster-autoscaler most refills were such)
            self.refill()
        n, position = self.size, self.position
        top = self.top
        for index, (negative, row) in enumerate(top):
            at = position[row]
            if (at - start) % n < processed:
                found = [row]
                for later, other in top[index + 1 :]:
                    if later != negative:
                        break
                    if (position[other] - start) % n < processed:
                        found.append(other)
                return found
        # one compare over the window: at 5,000 nodes this slice answers ~96 % of the choices
        # (a wide tie leaves ``top`` a few rows above the window's best) with ~90 rows tied
        window = self.values[start : start + processed]
        hits = np.flatnonzero(window == window.max())
        if len(hits) == 1:
            return [int(self.doubled[start + int(hits[0])])]
        tied: list[int] = self.doubled[hits + start].tolist()
        tied.sort()
        return tied
