"""The scheduling queue both the replay and the synthetic generator run (one semantics, two loops).

At every instant, after the departures (and nodes leaving or joining):

- the pods to try are the pods arriving now and the pending pods that *may fit* on a node whose
  room grew at this instant (``may_fit``: cpu, memory and pod count on a changed node — a pod that
  fitted nowhere before can only fit now where room grew; kube-scheduler requeues unschedulable
  pods on such cluster events), those that *may preempt* there (``may_preempt``: they would fit
  once that node's lower-priority pods are gone — NodeResourcesFit's hint requeues them on any
  deletion of a scheduled pod, so upstream preempts at that deletion), and those a pod bound or
  deleted since their last try may let in through PodTopologySpread or InterPodAffinity
  (``requeue``: those plugins' queueing hints); a bind in the pass lets such a group into the
  pass at its rank (``PassOrder``), and the pods that failed in it get one more pass at the
  instant;
- they are tried in one pass in ``PrioritySort`` order, ``queue_rank``: higher priority first,
  then the earlier queue timestamp (the pod's creation, when it entered the queue), then the
  earlier position in the input (the snapshot's row order, the generator's creation order);
- a pod that fits nowhere may preempt (DefaultPreemption); one that still fails waits. A pending
  pod's failure ends its queue group's turn for this pass (pods of one group fit or fail alike);
  arriving pods are always tried.

Preemption, in both loops as upstream: the victims are deleted with a graceful termination of
``TERMINATION_GRACE`` seconds (they hold their room until it ends), the preemptor is nominated and
waits in the queue; it preempts no more while its victims terminate (upstream's
``PodEligibleToPreemptOthers``) and is bound when room frees, normally when they are gone. While
it is nominated its requests and a pod slot are held on the node (``ClusterState.reserve``):
upstream's ``addNominatedPods`` counts it there when filtering pods of lower or equal priority,
so a smaller pod cannot take the room its victims leave. The preemptor does not count itself.

Simplifications kept by both loops: no backoff (a pod is retried at the instant room frees), the
queue timestamp is not refreshed after a failed attempt. (A nominated pod tries its nominated node
alone first, as upstream's ``evaluateNominatedNode``: the replay's ``ScoreCache.fits_alone``, the
generator's ``KubePlacer.fits_alone``.) The hold (``analyzer.scheduling.nominated_holds``) counts
for the pods of lower or equal priority only, as upstream's: while a pod of higher priority is
tried (its filters, scores and preemption dry run) and in its retry screens, the holds of lower
priority are set aside. It counts for the resource filters only (not the spread and affinity
counts, nor the scores, as upstream's scores). A preemption that nominates a node ends the
nominations of the pods of lower priority on it (upstream's ``prepareCandidate``); those pods
are tried again in the pass and may preempt again. A hold lasts until the preemptor's attempt at
the end of its victims' grace period (upstream keeps the nomination until that attempt, so a pod
of equal priority ranked before the preemptor cannot take the room); a preemptor not tried then
(it fits nowhere that changed, not even with its own hold) has it released after the pass, and
the pending pods that may fit in the room it leaves get one more pass; a hold that ends during
the pass lets the pending pods that may fit in its room into that pass at their rank. A
preemptor that fits elsewhere during the grace period is bound there and its hold released, as
upstream.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

TERMINATION_GRACE = 30  # seconds: kube's default terminationGracePeriodSeconds
PRIORITY_TOP = 1 << 31  # above every int32 priority: 2³¹ − priority > 0
TIEBREAK_BITS = 40  # positions below 2⁴⁰
TIME_BITS = 64  # queue timestamps: nanoseconds since the epoch, below 2⁶⁴

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


G = TypeVar("G")  # a queue group's key


def queue_rank(priority: int, timestamp_ns: int, position: int) -> int:
    """A pod's place in the PrioritySort queue as one int (smaller = popped first):
    ``(2³¹ − priority, timestamp, position)`` in lexicographic order."""
    if not 0 <= timestamp_ns < 1 << TIME_BITS or not 0 <= position < 1 << TIEBREAK_BITS:
        raise ValueError(
            f"queue_rank: timestamp {timestamp_ns} or position {position} out of range"
        )
    rank: int = ((PRIORITY_TOP - priority) << (TIME_BITS + TIEBREAK_BITS)) | (
        timestamp_ns << TIEBREAK_BITS
    )
    return rank | position


def may_fit(need: Int64Array, free: Int64Array, pod_room: BoolArray) -> BoolArray:
    """Which pods (rows of ``need``: cpu, memory requests) may fit on one of the changed nodes
    (rows of ``free``: cpu, memory left; ``pod_room``: the node takes one more pod).

    A necessary test only: the profile's filters decide when the pod is tried."""
    free = free[pod_room]
    if len(free) == 0 or len(need) == 0:
        return np.zeros(len(need), dtype=bool)
    ok = ((need[:, np.newaxis, :] <= free[np.newaxis, :, :]) | (need[:, np.newaxis, :] == 0)).all(
        axis=2
    )
    result: BoolArray = ok.any(axis=1)
    return result


def may_fit_beside(
    need: Int64Array,
    pods: Sequence[int],
    priority: Sequence[int],
    free: Int64Array,
    slots: Int64Array,
    held: Sequence[tuple[int, int, int]],
    requests: Callable[[int], Int64Array],
) -> BoolArray:
    """``may_fit`` on nodes where nominated pods hold room (``free`` and ``slots``, pods the
    node takes more, count every hold): for pending pod ``pods[i]`` (``need[i]``,
    ``priority[i]``) a hold counts only if its holder has a higher or equal priority and is not
    the pod itself (``nominated_holds``). ``held``: (row of ``free``, holder, its priority);
    ``requests(holder)``: its cpu and memory requests."""
    hits = np.zeros(len(need), dtype=bool)
    if len(need) == 0 or len(free) == 0:
        return hits
    holders = {pod for _, pod, _ in held}
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (pod, value) in enumerate(zip(pods, priority, strict=True)):
        groups.setdefault((value, pod if pod in holders else -1), []).append(i)
    for (value, own), rows in groups.items():
        freed, room = free.copy(), slots.copy()
        for row, pod, rank in held:
            if rank < value or pod == own:
                freed[row] += requests(pod)
                room[row] += 1
        hits[rows] = may_fit(need[rows], freed, room > 0)
    return hits


def may_preempt(
    need: Int64Array,
    priority: Sequence[int],
    free: Int64Array,
    slots: Int64Array,
    lower: tuple[Int64Array, Int64Array, Int64Array],
) -> BoolArray:
    """Which pending pods (rows of ``need``: cpu, memory requests; ``priority``) fit on one of
    the changed nodes once every placed pod of a lower priority there is gone: rows of ``free``
    (cpu, memory left), ``slots`` (pods the node takes more); ``lower``: the pods placed on those
    nodes as (row of ``free``, priority, cpu and memory requests). Only the pods that may preempt
    are to be asked.

    The retry rule for DefaultPreemption. kube-scheduler requeues a pod NodeResourcesFit refused
    on any deletion of a scheduled pod (its ``isSchedulableAfterPodEvent`` hint), so a pod that
    failed to preempt tries again at once where a deletion made room enough once the
    lower-priority pods are gone (``SelectVictimsOnNode``'s first check) — though not enough to
    fit without evicting anyone (``may_fit``). No other change can let it preempt: a
    lower-priority pod bound or ending leaves that room as it was. A necessary test only."""
    hits = np.zeros(len(need), dtype=bool)
    if len(need) == 0 or len(free) == 0:
        return hits
    ranks = np.asarray(priority, dtype=np.int64)
    rows, prio, requests = lower
    for value in np.unique(ranks).tolist():
        gone = prio < value
        freed, room = free.copy(), slots.copy()
        np.add.at(freed, rows[gone], requests[gone])
        np.add.at(room, rows[gone], 1)
        asking = ranks == value
        hits[asking] = may_fit(need[asking], freed, room > 0)
    return hits


class PassOrder(Generic[G]):
    """The pending pods one pass tries, in rank order, as kube-scheduler pops its active queue.

    ``members``: each queue group's pending pods sorted by rank (not changed during the pass).
    A group joins at its next untried pod (``add``: the pass's start, or a bind that may let it
    in: ``requeue``), leaves at a failure (``stop``: the rest fail alike), and goes on after a
    success or a nomination (``advance``). A group that joins mid-pass with a lower rank than the
    pods still to come is tried before them, as a pod moved to the active queue is popped before
    pods of a later queue timestamp.
    """

    def __init__(self, members: Mapping[G, Sequence[int]], rank: Callable[[int], int]) -> None:
        self.members = members
        self.rank = rank
        self._heap: list[tuple[int, int, G]] = []
        self._next: dict[G, int] = {}  # a group's next untried pod (its index in ``members``)
        self._queued: set[G] = set()
        self._current: tuple[G, int] | None = None

    def add(self, groups: Iterable[G]) -> None:
        """Let ``groups`` in at their next untried pod (no effect on one already in)."""
        for group in groups:
            if group in self._queued:
                continue
            pods = self.members.get(group)
            at = self._next.get(group, 0)
            if pods is None or at >= len(pods):
                continue
            self._queued.add(group)
            heapq.heappush(self._heap, (self.rank(pods[at]), at, group))

    def peek(self) -> int | None:
        """The next pod, or None."""
        if not self._heap:
            return None
        _, at, group = self._heap[0]
        return self.members[group][at]

    def pop(self) -> int:
        """Take the next pod (``advance`` or ``stop`` says how its try went)."""
        _, at, group = heapq.heappop(self._heap)
        self._queued.discard(group)
        self._current = (group, at)
        return self.members[group][at]

    def advance(self) -> None:
        """The pod taken was placed (or nominated): its group goes on with its next pod."""
        assert self._current is not None
        group, at = self._current
        self._next[group] = at + 1
        self.add([group])

    def stop(self) -> None:
        """The pod taken failed: its group stops here (it may join again at that pod)."""
        assert self._current is not None
        group, at = self._current
        self._next[group] = at

    def idle(self) -> list[int]:
        """The next untried pod of each group not in the pass now."""
        out = []
        for group, pods in self.members.items():
            if group in self._queued:
                continue
            at = self._next.get(group, 0)
            if at < len(pods):
                out.append(pods[at])
        return out
