"""What the replay did to each pod, kept during its loop (``analyzer.replay.engine``): placements as
segments (pod, node, start, end, first), waits inside the window, and the arrays of the
``ReplayResult`` at the end.
"""

from __future__ import annotations

import numpy as np

from analyzer.replay.input import NEVER
from analyzer.replay.result import ReplayResult


class Recorder:
    """Appends segments and waits during the loop; arrays at the end.

    Waits are recorded inside the window ``[start, end]`` only: a pod that arrived before the
    data begins (created days earlier) and had to wait counts its wait from ``start``, so no wait
    is longer than the window and the pending pod-seconds equal the pending-pods series' integral.
    """

    def __init__(self, pods: int, start: int, end: int) -> None:
        # plain lists in the loop (numpy scalar access is slower); arrays in ``result``
        self.start, self.end = start, end
        self.node = [-1] * pods
        self.placed_at = [NEVER] * pods
        self.wait = [0] * pods
        self.waited = [False] * pods  # pending at some instant inside the window
        self.queued = [False] * pods  # pending at any time (before the window too)
        self.abandoned = [False] * pods
        self.open_segment: dict[int, int] = {}  # pod -> index into seg lists
        self.wait_since: dict[int, int] = {}  # pod -> start of its current wait
        self.seg: tuple[list[int], list[int], list[int], list[int], list[bool]] = (
            [], [], [], [], []
        )  # fmt: skip
        self.wait_rows: tuple[list[int], list[int], list[int]] = ([], [], [])
        self.notes: list[str] = []

    def place(self, pod: int, node: int, now: int) -> None:
        unplaced = self.node[pod] < 0
        first = unplaced and not self.queued[pod]
        if unplaced:
            self.node[pod] = node
            self.placed_at[pod] = now
        if pod in self.wait_since:
            self.end_wait(pod, now)
        seg = self.seg
        self.open_segment[pod] = len(seg[0])
        seg[0].append(pod)
        seg[1].append(node)
        seg[2].append(now)
        seg[3].append(NEVER)
        seg[4].append(first)

    def end_segment(self, pod: int, now: int) -> None:
        index = self.open_segment.pop(pod)
        self.seg[3][index] = now

    def start_wait(self, pod: int, now: int) -> None:
        self.queued[pod] = True
        self.wait_since[pod] = now

    def end_wait(self, pod: int, now: int) -> None:
        since = max(self.wait_since.pop(pod), self.start)
        until = min(now, self.end)
        if until > since:  # the part of the wait inside the window
            self.waited[pod] = True
            self.wait[pod] += until - since
            for column, value in zip(self.wait_rows, (pod, since, until), strict=True):
                column.append(value)

    def result(self, strategy: str, seed: int, pending: list[int]) -> ReplayResult:
        for pod in list(self.wait_since):  # still pending at the end: waited until the end
            since = max(self.wait_since.pop(pod), self.start)
            if since < self.end:
                self.waited[pod] = True
                self.wait[pod] += self.end - since
                for column, value in zip(self.wait_rows, (pod, since, NEVER), strict=True):
                    column.append(value)
        pending_mask = np.zeros(len(self.node), dtype=bool)
        pending_mask[pending] = True
        return ReplayResult(
            strategy=strategy,
            seed=seed,
            node=np.array(self.node, dtype=np.int64),
            placed_at=np.array(self.placed_at, dtype=np.int64),
            wait=np.array(self.wait, dtype=np.int64),
            waited=np.array(self.waited, dtype=bool),
            pending_at_end=pending_mask,
            abandoned=np.array(self.abandoned, dtype=bool),
            segments={
                "pod": np.array(self.seg[0], dtype=np.int64),
                "node": np.array(self.seg[1], dtype=np.int64),
                "start": np.array(self.seg[2], dtype=np.int64),
                "end": np.array(self.seg[3], dtype=np.int64),
                "first": np.array(self.seg[4], dtype=bool),
            },
            waits={
                "pod": np.array(self.wait_rows[0], dtype=np.int64),
                "start": np.array(self.wait_rows[1], dtype=np.int64),
                "end": np.array(self.wait_rows[2], dtype=np.int64),
            },
        )
