"""The pending queue merges groups in FIFO order and a pass stops a group at its first failure."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from analyzer.replay.queue import PendingQueue
from analyzer.scheduling.queue_order import PassOrder


def test_groups_merge_by_arrival_rank_and_dropped_groups_stop() -> None:
    seq = [5, 1, 4, 2, 3, 0]  # pod 5 arrived first, then pod 1, pod 3, pod 4, pod 2, pod 0
    group = {0: b"a", 1: b"a", 2: b"b", 3: b"b", 4: b"a", 5: b"c"}
    queue = PendingQueue(seq, group.__getitem__)
    for pod in range(6):
        queue.add(pod)
    assert len(queue) == 6
    assert queue.pods() == [5, 1, 3, 4, 2, 0]
    assert sorted(queue.representatives()) == [1, 3, 5]  # the earliest pod of each group
    order = PassOrder(queue.members(), seq.__getitem__)
    order.add([b"a", b"b"])
    assert list(_drain(order)) == [1, 3, 4, 2, 0]
    order = PassOrder(queue.members(), seq.__getitem__)
    order.add([b"a", b"b"])
    seen = list(
        _drain(order, fail=frozenset({3}))
    )  # group b fails at pod 3: pod 2 (also b) is not tried
    assert seen == [1, 3, 4, 0]
    assert order.idle() == [3, 5]  # b's next untried pod is 3 again; c was never let in


def test_a_group_let_in_mid_pass_goes_before_later_ranks() -> None:
    # c's pod 5 ranks first: let in after pod 1 was placed, it is the next pod tried (a pod the
    # hint moves to kube-scheduler's active queue is popped before later queue timestamps)
    seq = [5, 1, 4, 2, 3, 0]
    group = {0: b"a", 1: b"a", 2: b"b", 3: b"b", 4: b"a", 5: b"c"}
    queue = PendingQueue(seq, group.__getitem__)
    for pod in range(6):
        queue.add(pod)
    order = PassOrder(queue.members(), seq.__getitem__)
    order.add([b"a"])
    assert order.pop() == 1
    order.advance()
    order.add([b"c", b"a"])  # a is in already: no effect
    assert [order.pop(), order.pop()] == [5, 4]


def _drain(order: PassOrder[bytes], fail: frozenset[int] = frozenset()) -> Iterator[int]:
    while (pod := order.peek()) is not None:
        order.pop()
        yield pod
        if pod in fail:
            order.stop()
        else:
            order.advance()


def test_remove_keeps_order_and_unknown_pods_raise() -> None:
    seq = [0, 1, 2]
    queue = PendingQueue(seq, lambda pod: b"g")
    for pod in (2, 0, 1):
        queue.add(pod)
    queue.remove(1)
    assert queue.pods() == [0, 2]
    with pytest.raises(KeyError):
        queue.remove(1)
    queue.remove(0)
    queue.remove(2)
    assert len(queue) == 0 and queue.representatives() == []


def _plain_fifo(seq: list[int], pending: set[int]) -> list[int]:
    return sorted(pending, key=seq.__getitem__)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kept_fifo_list_is_the_sort_of_the_pending_pods_after_random_adds_and_removes(
    seed: int,
) -> None:
    # ranks unique (as the engine's: their last field is a position), groups of a few shapes;
    # after every operation the kept list equals the plain sort, and the same list object is
    # handed out again only when nothing changed in between
    rng = random.Random(seed)
    seq = rng.sample(range(10_000), 300)
    queue = PendingQueue(seq, lambda pod: b"g%d" % (pod % 7))
    pending: set[int] = set()
    last = queue.pods()
    for _ in range(2_000):
        if pending and rng.random() < 0.45:
            pod = rng.choice(sorted(pending))
            queue.remove(pod)
            pending.discard(pod)
        elif len(pending) < len(seq):
            pod = rng.choice([p for p in range(len(seq)) if p not in pending])
            queue.add(pod)
            pending.add(pod)
        listed = queue.pods()
        assert listed == _plain_fifo(seq, pending)
        assert listed is not last  # it changed: a new list (the old one kept as it was)
        assert queue.pods() is listed  # nothing changed since: the same object
        last = listed
