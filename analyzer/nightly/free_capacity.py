"""The day's free capacity per resource: how fragmented and stranded, and what a ratio means.

``resource_summary`` reduces the fragmentation over the day (``FragmentationResult.over_time``,
hourly points up to the last instant with data) to one row per resource that has capacity, so
the report's first sentence can cover CPU, memory, GPUs and ephemeral storage alike, from the
same numbers as the table beside it. ``headroom_at`` picks the headroom of the last point and
says which instant that was.

FGD's rule (``fragmentation/measure.py``) counts all free units of a resource as unusable for a
shape that asks for none of it; ``reason`` states which case a high ratio is, so a GPU ratio of
1.0 on a cluster with no GPU pods in its common shapes is read as "no common shape uses GPUs",
not as a broken cluster.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyzer.fragmentation.measure import FragmentationResult, is_device

COLUMNS = [
    "resource",
    "allocatable",
    "free",
    "stranded",
    "frag_amount",
    "frag_pct",
    "stranded_pct",
    "points",
    "shapes_asking",
    "asking_pct",
    "reason",
]
# Under this share of the pods (by common shape) requesting a resource, its FGD ratio says
# nothing about the cluster: FGD counts a resource's free units as unusable for every shape that
# asks for none, so a resource almost nobody requests reads near 100 % whatever its state.
DEFINED_PCT = 5.0


def _reason(resource: str, frag_pct: float, unasked_pct: float, asking: int, shapes: int) -> str:
    """What the FGD share is made of: shapes that request none of it, shapes that do not fit."""
    if np.isnan(frag_pct):
        return "no data (nothing free or no node seen)"
    if shapes == 0:
        return "no pod shapes to measure against"
    if asking == 0:
        return (
            f"none of the {shapes} common pod shapes requests {resource}; by FGD's rule a pod "
            f"that asks for no {resource} cannot use a free one, so all free {resource} counts "
            "as unusable"
        )
    nofit = max(frag_pct - unasked_pct, 0.0)
    if frag_pct <= 0.05:
        return "every common shape fits wherever this resource is free"
    parts = []
    if unasked_pct > 0.05:
        parts.append(
            f"{unasked_pct:.1f} % from the {shapes - asking} of {shapes} shapes that request no "
            f"{resource}"
        )
    if nofit > 0.05:
        parts.append(f"{nofit:.1f} % from shapes that do not fit where it is free")
    return "; ".join(parts) if parts else "every common shape fits wherever this resource is free"


def resource_summary(frag: FragmentationResult) -> pd.DataFrame:
    """One row per resource with capacity: means over the day's points (raw units), shares in %.

    ``allocatable``, ``free``, ``stranded``, ``frag_amount``: means of the raw amounts
    (millicores, bytes, devices); ``frag_pct`` = Σ frag_amount / Σ free over the points × 100
    (the free-weighted day ratio; NaN when nothing was free); ``stranded_pct`` likewise;
    ``stranded``/``stranded_pct`` NaN for resources without a stranded rule (ephemeral-storage);
    ``points``: the points with at least one node; ``shapes_asking``: common shapes requesting
    the resource; ``asking_pct``: the share of the common shapes' pods requesting it (% of
    pods); ``reason``: what the ratio means in words.
    """
    over = frag.over_time
    if over.empty:
        return pd.DataFrame(columns=COLUMNS)
    seen = over[over["nodes"] > 0]
    shapes = frag.shapes
    rows = []
    for resource, group in seen.groupby("resource", sort=False):
        resource = str(resource)
        allocatable = float(group["allocatable"].mean())
        if not allocatable > 0:
            continue  # no capacity of this resource: nothing to say about its free part
        free_total = float(group["free"].sum())
        # Σ F_n(M) ≤ Σ free exactly; the float sums can differ by an ulp, so cap at 100 %.
        frag_pct = (
            min(float(group["frag_amount"].sum()) / free_total * 100, 100.0)
            if free_total
            else np.nan
        )
        stranded_pct = float(group["stranded"].sum()) / free_total * 100 if free_total else np.nan
        # Stranded has a rule for cpu, memory and devices only; elsewhere it is not measured.
        measured = resource in ("cpu", "memory") or is_device(resource)
        asks = (shapes[resource] > 0) if resource in shapes else pd.Series(False, shapes.index)
        asking = int(asks.sum())
        unasked_pct = float(shapes.loc[~asks, "share"].sum()) * 100.0
        rows.append(
            {
                "resource": resource,
                "allocatable": allocatable,
                "free": float(group["free"].mean()),
                "stranded": float(group["stranded"].mean()) if measured else np.nan,
                "frag_amount": float(group["frag_amount"].mean()),
                "frag_pct": frag_pct,
                "stranded_pct": stranded_pct if measured else np.nan,
                "points": len(group),
                "shapes_asking": asking,
                # summed over the shapes that ask, not 100 − the rest: the float difference
                # would make "none ask" −3e-14 % (a negative share), clamped for the sum's ulps
                "asking_pct": min(max(float(shapes.loc[asks, "share"].sum()) * 100.0, 0.0), 100.0),
                "reason": _reason(resource, frag_pct, unasked_pct, asking, len(shapes)),
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


@dataclass(frozen=True)
class Headroom:
    """Headroom of each common shape at one instant (``at`` None: no point had a node)."""

    at: pd.Timestamp | None
    table: pd.DataFrame  # shape, label, share, fit (Int64; <NA> = no data), most common first


def headroom_at_last_data(frag: FragmentationResult) -> Headroom:
    """Headroom at the last point where a node was seen (the last instant that has data)."""
    head = frag.headroom
    over = frag.over_time
    if head.empty:
        return Headroom(None, head)
    seen = over.loc[over["nodes"] > 0, "time"] if len(over) else pd.Series(dtype=object)
    at = pd.Timestamp(seen.max()) if len(seen) else None
    pick = head[head["time"] == (at if at is not None else head["time"].max())]
    table = pick.sort_values(["share", "shape"], ascending=[False, True]).reset_index(drop=True)
    return Headroom(at, table)
