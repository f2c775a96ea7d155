"""The replay's incremental scorer gives exactly what the scheduling core gives.

``ScoreCache`` (per-shape caches, compiled numpy rows, plain-Python rows for a few changed nodes)
must choose the same node as ``profile.select(profile.evaluate(...))`` with the same generator,
for every preset it accelerates, on random clusters with awkward nodes (memory allocatable 0,
over-committed, GPUs) and awkward pods (no requests, GPU requests).
"""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.replay.rows import pair_form, score_rows, score_rows_pair
from analyzer.replay.score_plan import Kernel
from analyzer.replay.scoring import ScoreCache, evaluate_all
from analyzer.scheduling import ClusterState, PodDemand, load_strategy, make_demand

PRESETS = ("kube-default", "most-allocated", "rtcr-binpack")
GI = 2**30


def random_cluster(rng: np.random.Generator, count: int) -> ClusterState:
    allocatable = []
    for i in range(count):
        node = {
            "cpu": int(rng.choice([2000, 4000, 8000, 16000, 32000])),
            "memory": int(rng.choice([4, 8, 16, 64])) * GI,
            "pods": int(rng.choice([3, 8, 110])),
        }
        if i % 7 == 3:
            node["nvidia.com/gpu"] = int(rng.choice([1, 4]))
        if i % 11 == 5:
            node["memory"] = 0  # a node reporting no memory: the resource is skipped
        allocatable.append(node)
    return ClusterState.from_nodes([f"n{i}" for i in range(count)], allocatable)


def random_pod(rng: np.random.Generator, state: ClusterState, k: int) -> PodDemand:
    kind = rng.integers(6)
    if kind == 0:  # BestEffort: no requests, non-zero defaults only
        requests: dict[str, int] = {}
        nonzero = {"cpu": 100, "memory": 200 * 2**20}
    else:
        cpu = int(rng.choice([50, 250, 500, 1000, 3000, 7000]))
        memory = int(rng.choice([64, 256, 1024, 4096, 20000])) * 2**20
        requests = {"cpu": cpu, "memory": memory}
        nonzero = dict(requests)
        if kind == 5:
            requests["nvidia.com/gpu"] = 1
    return make_demand(state.resources, requests, nonzero, name=f"p{k}", namespace="t")


@pytest.mark.parametrize("preset", PRESETS)
def test_cache_chooses_what_the_core_chooses(preset: str) -> None:
    profile = load_strategy(preset)
    rng = np.random.default_rng(42)
    state = random_cluster(rng, 40)
    naive = random_cluster(np.random.default_rng(42), 40)
    active = np.ones(40, dtype=bool)
    active[[2, 9]] = False  # nodes not (yet) in the cluster
    cache = ScoreCache(profile, state, active)
    assert cache.kernel is not None
    pick_fast, pick_naive = np.random.default_rng(7), np.random.default_rng(7)
    bound: list[tuple[int, PodDemand]] = []
    shapes: dict[bytes, PodDemand] = {}
    placed = 0
    for k in range(600):
        if bound and rng.random() < 0.35:  # a departure
            node, pod = bound.pop(int(rng.integers(len(bound))))
            state.unbind(node, pod)
            naive.unbind(node, pod)
            cache.touch(node)
            continue
        pod = random_pod(rng, state, k)
        key = pod.requests.tobytes() + pod.nonzero.tobytes()
        pod = shapes.setdefault(key, pod)
        evaluation = profile.evaluate(naive, pod, 0.0)
        evaluation.feasible = evaluation.feasible & active
        expected = profile.select(evaluation, pick_naive)
        got = cache.choose(key, pod, 0.0, pick_fast)
        assert got == expected, f"pod {k}"
        if got is not None:
            state.bind(got, pod)
            naive.bind(got, pod)
            cache.touch(got)
            bound.append((got, pod))
            placed += 1
    assert placed > 200


@pytest.mark.parametrize("preset", PRESETS)
def test_row_scorers_equal_profile_evaluate(preset: str) -> None:
    profile = load_strategy(preset)
    rng = np.random.default_rng(3)
    state = random_cluster(rng, 60)
    for k in range(200):  # load the nodes unevenly, some beyond allocatable
        pod = random_pod(rng, state, k)
        state.bind(int(rng.integers(60)), pod)
    active = np.ones(60, dtype=bool)
    kernel = Kernel(profile)
    rows = list(range(60))
    for k in range(60):
        pod = random_pod(rng, state, 1000 + k)
        evaluation = profile.evaluate(state, pod, 0.0)
        feasible, total = evaluate_all(profile, state, pod, active)
        assert np.array_equal(feasible, evaluation.feasible)
        assert np.array_equal(total, evaluation.total)
        plan = kernel.plan(state, pod)
        # the row scorers compute the resource plugins; kube-default's TaintToleration and
        # NodeAffinity scores (static per shape, here the same on every node) come on top
        resources = evaluation.total - sum(
            w.weight * evaluation.scores[w.plugin.name]
            for w in profile.scorers
            if getattr(w.plugin, "static_score", False) and w.plugin.name in evaluation.scores
        )
        scalar = score_rows(state, plan.rows, rows, active)
        assert [ok for ok, _ in scalar] == evaluation.feasible.tolist()
        assert [t for _, t in scalar] == resources.tolist()
        form = pair_form(plan.rows)
        if form is not None:
            inlined = score_rows_pair(state, plan.rows, form, rows, active)
            expected = [
                int(t) if ok else None for ok, t in zip(evaluation.feasible, resources, strict=True)
            ]
            assert inlined == expected


def test_load_aware_profile_is_scored_by_the_core_itself() -> None:
    profile = load_strategy("koord-loadaware")
    state = random_cluster(np.random.default_rng(1), 5)
    cache = ScoreCache(profile, state, np.ones(5, dtype=bool), dynamic=True)
    assert cache.kernel is None and cache.notes
