"""The snapshot: a directory holding what a cluster did over a time range.

Everything after ``collect`` works on a snapshot (DESIGN.md "Snapshot contract"). This module is
the one place the schema is defined; ``docs/snapshot.md`` describes it for users.

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
from collections.abc import Iterable, Iterator
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
from analyzer.core.frames import utc
from analyzer.core.outdir import check_output_folder, names_matching
from analyzer.core.structured import load_json

SCHEMA_VERSION = 1

ALLOCATABLE = "allocatable"
CAPACITY = "capacity"
REQUESTS = "requests"
LIMITS = "limits"
NONZERO_REQUESTS = "nonzero_requests"  # kube-scheduler NonZeroRequested: cpu and memory only

NODE_COLUMNS: dict[str, str] = {
    "node": "string",
    "pool": "string",
    "host_ip": "string",
    "labels": "string",  # JSON object
    "annotations": "string",  # JSON object
    "first_seen": "datetime64[ns, UTC]",
    "last_seen": "datetime64[ns, UTC]",
    "taints": "string",  # JSON list of {key, value, effect}; "[]" when absent
    "images": "string",  # JSON list of {names, sizeBytes} (Node status.images); "[]" when unknown
    # kube_node_info{kubelet_version} ("v1.33.4"), the highest seen in the range; "" = unknown
    "kubelet_version": "string",
}
POD_COLUMNS: dict[str, str] = {
    "uid": "string",
    "namespace": "string",
    "name": "string",
    "node": "string",  # <NA> = never scheduled
    "owner_kind": "string",  # controller ownerRef kind ("" if none); "Node" = static/mirror pod
    "owner_name": "string",
    "workload_kind": "string",  # ReplicaSet resolved to Deployment, Job to CronJob where known
    "workload_name": "string",
    "priority_class": "string",
    "priority": "Int64",
    "qos_class": "string",  # Guaranteed | Burstable | BestEffort
    "phase": "string",  # last known phase
    "labels": "string",  # JSON object
    "created": "datetime64[ns, UTC]",
    "scheduled": "datetime64[ns, UTC]",
    "started": "datetime64[ns, UTC]",
    "finished": "datetime64[ns, UTC]",  # completion or deletion; NaT = still running at the end
    "first_seen": "datetime64[ns, UTC]",
    "last_seen": "datetime64[ns, UTC]",
    "tolerations": "string",  # JSON list of {key, operator, value, effect}; "[]" when absent
    "node_selector": "string",  # JSON object; "{}" when absent
    # From Kubernetes objects (collect --kube-objects) or the generator; "{}"/"[]" when unknown.
    "affinity": "string",  # JSON object: the pod spec's affinity (node/pod affinity, anti-affinity)
    "topology_spread": "string",  # JSON list: topologySpreadConstraints
    "field_sources": "string",  # JSON object: field -> metrics | objects | inferred (FIELD_SOURCES)
    # JSON object {"containers": [image, ...], "initContainers": [...]}; "{}" when unknown
    "container_images": "string",
    # JSON list [[protocol, hostIP, port], ...]: host ports (NodePorts); "[]" when none or unknown
    "host_ports": "string",
    # why the pod ended, when a source knows: "preempted" (deleted by the scheduler's
    # DefaultPreemption to make room; the generator), "" otherwise or unknown (collected data:
    # no kube-state-metrics series says so, docs/snapshot.md)
    "end_reason": "string",
}
# Columns added later (scheduling constraints, end_reason): old snapshots lack them, so they
# default (never NA).
JSON_DEFAULTS: dict[str, str] = {
    "taints": "[]",
    "tolerations": "[]",
    "node_selector": "{}",
    "affinity": "{}",
    "topology_spread": "[]",
    "field_sources": "{}",
    "images": "[]",
    "kubelet_version": "",
    "container_images": "{}",
    "host_ports": "[]",
    "end_reason": "",
}
END_PREEMPTED = "preempted"  # pods.end_reason of a preemption victim
# Where a pod's field came from (pods.field_sources values; meta.json extra.field_sources counts):
# "metrics" = observed in Prometheus (kube-state-metrics), "objects" = read from the Kubernetes
# objects given to collect --kube-objects, "inferred" = derived by a documented rule (naming
# conventions, a globalDefault PriorityClass), "none" = no source said anything (the default).
FIELD_SOURCES = ("metrics", "objects", "inferred", "none")
# Kubernetes objects a snapshot keeps besides its tables (kube_objects.json; optional file).
KUBE_OBJECTS_FILE = "kube_objects.json"
USAGE_VALUE_COLUMNS: dict[str, str] = {
    "timestamp": "datetime64[ns, UTC]",
    "cpu": "float64",
    "memory": "float64",
}
NODE_USAGE_COLUMNS: dict[str, str] = {"node": "string", **USAGE_VALUE_COLUMNS}
# uid is categorical: a week of pod usage is tens of millions of rows, and a 36-character uid
# string per row would be most of the table's memory (codes are 4 bytes).
POD_USAGE_COLUMNS: dict[str, str] = {"uid": "category", **USAGE_VALUE_COLUMNS}

TABLES = ("nodes", "pods", "node_usage", "pod_usage")
# node_state_intervals (file node_state.parquet): when a node carried a taint, was cordoned or not
# ready, one row per interval [start, end). Optional: a snapshot without the file has no interval
# data and every reader behaves as before it existed. NODE_STATE_VERSION is written to
# meta.json ``extra.node_state_version`` with the file; a later version is refused on read.
NODE_STATE_TABLE = "node_state"
NODE_STATE_VERSION = 1
NODE_STATE_KINDS = ("taint", "cordon", "not-ready")
NODE_STATE_COLUMNS: dict[str, str] = {
    "node": "string",
    "kind": "string",  # one of NODE_STATE_KINDS
    "key": "string",  # taint key ("" for cordon / not-ready)
    "value": "string",
    "effect": "string",  # NoSchedule | PreferNoSchedule | NoExecute ("" for cordon / not-ready)
    "start": "datetime64[ns, UTC]",  # first sample the state held
    "end": "datetime64[ns, UTC]",  # exclusive: the first sample it no longer held (or data end)
}
OPEN_END = pd.Timestamp("2200-01-01T00:00:00Z")  # end of a pod still running when the data ends
_FIXED_COLUMNS = {
    "nodes": NODE_COLUMNS,
    "pods": POD_COLUMNS,
    "node_usage": NODE_USAGE_COLUMNS,
    "pod_usage": POD_USAGE_COLUMNS,
    NODE_STATE_TABLE: NODE_STATE_COLUMNS,
}
_RESOURCE_KINDS = {
    "nodes": (ALLOCATABLE, CAPACITY),
    "pods": (REQUESTS, LIMITS, NONZERO_REQUESTS),
    "node_usage": (),
    "pod_usage": (),
    NODE_STATE_TABLE: (),
}
REQUIRED_RESOURCE_COLUMNS = {
    "nodes": (f"{ALLOCATABLE}:cpu", f"{ALLOCATABLE}:memory"),
    "pods": (
        f"{REQUESTS}:cpu",
        f"{REQUESTS}:memory",
        f"{NONZERO_REQUESTS}:cpu",
        f"{NONZERO_REQUESTS}:memory",
    ),
    "node_usage": (),
    "pod_usage": (),
    NODE_STATE_TABLE: (),
}


def resource_column(kind: str, resource: str) -> str:
    """Column name for a resource quantity: ``resource_column("requests", "cpu")`` → ``requests:cpu``."""
    return f"{kind}:{resource}"


def resources_in(frame: pd.DataFrame, kind: str) -> list[str]:
    """Resource names that have a ``<kind>:<resource>`` column in ``frame``, in column order."""
    prefix = f"{kind}:"
    return [col[len(prefix) :] for col in frame.columns if col.startswith(prefix)]


def resource_map(row: pd.Series, kind: str) -> dict[str, int]:
    """``{resource: int}`` of one row's ``<kind>:*`` columns (zeros kept)."""
    prefix = f"{kind}:"
    return {
        str(col)[len(prefix) :]: int(value)
        for col, value in row.items()
        if str(col).startswith(prefix)
    }


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


def _coerce(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    """Return ``frame`` with the schema's columns in order and dtypes; extra resource columns kept."""
    fixed = _FIXED_COLUMNS[table]
    if not _RESOURCE_KINDS[table] and all(
        name in frame.columns and str(frame[name].dtype) == dtype for name, dtype in fixed.items()
    ):
        # Usage tables already in shape (the collector's): select, do not copy tens of
        # millions of rows column by column.
        return frame[list(fixed)]
    out = pd.DataFrame(index=range(len(frame)))
    for name, dtype in fixed.items():
        if name in frame.columns:
            column = frame[name]
            if dtype.startswith("datetime64"):
                # .array, not .to_numpy(): tz-aware to_numpy() builds an object array of
                # Timestamps, which takes seconds per million rows.
                out[name] = pd.to_datetime(column, utc=True).astype(dtype).array
            else:
                # .array keeps pandas' (Arrow-backed) string storage; .to_numpy() would make one
                # Python str object per row (~100 bytes each: 1.3 GB for 12.7 M pod-usage rows).
                out[name] = column.astype(dtype).array
            if name in JSON_DEFAULTS:
                out[name] = out[name].fillna(JSON_DEFAULTS[name])
        elif name in JSON_DEFAULTS:
            # built like a present column (astype + .array) so both paths get the same dtype
            out[name] = pd.Series(JSON_DEFAULTS[name], index=out.index).astype(dtype).array
        else:
            out[name] = pd.Series(
                pd.NA if dtype != "float64" else float("nan"), index=out.index
            ).astype(dtype)
    for kind in _RESOURCE_KINDS[table]:
        for resource in resources_in(frame, kind):
            col = resource_column(kind, resource)
            out[col] = frame[col].fillna(0).astype("int64").to_numpy()
    return out


def coerce_table(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    """``frame`` in the columns and dtypes of ``table`` as ``make_snapshot`` stores it (a usage
    table already in shape is selected, not copied)."""
    return _coerce(frame, table)


def empty_table(table: str, resources: Iterable[str] = ("cpu", "memory")) -> pd.DataFrame:
    """An empty table with the schema's columns (and resource columns for ``resources``)."""
    frame = pd.DataFrame(
        {name: pd.Series(dtype=dtype) for name, dtype in _FIXED_COLUMNS[table].items()}
    )
    for kind in _RESOURCE_KINDS[table]:
        names = ("cpu", "memory") if kind == NONZERO_REQUESTS else tuple(resources)
        for resource in names:
            frame[resource_column(kind, resource)] = pd.Series(dtype="int64")
    return frame


def validate(snapshot: Snapshot, where: str = "snapshot") -> None:
    """Raise ``InputError`` naming the table and column if the snapshot breaks the contract."""
    for table in TABLES:
        frame = getattr(snapshot, table)
        missing = [
            c for c in _FIXED_COLUMNS[table] if c not in frame.columns and c not in JSON_DEFAULTS
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
        nodes=_coerce(nodes, "nodes"),
        pods=_coerce(pods, "pods"),
        node_usage=_coerce(node_usage, "node_usage"),
        pod_usage=_coerce(pod_usage, "pod_usage"),
        objects=dict(objects or {}),
        node_state=None if node_state is None else _coerce(node_state, NODE_STATE_TABLE),
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


_PDB_STATUS = ("currentHealthy", "desiredHealthy", "disruptionsAllowed", "expectedPods")


# kinds kept for PodTopologySpread's system default selector (helper.DefaultSelector): name,
# namespace and selector only (Service / ReplicationController: the map; ReplicaSet / StatefulSet:
# the LabelSelector), sorted by (namespace, name) so the file does not depend on input order
SELECTOR_KINDS = ("Service", "ReplicationController", "ReplicaSet", "StatefulSet")


def kept_objects(objects: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The ``kube_objects.json`` form of the objects scheduling reads (others are left out):
    kind -> ``[{namespace, name, spec, status}]`` for PDBs (status only the counts),
    ``[{name, value, globalDefault, preemptionPolicy}]`` for PriorityClasses,
    ``[{namespace, name, selector}]`` for ``SELECTOR_KINDS`` (a Service without a selector
    selects no pod and is left out) and ``[{name, labels}]`` for Namespaces."""
    out: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        meta = obj.get("metadata") or {}
        kind = obj.get("kind")
        if kind == "PodDisruptionBudget":
            status = obj.get("status") or {}
            out.setdefault("PodDisruptionBudget", []).append(
                {
                    "namespace": str(meta.get("namespace", "")),
                    "name": str(meta.get("name", "")),
                    "spec": obj.get("spec") or {},
                    "status": {k: v for k, v in status.items() if k in _PDB_STATUS},
                }
            )
        elif kind == "PriorityClass":
            out.setdefault("PriorityClass", []).append(
                {
                    "name": str(meta.get("name", "")),
                    "value": obj.get("value", 0),
                    "globalDefault": bool(obj.get("globalDefault", False)),
                    "preemptionPolicy": str(obj.get("preemptionPolicy") or "PreemptLowerPriority"),
                }
            )
        elif kind in SELECTOR_KINDS:
            selector = (obj.get("spec") or {}).get("selector")
            if selector is None and kind == "Service":
                continue
            out.setdefault(str(kind), []).append(
                {
                    "namespace": str(meta.get("namespace") or "default"),
                    "name": str(meta.get("name", "")),
                    "selector": selector,
                }
            )
        elif kind == "Namespace":
            out.setdefault("Namespace", []).append(
                {"name": str(meta.get("name", "")), "labels": dict(meta.get("labels") or {})}
            )
    for kind in (*SELECTOR_KINDS, "Namespace"):
        if kind in out:
            out[kind].sort(key=lambda o: (o.get("namespace", ""), o["name"]))
    return out


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


def read_objects(path: Path) -> dict[str, list[dict[str, Any]]]:
    """``kube_objects.json`` (kind -> list of objects); absent = none (older snapshots)."""
    if not path.is_file():
        return {}
    try:  # core.structured: nesting bounded, one line naming the file
        raw = load_json(path)
    except InputError as exc:
        raise InputError(f"{exc}; re-create the snapshot") from None
    if not isinstance(raw, dict) or not all(
        isinstance(v, list) and all(isinstance(o, dict) for o in v) for v in raw.values()
    ):
        raise InputError(
            f"{path}: expected an object of kind -> list of objects; re-create the snapshot"
        )
    return {str(k): list(v) for k, v in raw.items()}


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
        return _coerce(frame, table)
    except (ValueError, TypeError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise InputError(f"{path}: a column has values of the wrong type ({first})") from None


def _type_fits(series: pd.Series, dtype: str) -> bool:
    """Whether a column read from parquet can stand for the schema's ``dtype``."""
    kind = series.dtype
    if dtype.startswith("datetime64"):
        return bool(pd.api.types.is_datetime64_any_dtype(kind))
    if dtype in ("string", "category"):
        if isinstance(kind, pd.CategoricalDtype):
            return bool(pd.api.types.is_string_dtype(kind.categories.dtype))
        return bool(pd.api.types.is_string_dtype(kind)) or bool(series.isna().all())
    # numeric: float64, Int64, int64 resource columns
    return bool(pd.api.types.is_numeric_dtype(kind)) and not pd.api.types.is_bool_dtype(kind)


def check_table_schema(frame: pd.DataFrame, table: str, where: str) -> None:
    """Raise ``InputError`` if ``frame`` lacks a schema column or holds one of a wrong type."""
    fixed = _FIXED_COLUMNS[table]
    missing = [c for c in fixed if c not in frame.columns and c not in JSON_DEFAULTS]
    missing += [c for c in REQUIRED_RESOURCE_COLUMNS[table] if c not in frame.columns]
    if missing:
        raise InputError(
            f"{where}: table {table} lacks column(s) {', '.join(missing)}; "
            "not a snapshot table of this schema, re-create the snapshot"
        )
    expected = dict(fixed)
    for kind in _RESOURCE_KINDS[table]:
        expected.update({resource_column(kind, r): "int64" for r in resources_in(frame, kind)})
    wrong = [
        f"{name} is {frame[name].dtype}, expected {dtype}"
        for name, dtype in expected.items()
        if name in frame.columns and not _type_fits(frame[name], dtype)
    ]
    if wrong:
        raise InputError(f"{where}: table {table}: column {wrong[0]}; re-create the snapshot")


def pinned_pods(pods: pd.DataFrame) -> pd.Series:
    """Pods that stay on their node in every strategy: DaemonSet and static/mirror pods."""
    kind = pods["owner_kind"].fillna("")
    return (kind == "DaemonSet") | (kind == "Node")


def pod_intervals(snapshot: Snapshot) -> pd.DataFrame:
    """When each pod held its node: columns ``uid``, ``node``, ``start``, ``end`` (UTC, ``[start, end)``).

    start = scheduled, else started, first_seen, created; end = finished, else last_seen when the
    pod vanished before the snapshot's end; a pod still there at the end runs on (``OPEN_END``).
    Pods never bound to a node are left out.
    """
    pods = snapshot.pods
    bound = pods["node"].notna().to_numpy()
    col = {name: utc(pods[name]) for name in ("scheduled", "started", "first_seen", "created")}
    start = col["scheduled"].fillna(col["started"]).fillna(col["first_seen"])
    start = start.fillna(col["created"]).fillna(snapshot.start)
    last_seen = utc(pods["last_seen"])
    vanished = last_seen.where(last_seen < snapshot.end)
    end = utc(pods["finished"]).fillna(vanished).fillna(OPEN_END)
    frame = pd.DataFrame(
        {
            "uid": pods["uid"].to_numpy(),
            "node": pods["node"].to_numpy(),
            # the arrays themselves: ``to_numpy()`` of a tz-aware column is an object array of
            # Timestamps, built one by one (a tenth of a history day's rollups)
            "start": start.array,
            "end": end.array,
        }
    )
    return frame.loc[bound].reset_index(drop=True)
