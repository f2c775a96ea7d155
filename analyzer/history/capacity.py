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
from collections.abc import Iterable
from datetime import date
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from analyzer.core.atomic import atomic_write_bytes
from analyzer.core.errors import InputError

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


def _to_bytes(frame: pd.DataFrame, schema: pa.Schema) -> bytes:
    if frame.empty:
        frame = schema.empty_table().to_pandas()
    missing = [
        name for name in schema.names if name not in frame.columns and name != "schema_version"
    ]
    if missing:
        raise ValueError(f"history table lacks columns {missing}")
    frame = frame.assign(schema_version=SCHEMA_VERSION)[schema.names]
    table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    table = table.replace_schema_metadata({METADATA_KEY: str(SCHEMA_VERSION).encode()})
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def write_tables(root: Path, day: date, tables: dict[str, pd.DataFrame]) -> list[Path]:
    """Store (or replace) ``day``'s ``pools`` and ``workloads`` tables under ``root`` atomically.

    Both files are encoded before either is written, so a table that does not fit its schema
    leaves the day's files as they were.
    """
    encoded = {name: _to_bytes(tables[name], TABLES[name]) for name in TABLES}
    written = []
    for name, data in encoded.items():
        path = Path(root) / name / f"{day.isoformat()}.parquet"
        atomic_write_bytes(path, data)
        path.chmod(0o644 & ~_umask())  # like the rollups: readable by the report's readers
        written.append(path)
    return written


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _day_files(folder: Path, start: date | None, end: date | None) -> list[Path]:
    if not folder.is_dir():
        return []
    found = []
    for path in folder.glob("*.parquet"):
        try:
            day = date.fromisoformat(path.stem)
        except ValueError:
            continue  # not a day file (a temporary, a stray copy)
        if (start is None or day >= start) and (end is None or day <= end):
            found.append((day, path))
    return [path for _, path in sorted(found)]


def _check_versions(paths: Iterable[Path]) -> None:
    for path in paths:
        try:
            metadata = pq.read_schema(path).metadata or {}
        except (OSError, pa.ArrowInvalid) as exc:
            raise InputError(f"history: {path} is unreadable ({exc}); delete that file") from None
        raw = metadata.get(METADATA_KEY, b"1")
        try:
            version = int(raw)
        except ValueError:
            raise InputError(
                f"history: {path} has schema version {raw!r}, not a number; delete that file"
            ) from None
        if version > SCHEMA_VERSION:
            raise InputError(
                f"history: {path} has schema version {version}, newer than this analyzer "
                f"reads ({SCHEMA_VERSION}); upgrade analyzer to read it"
            )


def _read(root: Path | str, name: str, start: date | None, end: date | None) -> pd.DataFrame:
    schema = TABLES[name]
    paths = _day_files(Path(root) / name, start, end)
    if not paths:
        return schema.empty_table().to_pandas()
    _check_versions(paths)
    # An explicit schema: a column added by a later version reads as null in older files.
    dataset = pads.dataset([str(p) for p in paths], schema=schema, format="parquet")
    frame: pd.DataFrame = dataset.to_table().to_pandas()
    keys = ["day", "pool"] if name == "pools" else ["day", "namespace", "owner_kind", "owner_name"]
    return frame.sort_values(keys, kind="stable").reset_index(drop=True)


def read_pools(
    root: Path | str, start: date | None = None, end: date | None = None
) -> pd.DataFrame:
    """Pool rollups of the days ``start``..``end`` (both included; None = open) under ``root``
    (``OUT/history``), one row per pool and day, oldest first. Days without a pools file
    (history written before they existed) contribute no rows."""
    return _read(root, "pools", start, end)


def read_workloads(root: Path, start: date | None = None, end: date | None = None) -> pd.DataFrame:
    """Workload rollups of the days ``start``..``end`` under ``root``; see :func:`read_pools`."""
    return _read(root, "workloads", start, end)
