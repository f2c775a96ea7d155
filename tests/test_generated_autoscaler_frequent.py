"""The generator's cluster-autoscaler with frequent loops (``--frequent-loops-enabled``, on by
default from CA 1.35: ``loop/trigger.go`` ``LoopTrigger.Wait``), as its data's kubelet version's
CA runs (``analyzer.sources.autoscaled_nodes``, ``NodeAutoscaler.settle``):

- a run that deleted a node or ordered one, or an instant at which a pod became unschedulable,
  has the loop run again at once, at that instant; its timer restarts from there;
- an empty node's deletion is in progress for another run at the instant it started
  (``CropNodes`` takes the deletions in progress off ``max-scale-down-parallelism``, 10), done by
  the timer's next run.

Nodes of 1000 m cpu, 1000 bytes of memory and 10 pods; the last two hold 600 m each (over the 0.5
threshold, never candidates), the others are empty.
"""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.sources import SyntheticSpec, generate
from analyzer.sources.autoscaled_nodes import NodeAutoscaler


def _act(ca: NodeAutoscaler, now: int, nodes: int) -> list[int]:
    allocatable = np.array([[1000, 1000, 10]] * nodes, dtype=np.int64)
    requested = np.zeros((nodes, 3), dtype=np.int64)
    on_node: list[set[int]] = [set() for _ in range(nodes)]
    for busy, pod in ((nodes - 2, 0), (nodes - 1, 1)):
        requested[busy] = [600, 100, 1]
        on_node[busy].add(pod)
    decision = ca.act(
        now, allocatable, requested, on_node, [],
        lambda pod: np.array([600, 100, 1], dtype=np.int64), lambda pod: True,
    )  # fmt: skip
    return decision.deleted


def _first_deletion(ca: NodeAutoscaler, nodes: int) -> tuple[int, list[int]]:
    now = 0
    while True:
        now += 10
        deleted = _act(ca, now, nodes)
        if deleted:
            return now, deleted
        ca.settle(now, False)


def test_a_second_run_at_the_instant_counts_the_empty_deletions_in_progress() -> None:
    # 12 empty nodes, unneeded from the first run (10 s) and deleted at the first run more than
    # 600 s later: 10 of them (max-scale-down-parallelism). The run frequent loops start at
    # once finds those 10 in progress (a budget of 0): none; the timer's next run, 10 s later,
    # deletes the last 2
    nodes = 14
    ca = NodeAutoscaler(initial=nodes, slots=nodes, min_size=1, max_size=nodes, start=0,
                        frequent=True)  # fmt: skip
    now, deleted = _first_deletion(ca, nodes)
    assert now == 620 and deleted == list(range(10))
    ca.settle(now, False)  # the run deleted nodes: the loop runs again at once
    assert ca.due() == now
    assert _act(ca, now, nodes) == []
    ca.settle(now, False)  # that run did nothing: the timer's next run, a scan-interval on
    assert ca.due() == now + 10
    assert _act(ca, now + 10, nodes) == [10, 11]


def test_without_frequent_loops_the_loop_waits_for_its_timer() -> None:
    nodes = 14
    ca = NodeAutoscaler(initial=nodes, slots=nodes, min_size=1, max_size=nodes, start=0)
    now, deleted = _first_deletion(ca, nodes)
    assert now == 620 and len(deleted) == 10
    ca.settle(now, True)  # neither a deletion nor a pod turning unschedulable starts a run
    assert ca.due() == now + 10
    assert _act(ca, now + 10, nodes) == [10, 11]


def test_a_pod_turning_unschedulable_starts_a_run_and_the_timer_restarts_there() -> None:
    nodes = 4
    ca = NodeAutoscaler(initial=nodes, slots=8, min_size=1, max_size=8, start=0, frequent=True)
    _act(ca, 10, nodes)
    ca.settle(10, False)  # nothing deleted or ordered: no run at once
    assert ca.due() == 20
    ca.settle(13, True)  # a pod became unschedulable at 13 s: a run then, 3 s after the last
    assert ca.due() == 13
    _act(ca, 13, nodes)
    assert ca.due() == 23  # the timer from that run
    # ``unneededNodesLimit`` reads the smallest interval between two runs so far
    assert ca.shortest == 3


def test_the_generator_runs_the_ca_of_its_kubelet_version(monkeypatch: pytest.MonkeyPatch) -> None:
    # frequent loops are CA 1.35's default (commit 7b9a707f5f): the generator's own CA has them
    # when the data's kubelet is 1.35 or later
    seen: list[bool] = []
    original = NodeAutoscaler.__init__

    def spy(self: NodeAutoscaler, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)  # type: ignore[arg-type]
        seen.append(self.frequent)

    monkeypatch.setattr(NodeAutoscaler, "__init__", spy)

    def frequent(version: str) -> bool:
        seen.clear()
        generate(SyntheticSpec(seed=2, nodes=2, days=0.01, step=60, autoscaled=True,
                               kubelet_version=version))  # fmt: skip
        return seen == [True]

    assert frequent("v1.36.2") and frequent("v1.35.0")
    assert not frequent("v1.34.3")
