"""The what-if rows "strategy + autoscaler": a replay whose node set the autoscaler drives, and
its outcomes (issue 25 item 3).

Figures, over the data's window ``[start, end]`` and per pool (node group) as well as in total:

- **node-hours**: the hours each node existed (the data's nodes from the start until the
  autoscaler deleted them, its own nodes from Ready until deleted); **core-hours** and
  **GiB-hours**: the same hours × each node's allocatable cpu cores and memory GiB; **cost** with
  ``--prices`` (the pool's price per core-hour and GiB-hour, as the what-if's capacity figures);
- **nodes added** (became Ready) and **removed**, **scale-ups**;
- **pods evicted** by scale-down, and the pods **evicted twice within an hour**;
- **nodes ordered for pods it had just evicted**: the nodes of the scale-ups (CA) or launches
  (Karpenter) ordered while a pod the autoscaler had evicted at most ``RECENT`` (10 minutes)
  before was still waiting since that eviction: its own drain left the pod no room, which the
  scale-down's simulation had counted on. Repeated, this is the delete-and-relaunch loop
  upstream's users report of Karpenter (aws/karpenter-provider-aws#3921, #4615;
  kubernetes-sigs/karpenter#1851): the simulation places the pods one way, the scheduler
  another;
- **pending pod-seconds waiting for a new node**: the waits that ended with the pod placed on a
  node the autoscaler added (the scale-up's latency as the pods felt it);
- **unremovable reasons over time**: node-hours per CA reason (``NotUnderutilized``,
  ``BlockedByPod``, ``NoPlaceToMovePods``, ``NodeGroupMinSizeReached``, ``RecentlyUnremovable``:
  found unremovable by a pass less than ``unremovable-node-recheck-timeout`` ago and not judged
  again yet, ``UnneededNodesLimit``: not simulated because the pass already had
  ``unneededNodesLimit`` removable nodes (analyzer's name; CA only logs it)… and ``Unneeded``:
  under the threshold and drainable, waiting out ``scale-down-unneeded-time``), each pass's
  counts held until the next pass;
- **node count over time** on the evaluation grid, beside the observed count (the data's nodes
  present at each grid point).

Every such replay reads its pods as arriving when they were created (``prepare(...,
arrivals="created")``, ``for_autoscaler``), whatever ``--arrivals`` the comparison of strategies
uses: the data's scheduled times hold the waits its own autoscaler caused (a pod that waited for a
new node was scheduled when that node came), and this replay drops the data's node joins and makes
those waits itself. Read at their scheduled times, such pods would ask the replay's autoscaler for
a node only once the data's had brought one, and wait a second provisioning delay (the node-hours
short by up to 8.0 % on the generator's autoscaled clusters, docs/autoscaling.md "Arrivals").
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.prices import Prices
from analyzer.replay.autoscale_record import AutoscalerRecord
from analyzer.replay.autoscale_setup import AutoscalerSettings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import NEVER, ReplayInput, prepare
from analyzer.replay.karpenter_setup import KarpenterSettings, with_shapes
from analyzer.replay.result import ReplayResult

HOUR = 3600 * 1_000_000_000
GIB = float(2**30)
# a scale-up this soon after an eviction, while the evicted pod still waits, is counted as one
# for the pods the autoscaler had just evicted (module docstring)
RECENT = 600 * 1_000_000_000
# how the autoscaled replays read arrivals (module docstring; ``analyzer.replay.input.ARRIVALS``)
ARRIVALS_UNDER_AUTOSCALER = "created"
# the last input ``for_autoscaler`` prepared, with the snapshot it read: each strategy and seed of
# a comparison asks again for the same one (one per process)
_prepared: tuple[object, ReplayInput] | None = None


@dataclass
class PoolFigures:
    """One pool's (or the whole cluster's) figures under the autoscaler."""

    node_hours: float = 0.0
    core_hours: float = 0.0
    gib_hours: float = 0.0
    cost: float | None = None
    observed_node_hours: float = 0.0
    # the data's nodes as they came and went, priced alike: what the team paid (the search and
    # the monthly scenarios compare the autoscaled figures to these)
    observed_core_hours: float = 0.0
    observed_gib_hours: float = 0.0
    observed_cost: float | None = None
    nodes_added: int = 0
    nodes_removed: int = 0
    pods_evicted: int = 0
    # nodes ordered for pods the autoscaler had just evicted (``ordered_for_evicted``)
    ordered_for_evicted: int = 0
    # the most nodes present at once on the evaluation grid, under the autoscaler and in the data
    peak_nodes: int = 0
    observed_peak_nodes: int = 0
    # cluster-autoscaler: the pool's node group minSize (None: the whole cluster, or Karpenter)
    min_size: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in vars(self).items()}


@dataclass
class AutoscaledOutcome:
    """Every figure of one strategy + autoscaler replay (module docstring)."""

    strategy: str
    autoscaler: str
    seed: int
    total: PoolFigures
    pools: dict[str, PoolFigures]
    scale_ups: int
    evicted_twice_within_hour: int
    pending_pod_seconds_scale_up: float
    pending_pods_at_end: int
    reasons_node_hours: dict[str, float]
    series: pd.DataFrame  # time, nodes, observed_nodes
    notes: list[str] = field(default_factory=list)
    arrivals: str = ARRIVALS_UNDER_AUTOSCALER  # how the replay read arrivals (``ARRIVALS``)

    @property
    def ordered_for_evicted(self) -> int:
        """Nodes of the scale-ups ordered while a pod evicted at most ``RECENT`` before still
        waited (the pools' sum, ``total``)."""
        return self.total.ordered_for_evicted

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "strategy": self.strategy,
            "autoscaler": self.autoscaler,
            "seed": self.seed,
            "arrivals": self.arrivals,
            **self.total.to_dict(),
            "scale_ups": self.scale_ups,
            "evicted_twice_within_hour": self.evicted_twice_within_hour,
            "nodes_ordered_for_evicted": self.ordered_for_evicted,
            "pending_pod_seconds_scale_up": round(self.pending_pod_seconds_scale_up, 3),
            "pending_pods_at_end": self.pending_pods_at_end,
            "unremovable_reasons_node_hours": {
                k: round(v, 6) for k, v in sorted(self.reasons_node_hours.items())
            },
            "pools": {name: f.to_dict() for name, f in sorted(self.pools.items())},
            "node_count": {
                "time": [t.isoformat() for t in self.series["time"]],
                "nodes": self.series["nodes"].astype(int).tolist(),
                "observed_nodes": self.series["observed_nodes"].astype(int).tolist(),
            },
            "notes": list(self.notes),
        }


def _clip_hours(lo: int, hi: int, start: int, end: int) -> float:
    return max(0, min(hi, end) - max(lo, start)) / HOUR


def _unit_prices(
    inp: ReplayInput, record: AutoscalerRecord, prices: Prices | None
) -> dict[int, tuple[float, float]] | None:
    """Per group index: (price per core-hour, per GiB-hour); None unpriced (any pool)."""
    if prices is None:
        return None
    t = inp.template
    cores = t.allocatable[:, t.resources.index("cpu")] / 1000.0
    gib = t.allocatable[:, t.resources.index("memory")] / GIB
    of = np.array(record.of_node[: record.spare_from])
    out = {}
    for g, name in enumerate(record.groups):
        mine = of == g
        price = prices.for_pool(name)
        unit = None if price is None or not mine.any() else price.per_unit(
            float(cores[: record.spare_from][mine].mean()),
            float(gib[: record.spare_from][mine].mean()),
        )  # fmt: skip
        if unit is None:
            return None
        out[g] = unit
    return out


def held_at_min(figures: Mapping[str, Any]) -> bool:
    """Whether a pool's node group could lose no node (its figures, ``PoolFigures.to_dict()`` or
    the monthly scenarios' ``pool_release``): its minSize (cluster-autoscaler; by default the
    data's observed range) at least the most nodes it ran in the data, and none removed."""
    low = figures.get("min_size")
    peak = int(figures.get("observed_peak_nodes", 0))
    return low is not None and peak > 0 and low >= peak and not figures["nodes_removed"]


def all_held(outcome: AutoscaledOutcome) -> bool:
    """Whether every pool that ran nodes in the data was held at its minSize (``held_at_min``):
    the autoscaler could remove no node under any strategy."""
    pools = [f.to_dict() for f in outcome.pools.values() if f.observed_peak_nodes]
    return bool(pools) and all(held_at_min(f) for f in pools)


def outcome_of(
    inp: ReplayInput,
    observed_inp: ReplayInput,
    result: ReplayResult,
    prices: Prices | None = None,
    min_size: Sequence[int] | None = None,
) -> AutoscaledOutcome:
    """The figures of an autoscaled replay ``result`` of ``inp`` (``with_node_groups``'s);
    ``observed_inp``: the plain input, for the observed node count; ``min_size``: each group's
    minSize (cluster-autoscaler's ``NodeGroups``), kept with its pool's figures."""
    record = result.autoscaler
    assert record is not None
    start, end = inp.start, inp.end
    t = inp.template
    cores = t.allocatable[:, t.resources.index("cpu")] / 1000.0
    gib = t.allocatable[:, t.resources.index("memory")] / GIB
    units = _unit_prices(inp, record, prices)
    unpriced = units is None
    pools = {
        name: PoolFigures(cost=None if unpriced else 0.0, observed_cost=None if unpriced else 0.0)
        for name in record.groups
    }
    if min_size is not None:
        for name, size in zip(record.groups, min_size, strict=True):
            pools[name].min_size = int(size)
    for slot, spans in record.presence.items():
        fig = pools[record.groups[record.of_node[slot]]]
        for lo, hi in spans:
            hours = _clip_hours(lo, hi, start, end)
            fig.node_hours += hours
            fig.core_hours += hours * float(cores[slot])
            fig.gib_hours += hours * float(gib[slot])
            if units is not None and fig.cost is not None:
                core_price, gib_price = units[record.of_node[slot]]
                fig.cost += hours * (float(cores[slot]) * core_price + float(gib[slot]) * gib_price)
    for slot in range(record.spare_from):
        fig = pools[record.groups[record.of_node[slot]]]
        lo, hi = int(observed_inp.node_join[slot]), int(observed_inp.node_leave[slot])
        hours = _clip_hours(lo, hi, start, end)
        fig.observed_node_hours += hours
        fig.observed_core_hours += hours * float(cores[slot])
        fig.observed_gib_hours += hours * float(gib[slot])
        if units is not None and fig.observed_cost is not None:
            core_price, gib_price = units[record.of_node[slot]]
            fig.observed_cost += hours * (
                float(cores[slot]) * core_price + float(gib[slot]) * gib_price
            )
    for _, slot in record.added:
        pools[record.groups[record.of_node[slot]]].nodes_added += 1
    for _, slot, _ in record.removed:
        pools[record.groups[record.of_node[slot]]].nodes_removed += 1
    evicted_at: dict[int, list[int]] = {}
    for at, pod in record.evictions:
        evicted_at.setdefault(pod, []).append(at)
    seg = result.segments
    for pod, times in evicted_at.items():
        first = seg["node"][seg["pod"] == pod]
        group = record.of_node[int(first[0])] if len(first) else 0
        pools[record.groups[group]].pods_evicted += len(times)
    twice = sum(
        1
        for times in evicted_at.values()
        if any(b - a <= HOUR for a, b in itertools.pairwise(times))
    )
    for group, count in ordered_for_evicted(record, result.waits).items():
        pools[record.groups[group]].ordered_for_evicted += count
    _peaks(inp, observed_inp, record, pools)
    total = PoolFigures(cost=None if unpriced else 0.0, observed_cost=None if unpriced else 0.0)
    for fig in pools.values():
        for name in (
            "node_hours",
            "core_hours",
            "gib_hours",
            "observed_node_hours",
            "observed_core_hours",
            "observed_gib_hours",
        ):
            setattr(total, name, getattr(total, name) + getattr(fig, name))
        total.nodes_added += fig.nodes_added
        total.nodes_removed += fig.nodes_removed
        total.pods_evicted += fig.pods_evicted
        total.ordered_for_evicted += fig.ordered_for_evicted
        if total.cost is not None and fig.cost is not None:
            total.cost += fig.cost
        if total.observed_cost is not None and fig.observed_cost is not None:
            total.observed_cost += fig.observed_cost
    series = _series(inp, observed_inp, record)
    total.peak_nodes = int(series["nodes"].max()) if len(series) else 0
    total.observed_peak_nodes = int(series["observed_nodes"].max()) if len(series) else 0
    return AutoscaledOutcome(
        strategy=result.strategy,
        autoscaler=record.kind,
        seed=result.seed,
        total=total,
        pools=pools,
        scale_ups=len(record.scale_ups),
        evicted_twice_within_hour=twice,
        pending_pod_seconds_scale_up=_scale_up_wait(result, record),
        pending_pods_at_end=int(result.pending_at_end.sum()),
        reasons_node_hours=_reasons(record, start, end),
        series=series,
        notes=list(record.notes),
        arrivals=inp.arrivals,
    )


def ordered_for_evicted(record: AutoscalerRecord, waits: Mapping[str, Any]) -> dict[int, int]:
    """Per group index, the nodes of its scale-ups ordered while a pod the autoscaler had
    evicted at most ``RECENT`` before was still waiting since that eviction (module docstring):
    its wait began at the eviction (``waits``: pod, start, end of every pending interval) and
    had not ended at the scale-up, which came no later than ``RECENT`` after it. Groups with
    none are left out."""
    if not record.evictions or not record.scale_ups:
        return {}
    evicted = set(record.evictions)  # (time, pod)
    spans = sorted(
        (start, end)
        for pod, start, end in zip(
            waits["pod"].tolist(), waits["start"].tolist(), waits["end"].tolist(), strict=True
        )
        if (start, pod) in evicted
    )
    if not spans:
        return {}
    starts = np.array([a for a, _ in spans], dtype=np.int64)
    ends = np.array([b for _, b in spans], dtype=np.int64)
    out: dict[int, int] = {}
    for at, group, nodes in record.scale_ups:
        recent = (starts <= at) & (at - starts <= RECENT) & (ends > at)
        if bool(recent.any()):
            out[group] = out.get(group, 0) + nodes
    return out


def _scale_up_wait(result: ReplayResult, record: AutoscalerRecord) -> float:
    """Seconds of the waits that ended with the pod placed on a node the autoscaler added."""
    seg, waits = result.segments, result.waits
    placed = {
        (int(p), int(s))
        for p, n, s in zip(
            seg["pod"].tolist(), seg["node"].tolist(), seg["start"].tolist(), strict=True
        )
        if n >= record.spare_from
    }
    total = 0
    for pod, lo, hi in zip(
        waits["pod"].tolist(), waits["start"].tolist(), waits["end"].tolist(), strict=True
    ):
        if hi != NEVER and (pod, hi) in placed:
            total += hi - lo
    return total / 1e9


def _reasons(record: AutoscalerRecord, start: int, end: int) -> dict[str, float]:
    out: dict[str, float] = {}
    passes = record.reasons
    for i, (at, counts) in enumerate(passes):
        until = passes[i + 1][0] if i + 1 < len(passes) else end
        hours = _clip_hours(at, until, start, end)
        for reason, count in counts.items():
            out[reason] = out.get(reason, 0.0) + count * hours
    return out


def _peaks(
    inp: ReplayInput,
    observed: ReplayInput,
    record: AutoscalerRecord,
    pools: dict[str, PoolFigures],
) -> None:
    """Each pool's most nodes present at once on the grid, under the autoscaler and observed."""
    grid = np.arange(inp.start, inp.end + 1, inp.step, dtype=np.int64)
    counts = {name: np.zeros(len(grid), dtype=np.int64) for name in pools}
    seen = {name: np.zeros(len(grid), dtype=np.int64) for name in pools}
    for slot, spans in record.presence.items():
        mine = counts[record.groups[record.of_node[slot]]]
        for lo, hi in spans:
            mine += (grid >= lo) & (grid < hi)
    for slot in range(record.spare_from):
        lo, hi = int(observed.node_join[slot]), int(observed.node_leave[slot])
        seen[record.groups[record.of_node[slot]]] += (grid >= lo) & (grid < hi)
    for name, fig in pools.items():
        fig.peak_nodes = int(counts[name].max()) if len(grid) else 0
        fig.observed_peak_nodes = int(seen[name].max()) if len(grid) else 0


def nodes_at(
    grid: np.ndarray[Any, Any], record: AutoscalerRecord, observed: ReplayInput
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """How many nodes are present at each point of ``grid`` (ns) under the autoscaler
    (``record.presence``) and in the data (``observed``'s joins and leaves)."""
    nodes = np.zeros(len(grid), dtype=np.int64)
    for spans in record.presence.values():
        for lo, hi in spans:
            nodes += (grid >= lo) & (grid < hi)
    seen = np.zeros(len(grid), dtype=np.int64)
    for lo, hi in zip(observed.node_join.tolist(), observed.node_leave.tolist(), strict=True):
        seen += (grid >= lo) & (grid < hi)
    return nodes, seen


def _series(inp: ReplayInput, observed: ReplayInput, record: AutoscalerRecord) -> pd.DataFrame:
    """Nodes present at each grid point under the autoscaler, and in the data."""
    grid = np.arange(inp.start, inp.end + 1, inp.step, dtype=np.int64)
    nodes, seen = nodes_at(grid, record, observed)
    return pd.DataFrame(
        {"time": pd.to_datetime(grid, utc=True), "nodes": nodes, "observed_nodes": seen}
    )


def run_autoscaled(
    inp: ReplayInput,
    strategy: Strategy,
    seed: int,
    settings: AutoscalerSettings | KarpenterSettings,
    prices: Prices | None = None,
) -> AutoscaledOutcome:
    """Replay ``strategy`` on ``inp`` with cluster-autoscaler (or Karpenter, with its settings)
    driving the nodes, the pods arriving when created (``for_autoscaler``); its figures."""
    inp = for_autoscaler(inp)
    if isinstance(settings, KarpenterSettings):
        karpenter, pools = with_shapes(inp, settings, prices)
        done = replay(karpenter, strategy, seed, autoscaler=(pools, settings))
        return outcome_of(karpenter, inp, done, prices)
    auto, groups = with_node_groups(inp, settings)
    result = replay(auto, strategy, seed, autoscaler=(groups, settings))
    return outcome_of(auto, inp, result, prices, groups.min_size)


def for_autoscaler(inp: ReplayInput) -> ReplayInput:
    """``inp`` as the autoscaled replays read it: its snapshot prepared with the pods arriving
    when created (``ARRIVALS_UNDER_AUTOSCALER``, module docstring); ``inp`` itself when it was
    prepared so."""
    global _prepared
    if inp.arrivals == ARRIVALS_UNDER_AUTOSCALER:
        return inp
    if _prepared is not None and _prepared[0] is inp.snapshot:
        return _prepared[1]
    out = prepare(inp.snapshot, ARRIVALS_UNDER_AUTOSCALER)
    _prepared = (inp.snapshot, out)
    return out
