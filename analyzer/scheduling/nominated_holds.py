"""The room nominated pods hold on their nodes, and the pods it counts for (both loops).

kube-scheduler's nominator keeps every pod an earlier preemption nominated
(``status.nominatedNodeName``). ``RunFilterPluginsWithNominatedPods`` adds to a node the
nominated pods of *higher or equal* priority than the pod being filtered (``addNominatedPods``,
``pkg/scheduler/framework/runtime/framework.go``): a pod of higher priority does not see a lower
one's nomination, and neither does its preemption dry run (``SelectVictimsOnNode``, which filters
with the same nominated pods). The replay and the generator hold a nominee's requests and a pod
slot in their state (``reserve``); ``Holds`` keeps which pod holds what, and

- ``aside(priority)``: the holds of pods of lower priority than ``priority`` released for the
  time a pod of that priority is tried (filters, scores, preemption), then held again;
- ``displaced(priority, node)``: when a preemption nominates a pod to ``node``, the pods of
  lower priority nominated there lose their nomination (``prepareCandidate`` clears it:
  ``getLowerPriorityNominatedPods`` in ``pkg/scheduler/framework/preemption/preemption.go``);
- ``beside``: the holds on some nodes as the queue's retry screens read them
  (``queue_order.may_fit_beside``);
- ``freed``: the nodes whose hold ended (the preemptor bound, elsewhere too, or failing at its
  nomination's end; a nomination taken over): the loops let the waiting pods that may fit
  there into the pass at once, as they would pods whose room grew at the pass's start.

The pod itself never counts (``addNominatedPods`` skips the pod being scheduled): the loops
``unhold`` it before they try it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

# the pod an autoscaler's ``touch`` is told of for a hold taken or released (room and a pod slot
# only: no pod's labels, terms or ports bound or unbound)
HOLD = -2


class Holds:
    """Nominated pods' holds: pod -> (node, end of the nomination).

    ``reserve(pod, node)`` / ``release(pod, node)`` change the caller's state (and whatever
    caches read it); ``moved(node, freed)`` hears only the lasting changes (not ``aside``'s)."""

    def __init__(
        self,
        priority: Callable[[int], int],
        reserve: Callable[[int, int], None],
        release: Callable[[int, int], None],
        moved: Callable[[int, bool], None] | None = None,
    ) -> None:
        self.priority = priority
        self._reserve, self._release, self._moved = reserve, release, moved
        self.held: dict[int, tuple[int, int]] = {}  # never rebound: the loops keep a reference
        self._aside: set[int] = set()  # held, but released for now (``aside``)
        # nodes whose hold ended since the caller last cleared this (never rebound): room a
        # pass may let waiting pods into at once
        self.freed: list[int] = []
        self._last_freed = -1  # the pod whose hold ``freed`` took last

    def __bool__(self) -> bool:
        return bool(self.held)

    def __contains__(self, pod: int) -> bool:
        return pod in self.held

    def hold(self, pod: int, node: int, until: int) -> None:
        """``pod``'s room held on ``node`` while it is nominated there (to ``until``)."""
        assert pod not in self.held
        if self._last_freed == pod and self.freed and self.freed[-1] == node:
            self.freed.pop()  # held again at once (a preemptor that failed while nominated)
        self._last_freed = -1
        self._reserve(pod, node)
        self.held[pod] = (node, until)
        if self._moved is not None:
            self._moved(node, False)

    def unhold(self, pod: int) -> tuple[int, int] | None:
        """Release ``pod``'s hold, if any: (node, until)."""
        held = self.held.pop(pod, None)
        if held is not None:
            if pod in self._aside:
                self._aside.discard(pod)  # released already
            else:
                self._release(pod, held[0])
            self.freed.append(held[0])
            self._last_freed = pod
            if self._moved is not None:
                self._moved(held[0], True)
        return held

    @contextmanager
    def aside(self, priority: int) -> Iterator[None]:
        """Inside the block, the holds of pods of priority below ``priority`` are released: they
        do not count for a pod of that priority."""
        lower = [
            pod for pod in self.held if pod not in self._aside and self.priority(pod) < priority
        ]
        for pod in lower:
            self._release(pod, self.held[pod][0])
            self._aside.add(pod)
        try:
            yield
        finally:
            for pod in lower:
                if pod in self._aside:  # (not unheld inside the block)
                    self._aside.discard(pod)
                    self._reserve(pod, self.held[pod][0])

    def displaced(self, priority: int, node: int) -> list[int]:
        """A pod of ``priority`` was nominated to ``node``: the pods of lower priority nominated
        there lose their nomination (their holds released); they are returned, in index order."""
        out = sorted(
            pod
            for pod, (at, _) in self.held.items()
            if at == node and self.priority(pod) < priority
        )
        for pod in out:
            self.unhold(pod)
        return out

    def ending(self, now: int) -> list[tuple[int, int]]:
        """The holds whose nomination ends by ``now``, released: (pod, node)."""
        out = [(pod, node) for pod, (node, until) in self.held.items() if until <= now]
        for pod, _ in out:
            self.unhold(pod)
        return out

    def beside(self, rows: Sequence[int]) -> list[tuple[int, int, int]]:
        """The holds on the nodes ``rows`` (a list of node indices) as (position in ``rows``,
        holder, its priority)."""
        where = {node: r for r, node in enumerate(rows)}
        return [
            (where[node], pod, self.priority(pod))
            for pod, (node, _) in self.held.items()
            if node in where
        ]
