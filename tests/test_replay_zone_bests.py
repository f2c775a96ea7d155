"""The per-zone bests behind the default-spreading choice (``replay.zone_bests``,
``DefaultSpread.kept_ties``): after every change of rows, bind and unbind, the kept tie list is
the one the O(nodes) reference ``DefaultSpread.totals`` gives, on random clusters with 3 zones
(and nodes without the zone label), zones whose best nodes hold the group's pods, zones with no
feasible node and rows turning infeasible and feasible again."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pytest

from analyzer.replay.default_spread import DefaultSpread
from analyzer.replay.score_entry import LOWEST, track_best
from analyzer.replay.zone_bests import ZoneBests, nth
from analyzer.scheduling import ClusterState, PodDemand, make_demand
from analyzer.scheduling.constraint_types import constraints_from_json
from analyzer.scheduling.kube_objects import parse_objects
from analyzer.scheduling.pod_cells import controller_from_owner

GI = 1 << 30
HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
APPS = ("web", "db")


@dataclass
class _Entry:
    """What ``kept_ties`` and ``track_best`` read of a score-cache entry."""

    best: int | None = None
    ties: list[int] = field(default_factory=list)
    spread: ZoneBests | None = None
    mirror: None = None  # the sampled choice's node-list mirror: not used here


def _pod(state: ClusterState, name: str, app: str, pool: str | None = None) -> PodDemand:
    selector = json.dumps({"pool": pool} if pool else {})
    return make_demand(
        state.resources, {"cpu": 100, "memory": GI}, {"cpu": 100, "memory": GI}, name=name,
        namespace="shop", labels={"app": app}, uid=name,
        controller=controller_from_owner("ReplicaSet", app),
        constraints=constraints_from_json("[]", selector, "{}"),
    )  # fmt: skip


def _cluster(rng: np.random.Generator, zones: int, unlabelled: float) -> ClusterState:
    count = int(rng.integers(12, 60))
    names = [f"n{i}" for i in range(count)]
    labels = []
    for name in names:
        node = {HOST: name, "pool": "ab"[int(rng.integers(2))]}
        if zones and rng.random() >= unlabelled:
            node[ZONE] = f"z{int(rng.integers(zones))}"
        labels.append(node)
    state = ClusterState.from_nodes(
        names, [{"cpu": 64_000, "memory": 256 * GI, "pods": 500}] * count, labels=labels
    )
    state.objects, notes = parse_objects(
        [{"kind": "ReplicaSet", "metadata": {"name": app, "namespace": "shop"},
          "spec": {"selector": {"matchLabels": {"app": app}}}} for app in APPS],
        "objects",
    )  # fmt: skip
    assert not notes
    state.attach_pod_index()
    return state


def _expected(fast: DefaultSpread, masked: np.ndarray, state: ClusterState, pod: PodDemand):
    selector = state.objects.default_selector(pod.namespace, pod.labels, pod.controller)
    total = fast.totals(masked, state, pod, selector)
    return None if total is None else np.flatnonzero(total == total.max()).tolist()


def _kept(fast, entry, masked, state, pod):
    selector = state.objects.default_selector(pod.namespace, pod.labels, pod.controller)
    found = fast.kept_ties(entry, masked, state, pod, selector)
    if found is None:
        return None
    parts, minus = found
    count = sum(len(p) for p in parts) - len(minus)
    return [nth(parts, minus, i) for i in range(count)]


@pytest.mark.parametrize("seed", range(36))
def test_kept_ties_equal_the_reference_as_rows_change(seed: int) -> None:
    rng = np.random.default_rng(seed)
    zones = (3, 3, 0, 5)[seed % 4]  # 0: no zone label anywhere (one slot, the entry's own best)
    state = _cluster(rng, zones, unlabelled=(0.0, 0.2)[seed % 2])
    count = state.node_count
    placed: list[tuple[int, PodDemand]] = []
    for k in range(int(rng.integers(0, 2 * count))):
        pod = _pod(state, f"p{k}", APPS[int(rng.integers(2))])
        node = int(rng.integers(count))
        state.bind(node, pod)
        placed.append((node, pod))
    fast = DefaultSpread(state, 2)
    assert fast.handled
    # few distinct totals: many ties, within a zone and across zones
    masked = (100 + 10 * rng.integers(0, 4, count)).astype(np.int64)
    masked[rng.random(count) < 0.2] = LOWEST
    entry = _Entry()
    zone_of = fast.slot
    for step in range(40):
        app = APPS[int(rng.integers(2))]
        pod = _pod(state, f"in{step}", app, pool="a" if rng.random() < 0.25 else None)
        expected = _expected(fast, masked, state, pod)
        got = _kept(fast, entry, masked, state, pod)
        assert got == expected
        selector = state.objects.default_selector(pod.namespace, pod.labels, pod.controller)
        if expected is not None:  # the same draw as ``choose`` without the kept bests
            ref = fast.choose(masked, state, pod, selector, np.random.default_rng(step))
            kept = fast.choose(masked, state, pod, selector, np.random.default_rng(step), entry)
            assert kept == ref
        # the next changes: rows (as the score cache's small refreshes), binds and unbinds
        kind = rng.random()
        group = fast.group("shop", selector)
        if kind < 0.2 and group.nodes:
            # the group's nodes on top of their zones: a zone's best ties are all occupied
            rows = list(group.nodes)
            top = int(masked.max()) if (masked != LOWEST).any() else 100
            values = [top + 10] * len(rows)
        elif kind < 0.3:
            # a whole zone infeasible
            rows = np.flatnonzero(zone_of == zone_of[int(rng.integers(count))]).tolist()
            values = [LOWEST] * len(rows)
        else:
            rows = rng.choice(count, size=int(rng.integers(1, 6)), replace=False).tolist()
            feasible = masked[masked != LOWEST]
            values = []
            for _ in rows:
                pick = rng.random()
                if pick < 0.25:
                    values.append(LOWEST)
                elif pick < 0.5 and len(feasible):
                    values.append(int(feasible.max()))  # joins the current best's ties
                else:
                    values.append(int(100 + 10 * rng.integers(0, 5)))
        masked[rows] = values
        track_best(entry, rows, values)  # what ScoreCache._refresh calls
        if rng.random() < 0.4:
            if placed and rng.random() < 0.5:
                node, gone = placed.pop(int(rng.integers(len(placed))))
                state.unbind(node, gone)
            else:
                node = int(rng.integers(count))
                new = _pod(state, f"q{step}", APPS[int(rng.integers(2))])
                state.bind(node, new)
                placed.append((node, new))
        if rng.random() < 0.05:  # a bulk rewrite (ScoreCache: Entry.rewritten)
            entry.best, entry.spread = None, None


def test_nth_reads_the_union_in_ascending_order() -> None:
    # parts {1, 4, 9} and {2, 3, 10} without 4 and 10: 1, 2, 3, 9
    parts = [[1, 4, 9], [2, 3, 10]]
    assert [nth(parts, [4, 10], i) for i in range(4)] == [1, 2, 3, 9]
    # one part without its first and third element: 5, 8
    assert [nth([[2, 5, 7, 8]], [2, 7], i) for i in range(2)] == [5, 8]
    assert [nth([[3, 6]], [], i) for i in range(2)] == [3, 6]


def test_zone_bests_update_and_recompute() -> None:
    # 6 nodes, zone slots 0 0 1 1 2 2 (slot 2: no zone label)
    masked = np.array([5, 7, 7, LOWEST, 1, 1], dtype=np.int64)
    members = [np.array([0, 1]), np.array([2, 3]), np.array([4, 5])]
    bests = ZoneBests(masked, [0, 0, 1, 1, 2, 2], members)
    entry = _Entry()
    assert bests.count == [2, 1, 2]
    assert bests.best(0, masked, entry) == (7, [1])
    assert bests.best(1, masked, entry) == (7, [2])
    # node 2 turns infeasible: zone 1 has no feasible node left (known, no recompute needed)
    masked[2] = LOWEST
    bests.update([2], [LOWEST])
    assert bests.count == [2, 0, 2] and bests.bests[1] == LOWEST
    # node 3 turns feasible: it is zone 1's best; node 0 ties zone 0's best
    masked[[3, 0]] = [4, 7]
    bests.update([3, 0], [4, 7])
    assert bests.best(1, masked, entry) == (4, [3])
    assert bests.best(0, masked, entry) == (7, [0, 1])
    # both of zone 0's ties drop: unknown, recomputed from the array
    masked[[0, 1]] = [2, 3]
    bests.update([0, 1], [2, 3])
    assert bests.bests[0] is None
    assert bests.best(0, masked, entry) == (3, [1])
    # zone 2's ties are both occupied: the best of the rest is a pass over the zone
    masked[4], masked[5] = 9, 9
    bests.update([4, 5], [9, 9])
    assert bests.best_without(2, masked, {4: 0}, entry) == (9, [4, 5], [4])
    masked[5] = 2
    bests.update([5], [2])
    assert bests.best_without(2, masked, {4: 0}, entry) == (2, [5], [])
