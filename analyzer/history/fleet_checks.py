"""The history store's per-file checks, made where the fleet page reads (``report fleet``).

The fleet reader hands the month's parquet day files straight to DuckDB, so it does not pass
through ``capacity.read_pools`` and its checks. The same facts are checked here, cheaply:

- per pools file, its parquet footer only (pyarrow's ``read_metadata``, a few threads): the schema
  version is one this analyzer reads, and the cluster stamp (``analyzer.history.cluster``) is the
  cluster's (its ``cluster.json`` name; without one, the first stamp seen in that folder);
- in one SQL scan per table (DuckDB, ``filename=true``): every row's ``day`` is the UTC midnight
  of the day its file's name says, and every quantity is finite, not negative and at most
  ``MAX_QUANTITY`` (nulls allowed, as the store allows them).

The first bad file ends the run in one line naming it and the fix (exit 2), before any figure
is computed or anything written.
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from analyzer.core.errors import InputError
from analyzer.core.text import escaped
from analyzer.history.capacity import METADATA_KEY, POOL_SCHEMA, SCHEMA_VERSION
from analyzer.history.files import MAX_QUANTITY
from analyzer.history.fleet_source import ClusterHistory, FleetSource
from analyzer.history.identity import CLUSTER_KEY, shown

_NAME_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})\.parquet$")
# Pools: every count and quantity the store checks (capacity._QUANTITIES); rollups: the two the
# page's hottest node-day divides (older rollups may lack the others, so they are not named).
POOL_QUANTITIES = [
    f.name
    for f in POOL_SCHEMA
    if f.name != "schema_version" and (pa.types.is_integer(f.type) or pa.types.is_floating(f.type))
]
ROLLUP_QUANTITIES = ["value", "allocatable"]


def _refuse(path: str, what: str, fix: str) -> InputError:
    return InputError(escaped(f"HISTORY_ROOT: {path} {what}; {fix}"))


def _rerun(path: str) -> str:
    match = _NAME_DAY.search(path)
    day = match.group(1) if match else "that day"
    return f"re-run `analyzer history backfill` for {day} (with --force) or delete that file"


def _footer(source: FleetSource, path: str) -> dict[bytes, bytes]:
    """A parquet file's key-value metadata, from its footer alone."""
    try:
        if source.fs is None:
            meta = pq.read_metadata(path)
        else:
            with source.fs.open(path, "rb") as handle:
                meta = pq.read_metadata(handle)
    except (OSError, pa.ArrowException, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise _refuse(path, f"is unreadable ({first})", _rerun(path)) from None
    return dict(meta.metadata or {})


def check_footers(source: FleetSource, clusters: list[ClusterHistory]) -> None:
    """Every pools file's schema version and cluster stamp (see the module docstring)."""
    paths = [p for c in clusters for p in c.files.get("pools", [])]
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        footers = dict(zip(paths, pool.map(lambda p: _footer(source, p), paths), strict=True))
    for c in clusters:
        expected = c.stamped
        for path in c.files.get("pools", []):
            metadata = footers[path]
            raw = metadata.get(METADATA_KEY, b"1")
            version = int(raw) if raw.isdigit() else None
            if version is None:
                raise _refuse(path, f"has schema version {raw[:40]!r}, not a number", _rerun(path))
            if version > SCHEMA_VERSION:
                raise _refuse(
                    path,
                    f"has schema version {version}, newer than this analyzer reads "
                    f"({SCHEMA_VERSION})",
                    "upgrade analyzer to read it",
                )
            stamp = metadata.get(CLUSTER_KEY)
            if stamp is None:  # written before files were stamped
                continue
            name = stamp.decode("utf-8", "replace")
            if expected is None:
                expected = name
            elif name != expected:
                raise _refuse(
                    path,
                    f"is of cluster {shown(name)}, but its history is of cluster {shown(expected)}",
                    "move that file to its own cluster's history, or delete it",
                )


def _bad(column: str) -> str:
    return (
        f"({column} IS NOT NULL AND (NOT isfinite(CAST({column} AS DOUBLE)) OR {column} < 0 "
        f"OR {column} > {MAX_QUANTITY!r}))"
    )


def check_rows(con: Any, relation: str, columns: list[str], query: Any) -> None:
    """Every row of ``relation`` (read with ``filename=true``) is of its file's day and its
    ``columns`` are in bounds; ``query(con, sql)`` runs the SQL (its errors are the caller's)."""
    if not relation:
        return
    name_day = r"regexp_extract(filename, '(\d{4}-\d{2}-\d{2})\.parquet$', 1)"
    wrong_day = f"(day IS NULL OR epoch_ns(day) <> epoch_ns(CAST({name_day} AS TIMESTAMP)))"
    sql = (
        f"SELECT filename, CAST(epoch_ns(day) AS BIGINT) AS day_ns, {wrong_day} AS wrong_day, "
        + ", ".join(
            f"CAST({c} AS VARCHAR) AS v{i}, {_bad(c)} AS b{i}" for i, c in enumerate(columns)
        )
        + f" FROM ({relation}) "
        f"WHERE {wrong_day} OR {' OR '.join(_bad(c) for c in columns)} LIMIT 1"
    )
    frame = query(con, sql)
    if frame.empty:
        return
    row = frame.iloc[0]
    path = str(row["filename"])
    if bool(row["wrong_day"]):
        if pd.isna(row["day_ns"]):
            what = "has rows without a day"
        else:
            day = str(pa.scalar(int(row["day_ns"]), pa.timestamp("ns", tz="UTC")).as_py())
            what = f"holds a row of {day}, not of the day its name says"
        raise _refuse(path, what, _rerun(path))
    for i, column in enumerate(columns):
        if not bool(row[f"b{i}"]):
            continue
        value = str(row[f"v{i}"])
        number = float(value)
        if number != number or number in (float("inf"), float("-inf")):
            problem = "is not finite"
        elif number < 0:
            problem = "is negative"
        else:
            problem = f"is over {MAX_QUANTITY:.0e}"
        raise _refuse(path, f"has {column} = {value}, which {problem}", _rerun(path))
