"""Headroom per pod shape over the nightly day: copies that fit at every hour, by the filters.

At each point of the day (the fragmentation's hourly points up to the last instant with data)
the observed placement is rebuilt as a scheduler state — the nodes seen then (first seen ≤ t ≤
last seen, as ``fragmentation.measure.placements``), every pod bound then (``pod_intervals``:
start ≤ t < end) with its requests, labels and terms — and ``headroom_count.count_copies`` counts
the copies of each shape the ``kube-default`` profile's filters admit, with the FitError summary
of the next copy. Node taints and cordons are the snapshot's node columns (not the node-state
intervals of the day), the nodes and objects as the replay reads them (``replay.input.prepare``).

Per shape the day gives the copies at the last point ("now") and at the tightest point (the
fewest copies; the earliest such point), each with its reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.frames import frame_records, utc
from analyzer.core.pod_intervals import pod_intervals
from analyzer.core.snapshot import Snapshot
from analyzer.nightly.headroom_count import LIMIT, count_copies
from analyzer.nightly.headroom_shapes import HeadroomShape, common_shapes
from analyzer.replay.input import ReplayInput, prepare
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.state import ClusterState
from analyzer.scheduling.strategies import load_strategy

STRATEGY = "kube-default"
HOURLY = ["time", "shape", "copies", "nodes", "limited", "reason"]
SHAPES = [
    "shape", "source", "pods_seen", "copies_now", "now_at", "reason_now",
    "copies_min", "min_at", "reason_min", "method",
]  # fmt: skip


@dataclass(frozen=True)
class ShapeHeadroom:
    """The day's headroom per shape: ``shapes`` (one row per shape, ``SHAPES``) and ``hourly``
    (one row per shape and point, ``HOURLY``); empty frames when the day has no shape."""

    shapes: pd.DataFrame
    hourly: pd.DataFrame
    strategy: str = STRATEGY
    limit: int = LIMIT
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (times RFC 3339)."""
        return {
            "strategy": self.strategy,
            "limit": self.limit,
            "shapes": frame_records(self.shapes),
            "hourly": frame_records(self.hourly),
            "notes": list(self.notes),
        }


def empty_headroom(note: str = "") -> ShapeHeadroom:
    """No shape was counted (``note`` says why)."""
    return ShapeHeadroom(
        pd.DataFrame(columns=SHAPES), pd.DataFrame(columns=HOURLY), notes=(note,) if note else ()
    )


class ObservedPlacement:
    """The observed placement of a snapshot as scheduler states at chosen instants."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.inp: ReplayInput = prepare(snapshot)
        nodes = snapshot.nodes
        big = np.iinfo(np.int64).max
        self.node_first = _ns(nodes["first_seen"], -big)
        self.node_last = _ns(nodes["last_seen"], big)
        intervals = pod_intervals(snapshot)
        index = pd.Index(self.inp.pod_uids)
        position = pd.Index(self.inp.node_names)
        self.pod = index.get_indexer(intervals["uid"].astype(str)).astype(np.int64)
        self.node = position.get_indexer(intervals["node"].astype(str)).astype(np.int64)
        self.start = _ns(intervals["start"], -big)
        self.end = _ns(intervals["end"], big)
        self._state = self.inp.fresh_state()
        self._bound = np.zeros(len(self.pod), dtype=bool)  # intervals bound in ``_state``
        self._common: list[HeadroomShape] | None = None

    def common_shapes(self) -> list[HeadroomShape]:
        """The most common shapes of the placed pods of the whole snapshot (found once)."""
        if self._common is None:
            keep = ~self.inp.pinned & (self.inp.real_node >= 0)
            self._common = common_shapes(self.inp.demands, keep)
        return self._common

    def state_at(self, at: pd.Timestamp) -> tuple[ClusterState, np.ndarray]:
        """The state with the pods bound at ``at`` and the mask of nodes present then.

        One state is kept and moved from the previous instant by unbinding the pods that ended
        and binding those that started (a day's points change a few pods each, not all), so the
        plugins' per-node caches (taint sets, label indexes) are built once for the day.
        """
        t = pd.Timestamp(at).as_unit("ns").value
        present = (self.node_first <= t) & (self.node_last >= t)
        running = (self.start <= t) & (self.end > t) & (self.node >= 0) & (self.pod >= 0)
        state = self._state
        for k in np.flatnonzero(self._bound & ~running).tolist():
            state.unbind(int(self.node[k]), self.inp.demands[int(self.pod[k])])
        for k in np.flatnonzero(running & ~self._bound).tolist():
            state.bind(int(self.node[k]), self.inp.demands[int(self.pod[k])])
        self._bound = running
        return state, present


def _ns(column: pd.Series, missing: int) -> np.ndarray:
    values = utc(column)
    return np.where(
        values.isna().to_numpy(), missing, pd.DatetimeIndex(values).as_unit("ns").asi8
    ).astype(np.int64)


def headroom_day(
    snapshot: Snapshot,
    times: Sequence[pd.Timestamp],
    declared: Sequence[HeadroomShape] | None = None,
    profile: Profile | None = None,
    placement: ObservedPlacement | None = None,
) -> ShapeHeadroom:
    """Copies of each shape that fit at each of ``times`` on ``snapshot``'s observed placement.

    ``placement``: one already built for ``snapshot`` (a range of several days counted day by
    day, times in order: the state moves on from the previous day's last point); the common
    shapes are then those of its whole range."""
    if not len(snapshot.nodes) or not times:
        return empty_headroom("no node in the day")
    profile = profile or load_strategy(STRATEGY)
    placement = placement or ObservedPlacement(snapshot)
    shapes = placement.common_shapes() if declared is None else list(declared)
    if not shapes:
        return empty_headroom("no pod with requests to take a shape from")
    resources = placement.inp.template.resources
    demands = [shape.demand(resources) for shape in shapes]
    rows: list[dict[str, Any]] = []
    methods: dict[str, str] = {}
    for at in times:
        state, present = placement.state_at(at)
        now = pd.Timestamp(at).value / 1e9
        for shape, demand in zip(shapes, demands, strict=True):
            fit = count_copies(profile, state, demand, now=now, present=present)
            methods.setdefault(shape.name, fit.method)
            rows.append(
                {
                    "time": pd.Timestamp(at),
                    "shape": shape.name,
                    "copies": fit.copies,
                    "nodes": int(present.sum()),
                    "limited": fit.limited,
                    "reason": fit.summary(),
                }
            )
    hourly = pd.DataFrame(rows, columns=HOURLY)
    summary = []
    for shape in shapes:
        mine = hourly[hourly["shape"] == shape.name]
        seen = mine[mine["nodes"] > 0]
        last = (seen if len(seen) else mine).iloc[-1]
        tight = (seen if len(seen) else mine).sort_values("copies", kind="stable").iloc[0]
        summary.append(
            {
                "shape": shape.name,
                "source": shape.source,
                "pods_seen": shape.pods,
                "copies_now": int(last["copies"]),
                "now_at": last["time"],
                "reason_now": last["reason"],
                "copies_min": int(tight["copies"]),
                "min_at": tight["time"],
                "reason_min": tight["reason"],
                "method": methods.get(shape.name, ""),
            }
        )
    return ShapeHeadroom(pd.DataFrame(summary, columns=SHAPES), hourly)
