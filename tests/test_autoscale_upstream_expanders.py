"""The replay's scale-up expanders (``random``, ``least-waste``, ``priority``) against upstream's
expander tests (tests/data/autoscaler/expanders.yaml: waste_test.go TestLeastWaste,
priority_test.go, random_test.go TestRandomExpander).

Each case's options go to ``analyzer.replay.autoscale_scaleup.choose`` as the replay builds them:
one ``Option`` per group, its waste from ``_waste`` on an empty node of the group's shape, the
settings from the config's ``autoscaler:`` section (``parse_settings``: ``expander``,
``priorities``). The pick must be one of upstream's accepted options at every seed, and where
upstream accepts several (a random pick among them) each is picked at some seed. The
least-waste cases with pods also run through ``plan_scale_up``: one waiting pod, one empty slot
per group, the options built by the project's own filters and bin packing."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from autoscale_cases import data

from analyzer.replay.autoscale_scaleup import Option, _waste, choose, plan_scale_up
from analyzer.replay.autoscale_setup import AutoscalerSettings, parse_settings
from analyzer.scheduling.state import ClusterState, PodDemand, make_demand
from analyzer.scheduling.strategies import load_strategy

EXPANDERS = data("expanders.yaml")
SEEDS = range(20)
# the node shape of a group the file gives none (the priority and random cases: neither
# expander reads it)
ANY_SHAPE = {"cpu": 1000, "memory": 2**30, "pods": 110}


def _params() -> list[Any]:
    return [pytest.param(case, id=case["name"]) for case in EXPANDERS["cases"]]


def _options(case: dict[str, Any]) -> list[dict[str, Any]]:
    """The case's options as ``{group, pods}`` (a bare name: an option without pods)."""
    return [{"group": o, "pods": []} if isinstance(o, str) else o for o in case["options"]]


def _settings(case: dict[str, Any]) -> AutoscalerSettings:
    raw: dict[str, Any] = {"expander": case["expander"]}
    if "priorities" in case:
        raw["priorities"] = EXPANDERS["priorities"][case["priorities"]]
    return parse_settings(raw)


def _state(names: list[str]) -> ClusterState:
    """One empty node per group, of the group's shape."""
    shapes = [EXPANDERS["groups"].get(n, ANY_SHAPE) for n in names]
    return ClusterState.from_nodes(names, shapes)


def _demand(state: ClusterState, name: str) -> PodDemand:
    ask = {k: v for k, v in EXPANDERS["pods"][name].items() if k in ("cpu", "memory")}
    return make_demand(state.resources, ask, ask, name=name, namespace="default")


def _check_picks(case: dict[str, Any], picks: list[str]) -> None:
    want = case["want"]
    assert set(picks) <= set(want), (case["upstream"], picks)
    if len(want) > 1:  # upstream picks at random among them: each is reachable
        assert set(picks) == set(want), (case["upstream"], picks)


def test_the_yaml_names_its_sources() -> None:
    assert set(EXPANDERS["upstream"]) == {"least-waste", "priority", "random"}
    assert len(EXPANDERS["cases"]) == 15  # 13 transcribed, 2 written from priority.go
    assert len({c["name"] for c in EXPANDERS["cases"]}) == len(EXPANDERS["cases"])


@pytest.mark.parametrize("case", _params())
def test_the_expander_picks_upstreams_option(case: dict[str, Any]) -> None:
    options = _options(case)
    names = [o["group"] for o in options]
    state = _state(names)
    built = []
    for g, option in enumerate(options):
        demands = [_demand(state, p) for p in option["pods"]]
        waste = _waste(state, g, 1, [d.requests for d in demands])
        built.append(Option(g, [g], list(range(len(demands))), waste))
    settings = _settings(case)
    assert settings.expander == case["expander"]
    picks = [names[choose(built, settings, names, np.random.default_rng(s)).group] for s in SEEDS]
    _check_picks(case, picks)


WITH_PODS = [
    pytest.param(c, id=c["name"]) for c in EXPANDERS["cases"] if all(o["pods"] for o in _options(c))
]


@pytest.mark.parametrize("case", WITH_PODS)
def test_the_scale_up_plan_picks_upstreams_option(case: dict[str, Any]) -> None:
    options = _options(case)
    pods = options[0]["pods"]
    assert all(o["pods"] == pods for o in options)  # one set of pods waits for every option
    names = [o["group"] for o in options]
    state = _state(names)
    demands = [_demand(state, p) for p in pods]
    profile = load_strategy("kube-default")
    settings = _settings(case)
    picks = []
    for seed in SEEDS:
        plan = plan_scale_up(
            state, profile, demands, list(range(len(demands))), [[g] for g in range(len(names))],
            [], [1] * len(names), settings, names, np.random.default_rng(seed), 0.0,
        )  # fmt: skip
        assert plan is not None
        # upstream's option: NodeCount 1 holding every pod
        assert len(plan.slots) == 1 and sorted(plan.pods) == list(range(len(demands)))
        picks.append(names[plan.group])
    _check_picks(case, picks)


def test_the_estimate_orders_pods_by_cpu_and_memory_alone() -> None:
    """``estimator/decreasing_pod_orderer.go`` ``calculatePodScore`` (cluster-autoscaler
    1.36.0): a pod's score is its cpu share plus its memory share of the template's
    allocatable, nothing else. One free node of 4 cores, 16 GiB and 2 GPUs: C (3.6 cores,
    1 GiB) scores 0.9625 and G (0.5 cores, 1 GiB, both GPUs) 0.1875, so C is packed first and
    G, 0.5 cores, no longer fits beside it (0.4 left): the option helps C alone. Counting the
    GPU share too, G (1.1875) would come first and C would not fit."""
    state = ClusterState.from_nodes(
        ["gpu"], [{"cpu": 4000, "memory": 16 * 2**30, "nvidia.com/gpu": 2, "pods": 110}]
    )
    pods = {
        "C": {"cpu": 3600, "memory": 2**30},
        "G": {"cpu": 500, "memory": 2**30, "nvidia.com/gpu": 2},
    }
    demands = [
        make_demand(state.resources, ask, ask, name=name, namespace="default")
        for name, ask in pods.items()
    ]
    plan = plan_scale_up(
        state, load_strategy("kube-default"), demands, [0, 1], [[0]], [], [1],
        parse_settings(None), ["gpu"], np.random.default_rng(0), 0.0,
    )  # fmt: skip
    assert plan is not None and plan.pods == [0], plan
