"""Threshold violations with Koordinator LoadAwareScheduling semantics, along the whole period.

At every point ``t`` of the usage grid the node is judged on what the scheduler would have read
from its NodeMetric at ``t`` (research/koordinator.md §1.3, §4):

- ``instant``: ``nodeUsage`` = the average over ``(t - 5m, t]`` against ``usageThresholds``;
- ``aggregated``: the configured stat over ``(t - d, t]`` against the aggregated thresholds (a
  window covering less than half of ``d`` is missing, so no breach can be seen there); with no
  duration, the longest NodeMetric duration (5m/10m/30m) that is not missing at ``t``;
- ``prod``: the 5-minute average of the summed usage of prod pods (Koordinator priority bands,
  ``analyzer.usage.koord``) against ``prodUsageThresholds``.

usage % = Go ``math.Round`` (half away from zero) of ``float64(int64(used)) / allocatable × 100``
(allocatable as Koordinator estimates it: ``node.koordinator.sh/raw-allocatable`` overrides);
a breach is ``pct > threshold`` (strict); a threshold of 0 or allocatable 0 skips the resource.
The scheduler also adds estimates of pods it is placing; observed usage alone is judged here, and
all configured kinds are reported (Koordinator's Filter checks only one per pod).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.durations import format_duration
from analyzer.core.errors import InputError
from analyzer.core.frames import frame_records, utc
from analyzer.core.quantity import resource_value
from analyzer.core.snapshot import Snapshot
from analyzer.usage.grid import (
    RESOURCES,
    UsageGrid,
    index_in,
    rolling_grid,
    snapshot_step,
    usage_grid,
)
from analyzer.usage.koord import is_prod
from analyzer.usage.percentiles import FloatArray
from analyzer.usage.thresholds import ThresholdConfig, ThresholdProfile

BREACH_COLUMNS = [
    "node", "pool", "resource", "kind", "stat", "window", "start", "end", "minutes",
    "peak_pct", "threshold", "source",
]  # fmt: skip
PER_NODE_COLUMNS = [
    "node", "pool", "breaches", "breach_minutes", "worst_pct", "worst_resource", "worst_kind",
    "max_cpu_pct", "max_memory_pct", "source",
]  # fmt: skip
MAX_WINDOW_ELEMENTS = 30_000_000  # above this, long windows are evaluated on a coarser stride


def go_round(values: FloatArray) -> FloatArray:
    """Go ``math.Round``: half away from zero (Python's ``round`` is half-to-even)."""
    magnitude = np.abs(values)
    whole = np.floor(magnitude)
    rounded = whole + ((magnitude - whole) >= 0.5)
    result: FloatArray = np.copysign(rounded, values)
    return result


def usage_percent(used: FloatArray, allocatable: FloatArray) -> FloatArray:
    """Koordinator's usage %: ``math.Round(float64(int64(used)) / float64(total) * 100)``; NaN kept."""
    truncated = np.trunc(used)  # NodeMetric quantities are int64 (millicores, bytes)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = truncated / allocatable * 100.0
    return go_round(ratio)


RAW_ALLOCATABLE = "node.koordinator.sh/raw-allocatable"


def estimated_allocatable(nodes: pd.DataFrame, keys: list[str]) -> dict[str, FloatArray]:
    """Koordinator ``EstimateNode``: allocatable, with ``node.koordinator.sh/raw-allocatable``
    (a JSON ResourceList, set under resource amplification) overriding it per key when valid."""
    table = nodes.set_index("node")
    alloc = {
        r: table[f"allocatable:{r}"].reindex(keys).to_numpy(dtype=np.float64) for r in RESOURCES
    }
    annotations = table["annotations"].reindex(keys)
    for row, text in enumerate(annotations):
        if not isinstance(text, str) or RAW_ALLOCATABLE not in text:
            continue
        try:
            raw = json.loads(json.loads(text).get(RAW_ALLOCATABLE) or "null")
            values = {r: resource_value(r, raw[r]) for r in RESOURCES if r in raw}
        except (ValueError, TypeError, AttributeError, InputError):
            continue  # invalid JSON or quantity: Koordinator keeps allocatable
        for resource, value in values.items():
            alloc[resource][row] = value
    return alloc


@dataclass
class ViolationResult:
    """Breaches and the per-node summary.

    ``breaches`` columns: ``node``, ``pool``, ``resource``, ``kind`` (instant | aggregated | prod),
    ``stat`` (avg for instant/prod), ``window`` (``5m``, ``30m``, ``longest``), ``start``, ``end``
    (UTC; the breach holds over ``[start, end)``), ``minutes`` (float), ``peak_pct`` (int),
    ``threshold`` (int), ``source`` (cluster | annotation | node_thresholds).
    ``per_node`` (every node) columns: ``node``, ``pool``, ``breaches`` (int), ``breach_minutes``
    (time with any breach), ``worst_pct`` (highest peak %, NaN if none), ``worst_resource``,
    ``worst_kind``, ``max_cpu_pct``/``max_memory_pct`` (highest nodeUsage % seen), ``source``.
    """

    breaches: pd.DataFrame
    per_node: pd.DataFrame
    config: ThresholdConfig
    warnings: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        """Number of breaches."""
        return len(self.breaches)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: config, breaches, per-node summary, warnings (times RFC 3339, NaN → null)."""
        return {
            "config": self.config.to_dict(),
            "breaches": frame_records(self.breaches),
            "per_node": frame_records(self.per_node),
            "warnings": list(self.warnings),
        }


@dataclass
class _Check:
    """One kind of check on a set of node rows: values (rows × times) vs thresholds per resource."""

    kind: str
    stat: str
    window: str
    rows: np.ndarray  # indices into the grid's nodes
    pct: dict[str, FloatArray]  # resource → rows × times (NaN = not evaluated)
    thresholds: dict[str, np.ndarray]  # resource → per-row threshold (0 = off)
    every: int = 1  # evaluated every k-th grid point (the last one always)


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, first column, last column) of every run of True along the rows of ``mask``."""
    rows, width = mask.shape
    padded = np.zeros((rows, width + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    edges = np.diff(padded, axis=1)
    start_r, start_c = np.nonzero(edges == 1)
    _, end_c = np.nonzero(edges == -1)
    return start_r, start_c, end_c - 1  # nonzero() is row-major, so starts and ends pair up


def _prod_usage(snapshot: Snapshot, grid: UsageGrid) -> UsageGrid:
    """Σ usage of prod pods per node on the node grid (0 where the node has data but no prod pods)."""
    pods = snapshot.pods
    prod = pods.loc[is_prod(pods).to_numpy() & pods["node"].notna().to_numpy()]
    node_of_pod = pd.Index(grid.keys).get_indexer(prod["node"].astype(str))
    usage = snapshot.pod_usage
    width = len(grid.times)
    values = {r: np.zeros_like(grid.values[r]) for r in RESOURCES}
    # Vectorised join: pod_usage row → prod pod → node row → grid column; then one flat
    # bincount per resource. Work only on the prod pods' rows.
    pod_index = index_in(usage["uid"], list(prod["uid"].astype(str)))
    picked = np.nonzero(pod_index >= 0)[0]
    if width and picked.size:
        rows = node_of_pod[pod_index[picked]]
        step_ns = pd.Timedelta(grid.step).value
        offsets = pd.DatetimeIndex(utc(usage["timestamp"])).as_unit("ns").asi8[picked]
        offsets = offsets - grid.times[0].as_unit("ns").value
        cols = (offsets + step_ns // 2) // step_ns  # nearest grid point
        ok = (rows >= 0) & (cols >= 0) & (cols < width)
        flat = rows[ok] * width + cols[ok]
        for resource in RESOURCES:
            weights = np.nan_to_num(usage[resource].to_numpy(dtype=np.float64)[picked[ok]])
            summed = np.bincount(flat, weights=weights, minlength=width * len(grid.keys))
            values[resource] = np.asarray(summed, dtype=np.float64).reshape(values[resource].shape)
    for resource in RESOURCES:
        values[resource][np.isnan(grid.values[resource])] = np.nan
    return UsageGrid(grid.keys, grid.times, grid.step, values)


def _every(grid: UsageGrid, duration: timedelta) -> int:
    window = max(1, int(np.ceil(duration / grid.step)))
    total = len(grid.keys) * len(grid.times) * window
    return max(1, int(np.ceil(total / MAX_WINDOW_ELEMENTS)))


def _aggregated_values(
    grid: UsageGrid, profile: ThresholdProfile, config: ThresholdConfig
) -> tuple[dict[str, FloatArray], str, int]:
    """What the aggregated path reads at each point (NaN when missing), window label, stride."""
    agg = profile.aggregated
    assert agg is not None
    if agg.duration is not None:
        every = _every(grid, agg.duration)
        rolled = rolling_grid(
            grid, duration=agg.duration, stat=agg.stat, method=config.method, every=every
        )
        return rolled.values, format_duration(agg.duration), every
    # Duration 0: the longest policy duration with a value at t, else nodeUsage (Koordinator).
    chosen = rolling_grid(grid, duration=config.usage_window, stat="avg", min_coverage=0.0).values
    for duration in sorted(config.policy_durations):
        values = rolling_grid(grid, duration=duration, stat=agg.stat, method=config.method).values
        for resource in RESOURCES:
            have = ~np.isnan(values[resource])
            chosen[resource] = np.where(have, values[resource], chosen[resource])
    return chosen, "longest", 1


def _checks(
    snapshot: Snapshot, grid: UsageGrid, profiles: list[ThresholdProfile], config: ThresholdConfig
) -> list[_Check]:
    alloc = estimated_allocatable(snapshot.nodes, grid.keys)
    window = format_duration(config.usage_window)
    checks: list[_Check] = []
    all_rows = np.arange(len(grid.keys))

    def pct_of(values: dict[str, FloatArray], rows: np.ndarray) -> dict[str, FloatArray]:
        return {r: usage_percent(values[r][rows], alloc[r][rows][:, None]) for r in RESOURCES}

    def section(profile: ThresholdProfile, pick: str) -> Mapping[str, int]:
        if pick == "aggregated":
            return profile.aggregated.thresholds if profile.aggregated else {}
        return profile.prod if pick == "prod" else profile.usage

    def limits(rows: np.ndarray, pick: str) -> dict[str, np.ndarray]:
        return {
            r: np.array([section(profiles[i], pick).get(r, 0) for i in rows], dtype=np.int64)
            for r in RESOURCES
        }

    node_usage = rolling_grid(grid, duration=config.usage_window, stat="avg", min_coverage=0.0)
    checks.append(
        _Check(
            "instant",
            "avg",
            window,
            all_rows,
            pct_of(node_usage.values, all_rows),
            limits(all_rows, "usage"),
        )
    )
    prod_rows = np.array([i for i, p in enumerate(profiles) if p.prod], dtype=np.int64)
    if prod_rows.size:
        prod = rolling_grid(
            _prod_usage(snapshot, grid), duration=config.usage_window, stat="avg", min_coverage=0.0
        )
        checks.append(
            _Check(
                "prod",
                "avg",
                window,
                prod_rows,
                pct_of(prod.values, prod_rows),
                limits(prod_rows, "prod"),
            )
        )
    # Nodes sharing one aggregated (stat, window) are computed together.
    groups: dict[tuple[str, timedelta | None], list[int]] = {}
    for i, profile in enumerate(profiles):
        if profile.aggregated is not None:
            key = (profile.aggregated.stat, profile.aggregated.duration)
            groups.setdefault(key, []).append(i)
    for (stat, _), members in groups.items():
        rows = np.array(members, dtype=np.int64)
        sub = UsageGrid(
            [grid.keys[i] for i in rows], grid.times, grid.step,
            {r: grid.values[r][rows] for r in RESOURCES},
        )  # fmt: skip
        values, label, every = _aggregated_values(sub, profiles[rows[0]], config)
        full = {r: np.full_like(grid.values[r], np.nan) for r in RESOURCES}
        for r in RESOURCES:
            full[r][rows] = values[r]
        checks.append(
            _Check(
                "aggregated",
                stat,
                label,
                rows,
                pct_of(full, rows),
                limits(rows, "aggregated"),
                every,
            )
        )
    return checks


def find_violations(
    snapshot: Snapshot, config: ThresholdConfig, grid: UsageGrid | None = None
) -> ViolationResult:
    """All threshold breaches of every node along the snapshot's period (see module docstring).

    ``grid``: the node usage already on the snapshot's grid (``usage_grid`` of its node usage
    over its nodes; the what-if has it as matrices), instead of reading ``node_usage``."""
    if grid is None:
        step = snapshot_step(snapshot)
        keys = list(snapshot.nodes["node"].astype(str))
        grid = usage_grid(snapshot.node_usage, step=step, keys=keys)
    else:
        step = grid.step
    nodes = snapshot.nodes.set_index("node")
    annotations = nodes["annotations"].reindex(grid.keys)
    profiles: list[ThresholdProfile] = []
    warnings: list[str] = []
    for name, text in zip(grid.keys, annotations, strict=True):
        profile, warning = config.profile_for(name, None if pd.isna(text) else str(text))
        profiles.append(profile)
        if warning:
            warnings.append(warning)
    pools = nodes["pool"].reindex(grid.keys).astype(object).where(lambda s: s.notna(), None)
    times = grid.times
    records: list[pd.DataFrame] = []
    breach_any = np.zeros((len(grid.keys), len(times)), dtype=bool)
    max_pct: dict[str, np.ndarray] = {}
    for check in _checks(snapshot, grid, profiles, config):
        for resource in RESOURCES:
            pct = check.pct[resource]
            if check.kind == "instant":
                highest = np.where(np.isnan(pct), -np.inf, pct).max(axis=1, initial=-np.inf)
                max_pct[resource] = np.where(np.isinf(highest), np.nan, highest)
            limit = check.thresholds[resource][:, None]
            evaluated = ~np.isnan(pct)
            mask = evaluated & (limit > 0) & (np.nan_to_num(pct, nan=0.0) > limit)
            if not mask.any():
                continue
            # Strided checks: only the evaluated points (the same ones rolling_stat computed);
            # a gap in the data stays a False point and splits a run.
            cols = np.arange(len(times) - 1, -1, -check.every)[::-1]
            sub = mask[:, cols]
            eval_step = pd.Timedelta(step) * check.every
            run_rows, first, last = _runs(sub)
            peaks = np.array(
                [
                    np.nanmax(pct[r, cols[a : b + 1]])
                    for r, a, b in zip(run_rows, first, last, strict=True)
                ]
            )
            # A point at t stands for (t - eval_step, t]: the run covers (first - step, last].
            starts = times[cols[first]] - eval_step
            ends = times[cols[last]]
            node_rows = check.rows[run_rows]
            lead = max(int(eval_step / pd.Timedelta(step)) - 1, 0)
            for r, a, b in zip(node_rows, cols[first], cols[last], strict=True):
                breach_any[r, max(a - lead, 0) : b + 1] = True
            records.append(
                pd.DataFrame(
                    {
                        "node": [grid.keys[i] for i in node_rows],
                        "pool": pools.to_numpy()[node_rows],
                        "resource": resource,
                        "kind": check.kind,
                        "stat": check.stat,
                        "window": check.window,
                        "start": starts,
                        "end": ends,
                        "minutes": (ends - starts).total_seconds() / 60.0,
                        "peak_pct": peaks.astype(np.int64),
                        "threshold": check.thresholds[resource][run_rows],
                        "source": [profiles[i].source for i in node_rows],
                    }
                )
            )
    breaches = (
        pd.concat(records, ignore_index=True).sort_values(["node", "start", "resource", "kind"])
        if records
        else pd.DataFrame(columns=BREACH_COLUMNS)
    ).reset_index(drop=True)
    per_node = _per_node(grid, breaches, breach_any, max_pct, pools, profiles, step)
    return ViolationResult(breaches, per_node, config, warnings)


def _per_node(
    grid: UsageGrid,
    breaches: pd.DataFrame,
    breach_any: np.ndarray,
    max_pct: dict[str, np.ndarray],
    pools: pd.Series,
    profiles: list[ThresholdProfile],
    step: timedelta,
) -> pd.DataFrame:
    """One row per node: breach count and minutes (union over kinds/resources), worst peak."""
    frame = pd.DataFrame(
        {
            "node": grid.keys,
            "pool": pools.to_numpy(),
            "breaches": 0,
            "breach_minutes": breach_any.sum(axis=1) * step.total_seconds() / 60.0,
            "worst_pct": np.nan,
            "worst_resource": None,
            "worst_kind": None,
            "max_cpu_pct": max_pct.get("cpu", np.full(len(grid.keys), np.nan)),
            "max_memory_pct": max_pct.get("memory", np.full(len(grid.keys), np.nan)),
            "source": [p.source for p in profiles],
        }
    )
    if not breaches.empty:
        counts = breaches.groupby("node").size()
        frame["breaches"] = frame["node"].map(counts).fillna(0).astype(np.int64)
        worst = (
            breaches.sort_values("peak_pct", ascending=False)
            .drop_duplicates("node")
            .set_index("node")
        )
        frame["worst_pct"] = frame["node"].map(worst["peak_pct"]).astype("float64")
        frame["worst_resource"] = frame["node"].map(worst["resource"])
        frame["worst_kind"] = frame["node"].map(worst["kind"])
    return frame[PER_NODE_COLUMNS]
