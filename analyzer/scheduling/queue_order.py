"""The scheduling queue both the replay and the synthetic generator run (one semantics, two loops).

At every instant, after the departures (and nodes leaving or joining):

- the pods to try are the pods arriving now and the pending pods that *may fit* on a node whose
  room grew at this instant (``may_fit``: cpu, memory and pod count on a changed node — a pod that
  fitted nowhere before can only fit now where room grew; kube-scheduler requeues unschedulable
  pods on such cluster events), and those a pod bound or deleted since their last try may let in
  through PodTopologySpread or InterPodAffinity (``requeue``: those plugins' queueing hints;
  binds in the pass itself get one more pass at the instant);
- they are tried in one pass in ``PrioritySort`` order, ``queue_rank``: higher priority first,
  then the earlier queue timestamp (the pod's creation, when it entered the queue), then the
  earlier position in the input (the snapshot's row order, the generator's creation order);
- a pod that fits nowhere may preempt (DefaultPreemption); one that still fails waits. A pending
  pod's failure ends its queue group's turn for this pass (pods of one group fit or fail alike);
  arriving pods are always tried.

Preemption, in both loops as upstream: the victims are deleted with a graceful termination of
``TERMINATION_GRACE`` seconds (they hold their room until it ends), the preemptor is nominated and
waits in the queue; it preempts no more while its victims terminate (upstream's
``PodEligibleToPreemptOthers``) and is bound when room frees, normally when they are gone.

Simplifications kept by both loops: no backoff (a pod is retried at the instant room frees), the
queue timestamp is not refreshed after a failed attempt, and a nominated node reserves no room
and is not preferred on the next attempt: when the victims' room frees, the pods that may fit are
tried in queue order, so only a pod ranked before the preemptor can take it first. Room that frees
on the nominated node *while* the victims terminate (another pod ending there) can go to a
lower-priority pod; upstream would count the nominated preemptor on that node for it
(``addNominatedPods``), neither loop does. The preemptor then preempts again once its victims are
gone if it still fits nowhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np

TERMINATION_GRACE = 30  # seconds: kube's default terminationGracePeriodSeconds
PRIORITY_TOP = 1 << 31  # above every int32 priority: 2³¹ − priority > 0
TIEBREAK_BITS = 40  # positions below 2⁴⁰
TIME_BITS = 64  # queue timestamps: nanoseconds since the epoch, below 2⁶⁴

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


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
