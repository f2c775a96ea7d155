"""Per-day pool and workload rollups in the history store (``docs/history.md`` is the reference).

Layout::

    OUT/history/
      pools/<YYYY-MM-DD>.parquet       one row per node pool of that day
      workloads/<YYYY-MM-DD>.parquet   one row per workload (namespace, owner kind, owner name)

Units: cpu in millicores and memory in bytes (the snapshot's units; the column names end in
``_millicores`` / ``_bytes``); ``day`` is the UTC midnight opening the day. Every file carries its
schema version twice: a ``schema_version`` column and the parquet metadata key
``analyzer.history.schema_version``. Readers accept every version up to ``SCHEMA_VERSION``
(a column added later reads as null in older files) and refuse a newer one with the fix. A day
without these files (history written before they existed) contributes no rows.
"""

from __future__ import annotations

import io
import os
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from analyzer.core.atomic import atomic_write_bytes
from analyzer.history.files import (
    check_day,
    check_quantities,
    conform,
    day_files,
    make_readable,
    read_parquet,
    refuse,
    rerun,
    schema_version,
)
from analyzer.history.identity import CLUSTER_KEY, check_cluster, stored_cluster

SCHEMA_VERSION = 1
METADATA_KEY = b"analyzer.history.schema_version"

_CPU_STATS = ("avg", "p95", "p99", "max")
_TIME_WEIGHTED = ("mean", "peak")

POOL_SCHEMA = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("day", pa.timestamp("ns", tz="UTC")),
        ("pool", pa.string()),
        ("nodes_mean", pa.float64()),
        ("nodes_max", pa.int64()),
        *[
            (f"{r}_{what}_{s}_{u}", pa.float64())
            for r, u in (("cpu", "millicores"), ("memory", "bytes"))
            for what, stats in (
                ("allocatable", _TIME_WEIGHTED),
                ("requested", _TIME_WEIGHTED),
                ("used", _CPU_STATS),
                ("daemonset_requested", _TIME_WEIGHTED),
            )
            for s in stats
        ],
        ("used_samples", pa.int64()),
        ("largest_node", pa.string()),
        ("largest_node_cpu_allocatable_millicores", pa.int64()),
        ("largest_node_memory_allocatable_bytes", pa.int64()),
    ]
)

WORKLOAD_SCHEMA = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("day", pa.timestamp("ns", tz="UTC")),
        ("namespace", pa.string()),
        ("owner_kind", pa.string()),
        ("owner_name", pa.string()),
        ("pool", pa.string()),
        ("pods", pa.int64()),
        ("replicas_mean", pa.float64()),
        ("replicas_max", pa.int64()),
        ("cpu_request_millicores", pa.float64()),
        ("cpu_limit_millicores", pa.float64()),
        ("memory_request_bytes", pa.float64()),
        ("memory_limit_bytes", pa.float64()),
        *[(f"cpu_used_{s}_millicores", pa.float64()) for s in ("p50", "p90", "p95", "p99", "max")],
        ("memory_used_p99_bytes", pa.float64()),
        ("memory_used_max_bytes", pa.float64()),
        ("cpu_samples", pa.int64()),
        ("restarts", pa.int64()),
        ("oom_kills", pa.int64()),
    ]
)

TABLES: dict[str, pa.Schema] = {"pools": POOL_SCHEMA, "workloads": WORKLOAD_SCHEMA}


def _to_bytes(frame: pd.DataFrame, schema: pa.Schema, cluster: str | None) -> bytes:
    if frame.empty:
        frame = schema.empty_table().to_pandas()
    missing = [
        name for name in schema.names if name not in frame.columns and name != "schema_version"
    ]
    if missing:
        raise ValueError(f"history table lacks columns {missing}")
    frame = frame.assign(schema_version=SCHEMA_VERSION)[schema.names]
    table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    metadata = {METADATA_KEY: str(SCHEMA_VERSION).encode()}
    if cluster is not None:
        metadata[CLUSTER_KEY] = cluster.encode("utf-8")
    table = table.replace_schema_metadata(metadata)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def write_tables(root: Path, day: date, tables: dict[str, pd.DataFrame]) -> list[Path]:
    """Store (or replace) ``day``'s ``pools`` and ``workloads`` tables under ``root`` atomically,
    stamped with the history's cluster (``cluster.json``, when it has one).

    Both files are encoded before either is written, so a table that does not fit its schema
    leaves the day's files as they were.
    """
    cluster = stored_cluster(Path(root))
    encoded = {name: _to_bytes(tables[name], TABLES[name], cluster) for name in TABLES}
    written = []
    for name, data in encoded.items():
        path = Path(root) / name / f"{day.isoformat()}.parquet"
        atomic_write_bytes(path, data)
        make_readable(path)
        written.append(path)
    return written


def stored_days(root: Path | str, name: str) -> list[date]:
    """The days with a ``name`` (``pools`` / ``workloads``) file under ``root``, oldest first, from
    the file names alone (a year is listed without opening a file; each is checked when read)."""
    return [day for day, _ in day_files(Path(root) / name, "parquet")]


# Columns every file of schema version 1 has: a later version's new columns are optional (they
# read as null in older files), these are not.
_REQUIRED = {name: frozenset(schema.names) for name, schema in TABLES.items()}
# Every count and quantity (not the version): finite, not negative, under files.MAX_QUANTITY.
_QUANTITIES = {
    name: [
        f.name
        for f in schema
        if f.name != "schema_version"
        and (pa.types.is_integer(f.type) or pa.types.is_floating(f.type))
    ]
    for name, schema in TABLES.items()
}


def _checked(path: Path, day: date, name: str) -> tuple[pa.Table, bytes | None]:
    """One day file, read whole and checked (version, columns and types, the day); with its
    cluster stamp."""
    table = read_parquet(path, day)
    metadata = table.schema.metadata or {}
    version = schema_version(path, metadata, METADATA_KEY)
    if version > SCHEMA_VERSION:
        refuse(
            path,
            f"has schema version {version}, newer than this analyzer reads ({SCHEMA_VERSION})",
            "upgrade analyzer to read it",
        )
    table = conform(path, table, TABLES[name], _REQUIRED[name])
    if name == "pools" and table.num_rows == 0:
        # A day is recorded only with its pools (backfill writes nothing for a day without
        # nodes): an empty pools file is a damaged day, not an empty cluster.
        refuse(path, "holds no rows (a recorded day has at least one pool)", rerun(day))
    check_day(path, table, day)
    return table, metadata.get(CLUSTER_KEY)


def _read(root: Path | str, name: str, start: date | None, end: date | None) -> pd.DataFrame:
    schema = TABLES[name]
    files = day_files(Path(root) / name, "parquet", start, end)
    if not files:
        return schema.empty_table().to_pandas()
    identity = [stored_cluster(Path(root))]
    # Files are read and checked on a few threads (pyarrow releases the GIL while it decodes), as
    # the dataset reader did before; results come back in day order, and the first bad file (in
    # day order) is the one named. The cluster check runs after, in order, on the stamps.
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        checked = list(pool.map(lambda item: _checked(item[1], item[0], name), files))
    tables, where, day_of, rows = [], [], {}, 0
    for (day, path), (table, stamp) in zip(files, checked, strict=True):
        check_cluster(path, stamp, identity)
        where.append((rows, path))
        day_of[path] = day
        rows += table.num_rows
        tables.append(table)
    whole = pa.concat_tables(tables)
    check_quantities(whole, _QUANTITIES[name], where, day_of)
    frame: pd.DataFrame = whole.to_pandas()
    keys = ["day", "pool"] if name == "pools" else ["day", "namespace", "owner_kind", "owner_name"]
    return frame.sort_values(keys, kind="stable").reset_index(drop=True)


def read_pools(
    root: Path | str, start: date | None = None, end: date | None = None
) -> pd.DataFrame:
    """Pool rollups of the days ``start``..``end`` (both included; None = open) under ``root``
    (``OUT/history``), one row per pool and day, oldest first. Days without a pools file
    (history written before they existed) contribute no rows."""
    return _read(root, "pools", start, end)


def read_workloads(
    root: Path | str, start: date | None = None, end: date | None = None, *, last: int | None = None
) -> pd.DataFrame:
    """Workload rollups of the days ``start``..``end`` under ``root``; see :func:`read_pools`.
    ``last``: only the days within ``last`` days of the newest workloads file (a recipe's window)."""
    if last is not None:
        days = stored_days(root, "workloads")
        if days:
            first = days[-1].toordinal() - (last - 1)  # ordinals: no date overflow for any ``last``
            start = max(start or date.min, date.fromordinal(max(first, 1)))
    return _read(root, "workloads", start, end)
