"""Per pool figures of one replay: nodes needed at peak, removable, violations, waits, idle, slack.

Definitions (docs/whatif.md "Scenarios"):

- **nodes observed** of a pool: the most nodes of the pool present at once on the usage grid
  (joined, not yet left) — the capacity the pool really had; the same for every scenario;
- **nodes needed at peak** (``nodes_peak``): the most nodes of the pool *active* at once on the
  grid — holding at least one pod that is not a DaemonSet/static pod — the what-if page's "peak
  active nodes" restricted to the pool (``analyzer.whatif.evaluate``); ``peak_time`` is the first
  grid time it is reached;
- **nodes removable** = nodes observed − nodes needed at peak (never negative);
- **violations**: threshold breaches (``analyzer violations`` semantics) on the pool's nodes;
- **active core-hours / GiB-hours** (``core_hours``, ``gib_hours``): the allocatable of the pool's
  nodes while active, integrated over the grid (``analyzer.whatif.capacity``), and its ``cost``
  when ``--prices`` prices the pool;
- **pods waited**: pods that spent time pending and really ran in the pool (pods never bound in
  reality belong to no pool and are counted in the whole-cluster figure only);
- **idle %** per resource: over the grid points where the pool has an active node, the share of
  the active nodes' allocatable that no pod requests (DaemonSet pods included), time-averaged;
- **slack %** per resource: the share of the same allocatable that pods request but do not use
  (per node: requests − the usage of the pods placed there, at least 0), time-averaged.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from analyzer.replay.input import ReplayInput
from analyzer.replay.projection import (
    RESOURCES,
    Attribution,
    UsageMatrices,
    attribute,
    stream_sums,
)
from analyzer.replay.result import ReplayResult
from analyzer.whatif.capacity import NodePrices, allocatable_units
from analyzer.whatif.evaluate import HOUR_NS, Outcome, _active_matrix, _merged_active
from analyzer.whatif.explain import node_pools

FloatArray = np.ndarray[Any, np.dtype[np.float64]]
Int64Array = np.ndarray[Any, np.dtype[np.int64]]


@dataclass
class PoolFigures:
    """One pool under one scenario (module docstring for every figure)."""

    pool: str
    nodes_observed: int
    nodes_peak: int
    nodes_removable: int
    peak_time: str  # RFC 3339 UTC; "" when the pool never had an active node
    violations: int
    pods_waited: int
    idle_pct: dict[str, float]
    slack_pct: dict[str, float]
    core_hours: float = 0.0
    gib_hours: float = 0.0
    cost: float | None = None  # with a price for the pool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


def _per_node_columns(
    n_nodes: int, times: np.ndarray[Any, Any], nodes: Any, starts: Any, ends: Any, weights: Any
) -> FloatArray:
    """nodes × times: the summed ``weights`` of the runs ``[start, end)`` covering each time."""
    width = len(times)
    diff = np.zeros((n_nodes, width + 1), dtype=np.float64)
    np.add.at(diff, (nodes, np.searchsorted(times, starts, side="left")), weights)
    np.add.at(diff, (nodes, np.searchsorted(times, ends, side="left")), -weights)
    out: FloatArray = np.cumsum(diff, axis=1)[:, :width]
    return out


def _used(inp: ReplayInput, mats: UsageMatrices, owner: Attribution) -> dict[str, FloatArray]:
    """Per resource, the placed pods' usage per (node, column), one pass over the rows a block at
    a time (each cell adds its rows in table order, as one ``bincount`` over every row)."""
    n_nodes, width = len(inp.node_names), len(mats.times)
    return stream_sums(mats.rows, lambda p: owner.node[owner.owners(p, mats.times)], n_nodes, width)


def pool_figures(
    inp: ReplayInput,
    result: ReplayResult,
    mats: UsageMatrices,
    outcome: Outcome,
    prices: NodePrices | None = None,
    owner: Attribution | None = None,
) -> dict[str, PoolFigures]:
    """Every pool's figures under ``result`` (``outcome``: its ``evaluate`` outcome; ``owner``:
    ``attribute(inp, result, mats)`` when the caller already has it)."""
    cores, gib = allocatable_units(inp)
    step_hours = inp.step / HOUR_NS
    times = mats.times
    n_nodes = len(inp.node_names)
    pools = np.array(node_pools(inp), dtype=object)
    active = _active_matrix(times, n_nodes, _merged_active(inp, result))
    present = (inp.node_join[:, None] <= times[None, :]) & (
        times[None, :] < inp.node_leave[:, None]
    )
    seg = result.segments
    ran = seg["end"] > seg["start"]
    seg_pod, seg_node = seg["pod"][ran], seg["node"][ran]
    seg_start, seg_end = seg["start"][ran], seg["end"][ran]
    owner = attribute(inp, result, mats) if owner is None else owner
    used = _used(inp, mats, owner)
    alloc_all = inp.template.allocatable
    requested: dict[str, FloatArray] = {}
    for r in RESOURCES:
        j = inp.template.resources.index(r)
        weights = np.array([inp.demands[p].requests[j] for p in seg_pod.tolist()], np.float64)
        requested[r] = _per_node_columns(n_nodes, times, seg_node, seg_start, seg_end, weights)
    breaches = outcome.violation_result.breaches if outcome.violation_result else pd.DataFrame()
    breach_pools = (
        breaches["node"].astype(str).map(dict(zip(inp.node_names, pools, strict=True)))
        if len(breaches)
        else pd.Series(dtype=object)
    )
    real = inp.real_node
    waited_pool = [pools[n] for n in real[result.waited & (real >= 0)].tolist()]
    out: dict[str, PoolFigures] = {}
    for pool in sorted(set(pools.tolist())):
        mine = pools == pool
        count = active[mine].sum(axis=0)
        nodes_observed = int(present[mine].sum(axis=0).max()) if len(times) else 0
        nodes_peak = int(count.max()) if len(times) else 0
        peak_time = (
            pd.Timestamp(int(times[int(np.argmax(count))]), tz="UTC").isoformat()
            if nodes_peak
            else ""
        )
        idle: dict[str, float] = {}
        slack: dict[str, float] = {}
        on = active[mine]
        points = on.any(axis=0)
        for r in RESOURCES:
            j = inp.template.resources.index(r)
            alloc = (on * alloc_all[mine, j][:, None]).sum(axis=0).astype(np.float64)
            req = np.where(on, requested[r][mine], 0.0).sum(axis=0)
            unused = np.where(on, np.maximum(requested[r][mine] - used[r][mine], 0.0), 0.0)
            ok = points & (alloc > 0)
            if ok.any():
                idle[r] = float(np.mean(100.0 * (1.0 - req[ok] / alloc[ok])))
                slack[r] = float(np.mean(100.0 * unused.sum(axis=0)[ok] / alloc[ok]))
            else:
                idle[r] = slack[r] = float("nan")
        points = active[mine].sum(axis=1).astype(np.float64)  # grid points each node was active
        cost = None
        if prices is not None and pool not in prices.unpriced:
            unit = cores[mine] * prices.core_hour[mine] + gib[mine] * prices.gib_hour[mine]
            cost = float(np.sum(points * unit)) * step_hours
        out[pool] = PoolFigures(
            pool=pool,
            nodes_observed=nodes_observed,
            nodes_peak=nodes_peak,
            nodes_removable=max(0, nodes_observed - nodes_peak),
            peak_time=peak_time,
            violations=int((breach_pools == pool).sum()),
            pods_waited=sum(1 for p in waited_pool if p == pool),
            idle_pct=idle,
            slack_pct=slack,
            core_hours=float(np.sum(points * cores[mine])) * step_hours,
            gib_hours=float(np.sum(points * gib[mine])) * step_hours,
            cost=cost,
        )
    return out


def running_at(result: ReplayResult, when: int) -> tuple[list[int], list[int], list[int]]:
    """(pods, their nodes, the runs' starts) of the runs holding a node at ``when`` (ns):
    ``start <= when < end``."""
    seg = result.segments
    hold = (seg["start"] <= when) & (when < seg["end"])  # end NEVER: int64 max, still running
    pods: list[int] = seg["pod"][hold].tolist()
    nodes: list[int] = seg["node"][hold].tolist()
    starts: list[int] = seg["start"][hold].tolist()
    return pods, nodes, starts
