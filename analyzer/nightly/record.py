"""Record one nightly day in the history store: the ONE way a day gets into ``OUT/history/``.

``write_nightly_report`` (after its report folder) and ``analyzer history backfill`` (without
a report) both call :func:`record_day`, so a backfilled day and a nightly day are the same four
files: ``rollups/`` and ``summary/`` (``history.store``), ``pools/`` and ``workloads/``
(``history.capacity``). Each file is written atomically; the pool and workload tables are
encoded before either is written. The day's headroom per pod shape goes to ``headroom/``
(``history.headroom``), not one of the four: a day recorded before it existed is not re-made.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from analyzer.history.capacity import TABLES, write_tables
from analyzer.history.headroom import write_headroom
from analyzer.history.identity import ClusterIdentity, adopt
from analyzer.history.store import HistoryStore
from analyzer.nightly.run import NightlyResult


def record_day(
    result: NightlyResult, history: Path, cluster: ClusterIdentity | None = None
) -> list[Path]:
    """Store (or replace) ``result.day`` under ``history`` (``OUT/history``); return its files.

    With ``cluster`` (the run's identity, checked against the history's by the caller before any
    work: ``history.identity.check_identity``), a history without identity records it first;
    every file is stamped with the history's cluster."""
    store = HistoryStore(Path(history))
    if cluster is not None:
        adopt(store.root, cluster)
    store.write_day(result.day, result.rollups, result.summary.to_dict())
    write_tables(
        store.root, result.day, {"pools": result.pool_days, "workloads": result.workload_days}
    )
    write_headroom(store.root, result.day, result.shape_headroom.shapes)
    return day_files(history, result.day)


def day_files(history: Path, day: date) -> list[Path]:
    """The four files :func:`record_day` writes for ``day`` (whether they exist or not)."""
    store = HistoryStore(Path(history))
    name = day.isoformat()
    return [
        store.rollups_dir / f"{name}.parquet",
        store.summary_dir / f"{name}.json",
        *(store.root / table / f"{name}.parquet" for table in TABLES),
    ]


def is_recorded(history: Path, day: date) -> bool:
    """True when all four files of ``day`` are present (a day missing any one is re-made)."""
    return all(path.is_file() for path in day_files(history, day))
