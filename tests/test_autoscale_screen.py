"""``autoscale_screen.under``, the skip test's screen check (``SimulationMemo.unchanged``), against
the array expression it stands for: whether one of the nodes' screen (``utilization``) is under
the limit, and every ratio it brought up to date that expression's value bit for bit.

States: random requests over nodes that offer cpu and memory, one of them or neither (a resource
not offered counts 0), some nodes stale (touched since computed, with a wrong kept ratio), limits
at a node's exact ratio as well as between ratios. With pods CA leaves out of its utilisation
(``ignore-daemonsets-utilization``: ``taken_off``), each node's pods taken off both sides, some
holding all of a resource's allocatable or more (then under any limit).
"""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from analyzer.replay.autoscale_screen import ratios, under, utilization


def _ca(rng: np.random.Generator, count: int, ignoring: bool = False) -> Any:
    capacity = rng.integers(1, 8000, (count, 2)).astype(np.float64)
    capacity[rng.random((count, 2)) < 0.15] = 0.0  # not offered
    requested = rng.integers(0, 9000, (count, 3), dtype=np.int64)
    ca = SimpleNamespace(
        state=SimpleNamespace(requested=requested),
        cpu=2,
        mem=0,
        capacity=capacity,
        offered=capacity > 0,
        capacity_rows=capacity.tolist(),
        taken_off=None,
        daemons={},  # no spare node's DaemonSet pods (``ReplayView.daemons``)
    )
    if ignoring:  # one pod per node, its cpu and memory taken off (up to past the allocatable)
        off = rng.integers(0, 9000, (count, 2)).tolist()
        ca.on_node = [{s} for s in range(count)]
        ca.left_out = lambda pod: tuple(off[pod])
        ca.taken_off = {}
    ca.ratio = utilization(ca, np.arange(count))
    ca.stale = {int(s) for s in np.flatnonzero(rng.random(count) < 0.5)}
    for s in ca.stale:  # touched since: the requests changed, the kept ratio is old
        requested[s] = rng.integers(0, 9000, 3)
    return ca


@pytest.mark.parametrize("ignoring", [False, True])
def test_under_is_the_array_expression(ignoring: bool) -> None:
    """Mutants caught: a stale node read at its old ratio (not brought up to date), the memory
    ratio divided by the cpu allocatable, ``<=`` for ``<`` (limits at a ratio exactly), the
    higher of the two ratios taken as the lower; with pods taken off, the scalar and the array
    expressions apart in any of those, or in a node whose pods hold its allocatable."""
    rng = np.random.default_rng(3)
    seen = {True: 0, False: 0, "exact": 0}
    for case in range(400):
        count = 12
        ca = _ca(rng, count, ignoring)
        nodes = [int(s) for s in rng.choice(count, int(rng.integers(1, 5)), replace=False)]
        fresh = utilization(ca, np.array(nodes))
        if case % 3 == 0:
            limit = float(fresh[int(rng.integers(len(nodes)))])  # exactly a node's ratio
            seen["exact"] += 1
        else:
            limit = float(rng.random() * 1.2)
        stale_before = set(ca.stale)
        answer = under(ca, nodes, limit)
        assert answer == bool((fresh < limit).any()), case
        seen[answer] += 1
        # every node no longer stale holds its ratio now; the others were left as they were
        for s in range(count):
            if s not in ca.stale:
                assert ca.ratio[s] == utilization(ca, np.array([s]))[0], (case, s)
        assert ca.stale <= stale_before
    assert min(seen.values()) > 50, seen


def test_the_screen_with_pods_taken_off_is_cas_expression() -> None:
    """``(requested - off) / (allocatable - off)`` per resource, the higher of the two, as
    ``utilization.resource_utilization`` computes it for the same integers (0 where the node
    does not offer the resource; -inf, under any limit, where the pods taken off hold all of
    it), by the array path and the per-node path (``ratios`` of a few stale nodes) alike."""
    ca = SimpleNamespace(
        state=SimpleNamespace(requested=np.array([[2200, 0, 3 * 2**30], [500, 0, 2**30],
                                                  [1500, 0, 2**30], [100, 0, 0]])),
        cpu=0, mem=2,
        capacity=np.array([[4000.0, 16 * 2**30], [1000.0, 4 * 2**30], [1000.0, 4 * 2**30],
                           [0.0, 0.0]]),
        on_node=[{0, 1}, {2}, {3}, set()],
        taken_off={},
        daemons={},
    )  # fmt: skip
    ca.offered = ca.capacity > 0
    ca.capacity_rows = ca.capacity.tolist()
    off = {0: (1200, 100 * 2**20), 1: (0, 0), 2: (500, 0), 3: (1000, 2**30)}
    ca.left_out = off.__getitem__
    want = [
        max((2200 - 1200) / (4000 - 1200), (3 * 2**30 - 100 * 2**20) / (16 * 2**30 - 100 * 2**20)),
        max(0 / 500, 2**30 / (4 * 2**30)),
        # the pod taken off holds the whole cpu allocatable: CA divides by zero (+Inf, or
        # NaN, which as the memory ratio would be the node's utilisation): judged, whatever
        # the other ratio (here 0)
        -math.inf,
        0.0,  # offers neither resource
    ]
    assert list(utilization(ca, np.arange(4))) == want
    assert want[0] == pytest.approx(1000 / 2800)  # 0.55 without the pod taken off: under 0.5
    ca.ratio, ca.stale = np.full(4, 9.0), {0, 1, 2, 3}
    assert ratios(ca).tolist() == want and not ca.stale
