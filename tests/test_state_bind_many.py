"""``ClusterState.bind_many`` / ``unbind_many`` (and ``PodIndex.remove_many``) leave the state
exactly as ``bind`` / ``unbind`` of each pod in turn: the resource rows, pod counts, host ports,
the pod index's per-node lists (their order too), workload groups, kept selector counts, pods
with affinity terms and version.

Random small states (``test_karpenter_place``'s pods: plain, host ports, zone spreading,
required anti-affinity); a random node's pods, or a random subset of them, taken off together
and put back in the reverse order (what Karpenter's consolidation try does), against a copy
doing the same pod by pod.
"""

from __future__ import annotations

import copy
import random

import numpy as np
import pytest
from test_karpenter_place import _pod

from analyzer.scheduling import ClusterState
from analyzer.scheduling.label_selectors import parse_label_selector
from analyzer.scheduling.objects import parse_pod
from analyzer.scheduling.state import PodDemand

SELECTORS = [parse_label_selector({"matchLabels": {"app": a}}, "s") for a in ("a", "b")]


def _state(seed: int) -> tuple[ClusterState, list[tuple[int, PodDemand]]]:
    rng = random.Random(seed)
    count = rng.randint(2, 5)
    names = [f"n{i}" for i in range(count)]
    allocatable = [{"cpu": 64000, "memory": 256 << 30, "pods": 110} for _ in names]
    labels = [{"zone": rng.choice(["z1", "z2"]), "kubernetes.io/hostname": n} for n in names]
    state = ClusterState.from_nodes(names, allocatable, labels=labels)
    index = state.pod_index
    assert index is not None
    for selector in SELECTORS:  # kept count arrays, updated by every bind and unbind
        index.match_counts(selector, "default")
    bound = []
    for i in range(rng.randint(3, 24)):
        kind = rng.choice(["plain", "plain", "port", "spread", "anti"])
        demand = parse_pod(_pod(rng, i, kind), f"pod {i}").demand(state.resources)
        node = rng.randrange(count)
        state.bind(node, demand)
        bound.append((node, demand))
    return state, bound


def _facts(state: ClusterState) -> tuple[object, ...]:
    index = state.pod_index
    assert index is not None
    return (
        state.requested.tolist(),
        state.nonzero_requested.tolist(),
        state.pod_count.tolist(),
        {k: {n: dict(c) for n, c in v.items()} for k, v in state.ports.by_port.items()},
        [[(p.namespace, p.name, p.uid) for p in pods] for pods in index.pods],
        {k: dict(v) for k, v in index.live_groups()},
        {k: dict(v) for k, v in index.affinity_groups.items()},
        index.affine,
        index.version,
        [index.match_counts(s, "default").tolist() for s in SELECTORS],
    )


@pytest.mark.parametrize("seed", range(200))
def test_many_at_once_is_each_in_turn(seed: int) -> None:
    state, bound = _state(seed)
    rng = random.Random(seed + 1000)
    node = rng.choice([n for n, _ in bound])
    on_node = [d for n, d in bound if n == node]
    taken = on_node if rng.random() < 0.5 else rng.sample(on_node, rng.randint(1, len(on_node)))
    one_by_one = copy.deepcopy(state)
    before = _facts(state)

    state.unbind_many(node, taken)
    for demand in taken:
        one_by_one.unbind(node, demand)
    assert _facts(state) == _facts(one_by_one)
    assert int(state.pod_count[node]) == len(on_node) - len(taken)

    back = list(reversed(taken))
    state.bind_many(node, back)
    for demand in back:
        one_by_one.bind(node, demand)
    assert _facts(state) == _facts(one_by_one)
    # the rows and counts are those before (the index's lists hold the pods in a new order)
    after = _facts(state)
    assert after[:4] == before[:4] and after[5:8] == before[5:8] and after[9] == before[9]
    assert np.array_equal(state.pod_count, np.array(before[2]))
