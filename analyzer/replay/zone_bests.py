"""Per-zone bests of one score-cache entry, kept for the System default spreading choice.

``default_spread`` adds to a shape's resource totals (``masked``: ``LOWEST`` where infeasible) a
bonus that depends only on the node's zone for every node without a pod of the spread group, and
its own value for the group's few occupied nodes. The highest total is therefore either an
occupied node's or, in some zone, the zone's best resource total among its feasible nodes that
are not occupied. ``ZoneBests`` keeps per zone slot of one entry: the feasible-node count and the
best total with its ascending tie list, updated on the cache's small refreshes (``update``, from
``score_entry.track_best``) the way ``track_best`` keeps the entry's overall best; a zone whose tie
list empties is recomputed from the array when next asked (``best``). An entry rewritten in bulk
drops its ``ZoneBests`` (built again on the next spread pod).

``nth`` draws from the ascending union of a few sorted lists without building it: the node the
reference path finds at ``flatnonzero(total == total.max())[i]``.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Sequence
from typing import Protocol

import numpy as np

from analyzer.scheduling.arith import Int64Array

LOWEST = int(np.iinfo(np.int64).min)  # the cache's "infeasible" row value (scoring.LOWEST)


class Kept(Protocol):
    """The score-cache entry (``score_entry.Entry``): its overall best total and ascending ties
    (None: unknown), kept by ``score_entry.track_best``; its ``ZoneBests`` (None: not built)."""

    best: int | None
    ties: list[int]
    spread: ZoneBests | None


class ZoneBests:
    """Feasible count and best total (ascending ties) per zone slot of one entry's ``masked``;
    with a single slot its best is the entry's own (``Kept``), not kept twice."""

    def __init__(
        self, masked: Int64Array, slots: list[int], members: Sequence[Int64Array | None]
    ) -> None:
        """``slots``: the zone slot of every node; ``members[z]``: the nodes of slot z (None:
        every node, when there is a single slot)."""
        self.slots = slots
        self.members = members
        self.single = len(members) == 1
        feasible = masked != LOWEST
        self.feasible = bytearray(feasible.tobytes())  # numpy bools are bytes 0 / 1
        self.count = [0] * len(members)
        self.bests: list[int | None] = [None] * len(members)  # None: unknown, see ``best``
        self.ties: list[list[int]] = [[] for _ in members]
        for slot, nodes in enumerate(members):
            if nodes is not None:
                self.count[slot] = int(np.count_nonzero(feasible[nodes]))
            else:
                self.count[slot] = int(np.count_nonzero(feasible))

    def update(self, rows: list[int], values: list[int]) -> None:
        """Rows ``rows`` of ``masked`` now hold ``values``."""
        feasible = self.feasible
        if self.single:  # the best is the entry's: only the count here
            for node, value in zip(rows, values, strict=True):
                now = value != LOWEST
                if feasible[node] != now:
                    feasible[node] = now
                    self.count[0] += 1 if now else -1
            return
        slots, count, bests = self.slots, self.count, self.bests
        for node, value in zip(rows, values, strict=True):
            slot = slots[node]
            now = value != LOWEST
            if feasible[node] != now:
                feasible[node] = now
                count[slot] += 1 if now else -1
            best = bests[slot]
            if best is None:
                continue
            ties = self.ties[slot]
            at = bisect.bisect_left(ties, node)
            present = at < len(ties) and ties[at] == node
            if now and value > best:
                bests[slot], self.ties[slot] = value, [node]
            elif now and value == best:
                if not present:
                    ties.insert(at, node)
            elif present:
                del ties[at]
                if not ties:  # known empty only when no feasible node is left
                    bests[slot] = LOWEST if count[slot] == 0 else None

    def best(self, slot: int, masked: Int64Array, entry: Kept) -> tuple[int, list[int]]:
        """The best total of slot ``slot`` (``LOWEST``: no feasible node) and its ascending ties
        (``masked``: the ``entry``'s, flushed; it is read when the slot's best is unknown)."""
        if self.single:  # as ``ScoreCache.choose`` finds the entry's best
            if entry.best is None:
                top = int(masked.max())
                if top == LOWEST:
                    return LOWEST, []
                entry.best, entry.ties = top, np.flatnonzero(masked == top).tolist()
            return entry.best, entry.ties
        best = self.bests[slot]
        if best is not None:
            return best, self.ties[slot]
        nodes = self.members[slot]
        values = masked if nodes is None else masked[nodes]
        top = int(values.max()) if len(values) else LOWEST
        if top == LOWEST:
            ties: list[int] = []
        else:
            at = np.flatnonzero(values == top)
            ties = (at if nodes is None else nodes[at]).tolist()
        self.bests[slot], self.ties[slot] = top, ties
        return top, ties

    def best_without(
        self, slot: int, masked: Int64Array, occupied: Collection[int], entry: Kept
    ) -> tuple[int, list[int], list[int]]:
        """The best total of slot ``slot`` over its feasible nodes not in ``occupied`` (the
        group's nodes in this slot): (value,
        ascending ties possibly holding some occupied nodes, those occupied nodes ascending —
        the ties minus them are the answer). The slot must have such a node."""
        top, ties = self.best(slot, masked, entry)
        if not occupied:
            return top, ties, []
        if len(ties) <= len(occupied):
            inside = [n for n in ties if n in occupied]
        else:
            inside = sorted(n for n in occupied if _holds(ties, n))
        if len(inside) < len(ties):
            return top, ties, inside
        # every tie is occupied: a pass over the slot's nodes without the occupied ones
        nodes = self.members[slot]
        values = (masked if nodes is None else masked[nodes]).copy()
        if nodes is None:
            values[list(occupied)] = LOWEST
        else:
            values[np.isin(nodes, np.fromiter(occupied, dtype=np.int64))] = LOWEST
        top = int(values.max())
        at = np.flatnonzero(values == top)
        return top, (at if nodes is None else nodes[at]).tolist(), []


def _holds(ties: list[int], node: int) -> bool:
    at = bisect.bisect_left(ties, node)
    return at < len(ties) and ties[at] == node


def nth(parts: list[list[int]], minus: list[int], index: int) -> int:
    """The ``index``-th (from 0) smallest of the union of the disjoint ascending lists ``parts``
    without the ascending ``minus`` (each held by one part)."""
    if len(parts) == 1:
        ties = parts[0]
        for gone in minus:  # the index-th kept element: step over the removed ones before it
            at = bisect.bisect_left(ties, gone)
            if at <= index:
                index += 1
            else:
                break
        return ties[index]
    low, high = min(p[0] for p in parts if p), max(p[-1] for p in parts if p)
    while low < high:  # the smallest node with more than ``index`` kept nodes at or below it
        mid = (low + high) // 2
        below = sum(bisect.bisect_right(p, mid) for p in parts) - bisect.bisect_right(minus, mid)
        if below > index:
            high = mid
        else:
            low = mid + 1
    return low
