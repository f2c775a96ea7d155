"""Turn the transcribed scheduler test vectors into ``analyzer score`` scenarios.

Kube vectors (``tests/data/vectors/kube-score-vectors.yaml``): ``cpu_milli`` → ``"<n>m"``,
``memory_bytes`` → bytes, other keys are resource names; a container ``requests`` map keeps exactly
the keys given (absent = missing request). The profile runs only the plugin under test (filters
disabled), like the upstream unit tests. Koordinator vectors use the harness in their ``meta:``
block: ``now`` = NOW, relative times ``now-10s``, node allocatable as given.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).parent / "data"
VECTORS = DATA / "vectors"
NOW = datetime(2026, 11, 1, 12, 0, 0, tzinfo=UTC)
API = "kubescheduler.config.k8s.io/v1"


def load(name: str) -> dict[str, Any]:
    """One vector file."""
    data: dict[str, Any] = yaml.safe_load((VECTORS / name).read_text())
    return data


def _quantities(values: dict[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in values.items():
        if key == "cpu_milli":
            out["cpu"] = f"{value}m"
        elif key == "memory_bytes":
            out["memory"] = str(value)
        else:
            out[key] = str(value)
    return out


def _container(i: int, spec: dict[str, Any], init: bool = False) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if "requests" in spec:
        resources["requests"] = _quantities(spec["requests"] or {})
    if "limits" in spec:
        resources["limits"] = _quantities(spec["limits"] or {})
    container: dict[str, Any] = {"name": f"c{i}", "image": "app", "resources": resources}
    if init and spec.get("restart_policy"):
        container["restartPolicy"] = spec["restart_policy"]
    return container


def kube_pod(spec: dict[str, Any], name: str, node: str | None = None) -> dict[str, Any]:
    """A v1 Pod from a vector pod (containers, init_containers, overhead)."""
    pod_spec: dict[str, Any] = {
        "containers": [_container(i, c) for i, c in enumerate(spec.get("containers") or [])]
    }
    if spec.get("init_containers"):
        pod_spec["initContainers"] = [
            _container(i, c, init=True) for i, c in enumerate(spec["init_containers"])
        ]
    if spec.get("overhead"):
        pod_spec["overhead"] = _quantities(spec["overhead"])
    if node:
        pod_spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": pod_spec,
    }


def kube_version(case: dict[str, Any]) -> str:
    """1.35 for the std BalancedAllocation set, else the default 1.36."""
    return "1.35" if case.get("formula") == "ba_std_v1.23-v1.35" else "1.36"


def kube_scenario(case: dict[str, Any]) -> dict[str, Any]:
    """An ``analyzer score`` scenario for one kube vector case."""
    plugin = case["plugin"]
    raw_args = case.get("args") or {}
    if plugin == "NodeResourcesFit":
        strategy: dict[str, Any] = {
            "type": case["strategy"],
            "resources": raw_args.get("resources"),
        }
        if "shape" in raw_args:
            strategy["requestedToCapacityRatio"] = {"shape": raw_args["shape"]}
        args: dict[str, Any] = {"scoringStrategy": strategy}
    else:
        args = {"resources": raw_args.get("resources")}
    nodes, pods = [], []
    for node in case["nodes"]:
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": node["name"]},
                "status": {"allocatable": _quantities(node.get("allocatable") or {})},
            }
        )
        for j, pod in enumerate(node.get("pods") or []):
            pods.append(kube_pod(pod, f"{node['name']}-pod-{j}", node["name"]))
    return {
        "kubernetesVersion": kube_version(case),
        "scheduler": {
            "apiVersion": API,
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "plugins": {
                        "filter": {"disabled": [{"name": "*"}]},
                        "score": {
                            "disabled": [{"name": "*"}],
                            "enabled": [{"name": plugin, "weight": 1}],
                        },
                    },
                    "pluginConfig": [{"name": plugin, "args": args}],
                }
            ],
        },
        "nodes": nodes,
        "pods": pods,
        "pod": kube_pod(case["pod"], "incoming"),
    }


def relative_time(text: Any) -> str | None:
    """``now``, ``now-180s``, ``now+120s`` → RFC 3339 (None stays None)."""
    if text is None:
        return None
    text = str(text)
    offset = 0
    if text.startswith("now") and len(text) > 3:
        offset = int(text[3:].rstrip("s"))
    return (NOW + timedelta(seconds=offset)).isoformat().replace("+00:00", "Z")


def koord_pod(spec: dict[str, Any] | None, node: str | None = None) -> dict[str, Any]:
    """A v1 Pod from a Koordinator vector pod (empty pod for None / ``<empty corev1.Pod{}>``)."""
    spec = spec or {}
    meta: dict[str, Any] = {
        "name": spec.get("name", "pod"),
        "namespace": spec.get("namespace", "default"),
    }
    if str(meta["name"]).startswith("<"):
        meta["name"] = "empty"
    if spec.get("labels"):
        meta["labels"] = spec["labels"]
    if spec.get("annotations"):
        meta["annotations"] = spec["annotations"]
    if spec.get("owner_kind"):
        meta["ownerReferences"] = [
            {"kind": spec["owner_kind"], "name": "owner", "apiVersion": "apps/v1"}
        ]
    pod_spec: dict[str, Any] = {
        "containers": [
            {
                "name": f"c{i}",
                **({"resources": {k: c[k] for k in ("requests", "limits") if k in c}} if c else {}),
            }
            for i, c in enumerate(spec.get("containers") or [])
        ]
    }
    if spec.get("priority") is not None:
        pod_spec["priority"] = spec["priority"]
    if node:
        pod_spec["nodeName"] = node
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}
    conditions = []
    if spec.get("pod_scheduled"):
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastTransitionTime": relative_time(spec["pod_scheduled"]),
            }
        )
    for cond in spec.get("conditions") or []:
        conditions.append(
            {**cond, "lastTransitionTime": relative_time(cond.get("lastTransitionTime"))}
        )
    if conditions:
        pod["status"] = {"conditions": conditions}
    return pod


def _resource_map(values: dict[str, Any] | None) -> dict[str, Any]:
    return {"resources": dict(values or {})}


def node_metric(metric: dict[str, Any], name: str) -> dict[str, Any]:
    """A NodeMetric object from a vector ``node_metric`` block."""
    spec: dict[str, Any] = {}
    interval = metric.get("report_interval_seconds")
    if isinstance(interval, int):
        spec = {"metricCollectPolicy": {"reportIntervalSeconds": interval}}
    status: dict[str, Any] = {}
    if metric.get("update_time") is not None:
        status["updateTime"] = relative_time(metric["update_time"])
    if metric.get("node_metric_present", True):
        inner: dict[str, Any] = {"nodeUsage": _resource_map(metric.get("node_usage"))}
        aggregated = []
        for entry in metric.get("aggregated_node_usages") or []:
            duration = entry.get("duration_str") or entry.get("duration")
            if isinstance(duration, int):
                duration = f"{duration}s"
            usage = entry.get("usage") or {
                k: v for k, v in entry.items() if k in ("avg", "p50", "p90", "p95", "p99")
            }
            aggregated.append(
                {"duration": duration, "usage": {k: _resource_map(v) for k, v in usage.items()}}
            )
        if aggregated:
            inner["aggregatedNodeUsages"] = aggregated
        status["nodeMetric"] = inner
    pods_metric = [
        {
            "namespace": p.get("namespace", "default"),
            "name": p["name"],
            "podUsage": _resource_map(p.get("pod_usage")),
            **({"priority": p["priority"]} if p.get("priority") else {}),
        }
        for p in metric.get("pods_metric") or []
    ]
    if pods_metric:
        status["podsMetric"] = pods_metric
    return {
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeMetric",
        "metadata": {"name": name},
        "spec": spec,
        "status": status,
    }


def koord_args(effective: dict[str, Any]) -> dict[str, Any]:
    """LoadAwareSchedulingArgs from ``effective_args`` (helper keys ending in ``_s`` dropped)."""
    args = dict(effective)
    if "aggregated" in args:
        args["aggregated"] = {k: v for k, v in args["aggregated"].items() if not k.endswith("_s")}
    return args


def koord_scenario(case: dict[str, Any], point: str) -> dict[str, Any]:
    """A scenario running only LoadAwareScheduling at ``point`` ("filter" or "score")."""
    node_name = "test-node"
    node = case["node"]
    meta: dict[str, Any] = {"name": node_name}
    if node.get("annotations"):
        meta["annotations"] = node["annotations"]
    plugins: dict[str, Any] = {
        "filter": {"disabled": [{"name": "*"}]},
        "score": {"disabled": [{"name": "*"}]},
    }
    entry = {"name": "LoadAwareScheduling"}
    plugins[point]["enabled"] = [{**entry, "weight": 1} if point == "score" else entry]
    scenario: dict[str, Any] = {
        "now": relative_time("now"),
        "scheduler": {
            "apiVersion": API,
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "plugins": plugins,
                    "pluginConfig": [
                        {"name": "LoadAwareScheduling", "args": koord_args(case["effective_args"])}
                    ],
                }
            ],
        },
        "nodes": [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": meta,
                "status": {"allocatable": node.get("allocatable") or {}},
            }
        ],
        "pods": [koord_pod(p, node_name) for p in case.get("assigned_pods") or []],
        "pod": koord_pod(case.get("incoming_pod")),
    }
    if case.get("node_metric") is not None:
        scenario["nodeMetrics"] = [node_metric(case["node_metric"], node_name)]
    return scenario
