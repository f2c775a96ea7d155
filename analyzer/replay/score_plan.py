"""A profile made only of kube-scheduler's resource plugins, compiled for the replay's score
caches (``analyzer.replay.scoring``): per pod shape, the state columns each plugin reads
(``Columns``, ``Plan``), the static filters' mask and the static scores that vary between nodes
(``Kernel``), and the vectorised NodeResourcesFit and BalancedAllocation scores on a set of rows
(``fit_score``, ``balanced_score``; research/kube-scoring.md §5–6). The plugins' own array
helpers do the arithmetic; ``tests/test_replay_scoring.py`` checks the result bit for bit
against ``Profile.evaluate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.replay.rows import BalancedRows, Column, FitRows, RowPlan, fit_strategy
from analyzer.scheduling.arith import BoolArray, FloatArray, Int64Array
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.plugins.helper.node_constraints import (
    NodeAffinityFilter,
    TaintTolerationFilter,
)
from analyzer.scheduling.plugins.interpodaffinity import InterPodAffinity
from analyzer.scheduling.plugins.nodeports import NodePorts
from analyzer.scheduling.plugins.noderesources.balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balance_scores,
)
from analyzer.scheduling.plugins.noderesources.fit import NodeResourcesFit, broken_linear_array
from analyzer.scheduling.plugins.noderesources.resource_allocation import (
    ResourceSpec,
    weighted_floor_mean,
)
from analyzer.scheduling.plugins.nodeunschedulable import NodeUnschedulable
from analyzer.scheduling.plugins.podtopologyspread import PodTopologySpread
from analyzer.scheduling.state import CPU, MEMORY, ClusterState, PodDemand, is_scalar_resource

STATIC_FILTERS = (NodeUnschedulable, TaintTolerationFilter, NodeAffinityFilter)
TOPOLOGY = (PodTopologySpread, InterPodAffinity)


@dataclass(frozen=True)
class Columns:
    """Which state columns feed one plugin's per-resource loop for one pod shape."""

    alloc: Int64Array  # axis index per kept resource
    nonzero_slot: Int64Array  # CPU/MEMORY slot of nonzero_requested, or -1 = use requested
    requested_index: Int64Array  # axis index into requested (when nonzero_slot is -1)
    pod: Int64Array  # the pod's value per kept resource
    weights: Int64Array

    def as_rows(self) -> tuple[Column, ...]:
        """The columns as plain tuples for ``analyzer.replay.rows``."""
        return tuple(
            (int(a), int(s), int(r), int(v), int(w))
            for a, s, r, v, w in zip(
                self.alloc,
                self.nonzero_slot,
                self.requested_index,
                self.pod,
                self.weights,
                strict=True,
            )
        )

    def used(self, state: ClusterState, rows: Int64Array) -> Int64Array:
        """Node usage without the pod, rows × kept resources."""
        out = np.empty((len(rows), len(self.pod)), dtype=np.int64)
        for c in range(len(self.pod)):
            slot = int(self.nonzero_slot[c])
            if slot >= 0:
                out[:, c] = state.nonzero_requested[rows, slot]
            else:
                out[:, c] = state.requested[rows, int(self.requested_index[c])]
        return out


def columns(
    state: ClusterState, pod: PodDemand, specs: Sequence[ResourceSpec], use_requested: bool
) -> Columns:
    """The core's ``gather`` decisions for one pod, as index arrays (resources no node has dropped:
    allocatable 0 makes them invalid everywhere, so they add neither score nor weight)."""
    alloc, slots, req_index, values, weights = [], [], [], [], []
    for spec in specs:
        index = state.index_of(spec.name)
        if spec.name in ("cpu", "memory") and not use_requested:
            slot = CPU if spec.name == "cpu" else MEMORY
            value = int(pod.nonzero[slot])
        else:
            slot = -1
            value = int(pod.requests[index]) if index is not None else pod.request(spec.name)
        if is_scalar_resource(spec.name) and value == 0:
            continue
        if index is None:
            continue
        alloc.append(index)
        slots.append(slot)
        req_index.append(index)
        values.append(value)
        weights.append(spec.weight)
    return Columns(
        *(np.array(x, dtype=np.int64) for x in (alloc, slots, req_index, values, weights))
    )


@dataclass
class Plan:
    """A pod shape compiled against the profile: filter columns and score inputs."""

    never: bool  # requests a resource no node offers
    checked: Int64Array  # axis indices the Fit filter compares
    fit: list[tuple[NodeResourcesFit, int, Columns]]
    balanced: list[tuple[NodeResourcesBalancedAllocation, int, Columns]]
    rows: RowPlan  # the same plan for the scalar scorer of a few changed nodes
    allowed: BoolArray | None = None  # TaintToleration & NodeAffinity per node (None: all pass)
    # static score plugins whose raw score differs between nodes: (plugin, weight, raw)
    static: list[tuple[Any, int, Int64Array]] = field(default_factory=list)
    static_sums: dict[tuple[int, ...], Int64Array] = field(default_factory=dict)  # by maxima
    ports: tuple[Any, ...] = ()  # NodePorts: the shape's host ports (a part of its key)


class Kernel:
    """Fast evaluation of a profile made only of NodeResourcesFit and BalancedAllocation."""

    def __init__(self, profile: Profile) -> None:
        self.fit_filters = [f for f in profile.filters if isinstance(f, NodeResourcesFit)]
        # the static filters: node labels never change during a replay; taints and cordons
        # change only with node-state intervals (``node_state_changed``: per-shape re-plan)
        self.static_filters = [f for f in profile.filters if isinstance(f, STATIC_FILTERS)]
        # NodePorts reads the ports in use per node: checked on the rows a refresh recomputes
        self.ports = any(isinstance(f, NodePorts) for f in profile.filters)
        self.fit_scores: list[tuple[NodeResourcesFit, int]] = []
        self.balanced: list[tuple[NodeResourcesBalancedAllocation, int]] = []
        self.static_scores: list[tuple[Any, int]] = []
        # static, no NormalizeScore (ImageLocality): read only node data and the pod's images
        self.fixed_scores: list[tuple[Any, int]] = []
        for weighted in profile.scorers:
            plugin = weighted.plugin
            if isinstance(plugin, NodeResourcesFit):
                self.fit_scores.append((plugin, weighted.weight))
            elif isinstance(plugin, NodeResourcesBalancedAllocation):
                self.balanced.append((plugin, weighted.weight))
            elif getattr(plugin, "static_score", False):
                if getattr(plugin, "normalizes", True):
                    self.static_scores.append((plugin, weighted.weight))
                else:
                    self.fixed_scores.append((plugin, weighted.weight))
        # a fixed score reads the present nodes (ImageLocality's spread): recomputed when they change
        self.counts_nodes = any(getattr(p, "counts_nodes", False) for p, _ in self.fixed_scores)

    @staticmethod
    def supports(profile: Profile) -> bool:
        """True when every plugin of ``profile`` has a compiled form here (PodTopologySpread
        and InterPodAffinity: left out for the pods on which they are inert, ``topology``)."""
        for f in profile.filters:
            if not isinstance(f, (NodeResourcesFit, NodePorts, *STATIC_FILTERS, *TOPOLOGY)):
                return False
        for weighted in profile.scorers:
            plugin = weighted.plugin
            if isinstance(plugin, TOPOLOGY):
                continue
            if isinstance(plugin, NodeResourcesFit):
                version = plugin.version
                if version.legacy_scale or version.rtcr_ceil_utilisation:
                    return False
            elif isinstance(plugin, NodeResourcesBalancedAllocation):
                if plugin.version.balanced_two_resource_legacy:
                    return False
            elif not getattr(plugin, "static_score", False):
                return False
        return True

    def plan(self, state: ClusterState, pod: PodDemand) -> Plan:
        """Compile one pod shape (the same decisions the core's plugins take per pod)."""
        checked: list[int] = []
        never = False
        for f in self.fit_filters:
            checked += [
                j for j, r in enumerate(state.resources) if pod.requests[j] > 0 and f._checked(r)
            ]
            never |= any(f._checked(r) for r in pod.off_axis_requests(state.resources))
        fit = [(p, w, columns(state, pod, p.args.resources, False)) for p, w in self.fit_scores]
        balanced = [
            (p, w, columns(state, pod, p.args.resources, not p.version.balanced_uses_nonzero))
            for p, w in self.balanced
            if not p.skips(pod)
        ]
        checked_axis = np.array(sorted(set(checked)), dtype=np.int64)
        rows = RowPlan(
            never=never,
            checked=tuple((int(j), int(pod.requests[j])) for j in checked_axis),
            fit=tuple(
                FitRows(
                    weight=w,
                    strategy=fit_strategy(p.args.strategy),
                    top=p.version.max_node_score,
                    zero_over_capacity=p.version.most_allocated_zero_over_capacity,
                    shape=tuple(p.scaled_shape),
                    columns=c.as_rows(),
                )
                for p, w, c in fit
            ),
            balanced=tuple(
                BalancedRows(w, p.version.max_node_score, p.version.balanced_delta, c.as_rows())
                for p, w, c in balanced
            ),
        )
        allowed, varying = self.static_part(state, pod)
        ports = pod.host_ports if self.ports else ()
        return Plan(never, checked_axis, fit, balanced, rows, allowed, varying, ports=ports)

    def static_part(
        self, state: ClusterState, pod: PodDemand
    ) -> tuple[BoolArray | None, list[tuple[Any, int, Int64Array]]]:
        """The static filters' mask (None: all pass) and the static scores that vary."""
        allowed = None
        for static in self.static_filters:
            feasible = static.filter(state, pod, 0.0).feasible
            if not feasible.all():
                allowed = feasible if allowed is None else allowed & feasible
        varying: list[tuple[Any, int, Int64Array]] = []
        for scorer, weight in self.static_scores:
            raw = scorer.score(state, pod, 0.0)
            if raw is not None and weight and len(raw) and int(raw.min()) != int(raw.max()):
                varying.append((scorer, weight, raw))
        return allowed, varying

    def fixed(self, state: ClusterState, pod: PodDemand) -> Int64Array | None:
        """Σ weight × score of the static plugins without NormalizeScore (None: all zero)."""
        total: Int64Array | None = None
        for scorer, weight in self.fixed_scores:
            raw = scorer.score(state, pod, 0.0)
            if raw is not None and weight and raw.any():
                total = weight * raw if total is None else total + weight * raw
        return total


def fit_score(
    plugin: NodeResourcesFit, state: ClusterState, cols: Columns, rows: Int64Array
) -> Int64Array:
    """NodeResourcesFit score on ``rows`` (research/kube-scoring.md §5–6)."""
    if len(cols.pod) == 0:
        return np.zeros(len(rows), dtype=np.int64)
    alloc = state.allocatable[np.ix_(rows, cols.alloc)]
    requested = cols.used(state, rows) + cols.pod[np.newaxis, :]
    valid = alloc > 0
    safe = np.maximum(alloc, 1)
    top = plugin.version.max_node_score
    strategy = plugin.args.strategy
    if strategy == "LeastAllocated":  # (alloc − req) × 100 // alloc, 0 when over
        raw = np.where(requested > alloc, 0, (alloc - requested) * top // safe)
    elif strategy == "MostAllocated":  # min(req, alloc) × 100 // alloc
        if plugin.version.most_allocated_zero_over_capacity:
            raw = np.where(requested > alloc, 0, requested * top // safe)
        else:
            raw = np.minimum(requested, alloc) * top // safe
    else:  # RTCR: util = req × 100 // alloc (100 at/over capacity), broken-linear shape
        util = np.where(requested >= alloc, 100, requested * 100 // safe)
        util = np.where((alloc <= 0) | (requested <= 0), 0, util)
        raw = broken_linear_array(plugin.scaled_shape, util.astype(np.int64))
        keep = valid & (raw > 0)  # resources scoring 0 leave both sums; Go math.Round
        numerator = np.where(keep, raw * cols.weights, 0).sum(axis=1)
        weight_sum = np.where(keep, cols.weights, 0).sum(axis=1)
        rounded = (2 * numerator + np.maximum(weight_sum, 1)) // (2 * np.maximum(weight_sum, 1))
        rtcr: Int64Array = np.where(weight_sum > 0, rounded, 0).astype(np.int64)
        return rtcr
    raw = np.where(valid, raw, 0).astype(np.int64)
    return weighted_floor_mean(raw, valid, cols.weights)


def balanced_score(
    plugin: NodeResourcesBalancedAllocation, state: ClusterState, cols: Columns, rows: Int64Array
) -> Int64Array:
    """BalancedAllocation on ``rows`` (std with the pod; 1.36+: 50 + (50 + with − without) / 2)."""
    alloc = state.allocatable[np.ix_(rows, cols.alloc)]
    used = cols.used(state, rows)
    valid = alloc > 0
    safe = np.maximum(alloc, 1).astype(np.float64)
    top = plugin.version.max_node_score
    with_pod: FloatArray = np.minimum(
        (used + cols.pod[np.newaxis, :]).astype(np.float64) / safe, 1.0
    )
    score_with = balance_scores(with_pod, valid, top)
    if not plugin.version.balanced_delta:
        return score_with
    without: FloatArray = np.minimum(used.astype(np.float64) / safe, 1.0)
    score_without = balance_scores(without, valid, top)
    result: Int64Array = 50 + (50 + score_with - score_without) // 2
    return result
