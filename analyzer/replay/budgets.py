"""PodDisruptionBudgets in the replay (preemption, autoscalers' drains): ``disruptionsAllowed`` now.

A snapshot keeps its PodDisruptionBudgets (``kube_objects.json``: namespace, name, spec and the
status counts at collection time). The collected status describes the real cluster at one
instant, not the replayed one, so the replay derives the status the disruption controller would
write at the instant of each preemption attempt, from the budget's spec and the replay's pods
(``analyzer.scheduling.pdb.disruptions_allowed_for``):

- the budget's pods: the snapshot's pods of its namespace whose labels its ``spec.selector``
  matches as ``metav1.LabelSelectorAsSelector`` reads it, the autoscalers' reading
  (cluster-autoscaler ``core/scaledown/pdb/basic.go``, Karpenter ``pkg/utils/pdb``): an empty
  selector ``{}`` selects every pod of the namespace, a missing one none. The scheduler's
  preemption skips a budget with an empty selector (``filterPodsWithPDBViolation``); it reads
  each budget's own ``selects``, so such a budget, derived here, changes none of its choices;
- expected pods: those of the budget's pods that exist at that instant — arrived and not yet
  departed in the snapshot, whether running, terminating or waiting (a preempted pod is
  recreated by its controller and waits: it is still expected), less the pods the replay itself
  deleted for good (arrivals "created": a victim whose replacement is a pod of the data, once its
  termination ended). Upstream counts the matching pods for an integer
  ``minAvailable`` and the controllers' scale for a percentage or ``maxUnavailable``; a
  controller's scale is the number of its pods that exist, which is what the replay sees;
- healthy pods: those of the budget's pods the replay has bound at that instant and not deleted
  (ready at once; a preemption victim terminating is not healthy, as upstream's
  ``countHealthyPods`` skips pods being deleted; DaemonSet/static pods, which stay on their own
  node, count while they exist);
- ``status.disruptedPods`` is empty (the scheduler deletes its victims directly, not through the
  eviction API that fills it); the collected status counts are not used.

A victim stops being healthy as soon as it is preempted, so a later attempt at the same instant
sees the budget with fewer healthy pods, as the controller's next sync would.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from analyzer.replay.input import ReplayInput
from analyzer.scheduling.pdb import DisruptionBudget, with_status
from analyzer.scheduling.state import ClusterState, PodDemand

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


class ReplayBudgets:
    """The budgets of a replay over its pods (see the module docstring)."""

    def __init__(
        self,
        budgets: Sequence[DisruptionBudget],
        demands: Sequence[PodDemand],
        arrival: Int64Array,
        departure: Int64Array,
        pinned: BoolArray,
    ) -> None:
        self.budgets = [b for b in budgets if not b.selector.nothing]
        self.arrival, self.departure, self.pinned = arrival, departure, pinned
        # pods sharing a namespace and a labels object (input.py parses each distinct text
        # once) are matched once
        seen: dict[tuple[str, int], tuple[int, ...]] = {}
        members: list[list[int]] = [[] for _ in self.budgets]
        self.of_pod: dict[int, tuple[int, ...]] = {}
        for pod, demand in enumerate(demands if self.budgets else ()):
            key = (demand.namespace, id(demand.labels))
            found = seen.get(key)
            if found is None:
                found = tuple(
                    i
                    for i, b in enumerate(self.budgets)
                    if b.namespace == demand.namespace and b.selector.matches(demand.labels)
                )
                seen[key] = found
            if found:
                self.of_pod[pod] = found
                for i in found:
                    members[i].append(pod)
        self.members = [np.array(m, dtype=np.int64) for m in members]
        # per pod: how many budgets select it, and the first one (-1: none)
        self.count = np.zeros(len(demands), dtype=np.int64)
        self.first = np.full(len(demands), -1, dtype=np.int64)
        for pod, found in self.of_pod.items():
            self.count[pod], self.first[pod] = len(found), found[0]

    def __bool__(self) -> bool:
        return bool(self.of_pod)

    def covering(self, pods: Iterable[int]) -> list[int]:
        """The budgets (indices) that select any of ``pods``, in budget order."""
        found = {i for p in pods for i in self.of_pod.get(p, ())}
        return sorted(found)

    def at(
        self,
        now: int,
        node_of: Int64Array,
        which: Iterable[int],
        deleting: BoolArray | None = None,
        gone: BoolArray | None = None,
    ) -> list[DisruptionBudget]:
        """Budgets ``which`` with ``disruptions_allowed`` derived at ``now`` (ns); ``node_of``:
        the node each pod the scheduler places is bound to now (-1: not bound); ``deleting``:
        pods terminating (not healthy), ``gone``: pods the replay deleted (not expected)."""
        out = []
        for i in which:
            pods = self.members[i]
            alive = (self.arrival[pods] <= now) & (now < self.departure[pods])
            if gone is not None:
                alive &= ~gone[pods]
            running = node_of[pods] >= 0
            if deleting is not None:
                running &= ~deleting[pods]
            pinned = self.pinned[pods]
            healthy = int(np.count_nonzero(np.where(pinned, alive, running)))
            expected = int(np.count_nonzero(alive))
            out.append(with_status(self.budgets[i], expected, healthy))
        return out


def budgets_of(inp: ReplayInput, state: ClusterState) -> ReplayBudgets:
    """The replay's budgets: the PodDisruptionBudgets among ``state.objects`` over ``inp``'s pods."""
    return ReplayBudgets(state.objects.pdbs, inp.demands, inp.arrival, inp.departure, inp.pinned)
