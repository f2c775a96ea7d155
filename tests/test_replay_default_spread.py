"""The replay's fast path for PodTopologySpread's System default constraints
(``analyzer.replay.default_spread``): the same totals and tie set as ``Profile.evaluate`` on
random clusters with ReplicaSets / StatefulSets / Services, a hand-computed case, and a whole
replay identical with and without the fast path."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from analyzer.core.kube_objects import kept_objects
from analyzer.replay.default_spread import UNHANDLED, DefaultSpread
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.replay.scoring import LOWEST, evaluate_all
from analyzer.replay.topology import DEFAULTS, TopologyCheck
from analyzer.scheduling import ClusterState, PodDemand, load_strategy, make_demand
from analyzer.scheduling.constraint_types import constraints_from_json
from analyzer.scheduling.kube_objects import parse_objects
from analyzer.scheduling.pod_cells import controller_from_owner
from analyzer.sources import SyntheticSpec, generate
from analyzer.sources.synthetic import selector_objects

GI = 1 << 30
HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def _objects(state: ClusterState) -> None:
    state.objects, notes = parse_objects(
        [
            {"kind": "ReplicaSet", "metadata": {"name": "web-1", "namespace": "shop"},
             "spec": {"selector": {"matchLabels": {"app": "web"}}}},
            {"kind": "StatefulSet", "metadata": {"name": "db", "namespace": "shop"},
             "spec": {"selector": {"matchExpressions": [
                 {"key": "app", "operator": "In", "values": ["db", "db-old"]}]}}},
            {"kind": "Service", "metadata": {"name": "front", "namespace": "shop"},
             "spec": {"selector": {"tier": "front"}}},
        ],
        "objects",
    )  # fmt: skip
    assert not notes


def _pod(
    state: ClusterState,
    name: str,
    labels: dict[str, str],
    owner: tuple[str, str] = ("", ""),
    namespace: str = "shop",
    cpu: int = 500,
    selector: dict[str, str] | None = None,
    terminating: bool = False,
) -> PodDemand:
    return make_demand(
        state.resources, {"cpu": cpu, "memory": GI}, {"cpu": cpu, "memory": GI}, name=name,
        namespace=namespace, labels=labels, controller=controller_from_owner(*owner), uid=name,
        constraints=constraints_from_json("[]", json.dumps(selector or {}), "{}"),
        terminating=terminating,
    )  # fmt: skip


def _random_state(rng: np.random.Generator) -> ClusterState:
    count = int(rng.integers(3, 40))
    zones = int(rng.integers(1, 5))
    names = [f"n{i}" for i in range(count)]
    labels = []
    for name in names:
        node = {HOST: name, "pool": "ab"[int(rng.integers(2))]}
        if rng.random() > 0.15:  # some nodes lack the zone label
            node[ZONE] = f"z{int(rng.integers(zones))}"
        labels.append(node)
    alloc = [{"cpu": int(rng.choice([4000, 8000, 16000])), "memory": 32 * GI, "pods": 40}
             for _ in names]  # fmt: skip
    state = ClusterState.from_nodes(names, alloc, labels=labels)
    _objects(state)
    kinds = [({"app": "web"}, ("ReplicaSet", "web-1")), ({"app": "db"}, ("StatefulSet", "db")),
             ({"app": "db-old"}, ("StatefulSet", "db")), ({"app": "web", "tier": "front"},
             ("ReplicaSet", "web-1")), ({"app": "other"}, ("", ""))]  # fmt: skip
    for k in range(int(rng.integers(0, 4 * count))):
        labels_, owner = kinds[int(rng.integers(len(kinds)))]
        namespace = "shop" if rng.random() > 0.1 else "other"
        pod = _pod(state, f"p{k}", labels_, owner, namespace, cpu=int(rng.integers(100, 900)),
                   terminating=rng.random() < 0.05)  # fmt: skip
        node = int(rng.integers(count))
        state.bind(node, pod)
        if rng.random() < 0.2:
            state.unbind(node, pod)
    return state


def _fast_totals(state: ClusterState, pod: PodDemand) -> tuple[np.ndarray, np.ndarray] | None:
    profile = load_strategy("kube-default")
    check = TopologyCheck(profile, state)
    route, selector = check.route(state, pod)
    assert route == DEFAULTS and selector is not None
    feasible, total = evaluate_all(profile, state, pod, np.ones(state.node_count, dtype=bool))
    masked = np.where(feasible, total, LOWEST)
    assert check.default_weight is not None
    fast = DefaultSpread(state, check.default_weight)
    if not fast.handled:
        return None
    totals = fast.totals(masked, state, pod, selector)
    assert totals is not None
    return feasible, totals


@pytest.mark.parametrize("seed", range(40))
def test_totals_and_ties_equal_profile_evaluate(seed: int) -> None:
    rng = np.random.default_rng(seed)
    state = _random_state(rng)
    choices = [({"app": "web"}, ("ReplicaSet", "web-1")), ({"app": "db"}, ("StatefulSet", "db")),
               ({"tier": "front"}, ("", "")), ({"app": "web", "tier": "front"},
               ("ReplicaSet", "web-1"))]  # fmt: skip
    labels, owner = choices[seed % len(choices)]
    selector = {"pool": "a"} if seed % 3 == 0 else None  # node affinity: Honor for counting
    pod = _pod(state, "incoming", labels, owner, cpu=int(rng.integers(100, 3000)),
               selector=selector)  # fmt: skip
    evaluation = load_strategy("kube-default").evaluate(state, pod)
    if not evaluation.feasible.any():
        pytest.skip("no node fits this draw")
    assert "PodTopologySpread" in evaluation.scores  # the System defaults did score
    found = _fast_totals(state, pod)
    assert found is not None
    feasible, totals = found
    assert (feasible == evaluation.feasible).all()
    assert (totals[feasible] == evaluation.total[feasible]).all()
    ties = np.flatnonzero(totals == totals.max())
    assert ties.tolist() == evaluation.best().tolist()


def test_hand_computed_scores() -> None:
    # n0, n1 in zone a, n2 in zone b; two web pods on n0, every node equally loaded otherwise.
    # w_host = ln(3 + 2), w_zone = ln(2 + 2); raw n0 = round(2·1.6094 + 2 + 2·1.3863 + 4)
    # = round(11.99) = 12, n1 = round(2 + 2.77 + 4) = 9, n2 = round(2 + 4) = 6; normalised
    # 100·(12 + 6 − s) // 12 = 50, 75, 100; weight 2 → 100, 150, 200 on top of the resources
    names = ["n0", "n1", "n2"]
    state = ClusterState.from_nodes(
        names,
        [{"cpu": 8000, "memory": 32 * GI, "pods": 40} for _ in names],
        labels=[{HOST: n, ZONE: z} for n, z in zip(names, "aab", strict=True)],
    )
    _objects(state)
    for k in range(2):
        state.bind(0, _pod(state, f"w{k}", {"app": "web"}, ("ReplicaSet", "web-1"), cpu=0))
    pod = _pod(state, "incoming", {"app": "web"}, ("ReplicaSet", "web-1"), cpu=0)
    masked = np.zeros(3, dtype=np.int64)
    fast = DefaultSpread(state, 2)
    selector = state.objects.default_selector("shop", pod.labels, pod.controller)
    totals = fast.totals(masked, state, pod, selector)
    assert totals is not None and totals.tolist() == [100, 150, 200]
    # an infeasible node is neither counted in |F| nor chosen
    masked[2] = LOWEST
    # |F| = 2, one zone: w_host = ln 4, w_zone = ln 3; n0 = round(2·1.386 + 2 + 2·1.0986 + 4)
    # = round(10.97) = 11, n1 = round(2 + 2.197 + 4) = 8 → 100·(11 + 8 − s) // 11 = 72, 100
    totals = fast.totals(masked, state, pod, selector)
    assert totals is not None and totals[:2].tolist() == [144, 200] and totals[2] < 0


def test_counts_follow_binds_and_unbinds() -> None:
    rng = np.random.default_rng(5)
    state = _random_state(rng)
    profile = load_strategy("kube-default")
    check = TopologyCheck(profile, state)
    pod = _pod(state, "incoming", {"app": "db"}, ("StatefulSet", "db"))
    _route, selector = check.route(state, pod)
    assert selector is not None
    fast = DefaultSpread(state, 2)
    group = fast.group("shop", selector)
    index = state.pod_index
    assert index is not None

    def plain_counts() -> dict[int, int]:
        out = {}
        for node, placed in enumerate(index.pods):
            n = sum(
                1
                for p in placed
                if p.namespace == "shop" and not p.terminating and selector.matches(p.labels)
            )
            if n:
                out[node] = n
        return out

    assert group.nodes == plain_counts()
    placed = []
    for k in range(60):
        node = int(rng.integers(state.node_count))
        if placed and rng.random() < 0.4:
            node, gone = placed.pop(int(rng.integers(len(placed))))
            state.unbind(node, gone)
        else:
            app = "db" if rng.random() < 0.5 else "db-old"
            new = _pod(state, f"q{k}", {"app": app}, ("StatefulSet", "db"))
            state.bind(node, new)
            placed.append((node, new))
        assert group.nodes == plain_counts()
        per_zone = np.zeros(fast.width, dtype=np.int64)
        for n, c in group.nodes.items():
            per_zone[fast.slot[n]] += c
        assert group.zones == per_zone.tolist()


@pytest.mark.parametrize("constraints", [True, False])
def test_replay_is_the_same_with_and_without_the_fast_path(
    monkeypatch: pytest.MonkeyPatch, constraints: bool
) -> None:
    # with pod constraints: the generator's own objects, some pods with terms (the profile
    # path) among default-spread ones; without: a plain cluster given its ReplicaSets and
    # StatefulSets, so every replicated pod takes the fast path, with churn and waits
    spec = SyntheticSpec(seed=3, nodes=24, days=1, step=300, churn=1.0, gpu_pool=False,
                         zones=3, pod_constraints=constraints)  # fmt: skip
    cluster = generate(spec)
    snapshot = cluster.snapshot
    if not constraints:
        snapshot = replace(snapshot, objects=kept_objects(selector_objects(cluster.pods)))
    inp = prepare(snapshot)
    strategy = Strategy("kube-default", load_strategy("kube-default"))
    handled: list[int] = []
    original = DefaultSpread.choose

    def counted(self: DefaultSpread, *args: object) -> int | None:
        found = original(self, *args)  # type: ignore[arg-type]
        handled.append(found != UNHANDLED)
        return found

    monkeypatch.setattr(DefaultSpread, "choose", counted)
    fast = replay(inp, strategy, seed=5)
    assert sum(handled) > (10 if constraints else 300)

    def never(self: DefaultSpread, *args: object) -> int:
        return UNHANDLED

    monkeypatch.setattr(DefaultSpread, "choose", never)
    slow = replay(inp, strategy, seed=5)
    assert (fast.node == slow.node).all()
    assert (fast.placed_at == slow.placed_at).all()
    assert (fast.waited == slow.waited).all()


def test_labels_the_fast_path_leaves_to_the_profile() -> None:
    # a node without the hostname label: left to TopologyCheck.choose
    state = ClusterState.from_nodes(
        ["a", "b"], [{"cpu": 1000, "memory": GI, "pods": 10}] * 2, labels=[{HOST: "a"}, {}]
    )
    assert not DefaultSpread(state, 2).handled
