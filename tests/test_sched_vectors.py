"""Every transcribed upstream vector, run through ``analyzer score`` (the CLI) and compared.

The expectations are the upstream unit tests' asserted values (kube-scheduler, Koordinator), not
values produced by this code. Function-level vectors (broken-linear shape, utilisation, request
aggregation, estimator, pod-assign cache, deadlines, aggregated-usage selection) call the same
functions the plugins use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from sched_vectors import (
    NOW,
    koord_args,
    koord_pod,
    koord_scenario,
    kube_pod,
    kube_scenario,
    load,
    node_metric,
    relative_time,
)

from analyzer.cli import main
from analyzer.core.quantity import resource_value
from analyzer.scheduling.objects import parse_pod
from analyzer.scheduling.plugins.loadaware.args import (
    DEFAULT_SCALING_FACTORS,
    LoadAwareArgs,
    estimate_pod,
    parse_loadaware_args,
)
from analyzer.scheduling.plugins.loadaware.cache import (
    AssignedPod,
    build_load_inputs,
    estimation_deadline,
    parse_node_metric,
)
from analyzer.scheduling.plugins.noderesources.fit import (
    FitArgs,
    NodeResourcesFit,
    ShapePoint,
    broken_linear,
    broken_linear_array,
    scaled_utilization,
)
from analyzer.scheduling.plugins.noderesources.resource_allocation import ResourceSpec
from analyzer.scheduling.scenario import build_scenario
from analyzer.scheduling.state import ClusterState, make_demand
from analyzer.scheduling.versions import parse_version

KUBE = load("kube-score-vectors.yaml")
KOORD = load("koord-loadaware-vectors.yaml")


def run_score(tmp_path: Path, scenario: dict[str, Any]) -> tuple[int, dict[str, Any] | None, str]:
    """Write the scenario, run ``analyzer score`` and return (exit code, JSON, stderr)."""
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    result = CliRunner().invoke(main, ["score", str(path)])
    payload = json.loads(result.stdout) if result.exit_code == 0 else None
    return result.exit_code, payload, result.stderr


def _ids(cases: list[dict[str, Any]], key: str = "name") -> list[str]:
    return [str(c[key]) for c in cases]


SCORED = [c for c in KUBE["cases"] if c.get("expected_status") != "Error"]
INTERNAL_ERROR = [c for c in KUBE["cases"] if c.get("expected_status") == "Error"]


@pytest.mark.parametrize("case", SCORED, ids=_ids(SCORED))
def test_kube_vector_through_cli(case: dict[str, Any], tmp_path: Path) -> None:
    code, payload, stderr = run_score(tmp_path, kube_scenario(case))
    if "expected_config_error" in case:
        assert code == 2, stderr
        assert case["expected_config_error"]["field"] in stderr
        return
    assert code == 0, stderr
    assert payload is not None
    scores = {n["name"]: n["scores"] for n in payload["nodes"]}
    if case.get("expected_prescore_status") == "Skip":
        assert all(case["plugin"] not in s for s in scores.values())
        return
    got = {name: scores[name][case["plugin"]] for name in case["expected"]}
    assert got == case["expected"]


@pytest.mark.parametrize("case", INTERNAL_ERROR, ids=_ids(INTERNAL_ERROR))
def test_kube_internal_args_without_resources_score_zero(case: dict[str, Any]) -> None:
    # The upstream test bypasses v1 defaulting (an empty resource list is impossible via the API,
    # where it defaults to cpu+memory), so the plugin runs with internal args on the scenario's
    # state: score() fails with "resources not found" and every node scores 0.
    scenario = kube_scenario(case)
    scenario["scheduler"]["profiles"][0]["pluginConfig"] = []
    built = build_scenario(scenario)
    plugin = NodeResourcesFit(FitArgs(strategy=case["strategy"], resources=()), built.version)
    scores = plugin.score(built.state, built.pod, built.now).tolist()
    assert dict(zip(built.state.node_names, scores, strict=True)) == case["expected"]


def test_doc_example_on_the_legacy_scale(tmp_path: Path) -> None:
    case = next(c for c in KUBE["cases"] if c["name"] == "doc-binpacking-example-binary-units")
    scenario = kube_scenario(case)
    scenario["kubernetesVersion"] = "1.16"
    code, payload, stderr = run_score(tmp_path, scenario)
    assert code == 0, stderr
    assert payload is not None
    got = {n["name"]: n["scores"]["NodeResourcesFit"] for n in payload["nodes"]}
    assert got == case["documented_scores_0_to_10"]


@pytest.mark.parametrize(
    "points",
    KUBE["function_cases"]["broken_linear_function"]["cases"],
    ids=lambda p: str(p["points"]),
)
def test_broken_linear_function(points: dict[str, Any]) -> None:
    shape = [(p["utilization"], p["score"]) for p in points["points"]]
    inputs = np.array([a for a, _ in points["assertions"]], dtype=np.int64)
    expected = [b for _, b in points["assertions"]]
    assert [broken_linear(shape, int(p)) for p in inputs] == expected
    assert broken_linear_array(shape, inputs).tolist() == expected


@pytest.mark.parametrize("case", KUBE["function_cases"]["scaled_utilization"]["cases"], ids=str)
def test_scaled_utilization(case: dict[str, int]) -> None:
    assert scaled_utilization(case["requested"], case["capacity"]) == case["want"]


@pytest.mark.parametrize("case", KUBE["function_cases"]["rtcr_scorer_overflow"]["cases"], ids=str)
def test_rtcr_scorer_overflow(case: dict[str, Any]) -> None:
    # the shape is given on the internal 0-100 scale; the API shape is that divided by 10
    shape = tuple(ShapePoint(u, s // 10) for u, s in case["shape"])
    args = FitArgs("RequestedToCapacityRatio", (ResourceSpec("cpu", 1),), shape)
    state = ClusterState.from_nodes(["n"], [{"cpu": case["capacity"], "memory": 1}])
    pod = make_demand(
        state.resources,
        {"cpu": case["requested"]},
        {"cpu": case["requested"]},
        name="p",
        namespace="d",
    )
    score = NodeResourcesFit(args, parse_version(None)).score(state, pod, 0.0)
    assert int(score[0]) == case["want"]


@pytest.mark.parametrize(
    "case", KUBE["function_cases"]["pod_request_aggregation"]["cases"], ids=lambda c: c["name"]
)
def test_pod_request_aggregation(case: dict[str, Any]) -> None:
    demand = parse_pod(kube_pod(case["pod"], "p"), "pod").demand(("cpu", "memory"))
    assert demand.nonzero.tolist() == [
        case["expected"]["cpu_milli"],
        case["expected"]["memory_bytes"],
    ]


# ---------------------------------------------------------------- Koordinator


@pytest.mark.parametrize("case", KOORD["filter_cases"], ids=_ids(KOORD["filter_cases"], "id"))
def test_koord_filter_through_cli(case: dict[str, Any], tmp_path: Path) -> None:
    code, payload, stderr = run_score(tmp_path, koord_scenario(case, "filter"))
    assert code == 0, stderr
    assert payload is not None
    node = payload["nodes"][0]
    expected = case["expected"]
    assert node["feasible"] is (expected["status"] == "Success")
    assert node["reasons"] == ([] if expected["reason"] is None else [expected["reason"]])


@pytest.mark.parametrize("case", KOORD["score_cases"], ids=_ids(KOORD["score_cases"], "id"))
def test_koord_score_through_cli(case: dict[str, Any], tmp_path: Path) -> None:
    code, payload, stderr = run_score(tmp_path, koord_scenario(case, "score"))
    assert code == 0, stderr
    assert payload is not None
    assert payload["nodes"][0]["scores"]["LoadAwareScheduling"] == case["expected"]["score"]


def _args(case: dict[str, Any]) -> LoadAwareArgs:
    # internal args as the estimator test builds them (no validation: est-05 uses factor 110)
    raw = case.get("args") or {}
    factors = {**DEFAULT_SCALING_FACTORS, **(raw.get("estimatedScalingFactors_input") or {})}
    return LoadAwareArgs(
        scaling_factors=factors, allow_customize=raw.get("allowCustomizeEstimation", False)
    )


@pytest.mark.parametrize(
    "case", KOORD["estimator_pod_cases"], ids=_ids(KOORD["estimator_pod_cases"], "id")
)
def test_koord_estimator(case: dict[str, Any]) -> None:
    demand = parse_pod(koord_pod(case["pod"]), "pod").demand(("cpu", "memory"))
    assert estimate_pod(demand, _args(case)) == case["expected"]


@pytest.mark.parametrize(
    "case", KOORD["estimator_node_cases"], ids=_ids(KOORD["estimator_node_cases"], "id")
)
def test_koord_node_estimate(case: dict[str, Any], tmp_path: Path) -> None:
    from analyzer.scheduling.plugins.loadaware.plugin import estimate_node_allocatable

    node = case["node"]
    allocatable = {k: resource_value(k, v) for k, v in node["allocatable"].items()}
    got = estimate_node_allocatable(allocatable, node.get("annotations") or {})
    assert got == {k: resource_value(k, v) for k, v in case["expected"].items()}


@pytest.mark.parametrize(
    "case", KOORD["assign_cache_cases"], ids=_ids(KOORD["assign_cache_cases"], "id")
)
def test_koord_pod_assign_cache(case: dict[str, Any]) -> None:
    args = parse_loadaware_args(koord_args(case["effective_args"]), "args")
    metric = parse_node_metric(node_metric(case["node_metric"], "n"), "metric")
    pods = []
    for spec in case["assigned_pods"]:
        obj = parse_pod(koord_pod(spec, "n"), "pod")
        pods.append(
            AssignedPod(
                "n", obj.demand(("cpu", "memory")), obj.scheduled_time, obj.initialized_time
            )
        )
    inputs = build_load_inputs(["n"], {"n": metric}, pods, args, NOW.timestamp())
    expected = case["expected"]
    for field, table in (
        ("prodUsage", inputs.prod_usage),
        ("nodeDelta", inputs.node_delta),
        ("prodDelta", inputs.prod_delta),
        ("nodeEstimated", inputs.node_estimated),
    ):
        want = {r: resource_value(r, expected[field][r]) for r in ("cpu", "memory")}
        assert {r: int(inputs.column(table, r)[0]) for r in ("cpu", "memory")} == want, field


@pytest.mark.parametrize(
    "case", KOORD["estimate_deadline_cases"], ids=_ids(KOORD["estimate_deadline_cases"], "id")
)
def test_koord_estimation_deadline(case: dict[str, Any]) -> None:
    args = parse_loadaware_args(case["args"], "args")
    spec = dict(case["pod"] or {})
    obj = parse_pod(koord_pod(spec, "n"), "pod")
    pod = AssignedPod("n", obj.demand(("cpu", "memory")), obj.scheduled_time, obj.initialized_time)
    timestamp = parse_time_s(relative_time(case["assign_timestamp"]))
    got = estimation_deadline(pod, timestamp, args)
    want = case["expected_deadline"]
    if str(want).startswith("zero"):
        assert got is None
    else:
        assert got == parse_time_s(relative_time(want))


def parse_time_s(text: str | None) -> float:
    from analyzer.core.durations import parse_time

    assert text is not None
    return parse_time(text).timestamp()


@pytest.mark.parametrize(
    "case",
    KOORD["aggregated_usage_selection_cases"],
    ids=_ids(KOORD["aggregated_usage_selection_cases"], "id"),
)
def test_koord_aggregated_usage_selection(case: dict[str, Any], tmp_path: Path) -> None:
    # Score an empty BestEffort pod (estimate 250m) with aggregated scoring; the explained
    # estimated cpu minus 250m is the usage the plugin selected.
    metric = {
        "update_time": "now",
        "node_usage": case.get("node_usage") or {},
        "aggregated_node_usages": [
            {
                "duration_str": e["duration"],
                "usage": {case["aggregation_type"]: e[case["aggregation_type"]]},
            }
            for e in case["aggregated_node_usages"]
            if e.get(case["aggregation_type"])
        ],
    }
    scenario = koord_scenario(
        {
            "node": {"allocatable": {"cpu": "96", "memory": "512Gi"}},
            "node_metric": metric,
            "effective_args": {
                "aggregated": {
                    "scoreAggregationType": case["aggregation_type"],
                    "scoreAggregatedDuration": case["requested_duration"] or None,
                }
            },
            "incoming_pod": None,
        },
        "score",
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    result = CliRunner().invoke(main, ["score", str(path), "--explain"])
    assert result.exit_code == 0, result.stderr
    line = next(li for li in result.stdout.splitlines() if "LoadAwareScheduling  cpu" in li)
    estimated_cpu = int(line.split()[3])
    assert estimated_cpu - 250 == resource_value("cpu", case["expected"]["cpu"])


@pytest.mark.parametrize(
    "case", KOORD["koordlet_percentile_cases"], ids=_ids(KOORD["koordlet_percentile_cases"], "id")
)
def test_koordlet_nearest_rank_percentile(case: dict[str, Any]) -> None:
    # koordlet's percentile lives in the aggregation module (analyzer.usage.percentiles); the vector
    # file carries it, so it is checked here too
    from analyzer.usage.percentiles import quantile

    assert quantile(case["samples"], case["percentile"], "nearest-rank") == case["expected"]


@pytest.mark.parametrize(
    "case",
    [c for c in KOORD["estimator_pod_cases"] if c["id"] != "est-05"],
    ids=lambda c: str(c["id"]),
)
def test_koord_estimator_through_cli(case: dict[str, Any], tmp_path: Path) -> None:
    # An idle node (fresh NodeMetric, zero usage): the explained estimated usage is the
    # incoming pod's estimate. est-05 uses factor 110, which v1 validation rejects (>100).
    raw = case.get("args") or {}
    args = {"allowCustomizeEstimation": raw.get("allowCustomizeEstimation", False)}
    if raw.get("estimatedScalingFactors_input"):
        args["estimatedScalingFactors"] = raw["estimatedScalingFactors_input"]
    scenario = koord_scenario(
        {
            "node": {"allocatable": {"cpu": "1000", "memory": "4Ti"}},
            "node_metric": {"update_time": "now", "node_usage": {"cpu": "0", "memory": "0"}},
            "effective_args": args,
            "incoming_pod": case["pod"],
        },
        "score",
    )
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario))
    result = CliRunner().invoke(main, ["score", str(path), "--explain"])
    assert result.exit_code == 0, result.stderr
    got = {}
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) > 3 and parts[0] == "LoadAwareScheduling" and parts[1] in ("cpu", "memory"):
            got[parts[1]] = int(parts[3])
    assert got == case["expected"]
