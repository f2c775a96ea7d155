"""Fragmentation of free capacity on a placement: FGD ratio, stranded capacity, headroom.

Definitions (DESIGN.md "Fragmentation", research/real-data.md §3, generalised beyond GPUs):

- free = allocatable − Σ requests of the pods bound to the node (clipped at 0);
- target workload M: the observed pod shapes (request vectors; DaemonSet/static pods and
  all-zero requests excluded) taken from the most to the least common until they cover 95 % of
  pods; popularity p_m renormalised to sum to 1;
- F_n(m)[r] (FGD): the free r of node n that a task of shape m cannot use — all of it when m does
  not fit on n or m asks for no r (FGD's "CPU-only tasks make idle GPUs fragments"), else 0 (whole
  units: this snapshot has GPU counts, not per-GPU milli); F_n(M) = Σ_m p_m F_n(m);
  ratio[r] = Σ_n F_n(M)[r] / Σ_n free[n, r];
- stranded: free cpu on nodes whose free memory is below the median pod's memory request, free
  memory on nodes whose free cpu is below the median pod's cpu, and free devices (extended
  resources such as ``nvidia.com/gpu``) on nodes whose free cpu or memory is below the median
  device pod's; other resources (ephemeral-storage) have no stranded figure (0);
- headroom: how many more pods of each common shape fit, summed over nodes (each shape alone).

``measure`` works on arrays (nodes × resources) so the replay can call it on any placement; the
snapshot wrapper ``fragmentation`` builds the arrays at each time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from analyzer.core.frames import frame_records, utc
from analyzer.core.pod_intervals import pinned_pods, pod_intervals
from analyzer.core.quantity import format_quantity
from analyzer.core.snapshot import Snapshot
from analyzer.core.snapshot_schema import resources_in

IntMatrix = npt.NDArray[np.int64]
COVERAGE = 0.95
POD_COUNT = "pods"  # allocatable:pods, when present, limits pods per node (demand 1 each)


@dataclass(frozen=True)
class Shapes:
    """The target workload: ``demand`` shapes × resources (int), popularity ``share`` (sums to 1)."""

    resources: tuple[str, ...]
    demand: IntMatrix
    share: npt.NDArray[np.float64]
    pods: npt.NDArray[np.int64]
    considered: int = 0  # pods the shapes were drawn from (non-pinned, with a request)

    def labels(self) -> list[str]:
        """Human labels like ``500m cpu, 1Gi memory``."""
        return [
            ", ".join(
                f"{format_quantity(r, int(v))} {r}"
                for r, v in zip(self.resources, row, strict=True)
                if v and r != POD_COUNT
            )
            for row in self.demand
        ]


@dataclass(frozen=True)
class TypicalPod:
    """Median requests (per resource) of all pods and of GPU pods, for the stranded test."""

    median: npt.NDArray[np.float64]
    gpu_median: npt.NDArray[np.float64] | None


@dataclass
class FragmentationPoint:
    """``measure`` output at one placement. Totals are per resource (``Shapes.resources`` order)."""

    free: npt.NDArray[np.float64]  # Σ free
    stranded: npt.NDArray[np.float64]
    frag_amount: npt.NDArray[np.float64]  # Σ_n F_n(M)
    node_frag: npt.NDArray[np.float64]  # nodes × resources F_n(M)
    fits: IntMatrix  # nodes × shapes: more pods of the shape that fit

    @property
    def frag_ratio(self) -> npt.NDArray[np.float64]:
        """Σ F_n(M) / Σ free per resource (NaN when nothing is free).

        F_n(M) is a popularity-weighted share of a node's free capacity, so the ratio is at most 1;
        the weighted float sum can land an ulp above it (1.0000000000000002), which is clipped.
        """
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio: npt.NDArray[np.float64] = np.where(
                self.free > 0, np.minimum(self.frag_amount / self.free, 1.0), np.nan
            )
        return ratio


def fit_counts(free: IntMatrix, demand: IntMatrix) -> IntMatrix:
    """nodes × shapes: how many pods of each shape still fit (min over requested resources)."""
    free = np.clip(free, 0, None)
    asks = demand > 0
    safe = np.where(asks, demand, 1)
    per_resource = free[:, None, :] // safe[None, :, :]
    big = np.iinfo(np.int64).max
    counts = np.where(asks[None, :, :], per_resource, big).min(axis=2)
    any_ask = np.asarray(asks.any(axis=1))
    result: IntMatrix = np.where(any_ask[None, :], counts, 0)
    return result


def measure(free: IntMatrix, shapes: Shapes, typical: TypicalPod) -> FragmentationPoint:
    """Fragmentation, stranded capacity and fit counts of one placement given as free capacity."""
    free = np.clip(np.asarray(free, dtype=np.int64), 0, None)
    fits = fit_counts(free, shapes.demand)
    fits_any = fits > 0  # nodes × shapes
    asks = shapes.demand > 0  # shapes × resources
    # F_n(m)[r] = free[n, r] unless m fits on n and asks for r.
    usable = fits_any[:, :, None] & asks[None, :, :]
    unusable = np.where(usable, 0, free[:, None, :]).astype(np.float64)
    node_frag = np.einsum("nsr,s->nr", unusable, shapes.share)
    stranded = _stranded(free, shapes.resources, typical)
    return FragmentationPoint(
        free=free.sum(axis=0).astype(np.float64),
        stranded=stranded,
        frag_amount=node_frag.sum(axis=0),
        node_frag=node_frag,
        fits=fits,
    )


def _stranded(
    free: IntMatrix, resources: Sequence[str], typical: TypicalPod
) -> npt.NDArray[np.float64]:
    index = {r: i for i, r in enumerate(resources)}
    out = np.zeros(len(resources))
    cpu, memory = index.get("cpu"), index.get("memory")
    if cpu is not None and memory is not None:
        out[cpu] = free[free[:, memory] < typical.median[memory], cpu].sum()
        out[memory] = free[free[:, cpu] < typical.median[cpu], memory].sum()
        if typical.gpu_median is not None:
            short = (free[:, cpu] < typical.gpu_median[cpu]) | (
                free[:, memory] < typical.gpu_median[memory]
            )
            for r, i in index.items():
                if is_device(r):
                    out[i] = free[short, i].sum()
    return out


def is_device(resource: str) -> bool:
    """Extended device resources (``nvidia.com/gpu``): the ones the GPU stranded rule covers."""
    return "/" in resource


def snapshot_resources(snapshot: Snapshot) -> tuple[str, ...]:
    """cpu, memory, extended resources both allocatable and requested, and ``pods`` if known."""
    alloc = resources_in(snapshot.nodes, "allocatable")
    requested = set(resources_in(snapshot.pods, "requests"))
    extended = [r for r in alloc if r not in ("cpu", "memory", POD_COUNT) and r in requested
                and snapshot.pods[f"requests:{r}"].gt(0).any()]  # fmt: skip
    return ("cpu", "memory", *extended, *((POD_COUNT,) if POD_COUNT in alloc else ()))


def pod_demand(pods: pd.DataFrame, resources: Sequence[str]) -> IntMatrix:
    """pods × resources request matrix (``pods`` resource = 1 per pod)."""
    columns = [
        np.ones(len(pods), dtype=np.int64)
        if r == POD_COUNT
        else pods[f"requests:{r}"].to_numpy(dtype=np.int64)
        for r in resources
    ]
    return np.stack(columns, axis=1) if columns else np.zeros((len(pods), 0), dtype=np.int64)


def workload_shapes(
    pods: pd.DataFrame, resources: Sequence[str], coverage: float = COVERAGE
) -> Shapes:
    """The common pod shapes covering ``coverage`` of the (non-pinned, non-zero) pods."""
    demand = pod_demand(pods.loc[~pinned_pods(pods).to_numpy()], resources)
    real = [i for i, r in enumerate(resources) if r != POD_COUNT]
    demand = demand[(demand[:, real] > 0).any(axis=1)]
    if demand.size == 0:
        empty = np.zeros((0, len(resources)), dtype=np.int64)
        return Shapes(tuple(resources), empty, np.zeros(0), np.zeros(0, dtype=np.int64), 0)
    unique, counts = np.unique(demand, axis=0, return_counts=True)
    # Most common first; ties broken by the shape itself so the result is deterministic.
    order = np.lexsort((*unique.T[::-1], -counts))
    unique, counts = unique[order], counts[order]
    covered = np.cumsum(counts) / counts.sum()
    take = int(np.searchsorted(covered, coverage - 1e-12) + 1)
    unique, counts = unique[:take], counts[:take]
    return Shapes(
        tuple(resources),
        unique.astype(np.int64),
        counts / counts.sum(),
        counts.astype(np.int64),
        considered=len(demand),
    )


def typical_pod(pods: pd.DataFrame, resources: Sequence[str]) -> TypicalPod:
    """Median request per resource of the non-pinned pods with any request, and of GPU pods."""
    demand = pod_demand(pods.loc[~pinned_pods(pods).to_numpy()], resources)
    real = [i for i, r in enumerate(resources) if r not in (POD_COUNT,)]
    demand = demand[(demand[:, real] > 0).any(axis=1)] if demand.size else demand
    if len(demand) == 0:
        return TypicalPod(np.zeros(len(resources)), None)
    gpu_cols = [i for i, r in enumerate(resources) if is_device(r)]
    gpu_pods = demand[(demand[:, gpu_cols] > 0).any(axis=1)] if gpu_cols else demand[:0]
    gpu = np.median(gpu_pods, axis=0) if len(gpu_pods) else None
    return TypicalPod(np.median(demand, axis=0), gpu)


@dataclass
class FreeCapacity:
    """Nodes present at one time with their allocatable and requested (nodes × resources, int)."""

    nodes: list[str]
    pools: list[str | None]
    allocatable: IntMatrix
    requested: IntMatrix

    @property
    def free(self) -> IntMatrix:
        """allocatable − requested (may be negative on over-committed nodes)."""
        result: IntMatrix = self.allocatable - self.requested
        return result


def _ns(column: pd.Series, missing: int) -> npt.NDArray[np.int64]:
    """Times as int64 ns; NaT → ``missing``."""
    values = utc(column)
    result: npt.NDArray[np.int64] = np.where(
        values.isna().to_numpy(), missing, pd.DatetimeIndex(values).as_unit("ns").asi8
    )
    return result


@dataclass
class Placements:
    """The observed placement as arrays, to take free capacity at many times cheaply."""

    nodes: list[str]
    pools: list[str | None]
    allocatable: IntMatrix  # nodes × resources
    node_first: npt.NDArray[np.int64]  # ns; node present while first ≤ t ≤ last
    node_last: npt.NDArray[np.int64]
    pod_node: npt.NDArray[np.int64]  # index into nodes (−1 = unknown node)
    pod_start: npt.NDArray[np.int64]  # ns; the pod holds its node over [start, end)
    pod_end: npt.NDArray[np.int64]
    pod_demand: IntMatrix  # pods × resources

    def at(self, at: pd.Timestamp) -> FreeCapacity:
        """Nodes present at ``at`` with Σ requests of the pods bound to them then."""
        t = pd.Timestamp(at).as_unit("ns").value
        running = (self.pod_start <= t) & (self.pod_end > t) & (self.pod_node >= 0)
        requested = np.zeros_like(self.allocatable)
        np.add.at(requested, self.pod_node[running], self.pod_demand[running])
        present = np.nonzero((self.node_first <= t) & (self.node_last >= t))[0]
        return FreeCapacity(
            [self.nodes[i] for i in present],
            [self.pools[i] for i in present],
            self.allocatable[present],
            requested[present],
        )


def placements(snapshot: Snapshot, resources: Sequence[str]) -> Placements:
    """Arrays of the snapshot's nodes and pod placements (``pod_intervals``) for ``resources``."""
    nodes = snapshot.nodes.reset_index(drop=True)
    names = pd.Index(nodes["node"].astype(str))
    alloc = np.stack(
        [nodes[f"allocatable:{r}"].to_numpy(dtype=np.int64) if f"allocatable:{r}" in nodes
         else np.zeros(len(nodes), dtype=np.int64) for r in resources],
        axis=1,
    ) if resources else np.zeros((len(nodes), 0), dtype=np.int64)  # fmt: skip
    intervals = pod_intervals(snapshot)
    pods = snapshot.pods.set_index("uid").loc[intervals["uid"]].reset_index()
    big = np.iinfo(np.int64).max
    return Placements(
        nodes=list(names),
        pools=[None if pd.isna(p) else str(p) for p in nodes["pool"]],
        allocatable=alloc,
        node_first=_ns(nodes["first_seen"], -big),
        node_last=_ns(nodes["last_seen"], big),
        pod_node=names.get_indexer(intervals["node"].astype(str)).astype(np.int64),
        pod_start=_ns(intervals["start"], -big),
        pod_end=_ns(intervals["end"], big),
        pod_demand=pod_demand(pods, resources),
    )


def free_capacity(snapshot: Snapshot, at: pd.Timestamp, resources: Sequence[str]) -> FreeCapacity:
    """The observed placement at ``at``: pods bound then (start ≤ at < end) on nodes seen then."""
    return placements(snapshot, resources).at(at)


@dataclass
class FragmentationResult:
    """Fragmentation over time on the observed placement.

    ``shapes``: ``shape`` (int), ``label``, ``pods`` (count observed), ``share`` (popularity p_m),
    then one int column per resource (the request; not for ``pods``, whose name is the count).
    ``over_time`` (long): ``time``, ``resource``, ``allocatable``, ``requested``, ``free``,
    ``stranded``, ``stranded_share`` (stranded / free), ``frag_amount`` (Σ F_n(M)),
    ``frag_ratio`` (frag_amount / free; NaN when nothing is free), ``nodes``.
    ``headroom`` (long): ``time``, ``shape``, ``label``, ``share``, ``fit`` (more pods of that
    shape that fit, summed over nodes; ``<NA>`` when no node was seen at that time).
    ``per_node`` (at the last time): ``node``, ``pool``, then ``free:<r>`` and ``frag:<r>``
    (F_n(M)) per resource, and ``fit:top`` (pods of the most common shape that still fit).
    """

    shapes: pd.DataFrame
    over_time: pd.DataFrame
    headroom: pd.DataFrame
    per_node: pd.DataFrame
    pods_considered: int = 0  # non-pinned pods with a request; ``shapes.pods`` covers ≥ 95 %

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready tables (times RFC 3339, NaN → null)."""
        return {
            "pods_considered": self.pods_considered,
            "shapes": frame_records(self.shapes),
            "over_time": frame_records(self.over_time),
            "headroom": frame_records(self.headroom),
            "per_node": frame_records(self.per_node),
        }


def default_times(snapshot: Snapshot, every: timedelta = timedelta(hours=1)) -> list[pd.Timestamp]:
    """Points every ``every`` (aligned to it) from the snapshot's start to its end (end included)."""
    start, end = snapshot.start, snapshot.end
    freq = pd.Timedelta(every)
    times = list(pd.date_range(start.ceil(freq), end, freq=freq))
    if not times or times[-1] != end:
        times.append(end)
    return times


def fragmentation(
    snapshot: Snapshot, *, times: Sequence[pd.Timestamp] | None = None
) -> FragmentationResult:
    """Fragmentation, stranded capacity and headroom at each time (default: hourly)."""
    resources = snapshot_resources(snapshot)
    shapes = workload_shapes(snapshot.pods, resources)
    typical = typical_pod(snapshot.pods, resources)
    labels = shapes.labels()
    shape_frame = pd.DataFrame(
        {
            "shape": np.arange(len(labels)),
            "label": labels,
            "pods": shapes.pods,
            "share": shapes.share,
        }
    )
    for i, r in enumerate(resources):
        # The ``pods`` resource (1 per pod) is no request to show, and its name is the count's.
        if r != POD_COUNT:
            shape_frame[r] = shapes.demand[:, i]
    over_rows: list[dict[str, Any]] = []
    head_rows: list[dict[str, Any]] = []
    points = [pd.Timestamp(t) for t in (times if times is not None else default_times(snapshot))]
    observed = placements(snapshot, resources)
    last: tuple[FreeCapacity, FragmentationPoint] | None = None
    for at in points:
        capacity = observed.at(at)
        point = measure(capacity.free, shapes, typical)
        for i, r in enumerate(resources):
            if r == POD_COUNT:
                continue
            free = float(point.free[i])
            over_rows.append(
                {
                    "time": at, "resource": r,
                    "allocatable": int(capacity.allocatable[:, i].sum()),
                    "requested": int(capacity.requested[:, i].sum()),
                    "free": free, "stranded": float(point.stranded[i]),
                    "stranded_share": float(point.stranded[i]) / free if free > 0 else np.nan,
                    "frag_amount": float(point.frag_amount[i]),
                    "frag_ratio": float(point.frag_ratio[i]),
                    "nodes": len(capacity.nodes),
                }
            )  # fmt: skip
        totals = point.fits.sum(axis=0)
        for s, label in enumerate(labels):
            head_rows.append(
                {
                    "time": at,
                    "shape": s,
                    "label": label,
                    "share": float(shapes.share[s]),
                    # No node seen at ``at`` is missing data, not a full cluster: no count.
                    "fit": int(totals[s]) if len(capacity.nodes) else pd.NA,
                }
            )
        last = (capacity, point)
    # The per-node frame is of the last point only: built once, not at every point (it was
    # rebuilt and thrown away at each of a week's 169 hourly points).
    per_node = pd.DataFrame() if last is None else _per_node_frame(*last, resources)
    over_time = pd.DataFrame(over_rows)
    headroom = pd.DataFrame(head_rows, columns=["time", "shape", "label", "share", "fit"])
    headroom["fit"] = headroom["fit"].astype("Int64")
    return FragmentationResult(
        shape_frame, over_time, headroom, per_node, pods_considered=shapes.considered
    )


def _per_node_frame(
    capacity: FreeCapacity, point: FragmentationPoint, resources: Sequence[str]
) -> pd.DataFrame:
    frame = pd.DataFrame({"node": capacity.nodes, "pool": capacity.pools})
    free = np.clip(capacity.free, 0, None)
    for i, r in enumerate(resources):
        if r != POD_COUNT:
            frame[f"free:{r}"] = free[:, i]
    for i, r in enumerate(resources):
        if r != POD_COUNT:
            frame[f"frag:{r}"] = point.node_frag[:, i]
    frame["fit:top"] = point.fits[:, 0] if point.fits.shape[1] else 0
    return frame
