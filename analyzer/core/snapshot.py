"""The snapshot: a directory holding what a cluster did over a time range.

Everything after ``collect`` works on a snapshot (DESIGN.md "Snapshot contract"). This module
holds the snapshot object and reads and writes its files; the schema (columns, dtypes, checks) is
defined in one place, ``analyzer.core.snapshot_schema``; ``docs/snapshot.md`` describes it for
users. The kept Kubernetes objects: ``analyzer.core.kube_objects``; when pods held their nodes:
``analyzer.core.pod_intervals``.

Layout::

    SNAPSHOT/
      meta.json         SnapshotMeta (schema_version, source, range, step, warnings, coverage, ...)
      nodes.parquet     one row per node
      pods.parquet      one row per pod (key: uid; names are reused)
      node_usage.parquet  long table: node, timestamp, cpu, memory
      pod_usage.parquet   long table: uid, timestamp, cpu, memory
                          (both in row groups that never span a UTC day: core/daygroups.py,
                          meta.json extra.usage_layout = "day-row-groups"; older snapshots'
                          row groups may span days and read the same, without the skipping)
      node_state.parquet  optional: taint / cordon / not-ready intervals per node (version in
                          meta.json extra.node_state_version; absent in older snapshots)

Units (DESIGN.md): cpu in millicores, memory and storage in bytes, extended resources in integer
units. Resource quantities are int64 columns named ``<kind>:<resource name>`` with the Kubernetes
resource name (``allocatable:cpu``, ``requests:nvidia.com/gpu``); a resource a pod does not set is 0.
Usage (``cpu``, ``memory``) is float64 (cpu is a rate; memory is exact at sample points).
Times are timezone-aware UTC (``datetime64[ns, UTC]``); a missing time is NaT.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from analyzer.core.atomic import atomic_directory
from analyzer.core.daygroups import (
    DAY_LAYOUT,
    iter_days,
    read_window,
    time_bounds,
    write_day_groups,
)
from analyzer.core.errors import InputError
from analyzer.core.kube_objects import read_objects
from analyzer.core.outdir import check_output_folder, names_matching
from analyzer.core.snapshot_schema import (
    FIXED_COLUMNS,
    JSON_DEFAULTS,
    KUBE_OBJECTS_FILE,
    NODE_STATE_KINDS,
    NODE_STATE_TABLE,
    NODE_STATE_VERSION,
    REQUIRED_RESOURCE_COLUMNS,
    SCHEMA_VERSION,
    TABLES,
    check_table_schema,
    coerce_table,
    empty_table,
)
from analyzer.core.structured import load_json


@dataclass
class SnapshotMeta:
    """``meta.json``: where the data came from, what it covers, and how complete it is."""

    source: str  # URL without credentials, or "synthetic:<params>", or "trace:<name>"
    start: str  # RFC 3339 UTC
    end: str
    step_seconds: int
    collected_at: str
    analyzer_version: str
    schema_version: int = SCHEMA_VERSION
    query_profile: str = ""
    instance_convention: str = ""  # "node-name" | "host-ip" | "" (not applicable)
    warnings: list[str] = field(default_factory=list)
    coverage: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Snapshot:
    """A loaded snapshot: meta plus the four tables."""

    meta: SnapshotMeta
    nodes: pd.DataFrame
    pods: pd.DataFrame
    node_usage: pd.DataFrame
    pod_usage: pd.DataFrame
    # kind -> objects (PodDisruptionBudget, PriorityClass) from collect --kube-objects or the
    # generator; written to kube_objects.json when not empty. Older snapshots have none.
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # node_state_intervals (NODE_STATE_COLUMNS); None: the snapshot has no interval data (older
    # snapshots, generated ones without node events): replays use nodes.taints as before
    node_state: pd.DataFrame | None = None
    # set when both usage tables were left unread (empty) because the reader streams them one
    # day at a time from this snapshot directory (the what-if's replay: analyzer.replay.podrows)
    usage_dir: Path | None = None

    @property
    def start(self) -> pd.Timestamp:
        return pd.Timestamp(self.meta.start)

    @property
    def end(self) -> pd.Timestamp:
        return pd.Timestamp(self.meta.end)

    def table(self, name: str) -> pd.DataFrame:
        if name == NODE_STATE_TABLE:
            return self.node_state if self.node_state is not None else empty_table(name)
        if name not in TABLES:
            raise InputError(
                f"--table: {name!r} is not a snapshot table "
                f"(one of {', '.join((*TABLES, NODE_STATE_TABLE))})"
            )
        frame: pd.DataFrame = getattr(self, name)
        return frame


def validate(snapshot: Snapshot, where: str = "snapshot") -> None:
    """Raise ``InputError`` naming the table and column if the snapshot breaks the contract."""
    for table in TABLES:
        frame = getattr(snapshot, table)
        missing = [
            c for c in FIXED_COLUMNS[table] if c not in frame.columns and c not in JSON_DEFAULTS
        ]
        missing += [c for c in REQUIRED_RESOURCE_COLUMNS[table] if c not in frame.columns]
        if missing:
            raise InputError(f"{where}: table {table} lacks column(s) {', '.join(missing)}")
    if snapshot.pods["uid"].duplicated().any():
        dup = snapshot.pods.loc[snapshot.pods["uid"].duplicated(), "uid"].iloc[0]
        raise InputError(f"{where}: table pods has duplicate uid {dup!r}; uid is the key")
    if snapshot.nodes["node"].duplicated().any():
        dup = snapshot.nodes.loc[snapshot.nodes["node"].duplicated(), "node"].iloc[0]
        raise InputError(f"{where}: table nodes has duplicate node {dup!r}")


def make_snapshot(
    meta: SnapshotMeta,
    nodes: pd.DataFrame,
    pods: pd.DataFrame,
    node_usage: pd.DataFrame,
    pod_usage: pd.DataFrame,
    objects: dict[str, list[dict[str, Any]]] | None = None,
    node_state: pd.DataFrame | None = None,
) -> Snapshot:
    """Build a snapshot, coercing every table to the schema, and validate it.

    ``node_state``: the node_state_intervals table (None: no interval data, as older snapshots).
    """
    snapshot = Snapshot(
        meta=meta,
        nodes=coerce_table(nodes, "nodes"),
        pods=coerce_table(pods, "pods"),
        node_usage=coerce_table(node_usage, "node_usage"),
        pod_usage=coerce_table(pod_usage, "pod_usage"),
        objects=dict(objects or {}),
        node_state=None if node_state is None else coerce_table(node_state, NODE_STATE_TABLE),
    )
    if node_state is not None:
        snapshot.meta.extra["node_state_version"] = NODE_STATE_VERSION
    validate(snapshot)
    return snapshot


# What a snapshot folder holds: an existing folder with anything else is not replaced.
SNAPSHOT_FILES = (
    "meta.json",
    *(f"{table}.parquet" for table in TABLES),
    KUBE_OBJECTS_FILE,
    f"{NODE_STATE_TABLE}.parquet",
)


def check_snapshot_out(directory: Path, option: str = "--out") -> None:
    """Before any work: ``directory`` can be written and is new, empty or a snapshot (exit 2)."""
    check_output_folder(directory, names_matching(SNAPSHOT_FILES), option, what="a snapshot")


def write_snapshot(snapshot: Snapshot, directory: Path, option: str = "--out") -> Path:
    """Write ``snapshot`` to ``directory`` atomically (all files appear at once or none).

    An existing ``directory`` is replaced only if it holds nothing but snapshot files.
    """
    directory = Path(directory)
    check_snapshot_out(directory, option)
    with atomic_directory(directory, names_matching(SNAPSHOT_FILES), option) as tmp:
        write_snapshot_files(snapshot, tmp)
    return directory


def write_snapshot_files(snapshot: Snapshot, folder: Path, *, usage: bool = True) -> None:
    """Write ``snapshot``'s files into ``folder`` (the caller's temporary folder).

    ``usage=False`` leaves out the two usage tables: a streamed collect
    (``analyzer.collect.stream``) has written them day by day already, and everything else must
    be written exactly as here for its snapshot to equal an in-memory one.
    """
    tables = [t for t in TABLES if usage or not t.endswith("_usage")]
    # Arrow encodes and compresses without the GIL: the four tables are written side by
    # side (a week of pod usage is most of the time; node usage overlaps it).
    with ThreadPoolExecutor(max_workers=2) as pool:
        writes = [
            pool.submit(
                write_day_groups if table.endswith("_usage") else _write_plain,
                getattr(snapshot, table),
                folder / f"{table}.parquet",
            )
            for table in sorted(tables, key=lambda t: not t.endswith("_usage"))
        ]
        for done in writes:
            done.result()
    if snapshot.node_state is not None:
        snapshot.meta.extra["node_state_version"] = NODE_STATE_VERSION
        snapshot.node_state.to_parquet(folder / f"{NODE_STATE_TABLE}.parquet", index=False)
    snapshot.meta.extra["usage_layout"] = DAY_LAYOUT
    if snapshot.objects:
        (folder / KUBE_OBJECTS_FILE).write_text(
            json.dumps(snapshot.objects, indent=1, sort_keys=True) + "\n"
        )
    (folder / "meta.json").write_text(
        json.dumps(asdict(snapshot.meta), indent=2, sort_keys=True) + "\n"
    )


def _write_plain(frame: pd.DataFrame, path: Path) -> None:
    frame.to_parquet(path, index=False)


UsageWindow = tuple[pd.Timestamp | None, pd.Timestamp | None]


def read_snapshot(
    directory: Path, *, window: UsageWindow | None = None, pod_usage: bool = True
) -> Snapshot:
    """Load and validate a snapshot directory; a clear ``InputError`` if it is not one.

    Everything read is checked before it is used: ``meta.json`` must be an object whose fields
    have their types, every table must be readable parquet with the schema's columns in a
    compatible type. The error names the file and what is wrong (a corrupted snapshot must never
    read as an empty one, nor end in a traceback).

    Bounded memory (docs/snapshot.md "Day partitions"): ``window=(start, end)`` reads only the
    usage samples with ``start < timestamp <= end`` (row groups outside it are skipped unread);
    ``pod_usage=False`` reads no pod usage at all (the table is empty, for commands that never
    look at it: the file is still checked to be a parquet table of the schema). The rest (meta,
    nodes, pods, objects) is read whole either way.
    """
    directory = Path(directory)
    meta_path = directory / "meta.json"
    if not meta_path.is_file():
        raise InputError(
            f"{directory}: not a snapshot (no meta.json); create one with 'analyzer collect' or 'analyzer demo'"
        )
    meta = read_meta(meta_path)
    tables = {}
    for table in TABLES:
        path = directory / f"{table}.parquet"
        if not path.is_file():
            raise InputError(f"{directory}: snapshot lacks {path.name}; re-create the snapshot")
        if table.endswith("_usage") and (window is not None or not pod_usage):
            tables[table] = _read_usage_part(path, table, window, pod_usage)
        else:
            tables[table] = read_table(path, table)
    snapshot = Snapshot(meta=meta, **tables, objects=read_objects(directory / KUBE_OBJECTS_FILE))
    snapshot.node_state = read_node_state(directory, meta)
    validate(snapshot, where=str(directory))
    return snapshot


def _read_usage_part(
    path: Path, table: str, window: UsageWindow | None, pod_usage: bool
) -> pd.DataFrame:
    """The window of one usage table (or none of the pod usage), checked as ``read_table``."""
    try:
        # the schema first: a window's filter on a timestamp of the wrong type must end in the
        # schema's one line naming the column, not in Arrow's message about the filter
        empty = pq.read_schema(path).empty_table().to_pandas()
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None
    check_table_schema(empty, table, str(path))
    if table == "pod_usage" and not pod_usage:
        return _checked(empty, path, table)
    start, end = window or (None, None)
    try:
        frame = read_window(path, start, end)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None
    return _checked(frame, path, table)


def read_usage(
    directory: Path, table: str, start: pd.Timestamp | None, end: pd.Timestamp | None
) -> pd.DataFrame:
    """The ``table`` ("node_usage" | "pod_usage") rows of a snapshot with start < t <= end."""
    return _read_usage_part(Path(directory) / f"{table}.parquet", table, (start, end), True)


def usage_bounds(directory: Path, table: str) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """First and last timestamp of a snapshot's usage ``table`` (None: no rows), reading the
    timestamp column only; a damaged or foreign file is the one-line ``InputError``."""
    path = Path(directory) / f"{table}.parquet"
    try:
        empty = pq.read_schema(path).empty_table().to_pandas()
        check_table_schema(empty, table, str(path))
        return time_bounds(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None


def iter_usage(
    directory: Path, table: str, days: list[date]
) -> Iterator[tuple[date, pd.DataFrame]]:
    """``(day, that day's rows of table)`` for each UTC day in ``days``, one day in memory."""
    path = Path(directory) / f"{table}.parquet"
    try:
        for day, frame in iter_days(path, days):
            yield day, _checked(frame, path, table)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None


def read_node_state(directory: Path, meta: SnapshotMeta) -> pd.DataFrame | None:
    """``node_state.parquet`` (None when absent: a snapshot without interval data)."""
    path = directory / f"{NODE_STATE_TABLE}.parquet"
    if not path.is_file():
        return None
    version = meta.extra.get("node_state_version", NODE_STATE_VERSION)
    if version != NODE_STATE_VERSION:
        raise InputError(
            f"{path}: node_state version {version!r} but this analyzer reads version "
            f"{NODE_STATE_VERSION}; re-collect the snapshot or upgrade analyzer"
        )
    frame = read_table(path, NODE_STATE_TABLE)
    bad = ~frame["kind"].isin(NODE_STATE_KINDS)
    if bad.any():
        raise InputError(
            f"{path}: kind {str(frame.loc[bad, 'kind'].iloc[0])!r} is not one of "
            f"{', '.join(NODE_STATE_KINDS)}; re-create the snapshot"
        )
    return frame


def read_meta(meta_path: Path) -> SnapshotMeta:
    """Read and check ``meta.json``: an object, the schema version, every field of its type."""
    try:
        raw = load_json(meta_path)
    except InputError as exc:
        raise InputError(f"{exc}; re-create the snapshot") from None
    if not isinstance(raw, dict):
        raise InputError(
            f"{meta_path}: holds a JSON {type(raw).__name__}, not an object; re-create the snapshot"
        )
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION:
        raise InputError(
            f"{meta_path.parent}: snapshot schema {version} but this analyzer reads schema {SCHEMA_VERSION}; "
            "re-collect it with this version"
        )
    for name, kinds in _META_TYPES.items():
        if name not in raw:
            if name in _META_REQUIRED:
                raise InputError(f"{meta_path}: field {name!r} is missing; re-create the snapshot")
            continue
        value = raw[name]
        if not isinstance(value, kinds) or isinstance(value, bool):
            expected = " or ".join(k.__name__ for k in kinds)
            raise InputError(
                f"{meta_path}: field {name!r} is a {type(value).__name__}, expected {expected}; "
                "re-create the snapshot"
            )
    for name in ("start", "end"):
        try:
            pd.Timestamp(raw[name])
        except (ValueError, TypeError):
            raise InputError(
                f"{meta_path}: field {name!r} is not an RFC 3339 time; re-create the snapshot"
            ) from None
    if raw["step_seconds"] <= 0:
        raise InputError(f"{meta_path}: field 'step_seconds' must be > 0; re-create the snapshot")
    if not all(isinstance(w, str) for w in raw.get("warnings", [])):
        raise InputError(f"{meta_path}: field 'warnings' must be a list of strings")
    known = set(SnapshotMeta.__dataclass_fields__)
    return SnapshotMeta(**{k: v for k, v in raw.items() if k in known})


# meta.json's fields and the JSON types they may have (bool is never an int here).
_META_TYPES: dict[str, tuple[type, ...]] = {
    "source": (str,),
    "start": (str,),
    "end": (str,),
    "step_seconds": (int,),
    "collected_at": (str,),
    "analyzer_version": (str,),
    "schema_version": (int,),
    "query_profile": (str,),
    "instance_convention": (str,),
    "warnings": (list,),
    "coverage": (dict,),
    "extra": (dict,),
}
_META_REQUIRED = ("source", "start", "end", "step_seconds", "collected_at", "analyzer_version")


def read_table(path: Path, table: str) -> pd.DataFrame:
    """Read one parquet table, check its columns and types, and coerce it to the schema."""
    try:
        # usage tables (tens of millions of rows) through daygroups' one-copy read
        frame = read_window(path) if table.endswith("_usage") else pd.read_parquet(path)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise _unreadable(path, exc) from None
    return _checked(frame, path, table)


def _unreadable(path: Path, exc: BaseException) -> InputError:
    first = (str(exc).splitlines() or [type(exc).__name__])[0]
    return InputError(
        f"{path}: not a readable parquet table ({first}); the file is damaged or truncated, "
        "re-create the snapshot"
    )


def _checked(frame: pd.DataFrame, path: Path, table: str) -> pd.DataFrame:
    """``frame`` read from ``path``: its columns and types checked, coerced to the schema."""
    check_table_schema(frame, table, str(path))
    try:
        return coerce_table(frame, table)
    except (ValueError, TypeError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise InputError(f"{path}: a column has values of the wrong type ({first})") from None
