"""The removal simulation's round-robin walk (``removal_state.first_fit_from``): the first node
from the start, round the ring, that both masks allow and NodeResourcesFit accepts, asked node by
node for the first ``NEAR`` nodes and at once for the rest, is the plain rule's node: the first
set node of the full filter mask (``fit.filter``'s answer and the masks) from the start.
"""

from __future__ import annotations

import numpy as np
from autoscale_cases import random_ask

from analyzer.autoscaler.removal_place import Placement
from analyzer.autoscaler.removal_state import NEAR, first_fit_from, first_fitting
from analyzer.scheduling.state import ClusterState, make_demand
from analyzer.scheduling.strategies import load_strategy


def _fit() -> object:
    return next(
        f
        for f in load_strategy("kube-default").filters
        if getattr(f, "name", "") == "NodeResourcesFit"
    )


def _expected(full: np.ndarray, start: int) -> int | None:
    ahead = np.flatnonzero(full[start:])
    behind = np.flatnonzero(full[:start])
    return start + int(ahead[0]) if len(ahead) else int(behind[0]) if len(behind) else None


def test_the_walk_finds_the_full_masks_first_node_from_the_start() -> None:
    """Random states of up to 4 x ``NEAR`` nodes, many of them full (no pod slot, or too little
    room) or refused by the mask after the start (so that the first fitting node is often past
    the nodes asked one by one, or before the start, round the ring), two masks that each refuse some nodes, requests at exactly one
    node's free room, a resource no node offers. Catches, e.g., the rest of the ring asked
    without ``mask`` (a node the static filters refuse, past the first ``NEAR``), or without
    the part before the start (no wrap), or a pod slot compared with ``<=``."""
    rng = np.random.default_rng(11)
    fit = _fit()
    far = wrapped = near = none = 0
    for case in range(400):
        count = int(rng.integers(1, 4 * NEAR))
        slots = rng.integers(1, 4, count)
        state = ClusterState.from_nodes(
            [f"n{i}" for i in range(count)],
            [{"cpu": 4000, "memory": 8 * 2**30, "pods": int(s)} for s in slots],
        )
        busy = rng.random() * 1.1  # the share of nodes loaded near full
        for node in range(count):
            heavy = rng.random() < busy
            for _ in range(int(slots[node]) if heavy and rng.random() < 0.5 else 1):
                top = 4000 if heavy else 2000
                load = {
                    "cpu": int(rng.integers(0, top)) // max(1, int(slots[node])),
                    "memory": int(rng.integers(0, 4 * 2**30)),
                }
                if state.pod_count[node] < state.allowed_pods[node]:
                    state.bind(
                        node, make_demand(state.resources, load, load, name="l", namespace="d")
                    )
        demand = random_ask(rng, state, case)
        base = rng.random(count) < rng.uniform(0.3, 1.0)
        mask = rng.random(count) < rng.uniform(0.3, 1.0)
        start = int(rng.integers(0, count))
        if case % 4 == 1:  # the nodes asked one by one mostly refused: the rest decides
            mask[start : start + NEAR] &= rng.random(len(mask[start : start + NEAR])) < 0.05
        full = base & mask & fit.filter(state, demand, 0.0).feasible  # type: ignore[attr-defined]
        expected = _expected(full, start)
        columns = fit.compared(state, demand)  # type: ignore[attr-defined]
        got = first_fit_from(state, columns, base, mask, start)
        assert got == expected, f"case {case}"
        # one mask (the scale-up's call): the same rule
        assert first_fitting(state, fit, demand, columns, base & mask, start) == expected
        if expected is None:
            none += 1
        elif expected < start:
            wrapped += 1
        elif expected >= start + NEAR:
            far += 1
        else:
            near += 1
    # every part of the walk was exercised
    assert min(far, wrapped, near, none) >= 10, (far, wrapped, near, none)


def test_compared_columns_kept_per_shape_are_each_demands_own() -> None:
    """``Placement._fit_columns`` takes a new demand's columns from an earlier demand of the
    same shape: the same requests on the axis and the same requested resource names. Two
    demands with equal requests on the axis, one also asking a resource no node offers (it fits
    nowhere: None), each get ``compared``'s own answer in either order; so does a third with
    other requests. Catches the shape taken from the axis requests alone (the off-axis name
    left out of the key: the second demand would get the first one's columns)."""
    fit = _fit()
    state = ClusterState.from_nodes(["a", "b"], [{"cpu": 4000, "memory": 2**33, "pods": 10}] * 2)
    ask = {"cpu": 500, "memory": 2**30}
    plain = make_demand(state.resources, ask, ask, name="p", namespace="d")
    odd = {**ask, "example.com/fpga": 1}
    offaxis = make_demand(state.resources, odd, ask, name="q", namespace="d")
    other = make_demand(state.resources, {"cpu": 700}, {"cpu": 700}, name="r", namespace="d")
    assert np.array_equal(plain.requests, offaxis.requests)  # the same on the axis
    for order in ((plain, offaxis, other), (offaxis, plain, other)):
        placement = Placement.__new__(Placement)
        placement.state, placement.columns = state, {}
        for demand in order:
            got = placement._fit_columns(fit, demand)
            assert got == fit.compared(state, demand)  # type: ignore[attr-defined]
        assert placement._fit_columns(fit, offaxis) is None
        assert placement._fit_columns(fit, plain) == [(0, 500), (1, 2**30)]
