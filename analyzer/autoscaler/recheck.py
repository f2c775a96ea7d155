"""What limits cluster-autoscaler's removal simulations from one scale-down pass to the next.

Two rules of ``Planner.categorizeNodes`` (core/scaledown/planner/planner.go) that make CA simulate
far fewer nodes than "every candidate at every pass", shared by the replay's loop
(``analyzer.replay.autoscale_scaledown``) and the generator's CA (``analyzer.sources.
autoscaled_nodes``) so that the two apply the same semantics:

- **the recheck timeout** (``--unremovable-node-recheck-timeout``, default 5m): a node that
  ``SimulateNodeRemoval`` found unremovable (``NoPlaceToMovePods``, ``BlockedByPod``, ...) is
  added with a deadline (``unremovable.Nodes.AddTimeout``: the pass's time + the timeout); until
  then ``eligibility.FilterOutUnremovable`` skips it as ``RecentlyUnremovable`` before any other
  check. ``unremovable.Nodes.Update`` at the start of each pass keeps a deadline only while it is
  after the pass's time and the node still exists; so a node found unremovable at ``t`` is not
  simulated again before ``t + timeout`` and is (if still a candidate) at the first pass at or
  after it. Nodes refused before the simulation (``NotUnderutilized``, ...) get no deadline:
  they are judged again at every pass. ``RecentlyUnremovable``;
- **the candidates limit** (``unneededNodesLimit``): the pass stops simulating candidates once
  the removable ones found (less those of ``ZeroOrMaxNodeScaling`` groups, not modelled: 0)
  reach ``min(U + 2N, N * (u // I) + N)`` with N = ``max-scale-down-parallelism``, U the number
  of nodes unneeded after the last pass, ``u`` = ``scale-down-unneeded-time`` (at least ``I``)
  and ``I`` the smallest interval between passes seen (CA starts it at the unneeded time, 1 ns
  if that is 0; from the second pass on it is the scan interval). The candidates after the stop
  are neither unneeded nor unremovable in that pass (``UNNEEDED_LIMIT``, analyzer's name: CA only
  logs them as skipped).

The candidate order they act on is upstream's default sorting (``ScaleDownCandidatesSorting
Processor`` with ``EmptySorting`` then ``PreviousCandidates``): empty nodes first, then the nodes
unneeded after the last pass, then the rest in node order (``candidate_order``).

Not modelled: ``scale-down-simulation-timeout`` (a wall-clock limit on the pass: a simulation
here takes no wall time that could be compared with it).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable
from typing import Generic, TypeVar

RECENTLY_UNREMOVABLE = "RecentlyUnremovable"
UNNEEDED_LIMIT = "UnneededNodesLimit"
RECHECK_TIMEOUT_S = 300  # upstream's default --unremovable-node-recheck-timeout

K = TypeVar("K", bound=Hashable)


class UnremovableNodes(Generic[K]):
    """``unremovable.Nodes``' deadlines: node key -> the time until which it is skipped."""

    def __init__(self) -> None:
        self.deadlines: dict[K, int] = {}

    def update(self, now: int, exists: Callable[[K], bool]) -> bool:
        """Start of a pass at ``now``: drop deadlines not after ``now`` and nodes gone. True if
        any was dropped (the pass may then differ from the last)."""
        deadlines = self.deadlines
        if not deadlines:  # none to drop (most passes)
            return False
        if min(deadlines.values()) > now and all(map(exists, deadlines)):
            return False  # none to drop: the dict kept as it is
        kept = {k: t for k, t in deadlines.items() if t > now and exists(k)}
        dropped = len(kept) != len(self.deadlines)
        self.deadlines = kept
        return dropped

    def recent(self, key: K) -> bool:
        """``IsRecent``: skipped as ``RecentlyUnremovable`` in this pass."""
        return key in self.deadlines

    def add_timeout(self, key: K, deadline: int) -> None:
        """``AddTimeout``: found unremovable by the simulation; skipped until ``deadline``."""
        self.deadlines[key] = deadline

    def forget(self, key: K) -> None:
        """The node is gone (``Update`` would drop it at the next pass)."""
        self.deadlines.pop(key, None)

    def next_expiry(self) -> int | None:
        """The earliest deadline (a pass at or after it re-checks that node), or None."""
        return min(self.deadlines.values(), default=None)


def unneeded_limit(parallelism: int, unneeded: int, unneeded_time: int, interval: int) -> int:
    """``unneededNodesLimit`` (module docstring); times in any one unit, ``interval`` > 0."""
    n = parallelism
    limit = unneeded + 2 * n
    upper = n * (max(unneeded_time, interval) // interval) + n
    return min(limit, upper)


class PassIntervals:
    """``Planner.minUpdateInterval``: the smallest interval between passes seen so far.

    CA's loop runs every ``scan-interval``; a replay that does not run a pass whose answer cannot
    change still stands for CA's pass of that scan, so from the second pass on the smallest
    interval is the scan interval (capped by the unneeded time, as upstream's start value)."""

    def __init__(self, unneeded_time: int, scan_interval: int) -> None:
        self.first = max(unneeded_time, 1)
        self.later = max(min(unneeded_time, scan_interval), 1)
        self.passes = 0

    def step(self) -> int:
        """A pass runs: the smallest interval as that pass sees it."""
        interval = self.first if self.passes == 0 else self.later  # ``peek``, written out
        self.passes += 1
        return interval

    def shorter(self, gap: int) -> None:
        """A pass ``gap`` after the last one (frequent loops start runs off the scan-interval
        grid): the smallest interval is at most that, and at least 1 (0: two runs at one
        instant, apart by a run's duration, which is not known)."""
        self.later = max(min(self.later, gap), 1)

    def peek(self) -> int:
        """What ``step`` would answer for the next pass (without counting it)."""
        return self.first if self.passes == 0 else self.later


def candidate_order(
    candidates: Iterable[K], empty: Collection[K], previous: Collection[K]
) -> list[K]:
    """Empty first, then the last pass's unneeded nodes, each part in the given order."""
    listed = list(candidates)
    if len(listed) < 2:  # one order (most passes have one or two candidates)
        return listed
    return sorted(listed, key=lambda k: (k not in empty, k not in previous))
