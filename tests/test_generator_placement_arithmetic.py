"""The generator's placement arithmetic, written for speed, against its plain definition.

``ClusterState.fits``, ``least_allocated_place`` and ``crowding_place`` (``sources/placement.py``)
decide where every synthetic pod goes — the demo's snapshot and its months of history — and
were rewritten without per-call temporaries (docs/benchmarks.md "demohist"). Each is checked
here against its definition spelled out in the test over seeded random clusters that include the
corner cases: overcommitted nodes (a resource a pod does not request must not stop it), nodes
with nothing allocatable (their free share is 0), ties (the lowest index wins), nodes the pod
may not use. The generator's uids are checked against ``uuid.UUID(bytes=..., version=4)``.
"""

from __future__ import annotations

import uuid

import numpy as np

from analyzer.sources.lifecycle import _Names
from analyzer.sources.placement import (
    ClusterState,
    PlacementRequest,
    crowding_place,
    least_allocated_place,
)

CASES = 400


def _cluster(rng: np.random.Generator) -> tuple[ClusterState, PlacementRequest]:
    """A small random cluster (some nodes overcommitted or with nothing allocatable) and a pod."""
    n = int(rng.integers(1, 12))
    allocatable = rng.integers(0, 40, size=(n, 5)) * rng.integers(0, 2, size=(n, 5))
    state = ClusterState.empty(tuple(f"node-{i}" for i in range(n)), ("general",) * n, allocatable)
    state.requested[:] = rng.integers(0, 45, size=(n, 5))  # may exceed allocatable
    state.non_zero_requested[:] = rng.integers(0, 45, size=(n, 2))
    if rng.random() < 0.3:  # equal nodes: ties
        state.allocatable[:] = state.allocatable[0]
        state.requested[:] = state.requested[0]
        state.non_zero_requested[:] = state.non_zero_requested[0]
    requests = {r: int(v) for r, v in zip(state.resources, rng.integers(0, 4, size=5), strict=True)}
    requests = {r: v for r, v in requests.items() if rng.random() < 0.6}  # absent = 0
    pod = PlacementRequest(
        uid="pod",
        requests=requests,
        non_zero={"cpu": int(rng.integers(0, 5)), "memory": int(rng.integers(0, 5))},
        allowed=rng.random(n) < 0.8,
        priority=0,
        daemonset=False,
        time=0,
    )
    return state, pod


def _fits(state: ClusterState, pod: PlacementRequest) -> np.ndarray:
    """NodeResourcesFit as defined: every resource the pod requests fits in what is left."""
    ok = np.ones(len(state.nodes), dtype=bool)
    for i in range(len(state.nodes)):
        for k, resource in enumerate(state.resources):
            need = pod.requests.get(resource, 0)
            if need > 0 and state.requested[i, k] + need > state.allocatable[i, k]:
                ok[i] = False
    return ok & pod.allowed


def _least_allocated(
    state: ClusterState, pod: PlacementRequest, feasible: np.ndarray
) -> int | None:
    """The feasible node with the highest mean free share of cpu and memory after the pod (a
    resource with nothing allocatable counts 0), the first one on ties."""
    best: tuple[float, int] | None = None
    for i in np.flatnonzero(feasible).tolist():
        shares = []
        for k, resource in enumerate(("cpu", "memory")):
            alloc = float(state.allocatable[i, k])
            used = int(state.non_zero_requested[i, k]) + pod.non_zero[resource]
            shares.append((alloc - used) / alloc if alloc > 0 else 0.0)
        score = (shares[0] + shares[1]) / 2
        if best is None or score > best[0]:
            best = (score, i)
    return None if best is None else best[1]


def test_fits_is_resource_fit_over_the_requested_resources_only() -> None:
    rng = np.random.default_rng(11)
    for _ in range(CASES):
        state, pod = _cluster(rng)
        assert state.fits(pod).tolist() == _fits(state, pod).tolist()


def test_least_allocated_is_the_highest_mean_free_share_first_on_ties() -> None:
    rng = np.random.default_rng(12)
    seen_none = seen_tie = 0
    for _ in range(CASES):
        state, pod = _cluster(rng)
        expected = _least_allocated(state, pod, _fits(state, pod))
        assert least_allocated_place(pod, state) == expected
        seen_none += expected is None
        seen_tie += expected == 0 and len(state.nodes) > 1 and bool(_fits(state, pod)[1:].any())
    assert seen_none and seen_tie  # the corner cases were met


def test_crowding_fills_the_fullest_crowded_node_first_else_least_allocated() -> None:
    rng = np.random.default_rng(13)
    for _ in range(CASES):
        state, pod = _cluster(rng)
        crowded = frozenset(n for n in state.nodes if rng.random() < 0.4)
        feasible = _fits(state, pod)
        on_crowded = [i for i in np.flatnonzero(feasible).tolist() if state.nodes[i] in crowded]
        if on_crowded:  # the least free cpu share (allocatable taken as at least 1), first
            share = {
                i: (int(state.allocatable[i, 0]) - int(state.requested[i, 0]))
                / max(int(state.allocatable[i, 0]), 1)
                for i in on_crowded
            }
            expected: int | None = min(on_crowded, key=lambda i: (share[i], i))
        else:
            expected = _least_allocated(state, pod, feasible)
        assert crowding_place(crowded)(pod, state) == expected


def test_uids_are_version_4_uuids_of_the_same_random_bytes() -> None:
    names, same = _Names(np.random.default_rng(5)), np.random.default_rng(5)
    for _ in range(2000):
        assert names.uid() == str(uuid.UUID(bytes=same.bytes(16), version=4))
