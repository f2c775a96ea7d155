"""Karpenter's consolidation simulation stops at the first pod left when no replacement could
hold what is left (``leftover``'s ``within``: the launchable shapes strictly cheaper than the
candidates, as the replay's loop passes them).

A consolidation try passes when nothing is left over (a deletion) or when a shape cheaper than
the candidates holds everything left over (a replacement: ``decide``'s ``fitting``). Once the
pods left fit none of the cheaper shapes, more pods left only need more, so the try is lost
whatever the rest do; with no cheaper shape at all (a node of its pool's cheapest shape, the
common case) it is lost at the first pod left. The answer must give ``decide`` the same verdict
and the same replacement as the full simulation, and be the full simulation's answer whenever
the try is not lost. Pending pods are still counted only where a shape of the whole pool holds
one alone (a pending pod that needs a shape dearer than the candidates makes the try fail; it
must not be dropped as one no node could take).

The states are ``test_karpenter_place``'s random small clusters (host ports, spreading,
anti-affinity, GPUs, pending pods, nodes only pending pods may use).
"""

from __future__ import annotations

import random

import pytest
from test_karpenter_place import _case

from analyzer.autoscaler.karpenter import fitting
from analyzer.autoscaler.nodepool import Shape
from analyzer.replay.karpenter_simulate import Need, leftover
from analyzer.scheduling import load_strategy

# a pool's shapes, cheapest first (``with_shapes`` sorts them so)
POOL = [
    Shape("xs", {"cpu": 1000, "memory": 2 << 30, "pods": 8}, 0.25),
    Shape("s", {"cpu": 2000, "memory": 4 << 30, "pods": 110}, 0.5),
    Shape("m", {"cpu": 4000, "memory": 8 << 30, "pods": 110}, 1.0),
    Shape("l", {"cpu": 8000, "memory": 16 << 30, "pods": 110}, 2.0),
]


@pytest.mark.parametrize("seed", range(300))
def test_stopping_when_no_cheaper_shape_holds_what_is_left_keeps_the_verdict(seed: int) -> None:
    state, demands, moves, allowed, pending, inflight = _case(seed)
    profile = load_strategy("kube-default")
    # the candidates' summed price: below every shape, between them, or above them all
    below = random.Random(seed).choice([0.25, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5])
    within = [s for s in POOL if s.price < below]
    full = leftover(state, profile, demands, moves, allowed, POOL, 0.0, fast=False,
                    pending=pending, inflight=inflight)  # fmt: skip
    options = fitting(full, POOL, below)
    for fast in (False, True):
        needs: dict[int, Need] = {}
        cut = leftover(state, profile, demands, moves, allowed, POOL, 0.0, fast=fast,
                       needs=needs, pending=pending, inflight=inflight, within=within)  # fmt: skip
        assert bool(cut) == bool(full)  # a deletion stays one, a try with pods left stays one
        assert fitting(cut, POOL, below) == options  # the same replacement, or none
        if options:  # the try is not lost: the whole answer
            assert [dict(m) for m in cut] == [dict(m) for m in full]
