"""TaintToleration and NodeAffinity filters: hand-built scenarios, upstream reason texts, fast path.

Expectations follow the Kubernetes rules (core/v1 ``ToleratesTaint``, NodeSelectorRequirement
operators) worked out by hand for each case; the replay's ``ScoreCache`` must choose exactly what
``Profile.evaluate`` + ``select`` choose when nodes are tainted and pods carry constraints.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from analyzer.core.errors import InputError
from analyzer.replay.scoring import ScoreCache
from analyzer.scheduling import ClusterState, load_strategy, make_demand
from analyzer.scheduling.constraint_types import (
    PodConstraints,
    Requirement,
    Taint,
    Toleration,
    parse_pod_constraints,
)
from analyzer.scheduling.scenario import build_scenario

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def _node(name: str, taints: list[dict[str, str]] | None = None, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def _pod(**spec: Any) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
    return {
        "metadata": {"name": "p", "namespace": "d"},
        "spec": {"containers": [container], **spec},
    }


def _evaluate(nodes: list[dict[str, Any]], pod: dict[str, Any]) -> Any:
    return build_scenario({"nodes": nodes, "pod": pod}).evaluate()


def test_untolerated_no_schedule_taint_is_infeasible_with_upstream_reason() -> None:
    evaluation = _evaluate([_node("gpu", [GPU_TAINT]), _node("cpu")], _pod())
    assert evaluation.feasible.tolist() == [False, True]
    assert evaluation.reasons(0) == ["node(s) had untolerated taint {nvidia.com/gpu: present}"]
    assert evaluation.reasons(1) == []


def test_matching_equal_toleration_admits_the_node() -> None:
    tolerate = [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"}]
    assert _evaluate([_node("gpu", [GPU_TAINT])], _pod(tolerations=tolerate)).feasible.all()
    wrong_value = [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "absent"}]
    assert not _evaluate([_node("gpu", [GPU_TAINT])], _pod(tolerations=wrong_value)).feasible[0]
    # an effect-specific toleration does not cover a taint with another effect
    only_execute = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}]
    assert not _evaluate([_node("gpu", [GPU_TAINT])], _pod(tolerations=only_execute)).feasible[0]


def test_prefer_no_schedule_does_not_filter_and_no_execute_does() -> None:
    prefer = {"key": "spot", "value": "true", "effect": "PreferNoSchedule"}
    execute = {"key": "maint", "value": "", "effect": "NoExecute"}
    evaluation = _evaluate([_node("a", [prefer]), _node("b", [execute])], _pod())
    assert evaluation.feasible.tolist() == [True, False]
    assert evaluation.reasons(1) == ["node(s) had untolerated taint {maint: }"]


def test_exists_with_empty_key_tolerates_every_taint() -> None:
    taints = [GPU_TAINT, {"key": "dedicated", "value": "db", "effect": "NoExecute"}]
    evaluation = _evaluate([_node("a", taints)], _pod(tolerations=[{"operator": "Exists"}]))
    assert evaluation.feasible.tolist() == [True]


def test_first_untolerated_taint_is_the_one_reported() -> None:
    taints = [GPU_TAINT, {"key": "dedicated", "value": "db", "effect": "NoSchedule"}]
    tolerate_gpu = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
    evaluation = _evaluate([_node("a", taints)], _pod(tolerations=tolerate_gpu))
    assert evaluation.reasons(0) == ["node(s) had untolerated taint {dedicated: db}"]


def test_node_selector_mismatch_has_upstream_reason() -> None:
    nodes = [_node("a", pool="general"), _node("b", pool="memory"), _node("c")]
    evaluation = _evaluate(nodes, _pod(nodeSelector={"pool": "memory"}))
    assert evaluation.feasible.tolist() == [False, True, False]
    assert evaluation.reasons(0) == ["node(s) didn't match Pod's node affinity/selector"]
    assert evaluation.reasons(2) == ["node(s) didn't match Pod's node affinity/selector"]


def test_required_node_affinity_operators() -> None:
    nodes = [
        _node("a", zone="z1", cores="8"),
        _node("b", zone="z2", cores="32"),
        _node("c", cores="x"),
    ]

    def feasible(*expressions: dict[str, Any]) -> list[bool]:
        affinity = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]
                }
            }
        }
        result: list[bool] = _evaluate(nodes, _pod(affinity=affinity)).feasible.tolist()
        return result

    assert feasible({"key": "zone", "operator": "In", "values": ["z2"]}) == [False, True, False]
    # NotIn also admits nodes without the label
    assert feasible({"key": "zone", "operator": "NotIn", "values": ["z2"]}) == [True, False, True]
    assert feasible({"key": "zone", "operator": "Exists"}) == [True, True, False]
    assert feasible({"key": "zone", "operator": "DoesNotExist"}) == [False, False, True]
    # Gt/Lt compare integers; "x" is not an integer so node c never matches
    assert feasible({"key": "cores", "operator": "Gt", "values": ["16"]}) == [False, True, False]
    assert feasible({"key": "cores", "operator": "Lt", "values": ["16"]}) == [True, False, False]
    # requirements within a term are ANDed
    assert feasible(
        {"key": "zone", "operator": "Exists"}, {"key": "cores", "operator": "Gt", "values": ["16"]}
    ) == [False, True, False]


def test_terms_are_ored_and_an_empty_term_matches_nothing() -> None:
    labels = {"zone": "z1"}
    either = PodConstraints(
        required_terms=(
            (Requirement("zone", "In", ("z9",)),),
            (Requirement("zone", "In", ("z1",)),),
        )
    )
    assert either.matches(labels)
    assert not PodConstraints(required_terms=((),)).matches(labels)


def test_toleration_matching_rules() -> None:
    taint = Taint("k", "v", "NoSchedule")
    assert Toleration("k", "Equal", "v", "").tolerates(taint)  # empty effect matches all effects
    assert Toleration("k", "", "v", "NoSchedule").tolerates(taint)  # "" operator means Equal
    assert not Toleration("k", "Equal", "w", "").tolerates(taint)
    assert Toleration("k", "Exists", "", "").tolerates(taint)  # Exists ignores the value
    assert not Toleration("other", "Exists").tolerates(taint)
    assert Toleration("", "Exists").tolerates(taint)


def test_bad_operator_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"tolerations\[0\]\.operator"):
        parse_pod_constraints({"tolerations": [{"key": "k", "operator": "Maybe"}]}, "pod.spec")


def test_presets_enable_both_filters() -> None:
    for preset in ("kube-default", "most-allocated", "rtcr-binpack", "koord-loadaware"):
        names = [f.name for f in load_strategy(preset).filters]
        # upstream's default profile order: NodeUnschedulable first, then the two filters
        assert names[:3] == ["NodeUnschedulable", "TaintToleration", "NodeAffinity"], preset


@pytest.mark.parametrize("preset", ["kube-default", "most-allocated"])
def test_score_cache_honours_constraints_like_the_core(preset: str) -> None:
    profile = load_strategy(preset)
    rng = np.random.default_rng(5)
    count = 30
    gpu_taint = (Taint("nvidia.com/gpu", "present", "NoSchedule"),)

    def cluster() -> ClusterState:
        return ClusterState.from_nodes(
            [f"n{i}" for i in range(count)],
            [{"cpu": 8000, "memory": 32 << 30, "pods": 20} for _ in range(count)],
            labels=[{"pool": "gpu" if i % 3 == 0 else "mem" if i % 3 == 1 else "gen"}
                    for i in range(count)],
            taints=[gpu_taint if i % 3 == 0 else () for i in range(count)],
        )  # fmt: skip

    state, naive = cluster(), cluster()
    active = np.ones(count, dtype=bool)
    cache = ScoreCache(profile, state, active)
    assert cache.kernel is not None
    kinds = [
        PodConstraints(),
        PodConstraints(tolerations=(Toleration("nvidia.com/gpu", "Exists"),)),
        PodConstraints(node_selector=(("pool", "mem"),)),
        PodConstraints(tolerations=(Toleration(operator="Exists"),)),
    ]
    pick_fast, pick_naive = np.random.default_rng(1), np.random.default_rng(1)
    bound: list[tuple[int, Any]] = []
    for k in range(400):
        if bound and rng.random() < 0.3:
            node, pod = bound.pop(int(rng.integers(len(bound))))
            state.unbind(node, pod)
            naive.unbind(node, pod)
            cache.touch(node)
            continue
        kind = int(rng.integers(len(kinds)))
        cpu = int(rng.choice([250, 1000, 3000]))
        requests = {"cpu": cpu, "memory": cpu << 20}
        pod = make_demand(
            state.resources,
            requests,
            requests,
            name=f"p{k}",
            namespace="t",
            constraints=kinds[kind],
        )
        key = pod.requests.tobytes() + bytes([kind])
        evaluation = profile.evaluate(naive, pod, 0.0)
        expected = profile.select(evaluation, pick_naive)
        got = cache.choose(key, pod, 0.0, pick_fast)
        assert got == expected, f"pod {k}"
        if got is not None:
            if kind == 0:
                assert got % 3 != 0  # never on a tainted GPU node
            if kind == 2:
                assert got % 3 == 1  # only the memory pool
            state.bind(got, pod)
            naive.bind(got, pod)
            cache.touch(got)
            bound.append((got, pod))


@pytest.mark.parametrize("preset", ["kube-default", "most-allocated"])
def test_replay_keeps_ordinary_pods_off_tainted_nodes(preset: str) -> None:
    from replay_fixtures import N, P, build

    from analyzer.replay.engine import Strategy, replay
    from analyzer.replay.input import prepare

    # two nodes; "gpu" is tainted and would win for most-allocated (it already holds a GPU pod)
    snapshot = build(
        [N("gpu", cpu=8000), N("cpu", cpu=8000)],
        [P("g1", "gpu", cpu=1000), P("o1", "cpu", cpu=500, start=1), P("o2", "cpu", start=2)],
    )
    snapshot.nodes["taints"] = ['[{"key": "nvidia.com/gpu", "value": "present", '
                                '"effect": "NoSchedule"}]', "[]"]  # fmt: skip
    snapshot.pods["tolerations"] = [
        '[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]',
        "[]",
        "[]",
    ]
    inp = prepare(snapshot)
    # g1 may go to either node (ties broken by seed); without the taint filter, o1/o2 follow it
    # (most-allocated) or avoid it (least-allocated), so some seeds would put them on "gpu"
    for seed in range(4):
        result = replay(inp, Strategy(preset, load_strategy(preset)), seed=seed)
        names = [inp.node_names[i] if i >= 0 else None for i in result.node.tolist()]
        assert names[1:] == ["cpu", "cpu"], seed  # untolerating pods never land on "gpu"
    # and a snapshot without the new columns still replays (defaults: no taints, no constraints)
    old = build([N("a")], [P("x", "a")])
    old.nodes = old.nodes.drop(columns=["taints"])
    old.pods = old.pods.drop(columns=["tolerations", "node_selector"])
    assert replay(prepare(old), Strategy(preset, load_strategy(preset))).node.tolist() == [0]


def test_per_node_reference_loop_filters_like_the_vectorised_core() -> None:
    """The benchmark baseline checks each node's taints and labels directly (no masks, no cache)."""
    from analyzer.scheduling.reference import kube_default_loop

    profile = load_strategy("kube-default")
    gpu_taint = (Taint("nvidia.com/gpu", "present", "NoSchedule"),)
    state = ClusterState.from_nodes(
        [f"n{i}" for i in range(6)],
        [{"cpu": 8000, "memory": 32 << 30, "pods": 20} for _ in range(6)],
        labels=[{"pool": "gpu" if i < 2 else "mem" if i < 4 else "gen"} for i in range(6)],
        taints=[gpu_taint if i < 2 else () for i in range(6)],
    )
    for constraints, allowed in [
        (PodConstraints(), [False, False, True, True, True, True]),
        (PodConstraints(tolerations=(Toleration("nvidia.com/gpu", "Exists"),)), [True] * 6),
        (
            PodConstraints(node_selector=(("pool", "mem"),)),
            [False, False, True, True, False, False],
        ),
    ]:
        pod = make_demand(
            state.resources,
            {"cpu": 500, "memory": 1 << 30},
            {"cpu": 500, "memory": 1 << 30},
            name="p",
            namespace="t",
            constraints=constraints,
        )
        feasible, totals = kube_default_loop(state, pod, taint_affinity=True)
        evaluation = profile.evaluate(state, pod, 0.0)
        assert feasible == allowed
        assert feasible == evaluation.feasible.tolist()
        assert totals == evaluation.total.tolist()
