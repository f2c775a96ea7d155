"""Koordinator ``LoadAwareScheduling``: filter and score on estimated node usage, all nodes at once.

research/koordinator.md §1.3–§1.4:

- Filter: DaemonSet pods pass; one threshold set per node (prod if the pod is prod and the node has
  prod thresholds, else aggregated if configured, else plain; the node annotation
  ``scheduling.koordinator.sh/usage-thresholds`` replaces whole sections); an all-zero set passes; no
  NodeMetric passes; an expired one (``now − updateTime ≥ expiration`` or no updateTime) fails unless
  scheduling on expired metrics is enabled; then for each resource in sorted order with threshold t > 0
  and allocatable > 0: ``pct = math.Round(estimated / allocatable × 100)`` fails iff ``pct > t``.
- Score: 0 without a fresh NodeMetric; per resource ``(cap − used) × 100 // cap`` (0 if used > cap),
  node = ``(Σ s×w + dominant×dw) // (Σ w + dw)`` with dominant = min over the vectorizer's resources.
- estimated = base + the incoming pod's estimate; base = prod usage + prod delta (prod path),
  node usage + node delta (normal), or the aggregated usage + node delta (aggregated path; a missing
  explicit window falls back to the full estimates of all assigned pods, duration 0 to node usage).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.core.quantity import resource_value
from analyzer.scheduling.arith import BoolArray, FloatArray, Int64Array
from analyzer.scheduling.framework import ExplainRow, FilterResult
from analyzer.scheduling.plugins.loadaware.args import (
    NAME,
    LoadAwareArgs,
    estimate_pod,
    parse_aggregated,
    pod_is_prod,
)
from analyzer.scheduling.state import ClusterState, LoadInputs, PodDemand
from analyzer.scheduling.versions import KubeVersion

THRESHOLDS_ANNOTATION = "scheduling.koordinator.sh/usage-thresholds"
RAW_ALLOCATABLE_ANNOTATION = "node.koordinator.sh/raw-allocatable"
REASON_EXPIRED = "node(s) nodeMetric expired"


@dataclass
class _NodeProfiles:
    """Per-node threshold sets (after annotation overrides) and estimated allocatable, ``[N, L]``."""

    usage: Int64Array
    prod: Int64Array
    prod_set: BoolArray
    aggregated: Int64Array
    aggregated_set: BoolArray
    aggregated_key: list[tuple[str, int]]
    allocatable: Int64Array
    usage_set: BoolArray = field(init=False)  # any plain threshold > 0, per node
    allocatable_safe: Int64Array = field(init=False)
    # the plain set's fail bound ``t + 0.5`` (float64) and checked resources, as Filter reads
    # them for every node on the plain thresholds (derived once, not per pod)
    usage_cut: FloatArray = field(init=False)
    usage_checkable: BoolArray = field(init=False)

    aggregated_groups: dict[tuple[str, int], BoolArray | None] = field(init=False)

    def __post_init__(self) -> None:
        self.usage_set = np.asarray(self.usage.any(axis=1), dtype=bool)
        self.allocatable_safe = np.maximum(self.allocatable, 1)  # total 0 is skipped anyway
        self.usage_cut = np.asarray(self.usage + 0.5, dtype=np.float64)
        self.usage_checkable = self.checkable(self.usage)
        keys = set(self.aggregated_key)
        if len(keys) == 1:  # one (stat, window) for every node: no per-row masks needed
            self.aggregated_groups = {keys.pop(): None}
        else:
            self.aggregated_groups = {
                key: np.array([k == key for k in self.aggregated_key], dtype=bool) for key in keys
            }

    def refresh(self) -> None:
        """Recompute the derived arrays after an annotation override."""
        self.__post_init__()

    def checkable(self, thresholds: Int64Array) -> BoolArray:
        """Threshold set (t > 0) and allocatable known (> 0): the resources Filter checks."""
        result: BoolArray = (thresholds > 0) & (self.allocatable > 0)
        return result


def _thresholds(raw: Any, resources: tuple[str, ...]) -> Int64Array | None:
    if not isinstance(raw, dict) or not raw:
        return None
    return np.array([int(raw.get(r, 0)) for r in resources], dtype=np.int64)


def _well_formed(custom: Any) -> bool:
    """Whether the annotation decodes into ``CustomUsageThresholds`` (else Go's Unmarshal fails)."""
    if not isinstance(custom, dict):
        return False
    sections = [custom.get("usageThresholds"), custom.get("prodUsageThresholds")]
    aggregated = custom.get("aggregatedUsage")
    if aggregated is not None:
        if not isinstance(aggregated, dict):
            return False
        sections.append(aggregated.get("usageThresholds"))
    for section in sections:
        if section is None:
            continue
        if not isinstance(section, dict):
            return False
        if any(isinstance(v, bool) or not isinstance(v, int) for v in section.values()):
            return False
    return True


def raw_allocatable(annotations: Mapping[str, str]) -> dict[str, int]:
    """The ``node.koordinator.sh/raw-allocatable`` ResourceList ({} when absent or invalid)."""
    text = annotations.get(RAW_ALLOCATABLE_ANNOTATION)
    if not text:
        return {}
    try:
        values = json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # a cell nested past the parser
        return {}
    if not isinstance(values, dict):
        return {}
    out: dict[str, int] = {}
    for name, value in values.items():
        try:
            out[str(name)] = resource_value(str(name), value)
        except InputError:
            return {}  # upstream ignores an unparsable list as a whole
    return out


def estimate_node_allocatable(
    allocatable: Mapping[str, int], annotations: Mapping[str, str]
) -> dict[str, int]:
    """``EstimateNode``: allocatable with the raw-allocatable annotation's entries merged over it."""
    return {**allocatable, **raw_allocatable(annotations)}


class LoadAwareScheduling:
    """Koordinator load-aware filter and score."""

    name = NAME

    def __init__(self, args: LoadAwareArgs, version: KubeVersion) -> None:
        self.args = args
        self.version = version
        self.resources = args.resources
        weights = args.resource_weights
        self.weights = np.array([int(weights.get(r, 0)) for r in self.resources], dtype=np.int64)

    # ------------------------------------------------------------ node inputs
    def _profiles(self, state: ClusterState) -> _NodeProfiles:
        key = f"{NAME}:{id(self)}"
        cached = state.cache.get(key)
        if isinstance(cached, _NodeProfiles):
            return cached
        resources = self.resources
        count = state.node_count
        base_usage = np.array([int(self.args.usage_thresholds.get(r, 0)) for r in resources])
        base_prod = _thresholds(dict(self.args.prod_usage_thresholds), resources)
        agg = self.args.aggregated
        base_agg = None
        if agg is not None and agg.usage_thresholds and agg.usage_type:
            base_agg = _thresholds(dict(agg.usage_thresholds), resources)
        profiles = _NodeProfiles(
            usage=np.tile(base_usage, (count, 1)).astype(np.int64),
            prod=np.tile(base_prod if base_prod is not None else 0 * base_usage, (count, 1)),
            prod_set=np.full(count, base_prod is not None),
            aggregated=np.tile(base_agg if base_agg is not None else 0 * base_usage, (count, 1)),
            aggregated_set=np.full(count, base_agg is not None),
            aggregated_key=[(agg.usage_type, agg.usage_duration) if agg else ("", 0)] * count,
            allocatable=np.zeros((count, len(resources)), dtype=np.int64),
        )
        for j, name in enumerate(resources):
            index = state.index_of(name)
            if index is not None:
                profiles.allocatable[:, j] = state.allocatable[:, index]
        for i, node_annotations in enumerate(state.node_annotations):
            self._override(profiles, i, node_annotations)
        profiles.refresh()
        state.cache[key] = profiles
        return profiles

    def _override(self, profiles: _NodeProfiles, i: int, annotations: dict[str, str]) -> None:
        text = annotations.get(THRESHOLDS_ANNOTATION)
        if text:
            try:
                custom = json.loads(text)
            except (json.JSONDecodeError, RecursionError):  # a cell nested past the parser
                custom = None  # invalid JSON: the arguments apply unchanged
            if _well_formed(custom):  # malformed: the arguments apply unchanged
                usage = _thresholds(custom.get("usageThresholds"), self.resources)
                if usage is not None:
                    profiles.usage[i] = usage
                prod = _thresholds(custom.get("prodUsageThresholds"), self.resources)
                if prod is not None:
                    profiles.prod[i], profiles.prod_set[i] = prod, True
                section = custom.get("aggregatedUsage")
                if isinstance(section, dict):
                    try:
                        parsed = parse_aggregated(section, THRESHOLDS_ANNOTATION)
                    except InputError:
                        parsed = None
                    agg = _thresholds(section.get("usageThresholds"), self.resources)
                    if parsed is not None and agg is not None and parsed.usage_type:
                        profiles.aggregated[i], profiles.aggregated_set[i] = agg, True
                        profiles.aggregated_key[i] = (parsed.usage_type, parsed.usage_duration)
        raw = raw_allocatable(annotations)
        for j, name in enumerate(self.resources):
            if name in raw:
                profiles.allocatable[i, j] = raw[name]

    def _load(self, state: ClusterState) -> LoadInputs:
        if state.load is None:
            return LoadInputs.empty(state.node_count, self.resources)
        return state.load

    def _table(self, load: LoadInputs, table: Int64Array) -> Int64Array:
        if load.resources == self.resources:
            return table
        return np.stack([load.column(table, r) for r in self.resources], axis=1)

    def _aggregated_base(
        self,
        load: LoadInputs,
        groups: dict[tuple[str, int], BoolArray | None],
        normal: Int64Array,
    ) -> Int64Array:
        """Aggregated usage + node delta per node; fallbacks as ``getTargetAggregatedUsage``.

        ``groups`` maps each (stat, window seconds) to the rows using it (None = every row). A
        node without that aggregate falls back to node usage + delta for window 0 and to the full
        estimates of its assigned pods for an explicit window.
        """
        delta = self._table(load, load.node_delta)
        estimated = self._table(load, load.node_estimated)
        result = np.empty_like(normal)
        for key, rows in groups.items():
            present, usage = load.aggregated.get(key, (np.zeros(len(normal), bool), None))
            agg = self._table(load, usage) if usage is not None else np.zeros_like(normal)
            fallback = normal if key[1] == 0 else estimated
            chosen = np.where(present[:, np.newaxis], agg + delta, fallback)
            if rows is None:
                return chosen
            result[rows] = chosen[rows]
        return result

    def _estimated(
        self,
        state: ClusterState,
        pod: PodDemand,
        prod_rows: BoolArray,
        agg_rows: BoolArray,
        agg_groups: dict[tuple[str, int], BoolArray | None],
    ) -> Int64Array:
        load = self._load(state)
        normal = self._table(load, load.node_usage) + self._table(load, load.node_delta)
        base = normal
        if agg_rows.any():
            base = np.where(
                agg_rows[:, np.newaxis], self._aggregated_base(load, agg_groups, normal), base
            )
        if prod_rows.any():
            prod = self._table(load, load.prod_usage) + self._table(load, load.prod_delta)
            base = np.where(prod_rows[:, np.newaxis], prod, base)
        incoming = estimate_pod(pod, self.args)
        vector = np.array([incoming.get(r, 0) for r in self.resources], dtype=np.int64)
        result: Int64Array = base + vector[np.newaxis, :]
        return result

    def _expired(self, load: LoadInputs, now: float) -> BoolArray:
        age = now - load.update_time
        result: BoolArray = np.isnan(load.update_time) | (age >= self.args.expiration_seconds)
        return result

    # ------------------------------------------------------------ filter
    def _threshold_sets(
        self, state: ClusterState, pod: PodDemand
    ) -> tuple[Int64Array, BoolArray, BoolArray, BoolArray]:
        """Per node the one threshold set Filter checks, prod / aggregated rows, any set > 0."""
        profiles = self._profiles(state)
        prod_rows = profiles.prod_set & pod_is_prod(pod)
        agg_rows = ~prod_rows & profiles.aggregated_set
        if not (prod_rows.any() or agg_rows.any()):  # every node on the plain thresholds
            return profiles.usage, prod_rows, agg_rows, profiles.usage_set
        thresholds: Int64Array = np.where(
            prod_rows[:, np.newaxis],
            profiles.prod,
            np.where(agg_rows[:, np.newaxis], profiles.aggregated, profiles.usage),
        ).astype(np.int64)
        any_set: BoolArray = np.asarray(thresholds.any(axis=1), dtype=bool)
        return thresholds, prod_rows, agg_rows, any_set

    def filter(self, state: ClusterState, pod: PodDemand, now: float) -> FilterResult:
        """Threshold filter for every node."""
        count = state.node_count
        if pod.daemonset:
            return FilterResult(np.ones(count, dtype=bool), lambda i: [])
        profiles = self._profiles(state)
        load = self._load(state)
        thresholds, prod_rows, agg_rows, active = self._threshold_sets(state, pod)
        active = active & load.has_metric
        expired = active & self.args.filter_expired & self._expired(load, now)
        refuse_expired = expired & (self.args.enable_when_expired is False)
        check = active & ~expired & load.metric_present
        estimated = self._estimated(state, pod, prod_rows, agg_rows, profiles.aggregated_groups)
        # Go: usage := int64(math.Round(float64(est) / float64(total) * 100)); fail iff usage > t.
        # For x >= 0 and integer t, math.Round(x) > t exactly when x >= t + 0.5, so the
        # comparison is done on the same float64 x without materialising the rounding.
        percent = estimated / profiles.allocatable_safe * 100
        if thresholds is profiles.usage:  # every node on the plain thresholds
            cut, checkable = profiles.usage_cut, profiles.usage_checkable
        else:
            cut = np.asarray(thresholds + 0.5, dtype=np.float64)
            checkable = profiles.checkable(thresholds)
        over = (percent >= cut) & checkable & check[:, np.newaxis]
        failed = refuse_expired.copy()
        for j in range(over.shape[1]):  # any over the resources (column by column: faster)
            failed |= over[:, j]

        def reasons(i: int) -> list[str]:
            """Koordinator's message for refused node ``i``."""
            if refuse_expired[i]:
                return [REASON_EXPIRED]
            j = int(np.argmax(over[i]))
            kind = "aggregated usage" if agg_rows[i] else "usage"
            return [f"node(s) {self.resources[j]} {kind} exceed threshold"]

        return FilterResult(~failed, reasons)

    # ------------------------------------------------------------ score
    def _score_parts(
        self, state: ClusterState, pod: PodDemand, now: float
    ) -> tuple[Int64Array, Int64Array, Int64Array, BoolArray]:
        count = state.node_count
        profiles = self._profiles(state)
        load = self._load(state)
        prod_rows = np.full(count, self.args.score_according_prod and pod_is_prod(pod))
        agg = self.args.aggregated
        agg_rows = ~prod_rows & bool(agg is not None and agg.score_type)
        groups: dict[tuple[str, int], BoolArray | None] = {
            (agg.score_type, agg.score_duration) if agg else ("", 0): None
        }
        estimated = self._estimated(state, pod, prod_rows, agg_rows, groups)
        capacity = profiles.allocatable
        per_resource = np.where(
            (capacity == 0) | (estimated > capacity),
            0,
            (capacity - estimated) * 100 // np.maximum(capacity, 1),
        ).astype(np.int64)
        usable = load.has_metric & load.metric_present & ~self._expired(load, now)
        return estimated, capacity, per_resource, usable

    def score(self, state: ClusterState, pod: PodDemand, now: float) -> Int64Array:
        """Raw scores 0–100 (0 for nodes without a fresh NodeMetric)."""
        count = state.node_count
        dominant_weight = self.args.dominant_weight
        weight_sum = int(self.weights.sum()) + dominant_weight
        if weight_sum <= 0:
            return np.zeros(count, dtype=np.int64)
        _, _, per_resource, usable = self._score_parts(state, pod, now)
        numerator = (per_resource * self.weights).sum(axis=1)
        if dominant_weight > 0:
            numerator = numerator + per_resource.min(axis=1) * dominant_weight
        result: Int64Array = np.where(usable, numerator // weight_sum, 0).astype(np.int64)
        return result

    def explain(
        self, state: ClusterState, pod: PodDemand, node: int, now: float
    ) -> list[ExplainRow]:
        """Estimated usage (base + incoming estimate), allocatable and score per resource."""
        estimated, capacity, per_resource, usable = self._score_parts(state, pod, now)
        thresholds, prod_rows, agg_rows, _ = self._threshold_sets(state, pod)
        kind = "prod " if prod_rows[node] else "aggregated " if agg_rows[node] else ""
        rows = []
        for j, name in enumerate(self.resources):
            cap = int(capacity[node, j])
            used = int(estimated[node, j])
            rows.append(
                ExplainRow(
                    plugin=NAME,
                    resource=f"{name} (w{int(self.weights[j])})",
                    requested=used,
                    allocatable=cap,
                    utilisation=round(used * 100 / cap, 2) if cap else None,
                    score=int(per_resource[node, j]) if usable[node] else 0,
                    note=(
                        f"estimated usage; {kind}threshold {int(thresholds[node, j])}%"
                        if usable[node]
                        else "no fresh NodeMetric: score 0"
                    ),
                )
            )
        return rows
