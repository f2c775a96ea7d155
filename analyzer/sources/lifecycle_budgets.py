"""PodDisruptionBudgets in the synthetic generator's preemption, as the replay derives them.

The generator's loop (``lifecycle_loop``) asks, at each preemption, for the budgets that select a
pod it could evict, with the status the disruption controller would write at that instant
(``analyzer.scheduling.pdb.with_status``). It counts as a replay of its snapshot with
``arrivals="created"`` does (``analyzer.replay.budgets``), so that the replay's preemption picks
the same victims:

- expected: the budget's pods that exist — offered to the scheduler (a second after their
  creation, the replay's arrival) and not yet ended (finished, or deleted while pending) —
  whether running, terminating or waiting;
- healthy: those bound and not terminating (a preemption victim is not healthy from its
  deletion on); DaemonSet pods count while they exist.

A pod's labels are its snapshot cell (``describe``), as the replay reads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from analyzer.scheduling.pdb import DisruptionBudget, with_status
from analyzer.scheduling.pod_cells import labels_from_cell
from analyzer.sources.lifecycle import Describe, Pod


class LoopBudgets:
    """The loop's budgets over its pods (which grow as controllers replace pods)."""

    def __init__(
        self, budgets: Sequence[DisruptionBudget], pods: list[Pod], describe: Describe
    ) -> None:
        self.budgets = [b for b in budgets if not b.selector.empty]
        self.pods, self.describe = pods, describe
        self.members: list[list[int]] = [[] for _ in self.budgets]
        self.of_pod: dict[int, tuple[int, ...]] = {}
        self._scanned = 0
        self._seen: dict[tuple[str, str], tuple[int, ...]] = {}

    def _scan(self) -> None:
        """Match the pods added since the last call."""
        for j in range(self._scanned, len(self.pods)):
            pod = self.pods[j]
            text = self.describe(pod).get("labels", "{}")
            key = (pod.template.namespace, text)
            found = self._seen.get(key)
            if found is None:
                labels = labels_from_cell(text)
                found = tuple(
                    i
                    for i, b in enumerate(self.budgets)
                    if b.selects(pod.template.namespace, labels)
                )
                self._seen[key] = found
            if found:
                self.of_pod[j] = found
                for i in found:
                    self.members[i].append(j)
        self._scanned = len(self.pods)

    def at(self, now: int, pods: Iterable[int]) -> list[DisruptionBudget]:
        """The budgets selecting any of ``pods`` (indices), with their status at ``now`` (unix
        seconds)."""
        if not self.budgets:
            return []
        self._scan()
        which = sorted({i for p in pods for i in self.of_pod.get(p, ())})
        out = []
        for i in which:
            expected = healthy = 0
            for j in self.members[i]:
                pod = self.pods[j]
                if pod.created + 1 > now or _ended(pod, now):
                    continue
                expected += 1
                bound = pod.node >= 0 and pod.scheduled is not None
                healthy += pod.pin >= 0 or (bound and pod.preempted is None)
            out.append(with_status(self.budgets[i], expected, healthy))
        return out


def _ended(pod: Pod, now: int) -> bool:
    """Whether ``pod`` ended by ``now``: its containers finished, or it was deleted while
    pending (a running pod's deletion sets ``finished`` when it is gone)."""
    return (pod.finished is not None and pod.finished <= now) or pod.phase == "Deleted"
