"""``autoscale_screen.under``, the skip test's screen check (``SimulationMemo.unchanged``), against
the array expression it stands for: whether one of the nodes' screen (``utilization``) is under
the limit, and every ratio it brought up to date that expression's value bit for bit.

States: random requests over nodes that offer cpu and memory, one of them or neither (a resource
not offered counts 0), some nodes stale (touched since computed, with a wrong kept ratio), limits
at a node's exact ratio as well as between ratios.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from analyzer.replay.autoscale_screen import under, utilization


def _ca(rng: np.random.Generator, count: int) -> Any:
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
    )
    ca.ratio = utilization(ca, np.arange(count))
    ca.stale = {int(s) for s in np.flatnonzero(rng.random(count) < 0.5)}
    for s in ca.stale:  # touched since: the requests changed, the kept ratio is old
        requested[s] = rng.integers(0, 9000, 3)
    return ca


def test_under_is_the_array_expression() -> None:
    """Mutants caught: a stale node read at its old ratio (not brought up to date), the memory
    ratio divided by the cpu allocatable, ``<=`` for ``<`` (limits at a ratio exactly), the
    higher of the two ratios taken as the lower."""
    rng = np.random.default_rng(3)
    seen = {True: 0, False: 0, "exact": 0}
    for case in range(400):
        count = 12
        ca = _ca(rng, count)
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
