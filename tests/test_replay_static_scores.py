"""The replay's score cache with kube-default's TaintToleration and NodeAffinity scores.

Both raw scores read only node taints and labels, so the cache computes them once per pod shape;
their normalisation depends on which nodes are feasible at that moment (the max over them), which
the cache recomputes per choice. The cache must choose exactly what ``Profile.evaluate`` +
``select`` choose with the same generator, through binds and departures that change feasibility.
"""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.replay.scoring import ScoreCache
from analyzer.scheduling import ClusterState, PodDemand, load_strategy, make_demand
from analyzer.scheduling.constraint_types import (
    PodConstraints,
    PreferredTerm,
    Requirement,
    Taint,
    Toleration,
)

GI = 2**30
SPOT = Taint("spot", "true", "PreferNoSchedule")
OLD = Taint("old-kernel", "", "PreferNoSchedule")


def cluster(count: int) -> ClusterState:
    taints = [(SPOT, OLD) if i % 5 == 0 else (SPOT,) if i % 3 == 0 else () for i in range(count)]
    return ClusterState.from_nodes(
        [f"n{i}" for i in range(count)],
        # the nodes with the highest raw scores (ssd; both taints) hold few pods, so they leave
        # the feasible set early and the normalising max changes under the cache's feet
        [
            {"cpu": 4000 + 2000 * (i % 3), "memory": 16 * GI, "pods": 3 if i % 4 == 0 else 12}
            for i in range(count)
        ],
        labels=[
            {"zone": f"z{i % 3}", "disk": "ssd" if i % 4 == 0 else "hdd"} for i in range(count)
        ],
        taints=taints,
    )


CONSTRAINTS = [
    PodConstraints(),
    PodConstraints(tolerations=(Toleration("spot", "Exists", "", "PreferNoSchedule"),)),
    PodConstraints(
        preferred_terms=(
            PreferredTerm(10, (Requirement("disk", "In", ("ssd",)),)),
            PreferredTerm(3, (Requirement("zone", "NotIn", ("z0",)),)),
        )
    ),
]


def pod(rng: np.random.Generator, k: int) -> tuple[bytes, PodDemand]:
    cpu = int(rng.choice([250, 500, 1500]))
    kind = int(rng.integers(len(CONSTRAINTS)))
    demand = make_demand(
        ("cpu", "memory"),
        {"cpu": cpu, "memory": GI},
        {"cpu": cpu, "memory": GI},
        name=f"p{k}",
        namespace="t",
        constraints=CONSTRAINTS[kind],
    )
    return demand.requests.tobytes() + bytes([kind]), demand


def test_the_preset_scores_both_plugins() -> None:
    names = {w.plugin.name: w.weight for w in load_strategy("kube-default").scorers}
    assert names["TaintToleration"] == 3 and names["NodeAffinity"] == 2


@pytest.mark.parametrize("seed", [1, 2])
def test_cache_with_static_scores_chooses_what_the_core_chooses(seed: int) -> None:
    profile = load_strategy("kube-default")
    count = 30
    state, naive = cluster(count), cluster(count)
    active = np.ones(count, dtype=bool)
    active[[4, 17]] = False
    cache = ScoreCache(profile, state, active)
    assert cache.kernel is not None  # the fast path, not the core over all nodes
    rng = np.random.default_rng(seed)
    pick_fast, pick_core = np.random.default_rng(9), np.random.default_rng(9)
    bound: list[tuple[int, PodDemand]] = []
    shapes: dict[bytes, PodDemand] = {}
    placed = refused = 0
    for k in range(700):
        if bound and rng.random() < 0.3:
            node, gone = bound.pop(int(rng.integers(len(bound))))
            state.unbind(node, gone)
            naive.unbind(node, gone)
            cache.touch(node)
            continue
        key, demand = pod(rng, k)
        demand = shapes.setdefault(key, demand)
        expected = profile.select(profile.evaluate(naive, demand, 0.0, active), pick_core)
        got = cache.choose(key, demand, 0.0, pick_fast)
        assert got == expected, k
        if got is None:
            refused += 1
            continue
        state.bind(got, demand)
        naive.bind(got, demand)
        cache.touch(got)
        bound.append((got, demand))
        placed += 1
    assert placed > 200 and refused > 10  # the cluster fills up: feasibility really changes


def test_preferences_steer_placement_on_an_empty_cluster() -> None:
    # equal empty nodes: resource scores tie, so the preferences decide. A pod that does not
    # tolerate PreferNoSchedule avoids every tainted node; a pod preferring ssd (weight 10) and
    # not-z0 (3) lands on an ssd node outside z0 if one is untainted, as the raw sums say
    profile = load_strategy("kube-default")
    state = cluster(12)
    rng = np.random.default_rng(0)
    plain = make_demand(("cpu", "memory"), {"cpu": 100}, {"cpu": 100}, name="a", namespace="t")
    evaluation = profile.evaluate(state, plain, 0.0)
    chosen = {evaluation.node_names[i] for i in evaluation.best()}
    assert all(not state.node_taints[state.node_names.index(n)] for n in chosen)
    picky = make_demand(
        ("cpu", "memory"),
        {"cpu": 100},
        {"cpu": 100},
        name="b",
        namespace="t",
        constraints=CONSTRAINTS[2],
    )
    node = profile.select(profile.evaluate(state, picky, 0.0), rng)
    assert node is not None
    labels = state.node_labels[node]
    assert labels["disk"] == "ssd" and labels["zone"] != "z0"
