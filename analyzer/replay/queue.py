"""The replay's pending queue: by rank (PrioritySort: priority, then arrival), grouped by what
decides a pod's fate.

kube-scheduler retries unschedulable pods in queue order when capacity frees. Pods of one
*group* (same requests and constraints, i.e. the same replay shape key, and not pinned) fit or
fail alike, and within one retry round capacity only shrinks (pods are only bound), so once a
pod of a group fails, every later pod of that group would fail too (until a bind lets the group in
again through the topology plugins: ``scheduling.requeue``). ``queue_order.PassOrder`` therefore
takes the pods of the groups let in merged by arrival rank and stops a group at its first
failure: a retry round costs the placements it makes plus one try per group, not one try per
pending pod (thousands of pods wait under packing strategies on large clusters).

``pods`` (every pending pod in FIFO order, which the autoscalers read at every instant) comes
from one rank-sorted list kept across instants by bisection (ranks are unique: the last field of
both queue ranks is a position), and the same list object is handed out while nothing was added
or removed: a caller may compare it by identity with the one it had.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping


class PendingQueue:
    """Pending pod indices, each group kept sorted by the pod's FIFO rank ``seq[pod]``."""

    def __init__(self, seq: list[int], group_of: Callable[[int], bytes]) -> None:
        self._seq = seq
        self.group_of = group_of
        self._pods: dict[bytes, list[int]] = {}
        self._ranks: dict[bytes, list[int]] = {}
        self._count = 0
        # every pending pod by rank (``pods``), the ranks beside them; the list last handed out
        self._all_ranks: list[int] = []
        self._all_pods: list[int] = []
        self._listed: list[int] | None = None

    def __len__(self) -> int:
        return self._count

    def __contains__(self, pod: int) -> bool:
        group = self.group_of(pod)
        ranks = self._ranks.get(group)
        if ranks is None:
            return False
        at = bisect.bisect_left(ranks, self._seq[pod])
        return at < len(ranks) and self._pods[group][at] == pod

    def add(self, pod: int) -> None:
        group = self.group_of(pod)
        ranks = self._ranks.setdefault(group, [])
        at = bisect.bisect(ranks, self._seq[pod])
        ranks.insert(at, self._seq[pod])
        self._pods.setdefault(group, []).insert(at, pod)
        at = bisect.bisect(self._all_ranks, self._seq[pod])
        self._all_ranks.insert(at, self._seq[pod])
        self._all_pods.insert(at, pod)
        self._listed = None
        self._count += 1

    def remove(self, pod: int) -> None:
        group = self.group_of(pod)
        ranks = self._ranks[group]
        at = bisect.bisect_left(ranks, self._seq[pod])
        if at == len(ranks) or self._pods[group][at] != pod:
            raise KeyError(pod)
        del ranks[at]
        del self._pods[group][at]
        if not ranks:
            del self._ranks[group], self._pods[group]
        at = bisect.bisect_left(self._all_ranks, self._seq[pod])
        del self._all_ranks[at], self._all_pods[at]
        self._listed = None
        self._count -= 1

    def pods(self) -> list[int]:
        """Every pending pod, in FIFO order: the same list object until the queue changes (the
        caller must not modify it)."""
        if self._listed is None:
            self._listed = self._all_pods.copy()
        return self._listed

    def representatives(self) -> list[int]:
        """The first pending pod of each group."""
        return [pods[0] for pods in self._pods.values()]

    def members(self) -> Mapping[bytes, list[int]]:
        """Each group's pending pods by rank (``queue_order.PassOrder`` reads them; the caller
        must not modify them, and the queue does not change during a pass)."""
        return self._pods
