"""kube-scheduler ``NodeResourcesFit``: the resource filter and the three scoring strategies.

Upstream rules (research/kube-scoring.md §5, §6, §8, §10), all int64:

- Filter: ``pods on node + 1 > allocatable pods`` → "Too many pods"; then for each resource the pod
  requests (> 0): fail if ``request > allocatable − requested`` (real requests, never defaults).
- LeastAllocated: ``(alloc − req) × 100 // alloc`` (0 when req > alloc).
- MostAllocated: ``min(req, alloc) × 100 // alloc``; node = ``Σ s×w // Σ w``.
- RequestedToCapacityRatio: util = ``req × 100 // alloc`` (100 when req ≥ alloc; rounds up before
  1.22), raw = broken-linear shape (Go truncating division), resources scoring 0 dropped, node =
  Go ``math.Round(Σ raw×w / Σ w)``.
- ≤ 1.16: legacy 0–10 priority functions over cpu and memory, ``(cpu + mem) / 2``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.arith import Int64Array, go_div, go_div_array
from analyzer.scheduling.fields import integer, listing, mapping
from analyzer.scheduling.framework import ExplainRow, FilterResult
from analyzer.scheduling.gpu.requests import GPU_RESOURCES
from analyzer.scheduling.plugins.noderesources.resource_allocation import (
    ResourceColumns,
    ResourceSpec,
    gather,
    parse_resources,
    weight_errors,
    weighted_floor_mean,
)
from analyzer.scheduling.state import (
    ClusterState,
    PodDemand,
    is_extended_resource,
    is_tracked_resource,
)
from analyzer.scheduling.versions import KubeVersion

NAME = "NodeResourcesFit"
STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100
_OVERFLOW_SAFE = np.iinfo(np.int64).max // 100


@dataclass(frozen=True)
class ShapePoint:
    """One point of the RTCR shape: utilisation 0..100 → score 0..10 (API scale)."""

    utilization: int
    score: int


@dataclass(frozen=True)
class FitArgs:
    """``NodeResourcesFitArgs`` after v1 defaulting."""

    strategy: str = "LeastAllocated"
    resources: tuple[ResourceSpec, ...] = (ResourceSpec("cpu"), ResourceSpec("memory"))
    shape: tuple[ShapePoint, ...] = ()
    ignored_resources: frozenset[str] = field(default_factory=frozenset)
    ignored_resource_groups: frozenset[str] = field(default_factory=frozenset)


def _int_field(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{where}: {preview(value)} is not an integer")
    return int(value)


def shape_errors(
    raw: Any, field: str, upstream_field: str
) -> tuple[tuple[ShapePoint, ...], list[str]]:
    """Parse an RTCR shape and list every violation in upstream order (``validateFunctionShape``).

    Rules: at least one point; utilisation strictly increasing (first violation only); each
    utilisation in [0, 100]; each score in [0, 10]. Messages name the field as written and as
    kube-scheduler reports it (``upstream_field``, e.g. ``scoringStrategy.shape``).
    """

    def at(i: int, leaf: str) -> str:
        return f"{field}[{i}].{leaf} (kube-scheduler: {upstream_field}[{i}].{leaf})"

    if not isinstance(raw, list) or not raw:
        return (), [f"{field}: Required value: at least one point must be specified"]
    points: list[ShapePoint] = []
    for i, item in enumerate(raw):
        item = mapping(item, f"{field}[{i}]")
        util = integer(item.get("utilization", 0), f"{field}[{i}].utilization")
        score = integer(item.get("score", 0), f"{field}[{i}].score")
        points.append(ShapePoint(util, score))
    errors: list[str] = []
    for i in range(1, len(points)):
        if points[i - 1].utilization >= points[i].utilization:
            errors.append(
                f"{at(i, 'utilization')}: Invalid value: {points[i].utilization}: "
                "values must be sorted in increasing order"
            )
            break
    for i, point in enumerate(points):
        if not 0 <= point.utilization <= MAX_UTILIZATION:
            errors.append(
                f"{at(i, 'utilization')}: Invalid value: {point.utilization}: "
                "not in valid range [0, 100]"
            )
        if not 0 <= point.score <= MAX_CUSTOM_PRIORITY_SCORE:
            errors.append(
                f"{at(i, 'score')}: Invalid value: {point.score}: not in valid range [0, 10]"
            )
    return tuple(points), errors


def parse_shape(raw: Any, field: str, upstream_field: str | None = None) -> tuple[ShapePoint, ...]:
    """Parse and validate an RTCR shape; ``InputError`` listing every violation."""
    points, errors = shape_errors(raw, field, upstream_field or field)
    if errors:
        raise InputError("; ".join(errors))
    return points


def parse_fit_args(raw: Mapping[str, Any] | None, field: str) -> FitArgs:
    """Default and validate ``NodeResourcesFitArgs`` (v1 ``SetDefaults`` + validation).

    Defaulting: no ``scoringStrategy`` → LeastAllocated on cpu, memory; empty resources → cpu,
    memory; weight 0 → 1. Validation collects every error (one line, ``; ``-separated): type
    supported, weights in (0, 100], the shape when ``requestedToCapacityRatio`` is given (required
    for RequestedToCapacityRatio, where kube-scheduler would otherwise fail), group names without
    ``/``.
    """
    raw = mapping(raw, field)
    where = f"{field}.scoringStrategy"
    strategy_raw = raw.get("scoringStrategy")
    if strategy_raw is None:
        strategy_raw = {"type": "LeastAllocated"}
    strategy_raw = mapping(strategy_raw, where)
    errors: list[str] = []
    strategy = str(strategy_raw.get("type") or "")
    if strategy not in STRATEGIES:
        errors.append(
            f"{where}.type: Unsupported value: {preview(strategy)}: supported values: "
            + ", ".join(STRATEGIES)
        )
    resources = parse_resources(strategy_raw.get("resources"), f"{where}.resources")
    errors += weight_errors(resources, f"{where}.resources")
    rtcr = strategy_raw.get("requestedToCapacityRatio")
    shape: tuple[ShapePoint, ...] = ()
    if rtcr is not None:
        shape_field = f"{where}.requestedToCapacityRatio.shape"
        shape, more = shape_errors(
            mapping(rtcr, f"{where}.requestedToCapacityRatio").get("shape"),
            shape_field,
            f"{where}.shape",
        )
        errors += more
    elif strategy == "RequestedToCapacityRatio":
        errors.append(
            f"{where}.requestedToCapacityRatio: Required value: RequestedToCapacityRatio needs "
            "a shape: [{utilization, score}, ...]"
        )
    groups = listing(raw.get("ignoredResourceGroups"), f"{field}.ignoredResourceGroups")
    for i, group in enumerate(groups):
        if "/" in str(group):
            errors.append(
                f"{field}.ignoredResourceGroups[{i}]: Invalid value: {preview(group)}: "
                "resource group name can't contain '/'"
            )
    if errors:
        raise InputError("; ".join(errors))
    return FitArgs(
        strategy=strategy,
        resources=resources,
        shape=shape if strategy == "RequestedToCapacityRatio" else (),
        ignored_resources=frozenset(
            str(r) for r in listing(raw.get("ignoredResources"), f"{field}.ignoredResources")
        ),
        ignored_resource_groups=frozenset(str(g) for g in groups),
    )


def broken_linear(points: Sequence[tuple[int, int]], p: int) -> int:
    """``helper.BuildBrokenLinearFunction`` at ``p`` (Go truncating division)."""
    if p <= points[0][0]:
        return points[0][1]
    for i in range(1, len(points)):
        u0, s0 = points[i - 1]
        u1, s1 = points[i]
        if p <= u1:
            return s0 + go_div((s1 - s0) * (p - u0), u1 - u0)
    return points[-1][1]


def broken_linear_array(points: Sequence[tuple[int, int]], p: Int64Array) -> Int64Array:
    """``broken_linear`` for every element of ``p``."""
    result = np.full(p.shape, points[-1][1], dtype=np.int64)
    done = p <= points[0][0]
    result[done] = points[0][1]
    for i in range(1, len(points)):
        u0, s0 = points[i - 1]
        u1, s1 = points[i]
        here = ~done & (p <= u1)
        result[here] = s0 + go_div_array((s1 - s0) * (p[here] - u0), u1 - u0)
        done |= here
    return result


def scaled_utilization(requested: int, capacity: int) -> int:
    """RTCR utilisation (PR #142112 form): 0 for non-positive inputs, 100 at/over capacity."""
    if capacity <= 0 or requested <= 0:
        return 0
    if requested >= capacity:
        return MAX_UTILIZATION
    return requested * MAX_UTILIZATION // capacity  # Python ints: exact like the 128-bit upstream


def _utilization_array(requested: Int64Array, capacity: Int64Array, ceil: bool) -> Int64Array:
    safe = np.maximum(capacity, 1)
    if ceil:  # ≤ v1.21: 100 − (cap − req) × 100 // cap; capacity 0 or over capacity → 100
        util = MAX_UTILIZATION - (safe - requested) * MAX_UTILIZATION // safe
        over = (capacity <= 0) | (requested > capacity)
        ceiled: Int64Array = np.where(over, MAX_UTILIZATION, util).astype(np.int64)
        return ceiled
    if requested.size and int(requested.max()) > _OVERFLOW_SAFE:
        exact = [
            scaled_utilization(int(r), int(c))
            for r, c in zip(requested.flat, capacity.flat, strict=True)
        ]
        return np.array(exact, dtype=np.int64).reshape(requested.shape)
    else:
        util = requested * MAX_UTILIZATION // safe
    util = np.where(requested >= capacity, MAX_UTILIZATION, util)
    result: Int64Array = np.where((capacity <= 0) | (requested <= 0), 0, util).astype(np.int64)
    return result


class NodeResourcesFit:
    """Filter + scoring strategy of ``NodeResourcesFit`` over all nodes at once."""

    name = NAME

    def __init__(self, args: FitArgs, version: KubeVersion) -> None:
        self.args = args
        self.version = version
        scale = 1 if version.legacy_scale else version.max_node_score // MAX_CUSTOM_PRIORITY_SCORE
        # the API shape is 0–10; the plugin multiplies scores by MaxNodeScore/10 (v1.17+)
        self.scaled_shape = [(p.utilization, p.score * scale) for p in args.shape]

    def without_devices(self) -> NodeResourcesFit:
        """This plugin counting the GPU resources a GPU-sharing profile leaves to its device
        filter (``ignoredResources``): what a node autoscaler's simulation checks once that
        filter is gone (``Profile.without_devices``)."""
        ignored = self.args.ignored_resources - frozenset(GPU_RESOURCES)
        if ignored == self.args.ignored_resources:
            return self
        return NodeResourcesFit(replace(self.args, ignored_resources=ignored), self.version)

    # ---------------------------------------------------------------- filter
    def _checked(self, resource: str) -> bool:
        if not is_tracked_resource(resource) or resource == "pods":
            return False
        if is_extended_resource(resource):
            group = resource.split("/", 1)[0]
            if (
                resource in self.args.ignored_resources
                or group in self.args.ignored_resource_groups
            ):
                return False
        return True

    def filter(self, state: ClusterState, pod: PodDemand, now: float) -> FilterResult:
        """``fitsRequest`` for every node (real requests; pod count checked first)."""
        too_many = state.pod_count >= state.allowed_pods  # pods on node + 1 > allowed
        infeasible = too_many.copy()
        checked = [
            j for j, r in enumerate(state.resources) if pod.requests[j] > 0 and self._checked(r)
        ]
        off_axis = [r for r in pod.off_axis_requests(state.resources) if self._checked(r)]
        for j in checked:  # request > allocatable − requested, one resource column at a time
            infeasible |= state.allocatable[:, j] - state.requested[:, j] < pod.requests[j]
        if off_axis:  # no node offers it: allocatable 0 everywhere
            infeasible[:] = True

        def reasons(node: int) -> list[str]:
            """``fitsRequest``'s insufficient-resource messages for one node."""
            out = ["Too many pods"] if too_many[node] else []
            for j in checked:
                if pod.requests[j] > state.allocatable[node, j] - state.requested[node, j]:
                    out.append(f"Insufficient {state.resources[j]}")
            out.extend(f"Insufficient {r}" for r in off_axis)
            return out

        return FilterResult(~infeasible, reasons)

    def compared(self, state: ClusterState, pod: PodDemand) -> list[tuple[int, int]] | None:
        """The (resource column, request) pairs ``filter`` compares for ``pod``; None when the
        pod requests a checked resource no node offers (it fits nowhere)."""
        if any(self._checked(r) for r in pod.off_axis_requests(state.resources)):
            return None
        return [
            (j, int(pod.requests[j]))
            for j, r in enumerate(state.resources)
            if pod.requests[j] > 0 and self._checked(r)
        ]

    def fits_on(
        self, state: ClusterState, pod: PodDemand, nodes: Int64Array
    ) -> np.ndarray[Any, Any]:
        """``filter``'s answer on ``nodes`` only (the same integer comparisons): for a caller that
        wants the first fitting node in some order and would look at few of them."""
        columns = self.compared(state, pod)
        if columns is None:
            return np.zeros(len(nodes), dtype=bool)
        ok = state.pod_count[nodes] < state.allowed_pods[nodes]
        for j, request in columns:
            ok &= state.allocatable[nodes, j] - state.requested[nodes, j] >= request
        return ok

    # ---------------------------------------------------------------- score
    def _legacy_columns(self, state: ClusterState, pod: PodDemand) -> ResourceColumns:
        specs = [ResourceSpec("cpu"), ResourceSpec("memory")]
        columns = gather(state, pod, specs, use_requested=False)
        return columns

    def per_resource(
        self, state: ClusterState, pod: PodDemand
    ) -> tuple[ResourceColumns, Int64Array]:
        """The kept resource columns and each one's raw score ``[N, k]``."""
        legacy = self.version.legacy_scale and self.args.strategy != "RequestedToCapacityRatio"
        # before 1.22 nothing was skipped: unrequested scalars and capacity-0 resources counted
        pre_skip = self.version.rtcr_ceil_utilisation
        if legacy:
            columns = self._legacy_columns(state, pod)
        else:
            columns = gather(
                state, pod, self.args.resources, False, skip_unrequested_scalars=not pre_skip
            )
        if pre_skip and not legacy:
            columns.valid = np.ones_like(columns.valid)
        all_valid = bool(columns.valid.all())
        positive = bool((columns.allocatable > 0).all()) if pre_skip else all_valid
        alloc = columns.allocatable if positive else np.maximum(columns.allocatable, 1)
        requested = columns.requested
        top = self.version.max_node_score
        if self.args.strategy == "LeastAllocated":
            # requested > alloc scores 0: max(alloc − requested, 0) does that in one pass
            raw = np.maximum(alloc - requested, 0) * top // alloc
        elif self.args.strategy == "MostAllocated":
            if self.version.most_allocated_zero_over_capacity:
                raw = np.where(requested > alloc, 0, requested * top // alloc)
            else:
                raw = np.minimum(requested, alloc) * top // alloc
        else:
            util = _utilization_array(
                requested, columns.allocatable, self.version.rtcr_ceil_utilisation
            )
            raw = broken_linear_array(self.scaled_shape, util)
        if pre_skip and self.args.strategy != "RequestedToCapacityRatio":
            raw = np.where(columns.allocatable == 0, 0, raw)  # `if capacity == 0 { return 0 }`
        if all_valid:
            return columns, raw.astype(np.int64, copy=False)
        return columns, np.where(columns.valid, raw, 0).astype(np.int64)

    def score(self, state: ClusterState, pod: PodDemand, now: float) -> Int64Array:
        """Raw node scores (0–100, or 0–10 for ≤ 1.16)."""
        columns, raw = self.per_resource(state, pod)
        if self.args.strategy == "RequestedToCapacityRatio":
            # resources scoring 0 leave both sums (`if resourceScore > 0`); Go math.Round
            keep = columns.valid & (raw > 0)
            weights = columns.weights
            numerator = np.where(keep, raw * weights, 0).sum(axis=1)
            weight_sum = np.where(keep, weights, 0).sum(axis=1)
            safe = np.maximum(weight_sum, 1)
            rounded = (2 * numerator + safe) // (2 * safe)
            result: Int64Array = np.where(weight_sum > 0, rounded, 0).astype(np.int64)
            return result
        if self.version.legacy_scale:  # (cpu + memory) / 2, a resource with capacity 0 scores 0
            legacy: Int64Array = (raw.sum(axis=1) // 2).astype(np.int64)
            return legacy
        return weighted_floor_mean(raw, columns.valid, columns.weights)

    def explain(
        self, state: ClusterState, pod: PodDemand, node: int, now: float
    ) -> list[ExplainRow]:
        """Requested (node + pod, non-zero rule), allocatable, utilisation and raw score per resource."""
        columns, raw = self.per_resource(state, pod)
        rows = []
        for k, spec in enumerate(columns.specs):
            alloc = int(columns.allocatable[node, k])
            req = int(columns.requested[node, k])
            rows.append(
                ExplainRow(
                    plugin=f"{NAME}/{self.args.strategy}",
                    resource=f"{spec.name} (w{spec.weight})",
                    requested=req,
                    allocatable=alloc,
                    utilisation=round(req * 100 / alloc, 2) if alloc else None,
                    score=int(raw[node, k]) if alloc else None,
                    note="" if alloc else "allocatable 0: skipped",
                )
            )
        return rows
