"""Months of history for a synthetic cluster, rolled up exactly as the nightly run rolls up a day.

``write_synthetic_history(spec, root, first, last)`` generates the days ``first``..``last`` of the
cluster ``spec`` describes a chunk of days at a time (``analyzer.sources.history_chunks``: a coarse
step, 1 h by default, bounded memory), computes each day's pool and workload rows with the nightly
run's own functions (``capacity_rollups.pool_rollups``/``workload_rollups`` on the day's slice,
:func:`day_rows`) and stores them with ``history.capacity.write_tables`` under ``root``
(``OUT/history``). The pools and workloads tables are written, and each day's headroom per pod
shape (``headroom.headroom_day``, the chunk's three most common shapes; ``history.headroom``), so
the monthly review draws it over the months — at every ``HEADROOM_EVERY``-th hour mark only
(06:00, 12:00, 18:00, 24:00: a quarter of the nightly run's points; at 200 nodes this adds
about a quarter to the CPU of the history step, docs/benchmarks.md "headroom"); the nightly report's node
rollups and summary cards stay the nightly runs' own, so the index lists only days with a report.

The step shows in the rows: ``used_samples`` counts the day's sample times (24 at 1 h, 288 at
5 min), and the usage percentiles of a day at 1 h are over hourly means (smoother than 5-minute
ones). Requests are exact at any step: they are time-weighted over the pods' lifetimes.

``workers`` > 1 generates chunks in parallel processes (fork: the placer is inherited, never
pickled); the rows are written in day order by the calling process. ``history_rows`` computes
them without writing (``write_rows`` writes them later), so the demo computes them in a forked
process from its start, beside its snapshot's generation (``cli/demo.py``).

The rollups read ``rollup_view`` of the chunk (only the pod columns they use: each day's slice
copies a third fewer columns) and ``day_rows`` builds the day's pod intervals once for both; the
rows are those of the whole snapshot (tests/test_synthetic_history_exact.py, docs/benchmarks.md
"histexact").

The placer's own memory (``constrained_placement.RequiredFilters``: the required anti-affinity
terms seen, its core state) never changes where a pod goes, only which pods are checked by the
filters: a pod no placed pod's term selects passes them everywhere. So a fresh placer, one that
placed the snapshot's pods first, or one that placed other chunks in the same worker place a
chunk's pods alike (each worker already places several chunks in turn).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from datetime import date
from pathlib import Path

import pandas as pd

from analyzer.core.pod_intervals import pod_intervals
from analyzer.core.snapshot import Snapshot
from analyzer.history.capacity import write_tables
from analyzer.history.generated import write_generated
from analyzer.history.headroom import write_headroom
from analyzer.nightly.capacity_rollups import pool_rollups, workload_rollups
from analyzer.nightly.headroom import ObservedPlacement, headroom_day
from analyzer.nightly.run import DAY, slice_snapshot
from analyzer.sources.history_chunks import chunk_specs
from analyzer.sources.placement import Placer
from analyzer.sources.spec import SyntheticSpec
from analyzer.sources.synthetic import generate

DayRows = tuple[date, pd.DataFrame, pd.DataFrame, pd.DataFrame]
HEADROOM_EVERY = 6  # hours between the synthetic days' headroom points
CHUNK_DAYS = 7  # days generated together (one chunk: one generation, one placer pass)


def day_rows(
    snapshot: Snapshot, day: date, *, method: str = "nearest-rank"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The history's ``pools`` and ``workloads`` rows of ``day`` (UTC) of ``snapshot``: what
    ``run_nightly`` stores for that day (``NightlyResult.pool_days``/``workload_days``)."""
    start = pd.Timestamp(day, tz="UTC")
    end = start + DAY
    today = slice_snapshot(snapshot, start, end)
    intervals = pod_intervals(today)  # read by both rollups: built once
    return (
        pool_rollups(today, start, end, method=method, intervals=intervals),
        workload_rollups(today, start, end, method=method, intervals=intervals),
    )


# The pod columns the day's rollups read (slice_snapshot, pod_intervals, pool_rollups,
# workload_rollups, workload_keys), besides every requests:/limits: column.
ROLLUP_POD_COLUMNS = frozenset(
    {"uid", "name", "namespace", "node", "workload_kind", "workload_name", "owner_kind",
     "created", "first_seen", "scheduled", "started", "finished", "last_seen"}
)  # fmt: skip


def rollup_view(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` with only the pod columns the day's rollups read: each day's slice then
    copies a third fewer string columns (the rows are the same, tests/test_synthetic_history_exact.py)."""
    keep = [
        c
        for c in snapshot.pods.columns
        if c in ROLLUP_POD_COLUMNS or str(c).startswith(("requests:", "limits:"))
    ]
    return replace(snapshot, pods=snapshot.pods[keep])


# What a worker process needs besides its chunk (set by the pool's initializer, inherited on fork).
_WORKER: dict[str, object] = {}


def _init_worker(place: Placer | None, method: str) -> None:
    _WORKER["place"] = place
    _WORKER["method"] = method


def _chunk_rows(days: list[date], chunk: SyntheticSpec) -> list[DayRows]:
    place = _WORKER.get("place")
    method = str(_WORKER.get("method", "nearest-rank"))
    snapshot = generate(chunk, place=place if callable(place) else None).snapshot
    placement = ObservedPlacement(snapshot)  # one state for the chunk, moved hour by hour
    narrow = rollup_view(snapshot)  # the headroom reads the whole snapshot, the rollups these
    rows: list[DayRows] = []
    for day in days:
        start = pd.Timestamp(day, tz="UTC")
        marks = [start + pd.Timedelta(hours=h) for h in range(HEADROOM_EVERY, 25, HEADROOM_EVERY)]
        times = [t for t in marks if t <= snapshot.end]
        shapes = headroom_day(snapshot, times, placement=placement).shapes
        rows.append((day, *day_rows(narrow, day, method=method), shapes))
    return rows


def _rows(
    chunks: list[tuple[list[date], SyntheticSpec]],
    place: Placer | None,
    method: str,
    workers: int,
) -> Iterator[list[DayRows]]:
    if workers <= 1 or len(chunks) <= 1:
        _init_worker(place, method)
        try:
            for days, chunk in chunks:
                yield _chunk_rows(days, chunk)
        finally:
            _WORKER.clear()
        return
    with ProcessPoolExecutor(
        min(workers, len(chunks)), initializer=_init_worker, initargs=(place, method)
    ) as pool:
        yield from pool.map(_chunk_rows, *zip(*chunks, strict=True))


def history_rows(
    spec: SyntheticSpec,
    first: date,
    last: date,
    *,
    step: int = 3600,
    chunk_days: int = CHUNK_DAYS,
    place: Placer | None = None,
    method: str = "nearest-rank",
    workers: int = 1,
) -> list[list[DayRows]]:
    """The rows of the days ``first``..``last`` of ``spec``'s cluster, one list per chunk, oldest
    first, not written (``write_rows`` writes them): so that a caller can compute them in
    another process while it does something else (``cli/demo.py``)."""
    chunks = chunk_specs(spec, first, last, step=step, chunk_days=chunk_days)
    return list(_rows(chunks, place, method, workers))


def write_rows(
    root: Path,
    chunks: Iterable[list[DayRows]],
    progress: Callable[[str], None] | None = None,
    *,
    step: int,
    source: str,
    note: str | None = None,
) -> list[date]:
    """Store each chunk's day rows under ``root`` in order; returns the days written. The days
    are recorded as generated at ``step`` seconds from ``source`` (``history/generated.py``), so
    the monthly review says so instead of "step not recorded"; ``note`` (rows shipped with the
    package, ``cli/demo_shipped.py``) is recorded with them and said on the review."""
    say = progress or (lambda _msg: None)
    written: list[date] = []
    for rows in chunks:
        for day, pools, workloads, shapes in rows:
            write_tables(Path(root), day, {"pools": pools, "workloads": workloads})
            write_headroom(Path(root), day, shapes)
            written.append(day)
        say(f"history: {rows[0][0]} to {rows[-1][0]} written ({len(written)} days)")
    if written:
        write_generated(Path(root), min(written), max(written), step, source, note=note)
    return written


def write_synthetic_history(
    spec: SyntheticSpec,
    root: Path,
    first: date,
    last: date,
    *,
    step: int = 3600,
    chunk_days: int = CHUNK_DAYS,
    place: Placer | None = None,
    method: str = "nearest-rank",
    workers: int = 1,
    progress: Callable[[str], None] | None = None,
) -> list[date]:
    """Store the pool and workload rows of the days ``first``..``last`` of ``spec``'s cluster
    under ``root``; returns the days written, oldest first (see the module docstring)."""
    chunks = chunk_specs(spec, first, last, step=step, chunk_days=chunk_days)
    rows = _rows(chunks, place, method, workers)
    return write_rows(root, rows, progress, step=step, source=generated_source(spec))


def generated_source(spec: SyntheticSpec) -> str:
    """How the generated days name their cluster (the snapshot's ``source`` without its days)."""
    return f"synthetic:seed={spec.seed},nodes={spec.nodes}"
