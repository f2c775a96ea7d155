"""The per-resource inputs shared by NodeResourcesFit scoring and BalancedAllocation.

Mirrors kube-scheduler's ``resourceAllocationScorer`` loop (research/kube-scoring.md §4): for each
configured resource, a scalar resource the pod does not request is skipped for every node; a node
whose allocatable is 0 skips the resource (neither score nor weight); ``pods`` and unknown names
have allocatable 0. cpu/memory read the non-zero (defaulted) requests unless ``use_requested``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.state import (
    CPU,
    MEMORY,
    ClusterState,
    PodDemand,
    is_scalar_resource,
    is_tracked_resource,
)

MAX_RESOURCE_WEIGHT = 100  # weights must be in (0, MaxNodeScore]


@dataclass(frozen=True)
class ResourceSpec:
    """A resource name and its weight in the score."""

    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@dataclass
class ResourceColumns:
    """Inputs of the configured resources kept for this pod: ``[N, k]`` arrays and ``[k]`` pod."""

    specs: list[ResourceSpec]
    allocatable: Int64Array
    used: Int64Array  # node usage without the pod
    pod: Int64Array
    valid: BoolArray  # allocatable > 0

    @property
    def requested(self) -> Int64Array:
        """Node usage with the pod."""
        result: Int64Array = self.used + self.pod[np.newaxis, :]
        return result

    @property
    def weights(self) -> Int64Array:
        """Weights as an int64 ``[k]`` array."""
        return np.array([s.weight for s in self.specs], dtype=np.int64)


def gather(
    state: ClusterState,
    pod: PodDemand,
    specs: Sequence[ResourceSpec],
    use_requested: bool,
    skip_unrequested_scalars: bool = True,
) -> ResourceColumns:
    """Collect the configured resources' columns, skipping scalars the pod does not request."""
    if tuple(s.name for s in specs) == ("cpu", "memory"):
        # the common case reads views of the state (no copies): cpu, memory lead the axis
        allocatable = state.allocatable[:, :2]
        if use_requested:
            used, pod_pair = state.requested[:, :2], pod.requests[:2]
        else:
            used, pod_pair = state.nonzero_requested, pod.nonzero
        return ResourceColumns(list(specs), allocatable, used, pod_pair, allocatable > 0)
    kept: list[ResourceSpec] = []
    alloc_cols: list[Int64Array] = []
    used_cols: list[Int64Array] = []
    pod_values: list[int] = []
    zeros = np.zeros(state.node_count, dtype=np.int64)
    for spec in specs:
        name = spec.name
        if name in ("cpu", "memory") and not use_requested:
            slot = CPU if name == "cpu" else MEMORY
            pod_value = int(pod.nonzero[slot])
            used = state.nonzero_requested[:, slot]
        else:
            index = state.index_of(name)
            pod_value = int(pod.requests[index]) if index is not None else pod.request(name)
            used = state.requested[:, index] if index is not None else zeros
        if skip_unrequested_scalars and is_scalar_resource(name) and pod_value == 0:
            continue  # upstream skips scalar resources the pod does not request (#103169)
        index = state.index_of(name)
        if index is None or not is_tracked_resource(name):
            alloc = zeros
        else:
            alloc = state.allocatable[:, index]
        kept.append(spec)
        alloc_cols.append(alloc)
        used_cols.append(used)
        pod_values.append(pod_value)
    count = state.node_count
    if not kept:
        empty = np.zeros((count, 0), dtype=np.int64)
        return ResourceColumns([], empty, empty, np.zeros(0, np.int64), empty.astype(bool))
    allocatable = np.stack(alloc_cols, axis=1)
    return ResourceColumns(
        specs=kept,
        allocatable=allocatable,
        used=np.stack(used_cols, axis=1),
        pod=np.array(pod_values, dtype=np.int64),
        valid=allocatable > 0,
    )


def weighted_floor_mean(scores: Int64Array, valid: BoolArray, weights: Int64Array) -> Int64Array:
    """``Σ score×w // Σ w`` over valid resources per node; 0 where none is valid."""
    if valid.all():  # every node offers every resource: one weight sum for all
        total = int(weights.sum())
        if total == 0:
            return np.zeros(scores.shape[0], dtype=np.int64)
        numerator = scores[:, 0] * weights[0] if weights[0] != 1 else scores[:, 0]
        for j in range(1, scores.shape[1]):
            numerator = numerator + (scores[:, j] * weights[j] if weights[j] != 1 else scores[:, j])
        floored: Int64Array = numerator // total
        return floored
    numerator = np.where(valid, scores * weights, 0).sum(axis=1)
    weight_sum = np.where(valid, weights, 0).sum(axis=1)
    result: Int64Array = np.where(weight_sum > 0, numerator // np.maximum(weight_sum, 1), 0)
    return result.astype(np.int64)


def parse_resources(
    raw: Any, field: str, *, default: Sequence[ResourceSpec] = DEFAULT_RESOURCES
) -> tuple[ResourceSpec, ...]:
    """Parse ``[{name, weight}]``: empty → default; weight unset/0 → 1 (v1 defaulting)."""
    if raw is None or raw == []:
        return tuple(default)
    if not isinstance(raw, list):
        raise InputError(f"{field}: expected a list of {{name, weight}}")
    specs: list[ResourceSpec] = []
    for i, item in enumerate(raw):
        where = f"{field}[{i}]"
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise InputError(f"{where}.name: each resource needs a name, e.g. {{name: cpu}}")
        weight = item.get("weight", 0)
        if weight is None:
            weight = 0
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise InputError(f"{where}.weight: {preview(weight)} is not an integer")
        specs.append(ResourceSpec(item["name"], int(weight) if weight != 0 else 1))
    return tuple(specs)


def weight_errors(specs: Sequence[ResourceSpec], field: str) -> list[str]:
    """Every weight must be in (0, 100] (``validateResources``); one message per violation."""
    return [
        f"{field}[{i}].weight: Invalid value: {spec.weight}: resource weight of {spec.name} "
        f"not in valid range (0, {MAX_RESOURCE_WEIGHT}]"
        for i, spec in enumerate(specs)
        if spec.weight <= 0 or spec.weight > MAX_RESOURCE_WEIGHT
    ]


def validate_weights(specs: Sequence[ResourceSpec], field: str) -> None:
    """Raise ``InputError`` listing every weight outside (0, 100]."""
    errors = weight_errors(specs, field)
    if errors:
        raise InputError("; ".join(errors))
