"""kube-scheduler ``NodeResourcesBalancedAllocation`` (research/kube-scoring.md §7, §10).

Balance of a state (float64, resources in config order, skips as in resource_allocation.py)::

    f_r = min(req_r / alloc_r, 1.0)
    n == 2: std = |(f_0 − f_1) / 2|;  n > 2: population std (running sums in order);  n < 2: 0
    s = int64((1 − std) × 100)

- ≥ 1.36 (PR #135573): score = 50 + (50 + s_with − s_without) // 2 (with / without the pod);
- 1.22–1.35: score = s_with;  < 1.22: ``int((1 − |f_cpu − f_mem|) × max)``, 0 once a fraction ≥ 1.
PreScore Skip (v1.33+): a pod whose configured requests are all 0 gets no score from this plugin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.core.structured import preview
from analyzer.scheduling.arith import FloatArray, Int64Array
from analyzer.scheduling.fields import mapping
from analyzer.scheduling.framework import ExplainRow
from analyzer.scheduling.plugins.noderesources.resource_allocation import (
    DEFAULT_RESOURCES,
    ResourceColumns,
    ResourceSpec,
    gather,
    parse_resources,
)
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.versions import KubeVersion

NAME = "NodeResourcesBalancedAllocation"


@dataclass(frozen=True)
class BalancedArgs:
    """``NodeResourcesBalancedAllocationArgs`` after defaulting."""

    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES


def parse_balanced_args(raw: Mapping[str, Any] | None, field: str) -> BalancedArgs:
    """Default (empty → cpu, memory; weight 0 → 1) and validate (no duplicates, weights exactly 1)."""
    resources = parse_resources(mapping(raw, field).get("resources"), f"{field}.resources")
    seen: set[str] = set()
    for i, spec in enumerate(resources):
        if spec.name in seen:
            raise InputError(f"{field}.resources[{i}].name: Duplicate value: {preview(spec.name)}")
        seen.add(spec.name)
        if spec.weight != 1:
            raise InputError(
                f"{field}.resources[{i}].weight: Invalid value: {spec.weight}: must be 1"
            )
    return BalancedArgs(resources)


def balance_scores(fractions: FloatArray, valid: np.ndarray[Any, Any], top: int) -> Int64Array:
    """``int((1 − std) × top)`` per node over the valid fractions, in column order (Go op order)."""
    if fractions.shape[1] == 2 and valid.all():  # the common cpu+memory case: |(f0 − f1) / 2|
        two: Int64Array = ((1 - np.abs((fractions[:, 0] - fractions[:, 1]) / 2)) * top).astype(
            np.int64
        )
        return two
    count = valid.sum(axis=1)
    total = np.zeros(fractions.shape[0])
    first = np.zeros(fractions.shape[0])
    second = np.zeros(fractions.shape[0])
    seen = np.zeros(fractions.shape[0], dtype=np.int64)
    for j in range(fractions.shape[1]):
        here = valid[:, j]
        value = np.where(here, fractions[:, j], 0.0)
        total = total + value  # adding an exact 0.0 leaves a skipped node's sum unchanged
        first = np.where(here & (seen == 0), value, first)
        second = np.where(here & (seen == 1), value, second)
        seen = seen + here
    mean = total / np.maximum(count, 1)
    squares = np.zeros(fractions.shape[0])
    for j in range(fractions.shape[1]):
        deviation = fractions[:, j] - mean
        squares = squares + np.where(valid[:, j], deviation * deviation, 0.0)
    std_many = np.sqrt(squares / np.maximum(count, 1))
    std_two = np.abs((first - second) / 2)
    std = np.where(count == 2, std_two, np.where(count > 2, std_many, 0.0))
    result: Int64Array = ((1 - std) * top).astype(np.int64)
    return result


class NodeResourcesBalancedAllocation:
    """Balanced resource allocation score over all nodes at once."""

    name = NAME

    def __init__(self, args: BalancedArgs, version: KubeVersion) -> None:
        self.args = args
        self.version = version

    def _columns(self, state: ClusterState, pod: PodDemand) -> ResourceColumns:
        if self.version.balanced_two_resource_legacy:
            specs: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
        else:
            specs = self.args.resources
        use_requested = not self.version.balanced_uses_nonzero
        return gather(state, pod, specs, use_requested=use_requested)

    def skips(self, pod: PodDemand) -> bool:
        """PreScore: every configured request of the pod is 0 → Skip (v1.33+)."""
        if (self.version.major, self.version.minor) < (1, 33):
            return False
        return all(pod.request(spec.name) == 0 for spec in self.args.resources)

    def _fractions(self, columns: ResourceColumns, with_pod: bool) -> FloatArray:
        used = columns.requested if with_pod else columns.used
        alloc = columns.allocatable
        if not columns.valid.all():
            alloc = np.maximum(alloc, 1)  # skipped columns are masked later
        result: FloatArray = np.minimum(used / alloc, 1.0)  # int64 / int64 → float64 division
        return result

    def score(self, state: ClusterState, pod: PodDemand, now: float) -> Int64Array | None:
        """Raw scores, or None when PreScore skips the pod."""
        if self.skips(pod):
            return None
        columns = self._columns(state, pod)
        top = self.version.max_node_score
        if self.version.balanced_two_resource_legacy:
            requested = columns.requested
            valid = columns.valid
            raw_fraction = np.where(
                valid, requested / np.maximum(columns.allocatable, 1).astype(np.float64), 1.0
            )  # capacity 0 reads as fully used
            full = (raw_fraction >= 1).any(axis=1)
            diff = np.abs(raw_fraction[:, 0] - raw_fraction[:, 1])
            legacy: Int64Array = np.where(full, 0, ((1 - diff) * top).astype(np.int64))
            return legacy.astype(np.int64)
        with_pod = balance_scores(self._fractions(columns, True), columns.valid, top)
        if not self.version.balanced_delta:
            return with_pod
        without = balance_scores(self._fractions(columns, False), columns.valid, top)
        result: Int64Array = 50 + (50 + with_pod - without) // 2
        return result

    def explain(
        self, state: ClusterState, pod: PodDemand, node: int, now: float
    ) -> list[ExplainRow]:
        """Each resource's fraction with (and without) the pod; the balance score last."""
        columns = self._columns(state, pod)
        with_pod = self._fractions(columns, True)
        without = self._fractions(columns, False)
        rows = []
        for k, spec in enumerate(columns.specs):
            alloc = int(columns.allocatable[node, k])
            note = f"without pod {float(without[node, k]) * 100:.2f}%" if alloc else "skipped"
            rows.append(
                ExplainRow(
                    plugin=NAME,
                    resource=spec.name,
                    requested=int(columns.requested[node, k]),
                    allocatable=alloc,
                    utilisation=round(float(with_pod[node, k]) * 100, 2) if alloc else None,
                    score=None,
                    note=note,
                )
            )
        scores = self.score(state, pod, now)
        note = "skipped: the pod requests none of the resources" if scores is None else ""
        if scores is not None and self.version.balanced_delta:
            top = self.version.max_node_score
            s_with = int(balance_scores(with_pod, columns.valid, top)[node])
            s_without = int(balance_scores(without, columns.valid, top)[node])
            note = f"50 + (50 + {s_with} with − {s_without} without) / 2"
        elif scores is not None:
            note = "int((1 − std of fractions) × max)"
        rows.append(
            ExplainRow(
                plugin=NAME,
                resource="(balance)",
                requested=None,
                allocatable=None,
                utilisation=None,
                score=None if scores is None else int(scores[node]),
                note=note,
            )
        )
        return rows
