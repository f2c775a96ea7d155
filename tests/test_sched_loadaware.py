"""LoadAwareScheduling rules on hand-computed scenarios (annotation overrides, prod, dominant, expiry).

Node: 100 cores, 100Gi; NodeMetric reports 60 cores / 10Gi used at NOW. An empty incoming pod is
BestEffort → koord-batch → estimated at 250m / 200Mi (Koordinator's defaults).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from analyzer.scheduling.plugins.registry import PluginType, available, register
from analyzer.scheduling.scenario import build_scenario

GI = 2**30
NOW = "2026-11-01T12:00:00Z"


def scenario(
    args: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
    pods: list[dict[str, Any]] | None = None,
    pods_metric: list[dict[str, Any]] | None = None,
    pod: dict[str, Any] | None = None,
    update: str = NOW,
) -> Any:
    doc = {
        "now": NOW,
        "scheduler": {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "plugins": {
                        "filter": {
                            "disabled": [{"name": "*"}],
                            "enabled": [{"name": "LoadAwareScheduling"}],
                        },
                        "score": {
                            "disabled": [{"name": "*"}],
                            "enabled": [{"name": "LoadAwareScheduling"}],
                        },
                    },
                    "pluginConfig": [{"name": "LoadAwareScheduling", "args": args or {}}],
                }
            ],
        },
        "nodes": [
            {
                "metadata": {"name": "n1", "annotations": annotations or {}},
                "status": {"allocatable": {"cpu": "100", "memory": "100Gi", "pods": "110"}},
            },
            {
                "metadata": {"name": "bare"},
                "status": {"allocatable": {"cpu": "100", "memory": "100Gi", "pods": "110"}},
            },
        ],
        "nodeMetrics": [
            {
                "metadata": {"name": "n1"},
                "spec": {"metricCollectPolicy": {"reportIntervalSeconds": 60}},
                "status": {
                    "updateTime": update,
                    "nodeMetric": {"nodeUsage": {"resources": {"cpu": "60", "memory": "10Gi"}}},
                    "podsMetric": pods_metric or [],
                },
            }
        ],
        "pods": pods or [],
        "pod": pod or {"metadata": {"name": "incoming"}, "spec": {"containers": [{"name": "c"}]}},
    }
    built = build_scenario(doc)
    return built.evaluate()


def test_default_thresholds_pass_and_score() -> None:
    evaluation = scenario()
    # cpu round(60.25) = 60 <= 65; memory round(10.19) = 10 <= 95
    assert evaluation.feasible.tolist() == [True, True]
    # cpu (100000 - 60250) * 100 // 100000 = 39; memory (100Gi - 10Gi - 200Mi) → 89; (39 + 89) // 2
    assert evaluation.scores["LoadAwareScheduling"].tolist() == [64, 0]  # no NodeMetric → 0


def test_dominant_resource_weight() -> None:
    weighted = scenario(
        args={"dominantResourceWeight": 1, "resourceWeights": {"cpu": 1, "memory": 1}}
    )
    assert weighted.scores["LoadAwareScheduling"][0] == (39 + 89 + 39) // 3  # dominant = min
    # resourceWeights are defaulted only when dominantResourceWeight is 0: the dominant alone
    alone = scenario(args={"dominantResourceWeight": 1})
    assert alone.scores["LoadAwareScheduling"][0] == 39


def test_annotation_replaces_whole_threshold_section() -> None:
    cpu_only = scenario(
        annotations={
            "scheduling.koordinator.sh/usage-thresholds": json.dumps(
                {"usageThresholds": {"cpu": 50}}
            )
        }
    )
    assert not cpu_only.feasible[0]
    assert cpu_only.reasons(0) == ["node(s) cpu usage exceed threshold"]
    # a memory-only section drops the cpu threshold entirely; memory 10 % > 5 %
    memory_only = scenario(
        annotations={
            "scheduling.koordinator.sh/usage-thresholds": json.dumps(
                {"usageThresholds": {"memory": 5}}
            )
        }
    )
    assert memory_only.reasons(0) == ["node(s) memory usage exceed threshold"]
    for text in ("{not json", '{"usageThresholds": {"cpu": "low"}}', "[1]"):
        broken = scenario(annotations={"scheduling.koordinator.sh/usage-thresholds": text})
        assert broken.feasible[0]  # unreadable annotation: the arguments apply unchanged


PROD_POD: dict[str, Any] = {
    "metadata": {"name": "old-prod", "namespace": "default"},
    "spec": {"nodeName": "n1", "priority": 9999, "containers": [{"name": "c"}]},
    "status": {
        "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-01T11:50:00Z"}
        ]
    },
}
PROD_METRIC: list[dict[str, Any]] = [
    {
        "namespace": "default",
        "name": "old-prod",
        "priority": "koord-prod",
        "podUsage": {"resources": {"cpu": "20", "memory": "1Gi"}},
    }
]


@pytest.mark.parametrize(("priority", "feasible"), [(9999, False), (None, True)])
def test_prod_thresholds_apply_to_prod_pods_only(priority: int | None, feasible: bool) -> None:
    incoming: dict[str, Any] = {
        "metadata": {"name": "incoming"},
        "spec": {"containers": [{"name": "c"}]},
    }
    if priority is not None:
        incoming["spec"]["priority"] = priority
    evaluation = scenario(
        args={"prodUsageThresholds": {"cpu": 10}},
        pods=[PROD_POD],
        pods_metric=PROD_METRIC,
        pod=incoming,
    )
    # prod path: prod usage 20 cores (reported prod, scheduled 10 min ago: no delta) + 250m
    # → round(20.25) = 20 > 10; the batch pod uses plain thresholds: 60 % <= 65 %
    assert bool(evaluation.feasible[0]) is feasible
    if not feasible:
        assert evaluation.reasons(0) == ["node(s) cpu usage exceed threshold"]


def test_recently_scheduled_pod_is_estimated_on_top_of_usage() -> None:
    recent = {
        **PROD_POD,
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastTransitionTime": "2026-11-01T11:59:30Z",
                }
            ]
        },
    }
    recent["spec"] = {
        **PROD_POD["spec"],
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "10"}}}],
    }
    evaluation = scenario(
        pods=[recent],
        pods_metric=[{**PROD_METRIC[0], "podUsage": {"resources": {"cpu": "2", "memory": "1Gi"}}}],
    )
    # assigned 30 s before the update (inside the 60 s report interval): delta = 8500m − 2000m
    # cpu: 60000 + 6500 + 250 = 66750 → round(66.75) = 67 > 65
    assert evaluation.reasons(0) == ["node(s) cpu usage exceed threshold"]


def test_expired_node_metric_refused_and_scored_zero() -> None:
    evaluation = scenario(update="2026-11-01T11:57:00Z")  # 180 s old
    assert evaluation.reasons(0) == ["node(s) nodeMetric expired"]
    assert evaluation.scores["LoadAwareScheduling"][0] == 0
    allowed = scenario(
        update="2026-11-01T11:57:00Z", args={"enableScheduleWhenNodeMetricsExpired": True}
    )
    assert allowed.feasible[0]


def test_user_plugins_join_the_registry() -> None:
    class Constant:
        name = "Constant"

        def __init__(self, args: Any, version: Any) -> None:
            self.value = int((args or {}).get("value", 7))

        def score(self, state: Any, pod: Any, now: float) -> Any:
            import numpy as np

            return np.full(state.node_count, self.value, dtype=np.int64)

        def explain(self, state: Any, pod: Any, node: int, now: float) -> list[Any]:
            return []

    if "Constant" not in available():
        register(
            PluginType(
                "Constant", "test plugin", frozenset({"score"}), lambda raw, field: raw, Constant
            )
        )
    doc = {
        "scheduler": {
            "profiles": [
                {
                    "plugins": {"score": {"enabled": [{"name": "Constant", "weight": 2}]}},
                    "pluginConfig": [{"name": "Constant", "args": {"value": 3}}],
                }
            ]
        },
        "nodes": [
            {
                "metadata": {"name": "a"},
                "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}},
            }
        ],
        "pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}},
    }
    evaluation = build_scenario(doc).evaluate()
    assert evaluation.scores["Constant"].tolist() == [3]
    # defaults (Fit + Balanced) stay: Fit least = ((1000-100)*100//1000 + (1Gi-200Mi)*100//1Gi) // 2
    assert evaluation.scores["NodeResourcesFit"].tolist() == [(90 + 80) // 2]


@pytest.mark.parametrize(("duration", "feasible"), [("5m", True), (None, False)])
def test_aggregated_thresholds_fall_back_when_the_window_is_missing(
    duration: str | None, feasible: bool
) -> None:
    # NodeMetric has no aggregates yet (cold start). One assigned pod: cpu request 10 → estimate
    # 8500m, reported usage 2 cores, scheduled 10 min ago (not recent).
    # Explicit window missing → base = full estimates of assigned pods = 8500m (+250m) → 9 % <= 50.
    # Window 0 (longest available) with none → node usage 60 cores + 250m → 60 % > 50.
    assigned = {
        **PROD_POD,
        "spec": {
            **PROD_POD["spec"],
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "10"}}}],
        },
    }
    aggregated: dict[str, Any] = {"usageThresholds": {"cpu": 50}, "usageAggregationType": "p95"}
    if duration:
        aggregated["usageAggregatedDuration"] = duration
    evaluation = scenario(
        args={"aggregated": aggregated},
        pods=[assigned],
        pods_metric=[{**PROD_METRIC[0], "podUsage": {"resources": {"cpu": "2", "memory": "1Gi"}}}],
    )
    assert bool(evaluation.feasible[0]) is feasible
    if not feasible:
        assert evaluation.reasons(0) == ["node(s) cpu aggregated usage exceed threshold"]
