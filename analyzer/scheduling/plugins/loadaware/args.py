"""Koordinator ``LoadAwareSchedulingArgs`` (defaults, validation), pod priority class, estimator.

research/koordinator.md §1.1, §1.2 and §2. The estimator turns a pod into its expected usage:
for each (resource, factor) of ``estimatedScalingFactors`` (default cpu 85, memory 70),
``q = max(request, limit)`` of the resource the pod's class reads (batch pods read
``kubernetes.io/batch-cpu``/``-memory``, mid pods ``kubernetes.io/mid-*``); ``q == 0`` → 250m cpu /
200Mi memory (0 for mid and other resources); else Go ``math.Round(q × factor / 100)``, capped at the
limit when one is set.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from analyzer.core.durations import parse_duration
from analyzer.core.errors import InputError
from analyzer.core.structured import describe_value, plain, preview
from analyzer.scheduling.arith import go_round
from analyzer.scheduling.fields import listing, mapping
from analyzer.scheduling.state import PodDemand

NAME = "LoadAwareScheduling"
AGGREGATION_TYPES = ("avg", "p50", "p90", "p95", "p99")
DEFAULT_USAGE_THRESHOLDS = {"cpu": 65, "memory": 95}
DEFAULT_SCALING_FACTORS = {"cpu": 85, "memory": 70}
DEFAULT_RESOURCE_WEIGHTS = {"cpu": 1, "memory": 1}
DEFAULT_ESTIMATE = {"cpu": 250, "memory": 200 * 1024 * 1024}  # 250m / 200Mi for a pod without any
PRIORITY_CLASSES = ("koord-prod", "koord-mid", "koord-batch", "koord-free")
PRIORITY_LABEL = "koordinator.sh/priority-class"
QOS_LABEL = "koordinator.sh/qosClass"
FACTORS_ANNOTATION = "scheduling.koordinator.sh/load-estimated-scaling-factors"
AFTER_SCHEDULED_ANNOTATION = "scheduling.koordinator.sh/load-estimated-seconds-after-pod-scheduled"
AFTER_INITIALIZED_ANNOTATION = "scheduling.koordinator.sh/load-estimated-seconds-after-initialized"
_CLASS_RESOURCES = {
    "koord-batch": {"cpu": "kubernetes.io/batch-cpu", "memory": "kubernetes.io/batch-memory"},
    "koord-mid": {"cpu": "kubernetes.io/mid-cpu", "memory": "kubernetes.io/mid-memory"},
}
_DEFAULTED = {"cpu", "memory", "kubernetes.io/batch-cpu", "kubernetes.io/batch-memory"}


@dataclass(frozen=True)
class AggregatedArgs:
    """``aggregated``: thresholds on one stat/window, and the stat/window scores read."""

    usage_thresholds: Mapping[str, int] = field(default_factory=dict)
    usage_type: str = ""
    usage_duration: int = 0  # seconds; 0 = the longest non-empty window
    score_type: str = ""
    score_duration: int = 0


@dataclass(frozen=True)
class LoadAwareArgs:
    """``LoadAwareSchedulingArgs`` after v1 defaulting."""

    filter_expired: bool = True
    expiration_seconds: int = 180
    enable_when_expired: bool | None = False
    resource_weights: Mapping[str, int] = field(
        default_factory=lambda: dict(DEFAULT_RESOURCE_WEIGHTS)
    )
    dominant_weight: int = 0
    usage_thresholds: Mapping[str, int] = field(
        default_factory=lambda: dict(DEFAULT_USAGE_THRESHOLDS)
    )
    prod_usage_thresholds: Mapping[str, int] = field(default_factory=dict)
    prod_include_sys: bool = False
    score_according_prod: bool = False
    scaling_factors: Mapping[str, int] = field(
        default_factory=lambda: dict(DEFAULT_SCALING_FACTORS)
    )
    seconds_after_scheduled: int | None = None
    seconds_after_initialized: int | None = None
    allow_customize: bool = False
    aggregated: AggregatedArgs | None = None
    supported_resources: tuple[str, ...] = ()

    @property
    def resources(self) -> tuple[str, ...]:
        """The vectorizer's resource order: cpu, memory and every configured key, sorted."""
        names = {"cpu", "memory", *self.usage_thresholds, *self.prod_usage_thresholds}
        names |= set(self.resource_weights) | set(self.scaling_factors)
        names |= set(self.supported_resources)
        if self.aggregated is not None:
            names |= set(self.aggregated.usage_thresholds)
        return tuple(sorted(names))


def _int_map(raw: Any, where: str, low: int, high: int) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a mapping of resource name to integer")
    out: dict[str, int] = {}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"{where}.{plain(key)}: {describe_value(value)} is not an integer")
        if not low <= value <= high:
            raise InputError(
                f"{where}.{plain(key)}: Invalid value: {value}: must be in [{low}, {high}]"
            )
        out[str(key)] = int(value)
    return out


def _bool(raw: Mapping[str, Any], key: str, default: bool | None, where: str) -> bool | None:
    value = raw.get(key, default)
    if value is not None and not isinstance(value, bool):
        raise InputError(f"{where}.{plain(key)}: {describe_value(value)} is not true/false")
    return value


def _seconds(raw: Any, where: str) -> int:
    if raw in (None, "", 0):
        return 0
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    return int(parse_duration(str(raw), field=where).total_seconds())


def _agg_type(raw: Any, where: str) -> str:
    value = "" if raw is None else str(raw)
    if value and value not in AGGREGATION_TYPES:
        raise InputError(
            f"{where}: Unsupported value: {preview(value)}: one of {', '.join(AGGREGATION_TYPES)}"
        )
    return value


def parse_aggregated(raw: Any, where: str) -> AggregatedArgs | None:
    """Parse the ``aggregated`` block (None when absent)."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a mapping")
    return AggregatedArgs(
        usage_thresholds=_int_map(raw.get("usageThresholds"), f"{where}.usageThresholds", 0, 100),
        usage_type=_agg_type(raw.get("usageAggregationType"), f"{where}.usageAggregationType"),
        usage_duration=_seconds(
            raw.get("usageAggregatedDuration"), f"{where}.usageAggregatedDuration"
        ),
        score_type=_agg_type(raw.get("scoreAggregationType"), f"{where}.scoreAggregationType"),
        score_duration=_seconds(
            raw.get("scoreAggregatedDuration"), f"{where}.scoreAggregatedDuration"
        ),
    )


def parse_loadaware_args(raw: Mapping[str, Any] | None, field: str) -> LoadAwareArgs:
    """Default and validate ``LoadAwareSchedulingArgs`` (Koordinator v1 defaults + validation)."""
    raw = dict(mapping(raw, field))
    raw.pop("apiVersion", None)
    raw.pop("kind", None)
    expiration = raw.get("nodeMetricExpirationSeconds", 180)
    if isinstance(expiration, bool) or not isinstance(expiration, int) or expiration <= 0:
        raise InputError(
            f"{field}.nodeMetricExpirationSeconds: Invalid value: {preview(expiration)}: "
            "nodeMetricExpiredSeconds should be a positive value"
        )
    weights = _int_map(raw.get("resourceWeights"), f"{field}.resourceWeights", 1, 100)
    dominant = raw.get("dominantResourceWeight", 0) or 0
    if isinstance(dominant, bool) or not isinstance(dominant, int) or not 0 <= dominant <= 100:
        raise InputError(
            f"{field}.dominantResourceWeight: Invalid value: {preview(dominant)}: must be in [0, 100]"
        )
    if not weights and dominant == 0:
        weights = dict(DEFAULT_RESOURCE_WEIGHTS)
    thresholds = _int_map(raw.get("usageThresholds"), f"{field}.usageThresholds", 0, 100)
    factors = dict(DEFAULT_SCALING_FACTORS)
    factors.update(
        _int_map(raw.get("estimatedScalingFactors"), f"{field}.estimatedScalingFactors", 1, 100)
    )
    for name in weights:
        if name not in factors:
            raise InputError(
                f"{field}.estimatedScalingFactors.{name}: Required value: every resource in "
                "resourceWeights needs a scaling factor"
            )
    after: dict[str, int | None] = {}
    for key in ("estimatedSecondsAfterPodScheduled", "estimatedSecondsAfterInitialized"):
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InputError(
                f"{field}.{plain(key)}: {describe_value(value)} is not an integer number of seconds"
            )
        after[key] = value
    return LoadAwareArgs(
        filter_expired=bool(_bool(raw, "filterExpiredNodeMetrics", True, field)),
        expiration_seconds=int(expiration),
        enable_when_expired=_bool(raw, "enableScheduleWhenNodeMetricsExpired", False, field),
        resource_weights=weights,
        dominant_weight=int(dominant),
        usage_thresholds=thresholds or dict(DEFAULT_USAGE_THRESHOLDS),
        prod_usage_thresholds=_int_map(
            raw.get("prodUsageThresholds"), f"{field}.prodUsageThresholds", 0, 100
        ),
        prod_include_sys=bool(_bool(raw, "prodUsageIncludeSys", False, field)),
        score_according_prod=bool(_bool(raw, "scoreAccordingProdUsage", False, field)),
        scaling_factors=factors,
        seconds_after_scheduled=after["estimatedSecondsAfterPodScheduled"],
        seconds_after_initialized=after["estimatedSecondsAfterInitialized"],
        allow_customize=bool(_bool(raw, "allowCustomizeEstimation", False, field)),
        aggregated=parse_aggregated(raw.get("aggregated"), f"{field}.aggregated"),
        supported_resources=tuple(
            str(r) for r in listing(raw.get("supportedResources"), f"{field}.supportedResources")
        ),
    )


def koord_priority_class(labels: Mapping[str, str], priority: int | None, qos: str) -> str:
    """Koordinator ``GetPodPriorityClassWithDefault``: label, then priority range, then QoS."""
    label = labels.get(PRIORITY_LABEL, "")
    if label in PRIORITY_CLASSES:
        return label
    if priority is not None:
        for low, name in ((9000, "koord-prod"), (7000, "koord-mid"), (5000, "koord-batch")):
            if low <= priority <= low + 999:
                return name
        if 3000 <= priority <= 3999:
            return "koord-free"
    koord_qos = labels.get(QOS_LABEL, "")
    if koord_qos not in ("LSE", "LSR", "LS", "BE", "SYSTEM"):  # unknown label: Kubernetes QoS
        koord_qos = {"Guaranteed": "LSR", "Burstable": "LS", "BestEffort": "BE"}.get(qos, "")
    if koord_qos in ("LSE", "LSR", "LS", "SYSTEM"):
        return "koord-prod"
    if koord_qos == "BE":
        return "koord-batch"
    return ""


def _custom_factors(pod: PodDemand) -> dict[str, int]:
    text = pod.annotations.get(FACTORS_ANNOTATION)
    if not text:
        return {}
    try:
        parsed = json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # a cell nested past the parser
        return {}  # upstream ignores an unreadable annotation
    if not isinstance(parsed, dict):
        return {}
    return {str(k): int(v) for k, v in parsed.items() if isinstance(v, int)}


def estimate_pod(pod: PodDemand, args: LoadAwareArgs) -> dict[str, int]:
    """The default estimator's expected usage of ``pod`` per scaling-factor resource."""
    factors = dict(args.scaling_factors)
    if args.allow_customize:
        factors.update(_custom_factors(pod))
    renames = _CLASS_RESOURCES.get(pod.koord_class, {})
    estimate: dict[str, int] = {}
    for resource, factor in factors.items():
        real = renames.get(resource, resource)
        request = int(pod.request_map.get(real, 0))
        limit = int(pod.limit_map.get(real, 0))
        quantity = max(request, limit)
        if quantity == 0:
            base = real.rsplit("-", 1)[-1] if real.startswith("kubernetes.io/batch-") else real
            estimate[resource] = DEFAULT_ESTIMATE.get(base, 0) if real in _DEFAULTED else 0
            continue
        value = go_round(float(quantity) * float(factor) / 100)  # Go: float64 multiply, divide
        estimate[resource] = min(value, limit) if limit > 0 else value
    return estimate


def pod_is_prod(pod: PodDemand) -> bool:
    """Koordinator prod class."""
    return pod.koord_class == "koord-prod"
