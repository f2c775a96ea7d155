"""Preemption victims terminating, and the preemptors nominated while they do (the replay's side
of ``analyzer.scheduling.queue_order``'s preemption semantics, as the synthetic generator runs it).

When DefaultPreemption picks victims at ``t``, kube-scheduler deletes them and nominates the node
for the preemptor, which goes back to the queue. A victim keeps its room for its graceful
termination (``TERMINATION_GRACE``, kube's default ``terminationGracePeriodSeconds``: snapshots do
not carry the pods' own value) and leaves at ``t + grace``; the preemptor may preempt again only
once that time has passed (upstream's ``PodEligibleToPreemptOthers`` refuses a pod whose nominated
node still has terminating lower-priority pods). A victim chosen again while terminating keeps its
first end. The engine asks ``due`` at every instant and unbinds the victims whose termination ends
then, before the data's departures of that instant.
"""

from __future__ import annotations

import heapq

from analyzer.replay.input import NEVER  # no termination pending
from analyzer.scheduling.queue_order import TERMINATION_GRACE

GRACE_NS = TERMINATION_GRACE * 1_000_000_000


class Terminations:
    """Victims terminating (end time, and when they were deleted) and nominated preemptors."""

    def __init__(self, earliest: int = -NEVER, grace: int = GRACE_NS) -> None:
        self.grace = grace
        self.earliest = earliest  # ns: no preemption before (``may_preempt``)
        self.until: dict[int, int] = {}  # victim -> end of its termination (ns)
        self.deleted: dict[int, int] = {}  # victim -> when preemption deleted it (ns)
        self.nominated: dict[int, int] = {}  # preemptor -> end of its victims' termination
        self._heap: list[tuple[int, int]] = []

    def may_preempt(self, pod: int, now: int) -> bool:
        """Whether ``pod`` may run DefaultPreemption at ``now``: not before ``earliest``, and not
        while the victims of its last preemption terminate."""
        return now >= max(self.earliest, self.nominated.get(pod, self.earliest))

    def preempted(self, preemptor: int, victims: list[int], now: int) -> None:
        """``preemptor`` nominated at ``now``; its victims not yet terminating start to."""
        end = now + self.grace
        self.nominated[preemptor] = end
        for victim in victims:
            if victim not in self.until:
                self.until[victim] = end
                self.deleted[victim] = now
                heapq.heappush(self._heap, (end, victim))

    def forget(self, pod: int) -> None:
        """``pod`` left its node otherwise (its real end, its node leaving): nothing to end."""
        self.until.pop(pod, None)

    def next_time(self) -> int:
        """The next instant a termination ends (``NEVER``: none)."""
        heap = self._heap
        while heap and self.until.get(heap[0][1]) != heap[0][0]:
            heapq.heappop(heap)  # forgotten
        return heap[0][0] if heap else NEVER

    def due(self, now: int) -> list[int]:
        """The victims whose termination ends at ``now`` (or earlier), in index order; forgotten."""
        out = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            end, victim = heapq.heappop(heap)
            if self.until.get(victim) == end:
                del self.until[victim]
                out.append(victim)
        return sorted(out)
