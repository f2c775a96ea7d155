"""The default demo's coarse history, shipped with the package instead of generated on every run.

The days before the demo's snapshot (83 of its 90 days of history, 1-hour step) depend only on
the cluster's spec, the chunks they are generated in, the placer's crowded nodes, the rollups'
percentile method and the code (``nightly.synthetic_history``) — never on the run. Generating
them was over a third of the demo's CPU, the same rows every time. So the default demo's rows
are package data (``analyzer/_demo_history/``: ``pools``, ``workloads`` and ``headroom`` parquet,
zstd, the history store's own schemas with every day's rows one after another, and
``manifest.json``), keyed by :func:`fingerprint` — a SHA-256 of every chunk's full
``SyntheticSpec`` and days, the step, the method, the crowded nodes, the headroom marks and the
tables' schema versions. ``analyzer demo`` with other settings (``--seed``, ``--nodes``,
``--history-days`` ...) finds no matching fingerprint and generates as before;
``--regenerate-history`` generates even when it matches.

The rows are stored exactly as the history store writes them (``pa.Table.from_pandas`` with the
table's schema): the demo's ``OUT/reports/history`` files written from the shipped rows are the
bytes a generation writes (``bench/demo_compare.py`` compares two demo folders file by file).
``tests/test_demo_shipped.py`` regenerates chunks and compares them with the shipped rows
exactly. A change of the generator's code that changes its rows makes that test fail: rewrite
the data with ``python -m analyzer.cli.demo_regenerate`` (about a minute on two cores).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterable
from dataclasses import asdict
from datetime import date
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from analyzer.core.atomic import atomic_write_bytes, atomic_write_text
from analyzer.core.errors import InputError
from analyzer.core.structured import load_json
from analyzer.history import capacity, headroom
from analyzer.nightly.synthetic_history import HEADROOM_EVERY, DayRows
from analyzer.sources.history_chunks import chunk_specs
from analyzer.sources.spec import SyntheticSpec

SHIPPED = Path(__file__).resolve().parent.parent / "_demo_history"
MANIFEST = "manifest.json"
COMMAND = "python -m analyzer.cli.demo_regenerate"  # rewrites the rows
# the stored tables: name -> the history store's schema for it
SCHEMAS: dict[str, pa.Schema] = {
    "pools": capacity.POOL_SCHEMA,
    "workloads": capacity.WORKLOAD_SCHEMA,
    "headroom": headroom.SCHEMA,
}
_VERSIONS = {"capacity": capacity.SCHEMA_VERSION, "headroom": headroom.SCHEMA_VERSION}


def fingerprint(
    spec: SyntheticSpec,
    first: date,
    last: date,
    *,
    step: int,
    chunk_days: int,
    method: str,
    crowded: Iterable[str],
) -> str:
    """SHA-256 of what the coarse days' rows are computed from (the module docstring): the
    chunks exactly as ``history_rows`` generates them, so any setting that changes a chunk's
    spec changes the key."""
    chunks = [
        {"days": [str(d) for d in days], "spec": asdict(chunk)}
        for days, chunk in chunk_specs(spec, first, last, step=step, chunk_days=chunk_days)
    ]
    key = {
        "chunks": chunks,
        "method": method,
        "crowded": sorted(crowded),
        "placer": "constrained_crowding_place",
        "headroom_every_hours": HEADROOM_EVERY,
        "schema_versions": _VERSIONS,
    }
    text = json.dumps(key, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def stored_form(name: str, frame: pd.DataFrame, day: date) -> pa.Table:
    """``frame`` (one day's ``name`` rows) as the history store encodes it: the schema's
    columns and types, ``day`` and ``schema_version`` set as its writers set them."""
    schema = SCHEMAS[name]
    if frame.empty:
        return schema.empty_table()
    version = headroom.SCHEMA_VERSION if name == "headroom" else capacity.SCHEMA_VERSION
    frame = frame.assign(schema_version=version)
    if name == "headroom":  # write_headroom sets the day; the rollups carry theirs
        frame = frame.assign(day=pd.Timestamp(day, tz="UTC"))
    return pa.Table.from_pandas(frame[schema.names], schema=schema, preserve_index=False)


def _tables(chunks: Iterable[list[DayRows]]) -> dict[str, pa.Table]:
    parts: dict[str, list[pa.Table]] = {name: [] for name in SCHEMAS}
    for rows in chunks:
        for day, pools, workloads, shapes in rows:
            for name, frame in zip(SCHEMAS, (pools, workloads, shapes), strict=True):
                parts[name].append(stored_form(name, frame, day))
    return {name: pa.concat_tables(tables) for name, tables in parts.items()}


def write_shipped(
    folder: Path, chunks: list[list[DayRows]], key: str, settings: dict[str, object]
) -> dict[str, int]:
    """Store the rows of ``chunks`` under ``folder`` with ``key`` and a readable record of
    ``settings``; returns each file's size in bytes."""
    days = [row[0] for rows in chunks for row in rows]
    sizes: dict[str, int] = {}
    digests: dict[str, str] = {}
    for name, table in _tables(chunks).items():
        buffer = io.BytesIO()
        pq.write_table(table, buffer, compression="zstd", compression_level=9)
        atomic_write_bytes(folder / f"{name}.parquet", buffer.getvalue())
        sizes[f"{name}.parquet"] = len(buffer.getvalue())
        digests[f"{name}.parquet"] = hashlib.sha256(buffer.getvalue()).hexdigest()
    manifest = {
        "fingerprint": key,
        "sha256": digests,
        "first": str(min(days)),
        "last": str(max(days)),
        "days": len(days),
        "chunks": [[str(r[0][0]), str(r[-1][0])] for r in chunks],
        "command": COMMAND,
        "settings": settings,
    }
    atomic_write_text(folder / MANIFEST, json.dumps(manifest, indent=1, default=str) + "\n")
    return sizes


def read_manifest(folder: Path = SHIPPED) -> dict[str, object] | None:
    """The shipped rows' manifest, or None when there is none (a source tree without them)."""
    path = folder / MANIFEST
    if not path.is_file():
        return None
    record = load_json(path, what="the shipped demo history's manifest")
    return record if isinstance(record, dict) else None


class ShippedDamaged(Exception):
    """A shipped file is missing or its bytes are not those its manifest records."""


def checked_files(folder: Path, manifest: dict[str, object]) -> dict[str, bytes]:
    """Each shipped table's bytes, read once: ``ShippedDamaged`` names the first file that is
    missing or whose SHA-256 differs from the manifest's (a damaged install: pyarrow would
    otherwise stop in a traceback, or read rows that are not the shipped ones). The tables are
    parsed from these bytes, so what is parsed is what was checked."""
    digests = manifest.get("sha256")
    if not isinstance(digests, dict):
        raise ShippedDamaged(f"{folder / MANIFEST} records no checksums")
    found: dict[str, bytes] = {}
    for name in SCHEMAS:
        path = folder / f"{name}.parquet"
        if not path.is_file():
            raise ShippedDamaged(f"{path} is missing")
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != digests.get(path.name):
            raise ShippedDamaged(f"{path}'s checksum differs from {MANIFEST}'s")
        found[name] = data
    return found


def shipped_rows(
    key: str, days: list[list[date]], folder: Path = SHIPPED
) -> list[list[DayRows]] | None:
    """The shipped rows grouped as ``days`` (the chunks' days) when the manifest's fingerprint
    is ``key``, else None (other settings: the caller generates them)."""
    try:
        manifest = read_manifest(folder)
    except InputError as unreadable:  # the package's own file: damaged, not the user's input
        raise ShippedDamaged(str(unreadable)) from None
    if manifest is None or manifest.get("fingerprint") != key:
        return None
    frames = {
        name: pq.read_table(pa.BufferReader(data)).to_pandas()
        for name, data in checked_files(folder, manifest).items()
    }
    by_day = {
        name: {
            pd.Timestamp(stamp).date(): rows.reset_index(drop=True)
            for stamp, rows in frame.groupby("day", sort=False)
        }
        for name, frame in frames.items()
    }

    def one(name: str, day: date) -> pd.DataFrame:
        found = by_day[name].get(day)
        return SCHEMAS[name].empty_table().to_pandas() if found is None else found

    return [
        [(day, one("pools", day), one("workloads", day), one("headroom", day)) for day in chunk]
        for chunk in days
    ]
