"""Headroom per pod shape as a daily series in the history store (``docs/history.md``).

Layout::

    OUT/history/headroom/<YYYY-MM-DD>.parquet   one row per pod shape counted that day

Columns: ``day`` (the UTC midnight opening the day), ``shape``, ``source`` (``declared`` /
``common``), ``copies_now`` (copies that fit at the day's last point), ``copies_min`` (the fewest
at any hour), ``min_at`` (that hour), ``reason_now`` / ``reason_min`` (the next copy's FitError
summary then). Versioned as the pool and workload tables are (a ``schema_version`` column and the
parquet metadata key ``analyzer.history.headroom_version``; a newer file is refused with the fix),
stamped with the history's cluster and checked on reading with the same rules
(``history.files``). The table is not one of the day's required files: a day recorded before it
existed, or with no shape counted, contributes no rows and is not re-made by a backfill.
"""

from __future__ import annotations

import io
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
    schema_version,
)
from analyzer.history.identity import CLUSTER_KEY, check_cluster, stored_cluster

NAME = "headroom"
SCHEMA_VERSION = 1
METADATA_KEY = b"analyzer.history.headroom_version"
SCHEMA = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("day", pa.timestamp("ns", tz="UTC")),
        ("shape", pa.string()),
        ("source", pa.string()),
        ("copies_now", pa.int64()),
        ("copies_min", pa.int64()),
        ("min_at", pa.timestamp("ns", tz="UTC")),
        ("reason_now", pa.string()),
        ("reason_min", pa.string()),
    ]
)
_REQUIRED = frozenset(SCHEMA.names)
_COUNTS = ["copies_now", "copies_min"]


def write_headroom(root: Path, day: date, shapes: pd.DataFrame) -> Path | None:
    """Store (or replace) ``day``'s shape rows (``ShapeHeadroom.shapes``) under ``root``
    (``OUT/history``) atomically; nothing when no shape was counted (None)."""
    if shapes.empty:
        return None
    frame = shapes.assign(day=pd.Timestamp(day, tz="UTC"), schema_version=SCHEMA_VERSION)
    table = pa.Table.from_pandas(frame[SCHEMA.names], schema=SCHEMA, preserve_index=False)
    metadata = {METADATA_KEY: str(SCHEMA_VERSION).encode()}
    cluster = stored_cluster(Path(root))
    if cluster is not None:
        metadata[CLUSTER_KEY] = cluster.encode("utf-8")
    buffer = io.BytesIO()
    pq.write_table(table.replace_schema_metadata(metadata), buffer)
    path = Path(root) / NAME / f"{day.isoformat()}.parquet"
    atomic_write_bytes(path, buffer.getvalue())
    make_readable(path)
    return path


def read_headroom(
    root: Path | str, start: date | None = None, end: date | None = None
) -> pd.DataFrame:
    """The shape rows of the days ``start``..``end`` (both included; None = open), oldest first;
    a damaged, foreign or newer file ends the run naming it (``history.files``)."""
    files = day_files(Path(root) / NAME, "parquet", start, end)
    if not files:
        return SCHEMA.empty_table().to_pandas()
    identity = [stored_cluster(Path(root))]
    tables, where, day_of, rows = [], [], {}, 0
    for day, path in files:
        table = read_parquet(path, day)
        metadata = table.schema.metadata or {}
        version = schema_version(path, metadata, METADATA_KEY)
        if version > SCHEMA_VERSION:
            refuse(
                path,
                f"has schema version {version}, newer than this analyzer reads ({SCHEMA_VERSION})",
                "upgrade analyzer to read it",
            )
        table = conform(path, table, SCHEMA, _REQUIRED)
        check_day(path, table, day)
        check_cluster(path, metadata.get(CLUSTER_KEY), identity)
        where.append((rows, path))
        day_of[path] = day
        rows += table.num_rows
        tables.append(table)
    whole = pa.concat_tables(tables)
    check_quantities(whole, _COUNTS, where, day_of)
    frame: pd.DataFrame = whole.to_pandas()
    return frame.sort_values(["day", "shape"], kind="stable").reset_index(drop=True)
