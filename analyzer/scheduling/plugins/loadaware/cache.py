"""NodeMetric objects and Koordinator's pod-assign cache, reduced to ``LoadInputs`` arrays.

research/koordinator.md §1.5 / ``pod_assign_cache.go``: for every node with a NodeMetric, every
assigned (bound, not terminated) pod contributes its full estimate ``e`` to ``node_estimated``, and
``max(0, e − u)`` per resource to ``node_delta`` when it is "recent": its usage ``u`` is not in
``status.podsMetric``, it was assigned after ``updateTime − reportInterval``, or its forced-estimation
deadline is after ``updateTime``. Prod pods feed ``prod_usage`` (only when the NodeMetric reports
them as prod as well) and ``prod_delta`` the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.core.durations import parse_duration, parse_time
from analyzer.core.errors import InputError
from analyzer.core.quantity import resource_value
from analyzer.scheduling.fields import integer, listing, mapping
from analyzer.scheduling.plugins.loadaware.args import (
    AFTER_INITIALIZED_ANNOTATION,
    AFTER_SCHEDULED_ANNOTATION,
    LoadAwareArgs,
    estimate_pod,
    pod_is_prod,
)
from analyzer.scheduling.state import LoadInputs, PodDemand

DEFAULT_REPORT_INTERVAL = 60


@dataclass(frozen=True)
class NodeMetricInfo:
    """The parts of a Koordinator NodeMetric the scheduler reads (analyzer units)."""

    name: str
    update_time: float | None  # unix seconds; None = no status.updateTime
    report_interval: int = DEFAULT_REPORT_INTERVAL
    metric_present: bool = True  # status.nodeMetric set
    node_usage: Mapping[str, int] = field(default_factory=dict)
    system_usage: Mapping[str, int] = field(default_factory=dict)
    aggregated: Sequence[tuple[int, str, Mapping[str, int]]] = ()  # (seconds, type, usage)
    pods: Mapping[tuple[str, str], tuple[Mapping[str, int], str]] = field(default_factory=dict)


@dataclass(frozen=True)
class AssignedPod:
    """A pod the cache holds: bound to ``node`` and not terminated."""

    node: str
    demand: PodDemand
    scheduled_time: float | None = None  # PodScheduled=True lastTransitionTime
    initialized_time: float | None = None  # Initialized=True lastTransitionTime


def _resource_list(raw: Any, where: str) -> dict[str, int]:
    """``{resources: {...}}`` (NodeMetric ResourceMap) or a plain ResourceList."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError(
            f"{where}: expected a mapping like {{resources: {{cpu: '2', memory: 4Gi}}}}"
        )
    inner = raw.get("resources", raw) if "resources" in raw else raw
    inner = inner or {}
    if not isinstance(inner, Mapping):
        raise InputError(f"{where}.resources: expected a resource list")
    return {
        str(k): resource_value(str(k), v, field=f"{where}.resources.{k}") for k, v in inner.items()
    }


def parse_node_metric(obj: Any, where: str) -> NodeMetricInfo:
    """Parse a ``slo.koordinator.sh/v1alpha1`` NodeMetric object."""
    obj = mapping(obj, where)
    name = mapping(obj.get("metadata"), f"{where}.metadata").get("name")
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}.metadata.name: a NodeMetric needs the node's name")
    spec = mapping(obj.get("spec"), f"{where}.spec")
    policy = mapping(spec.get("metricCollectPolicy"), f"{where}.spec.metricCollectPolicy")
    interval = policy.get("reportIntervalSeconds") or DEFAULT_REPORT_INTERVAL
    integer(interval, f"{where}.spec.metricCollectPolicy.reportIntervalSeconds")
    status = mapping(obj.get("status"), f"{where}.status")
    update = status.get("updateTime")
    update_time = (
        parse_time(str(update), field=f"{where}.status.updateTime").timestamp() if update else None
    )
    raw_metric = status.get("nodeMetric")
    metric = mapping(raw_metric, f"{where}.status.nodeMetric")
    aggregated: list[tuple[int, str, Mapping[str, int]]] = []
    base = f"{where}.status.nodeMetric.aggregatedNodeUsages"
    for i, entry in enumerate(listing(metric.get("aggregatedNodeUsages"), base)):
        at = f"{base}[{i}]"
        entry = mapping(entry, at)
        duration = parse_duration(str(entry.get("duration", "0s")), field=f"{at}.duration")
        for stat, usage in mapping(entry.get("usage"), f"{at}.usage").items():
            values = _resource_list(usage, f"{at}.usage.{stat}")
            if values:  # an empty list (cold start) is skipped, as the cache does
                aggregated.append((int(duration.total_seconds()), str(stat), values))
    pods: dict[tuple[str, str], tuple[Mapping[str, int], str]] = {}
    for i, entry in enumerate(listing(status.get("podsMetric"), f"{where}.status.podsMetric")):
        at = f"{where}.status.podsMetric[{i}]"
        entry = mapping(entry, at)
        usage = _resource_list(entry.get("podUsage"), f"{at}.podUsage")
        if usage:
            key = (str(entry.get("namespace", "")), str(entry.get("name", "")))
            pods[key] = (usage, str(entry.get("priority") or ""))
    return NodeMetricInfo(
        name=name,
        update_time=update_time,
        report_interval=int(interval),
        metric_present=raw_metric is not None,
        node_usage=_resource_list(metric.get("nodeUsage"), f"{where}.status.nodeMetric.nodeUsage"),
        system_usage=_resource_list(
            metric.get("systemUsage"), f"{where}.status.nodeMetric.systemUsage"
        ),
        aggregated=aggregated,
        pods=pods,
    )


def _custom_seconds(pod: PodDemand, key: str) -> int:
    try:
        return int(pod.annotations.get(key, "-1"))
    except ValueError:
        return -1


def estimation_deadline(pod: AssignedPod, timestamp: float, args: LoadAwareArgs) -> float | None:
    """``shouldEstimatePodDeadline``: forced-estimation end, or None for no deadline."""
    after_scheduled = after_initialized = -1
    if args.allow_customize:
        after_scheduled = _custom_seconds(pod.demand, AFTER_SCHEDULED_ANNOTATION)
        after_initialized = _custom_seconds(pod.demand, AFTER_INITIALIZED_ANNOTATION)
    if args.seconds_after_scheduled is not None and after_scheduled < 0:
        after_scheduled = args.seconds_after_scheduled
    if args.seconds_after_initialized is not None and after_initialized < 0:
        after_initialized = args.seconds_after_initialized
    if after_initialized > 0 and pod.initialized_time is not None:
        return pod.initialized_time + after_initialized
    if after_scheduled > 0:
        return timestamp + after_scheduled
    return None


def _vector(values: Mapping[str, int], resources: Sequence[str]) -> np.ndarray[Any, Any]:
    return np.array([int(values.get(r, 0)) for r in resources], dtype=np.int64)


def build_load_inputs(
    node_names: Sequence[str],
    metrics: Mapping[str, NodeMetricInfo],
    pods: Sequence[AssignedPod],
    args: LoadAwareArgs,
    now: float,
) -> LoadInputs:
    """Run the pod-assign cache over ``pods`` and return the per-node arrays."""
    resources = args.resources
    inputs = LoadInputs.empty(len(node_names), resources)
    position = {name: i for i, name in enumerate(node_names)}
    by_node: dict[str, list[AssignedPod]] = {}
    for pod in pods:
        by_node.setdefault(pod.node, []).append(pod)
    for name, metric in metrics.items():
        i = position.get(name)
        if i is None:
            continue  # a NodeMetric for a node not in the scenario is ignored
        inputs.has_metric[i] = True
        inputs.metric_present[i] = metric.metric_present
        inputs.update_time[i] = math.nan if metric.update_time is None else metric.update_time
        inputs.report_interval[i] = metric.report_interval
        inputs.node_usage[i] = _vector(metric.node_usage, resources)
        if args.prod_include_sys:
            inputs.prod_usage[i] = _vector(metric.system_usage, resources)
        longest: dict[str, int] = {}
        for seconds, stat, usage in metric.aggregated:
            key = (stat, seconds)
            if key not in inputs.aggregated:
                inputs.aggregated[key] = (
                    np.zeros(len(node_names), dtype=bool),
                    np.zeros((len(node_names), len(resources)), dtype=np.int64),
                )
            present, table = inputs.aggregated[key]
            present[i] = True
            table[i] = _vector(usage, resources)
            longest[stat] = max(longest.get(stat, -1), seconds)
        for stat, seconds in longest.items():  # duration 0 = the longest non-empty window
            key0 = (stat, 0)
            if key0 not in inputs.aggregated:
                inputs.aggregated[key0] = (
                    np.zeros(len(node_names), dtype=bool),
                    np.zeros((len(node_names), len(resources)), dtype=np.int64),
                )
            inputs.aggregated[key0][0][i] = True
            inputs.aggregated[key0][1][i] = inputs.aggregated[(stat, seconds)][1][i]
        _add_pods(inputs, i, metric, by_node.get(name, []), args, now)
    return inputs


def _add_pods(
    inputs: LoadInputs,
    i: int,
    metric: NodeMetricInfo,
    pods: Sequence[AssignedPod],
    args: LoadAwareArgs,
    now: float,
) -> None:
    resources = inputs.resources
    update = -math.inf if metric.update_time is None else metric.update_time
    for pod in pods:
        key = (pod.demand.namespace, pod.demand.name)
        reported = metric.pods.get(key)
        usage = _vector(reported[0], resources) if reported else None
        prod = pod_is_prod(pod.demand)
        active_prod = prod and reported is not None and reported[1] == "koord-prod"
        if active_prod and usage is not None:
            inputs.prod_usage[i] += usage
        estimate = _vector(estimate_pod(pod.demand, args), resources)
        timestamp = pod.scheduled_time if pod.scheduled_time is not None else now
        deadline = estimation_deadline(pod, timestamp, args)
        recent = (
            usage is None
            or timestamp > update - metric.report_interval
            or (deadline is not None and deadline > update)
        )
        if recent:
            base = usage if usage is not None else 0
            inputs.node_delta[i] += np.maximum(estimate - base, 0)
        inputs.node_estimated[i] += estimate
        if not prod:
            continue
        if not active_prod and usage is not None:
            usage, recent = None, True
        if recent:
            base = usage if usage is not None else 0
            inputs.prod_delta[i] += np.maximum(estimate - base, 0)
