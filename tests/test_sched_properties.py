"""Invariants of the scheduling core, checked with hypothesis on random clusters and pods."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from analyzer.scheduling import ClusterState, LoadInputs, load_strategy, make_demand
from analyzer.scheduling.arith import go_round
from analyzer.scheduling.framework import Evaluation
from analyzer.scheduling.plugins.loadaware.args import parse_loadaware_args
from analyzer.scheduling.plugins.loadaware.plugin import LoadAwareScheduling
from analyzer.scheduling.plugins.noderesources.fit import FitArgs, NodeResourcesFit
from analyzer.scheduling.reference import kube_default_loop
from analyzer.scheduling.versions import parse_version

GI = 2**30
VERSIONS = ("1.16", "1.20", "1.35", "1.36")
PRESETS = ("kube-default", "most-allocated", "rtcr-binpack")

node_st = st.fixed_dictionaries(
    {
        "cpu": st.integers(0, 64_000),
        "memory": st.integers(0, 256 * GI),
        "gpu": st.integers(0, 8),
        "pods": st.integers(0, 110),
        "used_cpu": st.integers(0, 80_000),
        "used_memory": st.integers(0, 300 * GI),
        "used_gpu": st.integers(0, 8),
        "extra_cpu": st.integers(0, 2_000),  # non-zero defaults of request-less containers
        "extra_memory": st.integers(0, 4 * GI),
        "count": st.integers(0, 110),
    }
)
pod_st = st.fixed_dictionaries(
    {"cpu": st.integers(0, 16_000), "memory": st.integers(0, 64 * GI), "gpu": st.integers(0, 2)}
)


def build_state(nodes: list[dict[str, int]]) -> ClusterState:
    alloc = [
        {"cpu": n["cpu"], "memory": n["memory"], "nvidia.com/gpu": n["gpu"], "pods": n["pods"]}
        for n in nodes
    ]
    state = ClusterState.from_nodes([f"n{i}" for i in range(len(nodes))], alloc)
    for i, n in enumerate(nodes):
        state.requested[i] = [n["used_cpu"], n["used_memory"], n["used_gpu"]]
        state.nonzero_requested[i] = [
            n["used_cpu"] + n["extra_cpu"],
            n["used_memory"] + n["extra_memory"],
        ]
        state.pod_count[i] = n["count"]
    return state


def build_pod(state: ClusterState, spec: dict[str, int]) -> Any:
    requests = {"cpu": spec["cpu"], "memory": spec["memory"], "nvidia.com/gpu": spec["gpu"]}
    nonzero = {"cpu": spec["cpu"] or 100, "memory": spec["memory"] or 200 * 2**20}
    return make_demand(state.resources, requests, nonzero, name="p", namespace="default")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(node_st, min_size=1, max_size=8),
    pod_st,
    st.sampled_from(PRESETS),
    st.sampled_from(VERSIONS),
)
def test_scores_stay_on_the_scale(
    nodes: list[dict[str, int]], spec: dict[str, int], preset: str, version: str
) -> None:
    state = build_state(nodes)
    profile = load_strategy(preset, version)
    evaluation = profile.evaluate(state, build_pod(state, spec))
    top = parse_version(version).max_node_score
    for scores in evaluation.scores.values():
        assert scores.min() >= 0 and scores.max() <= top


@settings(max_examples=120, deadline=None)
@given(
    st.lists(node_st, min_size=1, max_size=8),
    pod_st,
    st.sampled_from(("kube-default", "most-allocated", "rtcr-binpack")),
    st.sampled_from(("1.35", "1.36")),
)
def test_vectorised_plugins_match_a_per_node_loop(
    nodes: list[dict[str, int]], spec: dict[str, int], preset: str, version: str
) -> None:
    state = build_state(nodes)
    pod = build_pod(state, spec)
    evaluation = load_strategy(preset, version).evaluate(state, pod)
    shape = [(0, 0), (100, 100)] if preset == "rtcr-binpack" else None
    feasible, totals = kube_default_loop(
        state,
        pod,
        most=preset == "most-allocated",
        delta=version == "1.36",
        shape=shape,
        taint_affinity=True,  # every kube-based preset scores them
    )
    assert evaluation.feasible.tolist() == feasible
    assert evaluation.total.tolist() == totals


@settings(max_examples=80, deadline=None)
@given(
    node_st,
    pod_st,
    st.integers(0, 40_000),
    st.integers(0, 100 * GI),
    st.sampled_from(("1.20", "1.36")),
)
def test_most_allocated_never_falls_and_least_never_rises_as_requests_grow(
    node: dict[str, int], spec: dict[str, int], more_cpu: int, more_memory: int, version: str
) -> None:
    kube = parse_version(version)
    state = build_state([node])
    pod = build_pod(state, spec)
    least = NodeResourcesFit(FitArgs("LeastAllocated"), kube)
    most = NodeResourcesFit(FitArgs("MostAllocated"), kube)
    before = int(least.score(state, pod, 0)[0]), int(most.score(state, pod, 0)[0])
    state.requested[0, :2] += [more_cpu, more_memory]
    state.nonzero_requested[0] += [more_cpu, more_memory]
    after = int(least.score(state, pod, 0)[0]), int(most.score(state, pod, 0)[0])
    assert after[0] <= before[0]
    if (
        not kube.most_allocated_zero_over_capacity
    ):  # before 1.22 MostAllocated dropped to 0 over capacity
        assert after[1] >= before[1]


def _tied_evaluation(feasible: list[bool], total: list[int]) -> Evaluation:
    count = len(total)
    return Evaluation(
        tuple(f"n{i}" for i in range(count)),
        np.array(feasible, dtype=bool),
        {},
        np.array(total, dtype=np.int64),
    )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.booleans(), st.integers(0, 5)), min_size=1, max_size=12),
    st.integers(0, 2**32 - 1),
)
def test_selection_is_feasible_seeded_and_within_the_tie_set(
    rows: list[tuple[bool, int]], seed: int
) -> None:
    evaluation = _tied_evaluation([f for f, _ in rows], [t for _, t in rows])
    profile = load_strategy("kube-default")
    first = profile.select(evaluation, np.random.default_rng(seed))
    again = profile.select(evaluation, np.random.default_rng(seed))
    assert first == again
    if not any(f for f, _ in rows):
        assert first is None
        return
    assert first is not None and rows[first][0]  # never an infeasible node
    best = max(t for f, t in rows if f)
    assert rows[first][1] == best
    assert first in evaluation.best().tolist()


def test_different_seeds_reach_every_tied_node() -> None:
    evaluation = _tied_evaluation([True, False, True, True], [7, 9, 7, 7])
    profile = load_strategy("kube-default")
    chosen = {profile.select(evaluation, np.random.default_rng(seed)) for seed in range(64)}
    assert chosen == {0, 2, 3}  # node 1 scores higher but is infeasible


@settings(max_examples=40, deadline=None)
@given(st.lists(node_st, min_size=2, max_size=6), pod_st, st.integers(0, 5))
def test_bind_then_unbind_restores_the_state(
    nodes: list[dict[str, int]], spec: dict[str, int], node: int
) -> None:
    state = build_state(nodes)
    node %= state.node_count
    before = (state.requested.copy(), state.nonzero_requested.copy(), state.pod_count.copy())
    pod = build_pod(state, spec)
    state.bind(node, pod)
    assert state.pod_count[node] == before[2][node] + 1
    assert state.requested[node, 0] == before[0][node, 0] + spec["cpu"]
    state.unbind(node, pod)
    assert np.array_equal(state.requested, before[0])
    assert np.array_equal(state.nonzero_requested, before[1])
    assert np.array_equal(state.pod_count, before[2])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(node_st, min_size=1, max_size=6),
    pod_st,
    st.lists(st.tuples(st.integers(0, 90_000), st.integers(0, 300 * GI)), min_size=6, max_size=6),
    st.integers(0, 100),
)
def test_loadaware_scores_stay_on_the_scale(
    nodes: list[dict[str, int]], spec: dict[str, int], usage: list[tuple[int, int]], dominant: int
) -> None:
    state = build_state(nodes)
    load = LoadInputs.empty(state.node_count, ("cpu", "memory"))
    load.has_metric[:] = True
    load.metric_present[:] = True
    load.update_time[:] = 1000.0
    load.node_usage[:] = np.array(usage[: state.node_count], dtype=np.int64)
    state.load = load
    args = parse_loadaware_args({"dominantResourceWeight": dominant}, "args")
    plugin = LoadAwareScheduling(args, parse_version(None))
    scores = plugin.score(state, build_pod(state, spec), now=1010.0)
    assert scores.min() >= 0 and scores.max() <= 100
    stale = plugin.score(state, build_pod(state, spec), now=1000.0 + 180)
    assert not stale.any()  # an expired NodeMetric scores 0


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 200_000), st.integers(0, 250_000), st.integers(0, 100)),
        min_size=1,
        max_size=8,
    )
)
def test_loadaware_filter_matches_go_round_per_node(rows: list[tuple[int, int, int]]) -> None:
    # per node: allocatable cpu, reported cpu usage, cpu threshold (memory threshold off)
    state = ClusterState.from_nodes(
        [f"n{i}" for i in range(len(rows))],
        [{"cpu": a, "memory": GI, "pods": 10} for a, _, _ in rows],
    )
    state.node_annotations = [
        {"scheduling.koordinator.sh/usage-thresholds": f'{{"usageThresholds": {{"cpu": {t}}}}}'}
        for _, _, t in rows
    ]
    load = LoadInputs.empty(len(rows), ("cpu", "memory"))
    load.has_metric[:] = True
    load.metric_present[:] = True
    load.update_time[:] = 0.0
    load.node_usage[:, 0] = [u for _, u, _ in rows]
    state.load = load
    plugin = LoadAwareScheduling(parse_loadaware_args({}, "args"), parse_version(None))
    pod = make_demand(state.resources, {}, {}, name="p", namespace="d", koord_class="koord-batch")
    feasible = plugin.filter(state, pod, now=1.0).feasible.tolist()
    expected = [
        t == 0 or go_round((u + 250) / a * 100) <= t  # incoming BestEffort pod: 250m
        for a, u, t in rows
    ]
    assert feasible == expected


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 16), st.integers(1, 64)), min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(0, 4_000), st.integers(0, 8 * GI)), min_size=1, max_size=40),
    st.sampled_from(PRESETS),
    st.integers(0, 1000),
)
def test_sequential_placement_never_overcommits(
    shapes: list[tuple[int, int]], pods: list[tuple[int, int]], preset: str, seed: int
) -> None:
    # the replay's loop: evaluate, select, bind — the Fit filter keeps every node within allocatable
    state = ClusterState.from_nodes(
        [f"n{i}" for i in range(len(shapes))],
        [{"cpu": c * 1000, "memory": m * GI, "pods": 20} for c, m in shapes],
    )
    profile = load_strategy(preset)
    rng = np.random.default_rng(seed)
    for cpu, memory in pods:
        pod = make_demand(
            state.resources,
            {"cpu": cpu, "memory": memory},
            {"cpu": cpu or 100, "memory": memory or 200 * 2**20},
            name="p",
            namespace="d",
        )
        node = profile.select(profile.evaluate(state, pod), rng)
        if node is not None:
            state.bind(node, pod)
        assert (state.requested <= state.allocatable).all()
        assert (state.pod_count <= state.allowed_pods).all()
