"""The busiest window of a snapshot: the whole days whose requested peak is the highest.

Rule: the snapshot's range is cut into whole days from its start; a window is ``days``
consecutive ones. Its requested peak is the highest sum of CPU requests of the pods holding a node
at any instant inside it (``analyzer.core.pod_intervals.pod_intervals``, DaemonSet pods included: they
hold capacity too); memory requests break ties, then the earlier window. A snapshot no longer
than ``days`` is its own window. The cut keeps the nodes and pods alive in ``(start, end]`` and
the usage samples inside it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.pod_intervals import pod_intervals
from analyzer.core.snapshot import Snapshot
from analyzer.core.snapshot_schema import OPEN_END

DAY = pd.Timedelta(days=1)
Int64Array = np.ndarray[Any, np.dtype[np.int64]]


def _ns(values: pd.Series) -> Int64Array:
    out: Int64Array = (
        pd.to_datetime(values, utc=True).to_numpy(dtype="datetime64[ns]").astype(np.int64)
    )
    return out


def _daily_peaks(snapshot: Snapshot, days: int, resource: str) -> np.ndarray[Any, Any]:
    """Per whole day from the start, the peak of the summed ``resource`` requests."""
    intervals = pod_intervals(snapshot)
    requests = snapshot.pods.set_index("uid")[f"requests:{resource}"]
    weight = requests.loc[intervals["uid"]].to_numpy(dtype=np.float64)
    starts = _ns(intervals["start"])
    ends = _ns(intervals["end"].fillna(OPEN_END))
    t0 = int(snapshot.start.value)
    bounds = t0 + np.arange(days + 1, dtype=np.int64) * int(DAY.value)
    probes = np.unique(np.concatenate([starts[(starts >= t0) & (starts < bounds[-1])], bounds]))
    s_order, e_order = np.argsort(starts), np.argsort(ends)
    s_cum = np.concatenate([[0.0], np.cumsum(weight[s_order])])
    e_cum = np.concatenate([[0.0], np.cumsum(weight[e_order])])
    held = (
        s_cum[np.searchsorted(starts[s_order], probes, side="right")]
        - e_cum[np.searchsorted(ends[e_order], probes, side="right")]
    )
    day = np.clip(np.searchsorted(bounds, probes, side="right") - 1, 0, days - 1)
    peaks = np.zeros(days, dtype=np.float64)
    np.maximum.at(peaks, day, held)
    return peaks


def busiest_window(snapshot: Snapshot, days: int = 7) -> tuple[pd.Timestamp, pd.Timestamp]:
    """(start, end) of the ``days`` whole days with the highest requested peak (module rule)."""
    start, end = snapshot.start, snapshot.end
    whole = int((end - start) // DAY)
    if whole <= days:
        return start, end
    cpu = _daily_peaks(snapshot, whole, "cpu")
    memory = _daily_peaks(snapshot, whole, "memory")
    best, best_key = 0, (-1.0, -1.0)
    for first in range(whole - days + 1):
        key = (float(cpu[first : first + days].max()), float(memory[first : first + days].max()))
        if key > best_key:
            best, best_key = first, key
    return start + best * DAY, start + (best + days) * DAY


def cut(snapshot: Snapshot, start: pd.Timestamp, end: pd.Timestamp) -> Snapshot:
    """The part of ``snapshot`` in ``(start, end]``: nodes and pods alive then, usage inside."""
    if start <= snapshot.start and end >= snapshot.end:
        return snapshot
    nodes = snapshot.nodes
    first = pd.to_datetime(nodes["first_seen"], utc=True)
    last = pd.to_datetime(nodes["last_seen"], utc=True)
    alive = (first.isna() | (first <= end)) & (last.isna() | (last > start))
    pods = snapshot.pods
    began = pd.to_datetime(pods["created"], utc=True).fillna(
        pd.to_datetime(pods["first_seen"], utc=True)
    )
    ended = pd.to_datetime(pods["finished"], utc=True).fillna(
        pd.to_datetime(pods["last_seen"], utc=True)
    )
    overlap = (began.isna() | (began <= end)) & (ended.isna() | (ended > start))

    def inside(frame: pd.DataFrame) -> pd.DataFrame:
        stamps = frame["timestamp"]
        return frame[(stamps > start) & (stamps <= end)].reset_index(drop=True)

    return replace(
        snapshot,
        meta=replace(snapshot.meta, start=start.isoformat(), end=end.isoformat()),
        nodes=nodes[alive].reset_index(drop=True),
        pods=pods[overlap].reset_index(drop=True),
        node_usage=inside(snapshot.node_usage),
        pod_usage=inside(snapshot.pod_usage),
    )


def parse_window(text: str, option: str = "--window") -> int:
    """Whole days of ``--window`` (``2d`` or ``2``); one line naming ``option`` when it is not."""
    from analyzer.core.errors import InputError

    raw = text.strip().lower()
    digits = raw[:-1] if raw.endswith("d") else raw
    if not digits.isdigit() or not 1 <= int(digits) <= 366:
        raise InputError(
            f"{option}: {text!r} is not a number of whole days; give e.g. 2d (the busiest 2 days "
            "of the snapshot are replayed) or leave it out to replay the whole range"
        )
    return int(digits)


def busiest_words(start: pd.Timestamp | str, end: pd.Timestamp | str) -> str:
    """ "the busiest week" / "the busiest 2 days": how a page names a replayed window."""
    days = round((pd.Timestamp(end) - pd.Timestamp(start)) / DAY)
    if days == 7:
        return "the busiest week"
    return f"the busiest {days} day{'s' if days != 1 else ''}" if days >= 1 else "the window"


def replay_window(snapshot: Snapshot, days: int | None) -> tuple[Snapshot, str | None]:
    """The busiest ``days`` whole days of ``snapshot`` (module rule) and the sentence a page
    states about them; ``(snapshot, None)`` when ``days`` is None or covers the whole range."""
    if days is None:
        return snapshot, None
    start, end = busiest_window(snapshot, days)
    if start <= snapshot.start and end >= snapshot.end:
        return snapshot, None
    whole = (snapshot.end - snapshot.start) / DAY
    sentence = (
        f"Replayed {busiest_words(start, end)} of the snapshot, {start:%Y-%m-%d %H:%M} – "
        f"{end:%Y-%m-%d %H:%M} UTC (--window {days}d: the highest CPU-request peak), not its "
        f"whole {round(whole, 1):g} days ({snapshot.start:%Y-%m-%d} – {snapshot.end:%Y-%m-%d}): every "
        "figure on this page is over those days."
    )
    return cut(snapshot, start, end), sentence
