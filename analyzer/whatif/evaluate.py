"""Outcome metrics of one replay (one strategy, one seed).

Definitions (stated in the what-if report):

- **placed / waited / never placed**: pods placed at least once; pods that spent any time pending;
  pods never placed (still pending at the end, or their real lifetime ended while pending).
  Wait = time spent pending (a pod still pending at the end waited until the end).
- **active node**: a node running at least one pod that is not a DaemonSet/static pod. Peak and
  time-weighted mean over the usage grid; **active node-hours**; **node-hours released vs
  observed** = observed active node-hours − this strategy's (positive = fewer nodes needed).
- **active capacity / capacity released** (``analyzer.whatif.capacity``): the allocatable of the
  active nodes integrated over the same grid, in core-hours and GiB-hours (and money when priced);
  released vs observed = observed's − this strategy's, filled by the comparison.
- **allocation ratio** per resource: requests of the running non-DaemonSet pods / allocatable of
  the active nodes, averaged over the grid (points with no active node skipped).
- **violations**: ``analyzer.usage.violations.find_violations`` on the projected snapshot — the same
  semantics and outputs as ``analyzer violations``.
- **fragmentation**: ``analyzer.fragmentation.measure.fragmentation`` on the projected placement (FGD
  ratio, stranded capacity, headroom per common shape), hourly.
- **imbalance**: the standard deviation across active nodes of projected usage % of allocatable,
  averaged over the grid, per resource.
- **preempted**: pods evicted by DefaultPreemption at least once (``analyzer.replay.preemption``;
  a pod evicted twice counts once), in total and by the victim's priority band (< 0, 0–999,
  1000–999999, ≥ 1000000); never more than the pods placed, since only a running pod is evicted.
- **moved**: share of the pods that really ran (not DaemonSet/static) placed on another node.
- **why** (``analyzer.whatif.explain``): the last refusal reasons of the pods that waited, by
  pool, and the pods moved from one pool to another.

Waits count inside the snapshot's window only (``analyzer.replay.engine``): no wait is longer
than the window, and the summed wait of all pods equals the integral of the pending-pods series.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.frames import frame_records
from analyzer.fragmentation.measure import FragmentationResult, fragmentation
from analyzer.replay.input import NEVER, ReplayInput
from analyzer.replay.priority_order import BANDS, band, pod_priorities
from analyzer.replay.projection import (
    RESOURCES,
    Attribution,
    UsageMatrices,
    attribute,
    project,
    projected_snapshot,
)
from analyzer.replay.result import ReplayResult
from analyzer.usage.grid import UsageGrid, matrix_grid
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.usage.violations import ViolationResult, find_violations
from analyzer.whatif.capacity import Capacity, NodePrices, Released, active_capacity
from analyzer.whatif.explain import moves, shape_labels, wait_reasons

HOUR_NS = 3600 * 1_000_000_000
SECOND_NS = 1_000_000_000
HEADROOM_SHAPES = 3  # headroom is reported for the most common pod shapes
MAX_SERIES_POINTS = 600  # time series in JSON/charts are thinned to at most this many points

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
FloatArray = np.ndarray[Any, np.dtype[np.float64]]


@dataclass
class Outcome:
    """Every number the what-if comparison shows for one strategy and seed."""

    strategy: str
    seed: int
    pods: int
    placed: int
    waited: int
    never_placed: int
    pending_at_end: int
    evicted: int
    wait_seconds: dict[str, float]  # count, mean, p50, p90, p99, max over pods that waited
    active_nodes_peak: int
    active_nodes_mean: float
    active_node_hours: float
    node_hours_released: float  # vs observed; filled by the comparison
    allocation_ratio: dict[str, float]
    violations: int
    nodes_with_violations: int
    violation_minutes: float
    fragmentation: dict[str, float]  # mean FGD ratio and stranded share per resource
    imbalance: dict[str, float]
    moved_share: float
    series: pd.DataFrame  # time, active_nodes, pending_pods, nodes_in_violation
    fragmentation_series: pd.DataFrame  # time, resource, frag_ratio, stranded_share
    headroom: dict[str, float] = field(default_factory=dict)  # shape (cores, GiB) -> mean pods fit
    preempted: int = 0  # distinct pods evicted by DefaultPreemption
    preempted_by_band: dict[str, int] = field(default_factory=dict)  # victim priority band -> pods
    wait_reasons: pd.DataFrame = field(default_factory=pd.DataFrame)  # explain.WAIT_REASON_COLUMNS
    waiting_pods: pd.DataFrame = field(default_factory=pd.DataFrame)  # explain.WAITING_POD_COLUMNS
    moves: pd.DataFrame = field(default_factory=pd.DataFrame)  # explain.MOVE_COLUMNS
    moved_pods: pd.DataFrame = field(default_factory=pd.DataFrame)  # explain.MOVED_POD_COLUMNS
    notes: list[str] = field(default_factory=list)
    violation_result: ViolationResult | None = None
    fragmentation_result: FragmentationResult | None = None
    capacity: Capacity = field(default_factory=lambda: Capacity(0.0, 0.0))  # active, whole window
    # vs observed; filled by the comparison (``None`` until then)
    capacity_released: Released | None = None

    def summary(self) -> dict[str, Any]:
        """The scalar figures (one row of the comparison table)."""
        return {
            "strategy": self.strategy,
            "seed": self.seed,
            "pods": self.pods,
            "placed": self.placed,
            "waited": self.waited,
            "never_placed": self.never_placed,
            "pending_at_end": self.pending_at_end,
            "evicted": self.evicted,
            "preempted": self.preempted,
            "wait_p50_s": self.wait_seconds["p50"],
            "wait_p99_s": self.wait_seconds["p99"],
            "wait_max_s": self.wait_seconds["max"],
            "active_nodes_peak": self.active_nodes_peak,
            "active_nodes_mean": self.active_nodes_mean,
            "active_node_hours": self.active_node_hours,
            "node_hours_released": self.node_hours_released,
            "active_core_hours": self.capacity.core_hours,
            "active_gib_hours": self.capacity.gib_hours,
            **self.released_figures(),
            **({} if self.capacity.cost is None else {"active_cost": self.capacity.cost}),
            **{f"allocation_{r}": v for r, v in self.allocation_ratio.items()},
            "violations": self.violations,
            "nodes_with_violations": self.nodes_with_violations,
            "violation_minutes": self.violation_minutes,
            **{f"frag_{k}": v for k, v in self.fragmentation.items()},
            **{f"imbalance_{r}": v for r, v in self.imbalance.items()},
            "moved_share": self.moved_share,
        }

    def released_figures(self) -> dict[str, float]:
        """Capacity released vs observed, units in the keys (0 before the comparison fills it;
        ``cost_released`` only when priced)."""
        r = self.capacity_released
        figures = {
            "core_hours_released": r.core_hours if r else 0.0,
            "gib_hours_released": r.gib_hours if r else 0.0,
            "core_hours_released_pct": r.core_hours_pct if r else 0.0,
            "gib_hours_released_pct": r.gib_hours_pct if r else 0.0,
        }
        if r is not None and r.cost is not None:
            figures["cost_released"] = r.cost
        return figures

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: summary, wait distribution, series, violations and fragmentation detail."""
        return {
            **self.summary(),
            "wait_seconds": dict(self.wait_seconds),
            "allocation_ratio": dict(self.allocation_ratio),
            "imbalance": dict(self.imbalance),
            "fragmentation": dict(self.fragmentation),
            "series": frame_records(self.series),
            "fragmentation_series": frame_records(self.fragmentation_series),
            "headroom": dict(self.headroom),
            "preempted_by_band": dict(self.preempted_by_band),
            "wait_reasons": frame_records(self.wait_reasons),
            "moves": frame_records(self.moves),
            "violation_breaches": (
                frame_records(self.violation_result.breaches) if self.violation_result else []
            ),
            "notes": list(self.notes),
        }


def _merged_active(inp: ReplayInput, result: ReplayResult) -> tuple[Int64Array, ...]:
    """Per node, the union of the runs of non-DaemonSet pods: (node, start, end) arrays."""
    seg = result.segments
    keep = ~inp.pinned[seg["pod"]] & (seg["end"] > seg["start"])
    nodes, starts, ends = seg["node"][keep], seg["start"][keep], seg["end"][keep]
    order = np.lexsort((starts, nodes))
    out_n: list[int] = []
    out_s: list[int] = []
    out_e: list[int] = []
    for n, s, e in zip(
        nodes[order].tolist(), starts[order].tolist(), ends[order].tolist(), strict=True
    ):
        if out_n and out_n[-1] == n and s <= out_e[-1]:
            out_e[-1] = max(out_e[-1], e)
        else:
            out_n.append(n)
            out_s.append(s)
            out_e.append(e)
    return tuple(np.array(x, dtype=np.int64) for x in (out_n, out_s, out_e))


def _covering(times: Int64Array, starts: Int64Array, ends: Int64Array) -> Int64Array:
    """How many intervals ``[start, end)`` cover each time."""
    began = np.searchsorted(np.sort(starts), times, side="right")
    ended = np.searchsorted(np.sort(ends), times, side="right")
    result: Int64Array = (began - ended).astype(np.int64)
    return result


def _active_matrix(
    times: Int64Array, n_nodes: int, merged: tuple[Int64Array, ...]
) -> np.ndarray[Any, Any]:
    """nodes × times: True where the node runs a non-DaemonSet pod."""
    nodes, starts, ends = merged
    width = len(times)
    diff = np.zeros((n_nodes, width + 1), dtype=np.int32)
    np.add.at(diff, (nodes, np.searchsorted(times, starts, side="left")), 1)
    np.add.at(diff, (nodes, np.searchsorted(times, ends, side="left")), -1)
    return np.cumsum(diff, axis=1)[:, :width] > 0


def _wait_stats(result: ReplayResult, end: int) -> dict[str, float]:
    w = result.waits
    lengths = np.where(w["end"] == NEVER, end, w["end"]) - w["start"]
    per_pod = np.bincount(w["pod"], weights=lengths.astype(np.float64), minlength=len(result.node))
    waited = per_pod[result.waited] / 1e9
    if waited.size == 0:
        return {"count": 0.0, "mean": 0.0, "p50": 0.0, "p90": 0.0, "p99": 0.0, "max": 0.0}
    return {
        "count": float(waited.size),
        "mean": float(waited.mean()),
        **{f"p{q}": float(np.percentile(waited, q)) for q in (50, 90, 99)},
        "max": float(waited.max()),
    }


def _preempted(inp: ReplayInput, result: ReplayResult) -> tuple[int, dict[str, int]]:
    """Distinct pods preempted, and how many per priority band (every band listed)."""
    victims = sorted(set(result.preemptions.get("victim", np.zeros(0, np.int64)).tolist()))
    priorities = pod_priorities(inp.demands)
    counts = {label: 0 for _, label in BANDS}
    for pod in victims:
        counts[band(priorities[pod])] += 1
    return len(victims), counts


def _needs_pod_usage(inp: ReplayInput, thresholds: ThresholdConfig) -> bool:
    """Violations read pod usage only for prod thresholds (config, overrides or annotations)."""
    if thresholds.prod or thresholds.node_overrides:
        return True
    annotations = inp.snapshot.nodes["annotations"].fillna("").astype(str)
    return bool(annotations.str.contains("prodUsageThresholds", regex=False).any())


def _thin(frame: pd.DataFrame) -> pd.DataFrame:
    stride = max(1, int(np.ceil(len(frame) / MAX_SERIES_POINTS)))
    return frame.iloc[::stride].reset_index(drop=True)


def _projected_grid(
    inp: ReplayInput, times: Int64Array, usage: dict[str, FloatArray]
) -> UsageGrid | None:
    """The projected node usage as the violations' grid, straight from the matrices, when the
    replay's grid is the snapshot's (its step, evenly spaced): the grid ``find_violations`` would
    pivot from the projected snapshot's node usage table, without that table (50 M rows for a
    5,000-node week). None: the table path (a replay step other than the snapshot's)."""
    step_s = inp.snapshot.meta.step_seconds
    if not step_s or step_s * SECOND_NS != inp.step:
        return None
    if len(times) > 1 and not np.all(np.diff(times) == inp.step):
        return None
    nodes = list(inp.snapshot.nodes["node"].astype(str))
    return matrix_grid(nodes, inp.node_names, times, usage, timedelta(seconds=step_s))


def evaluate(
    inp: ReplayInput,
    result: ReplayResult,
    mats: UsageMatrices,
    thresholds: ThresholdConfig,
    *,
    fragmentation_times: list[pd.Timestamp] | None = None,
    prices: NodePrices | None = None,
    owner: Attribution | None = None,
) -> Outcome:
    """All outcome metrics of ``result`` (see the module docstring for the definitions).

    ``owner``: ``attribute(inp, result, mats)`` when the caller already has it (the joint
    scenarios give it to ``pool_figures`` too: seconds per scenario on a week of usage rows)."""
    times = mats.times
    n_nodes = len(inp.node_names)
    owner = attribute(inp, result, mats) if owner is None else owner
    usage = project(inp, result, mats, owner)
    grid = _projected_grid(inp, times, usage)
    snap = projected_snapshot(
        inp,
        result,
        mats,
        usage,
        owner=owner,
        with_pod_usage=_needs_pod_usage(inp, thresholds),
        with_node_usage=grid is None,
    )
    merged = _merged_active(inp, result)
    active = _active_matrix(times, n_nodes, merged)
    active_count = active.sum(axis=0)
    step_hours = inp.step / HOUR_NS
    alloc = {r: inp.template.allocatable[:, inp.template.resources.index(r)] for r in RESOURCES}
    seg = result.segments
    workload = ~inp.pinned[seg["pod"]]
    allocation: dict[str, float] = {}
    for r in RESOURCES:
        j = inp.template.resources.index(r)
        weights = np.array(
            [inp.demands[p].requests[j] for p in seg["pod"][workload]], dtype=np.float64
        )
        starts, ends = seg["start"][workload], seg["end"][workload]
        order_s, order_e = np.argsort(starts), np.argsort(ends)
        requested = (
            np.concatenate([[0.0], np.cumsum(weights[order_s])])[
                np.searchsorted(starts[order_s], times, side="right")
            ]
            - np.concatenate([[0.0], np.cumsum(weights[order_e])])[
                np.searchsorted(ends[order_e], times, side="right")
            ]
        )
        capacity = (active * alloc[r][:, None]).sum(axis=0).astype(np.float64)
        ok = capacity > 0
        allocation[r] = float(np.mean(requested[ok] / capacity[ok])) if ok.any() else float("nan")
    imbalance: dict[str, float] = {}
    for r in RESOURCES:
        with np.errstate(invalid="ignore", divide="ignore"):
            pct = usage[r] / alloc[r][:, None] * 100.0
        pct = np.where(active, pct, np.nan)
        counts = (~np.isnan(pct)).sum(axis=0)
        ok = counts >= 2
        if ok.any():
            mean = np.nansum(pct[:, ok], axis=0) / counts[ok]
            var = np.nansum((pct[:, ok] - mean) ** 2, axis=0) / counts[ok]
            imbalance[r] = float(np.mean(np.sqrt(var)))
        else:
            imbalance[r] = 0.0
        del pct
    # the projected matrices are in ``snap`` now: free them before the violations' own grid (a
    # 5,000-node week: 0.8 GB)
    del usage
    violations = find_violations(snap, thresholds, grid)
    del grid
    breaches = violations.breaches
    in_violation = np.zeros(len(times), dtype=np.int64)
    if len(breaches):
        b_start = breaches["start"].to_numpy(dtype="datetime64[ns]").astype(np.int64)
        b_end = breaches["end"].to_numpy(dtype="datetime64[ns]").astype(np.int64)
        b_node = pd.Index(inp.node_names).get_indexer(breaches["node"].astype(str))
        hit = np.zeros((n_nodes, len(times) + 1), dtype=np.int32)
        np.add.at(hit, (b_node, np.searchsorted(times, b_start, side="left")), 1)
        np.add.at(hit, (b_node, np.searchsorted(times, b_end, side="left")), -1)
        in_violation = (np.cumsum(hit, axis=1)[:, : len(times)] > 0).sum(axis=0)
    frag = fragmentation(snap, times=fragmentation_times)
    over = frag.over_time
    frag_summary: dict[str, float] = {}
    frag_series = pd.DataFrame(columns=["time", "resource", "frag_ratio", "stranded_share"])
    if len(over):
        frag_series = over[["time", "resource", "frag_ratio", "stranded_share"]].copy()
        for r, group in over.groupby("resource"):
            frag_summary[f"ratio_{r}"] = float(group["frag_ratio"].mean())
            frag_summary[f"stranded_{r}"] = float(group["stranded_share"].mean())
    headroom: dict[str, float] = {}
    if len(frag.headroom):  # the most common shapes first, as the fragmentation report lists them
        top = frag.headroom.groupby("shape", sort=True)["fit"].mean().head(HEADROOM_SHAPES)
        labels = shape_labels(frag.shapes)
        headroom = {labels[int(shape)]: float(fit) for shape, fit in top.items()}
    per_node = violations.per_node
    real = inp.real_node
    candidates = ~inp.pinned & (real >= 0) & (result.node >= 0)
    moved = float(np.mean(result.node[candidates] != real[candidates])) if candidates.any() else 0.0
    pending = _covering(
        times,
        result.waits["start"],
        np.where(result.waits["end"] == NEVER, NEVER, result.waits["end"]),
    )
    series = pd.DataFrame(
        {
            "time": pd.to_datetime(times, utc=True),
            "active_nodes": active_count.astype(np.int64),
            "pending_pods": pending,
            "nodes_in_violation": in_violation,
        }
    )
    never = result.pending_at_end | result.abandoned
    reasons, waiting = wait_reasons(inp, result)
    pool_moves, moved_pods = moves(inp, result)
    preempted, by_band = _preempted(inp, result)
    return Outcome(
        strategy=result.strategy,
        seed=result.seed,
        pods=inp.pod_count,
        placed=int((result.node >= 0).sum()),
        waited=int(result.waited.sum()),
        never_placed=int((never & (result.node < 0)).sum()),
        pending_at_end=int(result.pending_at_end.sum()),
        evicted=result.evicted,
        wait_seconds=_wait_stats(result, inp.end),
        active_nodes_peak=int(active_count.max()) if len(times) else 0,
        active_nodes_mean=float(active_count.mean()) if len(times) else 0.0,
        active_node_hours=float(active_count.sum() * step_hours),
        node_hours_released=0.0,
        allocation_ratio=allocation,
        violations=len(breaches),
        nodes_with_violations=int((per_node["breaches"] > 0).sum()) if len(per_node) else 0,
        violation_minutes=float(per_node["breach_minutes"].sum()) if len(per_node) else 0.0,
        fragmentation=frag_summary,
        imbalance=imbalance,
        moved_share=moved,
        series=_thin(series),
        fragmentation_series=frag_series,
        headroom=headroom,
        preempted=preempted,
        preempted_by_band=by_band,
        wait_reasons=reasons,
        waiting_pods=waiting,
        moves=pool_moves,
        moved_pods=moved_pods,
        notes=list(result.notes),
        violation_result=violations,
        fragmentation_result=frag,
        capacity=active_capacity(inp, active, step_hours, prices),
    )
