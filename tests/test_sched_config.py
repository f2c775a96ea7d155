"""Configuration formats, validation errors (exit 2 naming the field), presets and scenario files."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.scheduling.config import parse_kube_scheduler_configuration
from analyzer.scheduling.strategies import load_strategy
from analyzer.scheduling.versions import parse_version

SCENARIOS = Path(__file__).parent / "data" / "scenarios"
DOC = yaml.safe_load((SCENARIOS / "score-binpacking-doc.yaml").read_text())
LOADAWARE = yaml.safe_load((SCENARIOS / "score-loadaware.yaml").read_text())


def score(tmp_path: Path, doc: dict[str, Any], *extra: str) -> Any:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    return CliRunner().invoke(main, ["score", str(path), *extra])


def scores_of(result: Any, plugin: str = "NodeResourcesFit") -> dict[str, int]:
    assert result.exit_code == 0, result.stderr
    return {n["name"]: n["scores"][plugin] for n in json.loads(result.stdout)["nodes"]}


def test_worked_examples_score_as_documented(tmp_path: Path) -> None:
    # header of the example: 60/69 on the current scale, 5/7 with kubernetesVersion 1.16
    assert scores_of(score(tmp_path, DOC)) == {"node1": 60, "node2": 69}
    legacy = {**DOC, "kubernetesVersion": "1.16"}
    assert scores_of(score(tmp_path, legacy)) == {"node1": 5, "node2": 7}
    # v1.17–v1.21 round utilisation up: node1 cpu 37.5 → 38 → 539/9 → 60; node2 unchanged 69
    assert scores_of(score(tmp_path, {**DOC, "kubernetesVersion": "1.20"})) == {
        "node1": 60,
        "node2": 69,
    }
    result = score(tmp_path, LOADAWARE)
    assert scores_of(result, "LoadAwareScheduling") == {"test-node-1": 72}


def _fit_args(doc: dict[str, Any]) -> dict[str, Any]:
    args: dict[str, Any] = doc["scheduler"]["profiles"][0]["pluginConfig"][0]["args"]
    return args


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (
            lambda a: a["scoringStrategy"]["resources"][0].update(weight=-1),
            "scoringStrategy.resources[0].weight",
        ),
        (
            lambda a: a["scoringStrategy"]["resources"][2].update(weight=101),
            "scoringStrategy.resources[2].weight",
        ),
        (
            lambda a: a["scoringStrategy"]["requestedToCapacityRatio"]["shape"][1].update(
                utilization=0
            ),
            "requestedToCapacityRatio.shape[1].utilization",
        ),
        (
            lambda a: a["scoringStrategy"]["requestedToCapacityRatio"]["shape"][1].update(score=11),
            "requestedToCapacityRatio.shape[1].score",
        ),
        (lambda a: a["scoringStrategy"].update(type="Fancy"), "scoringStrategy.type"),
        (
            lambda a: a["scoringStrategy"].pop("requestedToCapacityRatio"),
            "scoringStrategy.requestedToCapacityRatio",
        ),
        (
            lambda a: a["scoringStrategy"]["requestedToCapacityRatio"].update(shape=[]),
            "requestedToCapacityRatio.shape",
        ),
        (lambda a: a.update(ignoredResourceGroups=["example.com/x"]), "ignoredResourceGroups[0]"),
    ],
)
def test_invalid_fit_args_exit_2_naming_the_field(tmp_path: Path, mutate: Any, field: str) -> None:
    doc = copy.deepcopy(DOC)
    mutate(_fit_args(doc))
    result = score(tmp_path, doc)
    assert result.exit_code == 2
    assert field in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.update(nodez=[]), "nodez"),
        (lambda d: d.pop("pod"), "pod"),
        (lambda d: d.update(kubernetesVersion=1.3), "kubernetesVersion"),
        (
            lambda d: d["nodes"][0]["status"]["allocatable"].update(cpu="lots"),
            "nodes[0].status.allocatable.cpu",
        ),
        (lambda d: d["nodes"][1]["metadata"].update(name="node1"), "nodes[1].metadata.name"),
        (
            lambda d: d["pod"]["spec"]["containers"][0]["resources"]["requests"].update(
                memory="-1Gi"
            ),
            "pod.spec.containers[0].resources.requests.memory",
        ),
        (
            lambda d: d["scheduler"]["profiles"][0]["plugins"]["score"]["enabled"][0].update(
                name="Nope"
            ),
            "Nope",
        ),
        (
            lambda d: d["scheduler"]["profiles"][0]["plugins"]["score"]["enabled"][0].update(
                weight=-3
            ),
            "weight",
        ),
        (
            lambda d: d["scheduler"].update(apiVersion="kubescheduler.config.k8s.io/v9"),
            "apiVersion",
        ),
        (
            lambda d: d["scheduler"]["profiles"][0]["pluginConfig"].append(
                d["scheduler"]["profiles"][0]["pluginConfig"][0]
            ),
            "pluginConfig[1].name",
        ),
    ],
)
def test_invalid_scenarios_exit_2_naming_the_field(tmp_path: Path, mutate: Any, field: str) -> None:
    doc = copy.deepcopy(DOC)
    mutate(doc)
    result = score(tmp_path, doc)
    assert result.exit_code == 2, result.stdout
    assert field in result.stderr


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"resourceWeights": {"cpu": 0}}, "resourceWeights.cpu"),
        ({"usageThresholds": {"cpu": 101}}, "usageThresholds.cpu"),
        ({"nodeMetricExpirationSeconds": 0}, "nodeMetricExpirationSeconds"),
        ({"estimatedScalingFactors": {"cpu": 0}}, "estimatedScalingFactors.cpu"),
        ({"resourceWeights": {"nvidia.com/gpu": 1}}, "estimatedScalingFactors.nvidia.com/gpu"),
        ({"aggregated": {"usageAggregationType": "p42"}}, "aggregated.usageAggregationType"),
        ({"dominantResourceWeight": 200}, "dominantResourceWeight"),
    ],
)
def test_invalid_loadaware_args(tmp_path: Path, args: dict[str, Any], field: str) -> None:
    doc = copy.deepcopy(LOADAWARE)
    doc["scheduler"]["profiles"][0]["pluginConfig"][0]["args"].update(args)
    result = score(tmp_path, doc)
    assert result.exit_code == 2
    assert field in result.stderr


def test_balanced_weights_must_be_one() -> None:
    doc = {
        "profiles": [
            {
                "pluginConfig": [
                    {
                        "name": "NodeResourcesBalancedAllocation",
                        "args": {"resources": [{"name": "cpu", "weight": 2}]},
                    }
                ]
            }
        ]
    }
    with pytest.raises(InputError, match=r"resources\[0\]\.weight"):
        parse_kube_scheduler_configuration(doc)


def test_defaults_and_multipoint_merging() -> None:
    # no configuration at all = kube-scheduler defaults: the modelled default filters in the v1
    # default plugin order (NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts,
    # NodeResourcesFit: upstream's getDefaultPlugins runs NodeUnschedulable first); the v1 default
    # score weights of the modelled ones: TaintToleration 3, NodeAffinity 2, Fit 1, Balanced 1,
    # ImageLocality 1
    # (kube-scheduler's getDefaultPlugins); PrioritySort orders the queue, DefaultPreemption is
    # the post-filter; replays run PodTopologySpread and InterPodAffinity too (replay/topology.py),
    # so the implicit defaults are the same for replays and ``analyzer score`` scenarios
    spec = parse_kube_scheduler_configuration(
        {"apiVersion": "kubescheduler.config.k8s.io/v1"}
    ).profiles[0]
    assert spec.filters == [
        "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
        "PodTopologySpread", "InterPodAffinity",
    ]  # fmt: skip
    assert spec.scores == [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ]
    assert spec.queue_sort == ["PrioritySort"]
    assert spec.post_filters == ["DefaultPreemption"]
    # ``analyzer score`` scenarios get the v1 defaults with PodTopologySpread (filter after
    # NodeResourcesFit, score weight 2 between Fit and Balanced, as v1 getDefaultPlugins orders)
    full = parse_kube_scheduler_configuration(
        {"apiVersion": "kubescheduler.config.k8s.io/v1"}, full_defaults=True
    ).profiles[0]
    # and InterPodAffinity right after it (filter, score weight 2), as v1 getDefaultPlugins orders
    assert full.filters == spec.filters
    assert full.scores == [
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
    ]
    assert spec.args["NodeResourcesFit"].strategy == "LeastAllocated"
    # a point's enabled entry overrides the multiPoint weight; disabling one plugin keeps the other
    doc = {
        "profiles": [
            {
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "LoadAwareScheduling", "weight": 4}]},
                    "score": {
                        "disabled": [{"name": "NodeResourcesBalancedAllocation"}],
                        "enabled": [{"name": "NodeResourcesFit", "weight": 5}],
                    },
                }
            }
        ]
    }
    spec = parse_kube_scheduler_configuration(doc).profiles[0]
    assert dict(spec.scores) == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 5,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "ImageLocality": 1,
        "LoadAwareScheduling": 4,
    }
    assert spec.filters == [
        "NodeUnschedulable",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
        "LoadAwareScheduling",
    ]


LEGACY_POLICY: dict[str, Any] = {
    "kind": "Policy",
    "apiVersion": "v1",
    "predicates": [{"name": "PodFitsResources"}, {"name": "MatchNodeSelector"}],
    "priorities": [
        {
            "name": "RequestedToCapacityRatioPriority",
            "weight": 2,
            "argument": {
                "requestedToCapacityRatioArguments": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
                    "resources": [
                        {"name": "intel.com/foo", "weight": 5},
                        {"name": "memory", "weight": 1},
                        {"name": "cpu", "weight": 3},
                    ],
                }
            },
        }
    ],
}


def test_legacy_policy_reproduces_the_bin_packing_page(tmp_path: Path) -> None:
    doc = {**copy.deepcopy(DOC), "scheduler": LEGACY_POLICY, "kubernetesVersion": "1.16"}
    result = score(tmp_path, doc)
    assert scores_of(result, "RequestedToCapacityRatioPriority") == {"node1": 5, "node2": 7}
    payload = json.loads(result.stdout)
    assert payload["nodes"][1]["total"] == 14  # priority weight 2 × 7
    assert any("MatchNodeSelector" in n for n in payload["notes"])


def test_legacy_policy_rejects_bad_weight_and_score(tmp_path: Path) -> None:
    bad = copy.deepcopy(LEGACY_POLICY)
    bad["priorities"][0]["weight"] = 0
    result = score(tmp_path, {**copy.deepcopy(DOC), "scheduler": bad})
    assert result.exit_code == 2 and "priorities[0].weight" in result.stderr
    bad = copy.deepcopy(LEGACY_POLICY)
    bad["priorities"][0]["argument"]["requestedToCapacityRatioArguments"]["shape"][0]["score"] = 12
    result = score(tmp_path, {**copy.deepcopy(DOC), "scheduler": bad})
    assert result.exit_code == 2 and "shape[0].score" in result.stderr


def test_separate_list_files_and_config(tmp_path: Path) -> None:
    files: dict[str, Any] = {
        "nodes": {"apiVersion": "v1", "kind": "List", "items": DOC["nodes"]},
        "pods": {"apiVersion": "v1", "kind": "List", "items": DOC["pods"]},
        "pod": DOC["pod"],
        "config": DOC["scheduler"],
    }
    args: list[str] = ["score"]
    for option, content in files.items():
        path = tmp_path / f"{option}.yaml"
        path.write_text(yaml.safe_dump(content))
        args += [f"--{option}", str(path)]
    result = CliRunner().invoke(main, args)
    assert scores_of(result) == {"node1": 60, "node2": 69}
    missing = CliRunner().invoke(
        main,
        ["score", "--nodes", str(tmp_path / "nodes.yaml"), "--pod", str(tmp_path / "nope.yaml")],
    )
    assert missing.exit_code == 2 and "--pod" in missing.stderr


def test_explain_table_shows_inputs(tmp_path: Path) -> None:
    result = score(tmp_path, DOC, "--explain")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    # node1 cpu: 1000m bound + 2000m incoming of 8000m = 37.5 % → raw 37 on the identity shape
    assert "cpu (w3)" in text and "3000" in text and "37.50%" in text
    assert "selected (tie set): node2" in text


def test_infeasible_nodes_are_scored_and_explained(tmp_path: Path) -> None:
    doc = copy.deepcopy(DOC)
    doc["nodes"][1]["status"]["allocatable"]["cpu"] = "7"  # 6 bound + 2 incoming > 7
    payload = json.loads(score(tmp_path, doc).stdout)
    node2 = payload["nodes"][1]
    assert node2["feasible"] is False and node2["reasons"] == ["Insufficient cpu"]
    assert "NodeResourcesFit" in node2["scores"]
    assert payload["selected"] == ["node1"]


def test_strategies_command_and_presets() -> None:
    result = CliRunner().invoke(main, ["strategies"])
    assert result.exit_code == 0
    for name in ("kube-default", "most-allocated", "rtcr-binpack", "koord-loadaware"):
        assert name in result.stdout
        profile = load_strategy(name)
        assert profile.scorers
    weights = {w.plugin.name: w.weight for w in load_strategy("kube-default").scorers}
    # the v1 default profile's weights of the plugins the analyzer models (getDefaultPlugins)
    assert weights == {
        "TaintToleration": 3,
        "NodeAffinity": 2,
        "NodeResourcesFit": 1,
        "PodTopologySpread": 2,
        "InterPodAffinity": 2,
        "NodeResourcesBalancedAllocation": 1,
        "ImageLocality": 1,
    }
    with pytest.raises(InputError, match="kube-default"):
        load_strategy("kube-defualt")


def test_strategy_from_file(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(yaml.safe_dump(DOC["scheduler"]))
    profile = load_strategy(str(path), "1.16")
    assert [w.plugin.name for w in profile.scorers] == ["NodeResourcesFit"]


def test_version_parsing() -> None:
    assert str(parse_version("v1.30.2")) == "1.30"
    assert parse_version(None).balanced_delta
    assert parse_version("1.16").legacy_scale
    with pytest.raises(InputError, match="quote"):
        parse_version(1.3)


def test_pod_level_resources_replace_the_container_aggregate() -> None:
    from analyzer.scheduling.objects import parse_pod

    pod = parse_pod(
        {
            "metadata": {"name": "p"},
            "spec": {
                "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "4"}},
                "overhead": {"cpu": "100m"},
                "containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "500m"}}},
                    {"name": "b"},
                ],
            },
        },
        "pod",
    )
    demand = pod.demand(("cpu", "memory"))
    # cpu: pod level 2000m + overhead 100m, no 100m default for container b
    assert demand.requests.tolist() == [2100, 0]
    # memory is not set at pod level: two containers without memory → 2 × 200Mi default
    assert demand.nonzero.tolist() == [2100, 2 * 200 * 2**20]
    assert demand.limits.tolist() == [4100, 0]


def test_score_says_where_its_kubernetes_version_came_from(tmp_path: Path) -> None:
    # issue 24 item 1: a scenario without kubernetesVersion is scored with the default, and says so
    plain = {k: v for k, v in DOC.items() if k != "kubernetesVersion"}
    cases = [
        (plain, (), "default"),
        ({**plain, "kubernetesVersion": "1.20"}, (), "scenario"),
        (
            {**plain, "kubernetesVersion": "1.20"},
            ("--kubernetes-version", "1.16"),
            "--kubernetes-version",
        ),
    ]
    for doc, extra, source in cases:
        result = score(tmp_path, doc, *extra)
        assert result.exit_code == 0, result.stderr
        out = json.loads(result.stdout)
        assert out["kubernetesVersionSource"] == source
    assert json.loads(score(tmp_path, plain).stdout)["kubernetesVersion"] == str(
        parse_version(None)
    )
    explained = score(tmp_path, plain, "--explain")
    assert explained.exit_code == 0
    assert "(default)" in explained.stdout.splitlines()[0]
