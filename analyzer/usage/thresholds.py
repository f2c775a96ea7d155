"""Koordinator LoadAwareScheduling thresholds: defaults, config file, per-node overrides.

Rules (research/koordinator.md §1.1, §1.3):

- ``usageThresholds`` default ``{cpu: 65, memory: 95}``; a user map in Koordinator form
  (``usageThresholds:``) **replaces** the defaults; the shorthand ``thresholds: {cpu: 70}`` and the
  ``--cpu/--memory`` flags change only the keys they name. 0 disables a resource.
- ``prodUsageThresholds`` (off by default) apply to the summed usage of prod pods.
- ``aggregated``: ``usageThresholds`` on a stat (``usageAggregationType`` avg/p50/p90/p95/p99) over
  a window (``usageAggregatedDuration``; absent/0 = the longest non-empty NodeMetric duration).
- Per node, the annotation ``scheduling.koordinator.sh/usage-thresholds`` (JSON
  ``{"usageThresholds":…, "prodUsageThresholds":…, "aggregatedUsage":{…}}``) — else the config
  file's ``node_thresholds: {NODE: <same shape>}`` — overrides: each non-empty section replaces the
  whole matching section; ``aggregatedUsage`` counts only with thresholds and a type; invalid JSON
  leaves the node on the cluster thresholds (and is reported as a warning).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import timedelta
from typing import Any

from analyzer.core.durations import format_duration, parse_duration
from analyzer.core.errors import InputError
from analyzer.core.structured import describe_value, plain, preview

ANNOTATION = "scheduling.koordinator.sh/usage-thresholds"
DEFAULT_USAGE = {"cpu": 65, "memory": 95}
AGG_TYPES = ("avg", "p50", "p90", "p95", "p99")
POLICY_DURATIONS = (timedelta(minutes=5), timedelta(minutes=10), timedelta(minutes=30))


def _threshold_map(value: Any, where: str) -> dict[str, int]:
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: expected a mapping of resource to percent, e.g. {{cpu: 65}}")
    out: dict[str, int] = {}
    for resource, pct in value.items():
        if isinstance(pct, bool) or not isinstance(pct, int) or not 0 <= pct <= 100:
            raise InputError(
                f"{where}.{plain(resource)}: {describe_value(pct)} must be an integer percent 0..100"
            )
        out[str(resource)] = pct
    return out


@dataclass(frozen=True)
class AggregatedThreshold:
    """Thresholds on a stat over a window (Koordinator ``aggregated`` / ``aggregatedUsage``)."""

    thresholds: Mapping[str, int]
    stat: str = "p95"
    duration: timedelta | None = None  # None = longest non-empty of the NodeMetric durations

    def label(self) -> str:
        """``p95:30m`` (or ``p95:longest``)."""
        window = format_duration(self.duration) if self.duration else "longest"
        return f"{self.stat}:{window}"


def parse_aggregated(data: Any, where: str) -> AggregatedThreshold | None:
    """Koordinator-shaped ``{usageThresholds, usageAggregationType, usageAggregatedDuration}``."""
    if not isinstance(data, Mapping):
        raise InputError(
            f"{where}: expected a mapping with usageThresholds and usageAggregationType"
        )
    thresholds = _threshold_map(data.get("usageThresholds") or {}, f"{where}.usageThresholds")
    stat = data.get("usageAggregationType") or ""
    if not thresholds or not stat:
        return None  # Koordinator ignores an aggregated section without both
    if stat not in AGG_TYPES:
        raise InputError(
            f"{where}.usageAggregationType: {preview(stat)} is not one of {', '.join(AGG_TYPES)}"
        )
    raw = data.get("usageAggregatedDuration")
    duration = parse_duration(str(raw), field=f"{where}.usageAggregatedDuration") if raw else None
    return AggregatedThreshold(thresholds, stat, duration or None)


@dataclass(frozen=True)
class ThresholdProfile:
    """The thresholds one node is held to, and where they came from."""

    usage: Mapping[str, int]
    prod: Mapping[str, int]
    aggregated: AggregatedThreshold | None
    source: str  # "cluster" | "annotation" | "node_thresholds"


@dataclass(frozen=True)
class ThresholdConfig:
    """Cluster thresholds, per-node overrides and how usage is measured against them.

    ``usage_window`` is the NodeMetric ``nodeUsage`` average the Filter compares (koordlet: 5 min);
    ``method`` the percentile rule for aggregated thresholds; ``policy_durations`` the NodeMetric
    durations searched when an aggregated threshold has no duration.
    """

    usage: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_USAGE))
    prod: Mapping[str, int] = field(default_factory=dict)
    aggregated: AggregatedThreshold | None = None
    node_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    use_annotations: bool = True
    method: str = "nearest-rank"
    usage_window: timedelta = timedelta(minutes=5)
    policy_durations: tuple[timedelta, ...] = POLICY_DURATIONS

    def cluster_profile(self) -> ThresholdProfile:
        """The thresholds of a node without overrides."""
        return ThresholdProfile(self.usage, self.prod, self.aggregated, "cluster")

    def profile_for(self, node: str, annotations: str | None) -> tuple[ThresholdProfile, str]:
        """The node's effective thresholds and a warning ("" if none).

        The annotation wins over ``node_overrides``; each non-empty section replaces the cluster's.
        """
        raw: Any = None
        source = ""
        warning = ""
        text = _annotation(annotations) if self.use_annotations else None
        if text is not None:
            try:
                raw = json.loads(text)
                source = "annotation"
            except (json.JSONDecodeError, RecursionError):  # a cell nested past the parser
                warning = f"node {node}: annotation {ANNOTATION} is not valid JSON; cluster thresholds used"
        if raw is None and node in self.node_overrides:
            raw, source = self.node_overrides[node], "node_thresholds"
        if raw is None:
            return self.cluster_profile(), warning
        try:
            profile = apply_override(self.cluster_profile(), raw, f"{source} of node {node}")
        except InputError as exc:
            if source == "node_thresholds":
                raise
            # Koordinator: an annotation that does not parse leaves the arguments unchanged.
            return self.cluster_profile(), f"{exc}; cluster thresholds used"
        return replace(profile, source=source), warning

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (durations as ``5m``)."""
        data = asdict(self)
        data["usage_window"] = format_duration(self.usage_window)
        data["policy_durations"] = [format_duration(d) for d in self.policy_durations]
        if self.aggregated is not None:
            data["aggregated"] = {
                "thresholds": dict(self.aggregated.thresholds),
                "stat": self.aggregated.stat,
                "duration": format_duration(self.aggregated.duration)
                if self.aggregated.duration
                else None,
            }
        return data

    @classmethod
    def from_config(cls, data: Mapping[str, Any], **overrides: Any) -> ThresholdConfig:
        """Build from the config file's ``thresholds:`` and ``node_thresholds:`` sections."""
        section = data.get("thresholds") or {}
        if not isinstance(section, Mapping):
            raise InputError(
                "config thresholds: expected a mapping (usageThresholds, prodUsageThresholds, aggregated)"
            )
        usage = dict(DEFAULT_USAGE)
        known = {"usageThresholds", "prodUsageThresholds", "aggregated"}
        shorthand = {k: v for k, v in section.items() if k not in known}
        if "usageThresholds" in section:
            usage = _threshold_map(section["usageThresholds"], "config thresholds.usageThresholds")
        usage.update(_threshold_map(shorthand, "config thresholds"))
        prod = _threshold_map(
            section.get("prodUsageThresholds") or {}, "config thresholds.prodUsageThresholds"
        )
        aggregated = None
        if section.get("aggregated"):
            aggregated = parse_aggregated(section["aggregated"], "config thresholds.aggregated")
        nodes = data.get("node_thresholds") or {}
        if not isinstance(nodes, Mapping):
            raise InputError(
                "config node_thresholds: expected a mapping of node name to thresholds"
            )
        for node, raw in nodes.items():  # validate early: a typo should fail before any work
            apply_override(
                ThresholdProfile(usage, prod, aggregated, "cluster"),
                raw,
                f"config node_thresholds.{node}",
            )
        base = cls(usage=usage, prod=prod, aggregated=aggregated, node_overrides=dict(nodes))
        return replace(base, **overrides)


def _annotation(annotations: str | None) -> str | None:
    if not annotations:
        return None
    try:
        data = json.loads(annotations)
    except (json.JSONDecodeError, RecursionError):  # a cell nested past the parser
        return None
    value = data.get(ANNOTATION) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def apply_override(base: ThresholdProfile, raw: Any, where: str) -> ThresholdProfile:
    """Apply an annotation-shaped override: each non-empty section replaces the whole section."""
    if not isinstance(raw, Mapping):
        raise InputError(
            f"{where}: expected a JSON object with usageThresholds/prodUsageThresholds/aggregatedUsage"
        )
    usage, prod, aggregated = base.usage, base.prod, base.aggregated
    if raw.get("usageThresholds"):
        usage = _threshold_map(raw["usageThresholds"], f"{where}.usageThresholds")
    if raw.get("prodUsageThresholds"):
        prod = _threshold_map(raw["prodUsageThresholds"], f"{where}.prodUsageThresholds")
    if raw.get("aggregatedUsage"):
        aggregated = (
            parse_aggregated(raw["aggregatedUsage"], f"{where}.aggregatedUsage") or aggregated
        )
    return ThresholdProfile(usage, prod, aggregated, base.source)
