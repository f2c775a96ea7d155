"""The replay's queue order (PrioritySort) and the pods' priorities and priority bands.

Queue order: with a profile whose ``queueSort`` is PrioritySort, the engine ranks a pending pod
by (priority descending, creation time, row) — ``analyzer.scheduling.queue_order.queue_rank``,
one int, so ``analyzer.replay.queue.PendingQueue`` keeps working on ranks; ``queue_rank`` here is
the arrival rank of profiles without PrioritySort (and PrioritySort's by arrival rank). Priority
is part of the replay shape key (``analyzer.replay.input``), so every pod of a queue group has one
priority and a group still fails as a whole. A pod without a priority in the snapshot has
priority 0. Preemption by priority: ``analyzer.replay.preemption``.
"""

from __future__ import annotations

from collections.abc import Sequence

from analyzer.scheduling.framework import Profile
from analyzer.scheduling.plugins.queuesort import NAME as PRIORITY_SORT
from analyzer.scheduling.state import PodDemand

RANK_BITS = 40  # arrival ranks below 2⁴⁰ (a trillion pods)
PRIORITY_TOP = 1 << 31  # above every int32 priority: 2³¹ − priority > 0
# Priority bands of the evaluation (inclusive lower bounds); labels say the ranges.
BANDS: tuple[tuple[int, str], ...] = (
    (-PRIORITY_TOP, "< 0"),
    (0, "0–999"),
    (1000, "1000–999999"),
    (1_000_000, "≥ 1000000"),
)


def pod_priorities(demands: Sequence[PodDemand]) -> list[int]:
    """Each pod's priority (0 when the snapshot has none)."""
    return [0 if d.priority is None else int(d.priority) for d in demands]


def by_priority(profile: Profile | None) -> bool:
    """True when ``profile`` orders its queue with PrioritySort."""
    return profile is not None and profile.queue_sort == PRIORITY_SORT


def queue_rank(priority: int, arrival: int, ordered: bool) -> int:
    """A pod's rank in the pending queue: PrioritySort's (priority desc, arrival), or arrival."""
    return ((PRIORITY_TOP - priority) << RANK_BITS) | arrival if ordered else arrival


def band(priority: int) -> str:
    """The label of the priority band ``priority`` falls in."""
    label = BANDS[0][1]
    for low, name in BANDS:
        if priority >= low:
            label = name
    return label
