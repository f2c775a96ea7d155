"""The snapshot's schema (``analyzer.core.snapshot``; DESIGN.md "Snapshot contract",
``docs/snapshot.md`` for users): the tables' columns and dtypes, the resource-quantity columns
``<kind>:<resource>``, a frame coerced to a table's shape (``coerce_table``), an empty table of it
(``empty_table``) and the check of a table read from a file (``check_table_schema``). This
module is the one place the schema is defined.

Units (DESIGN.md): cpu in millicores, memory and storage in bytes, extended resources in integer
units; usage (``cpu``, ``memory``) is float64; times are timezone-aware UTC.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from analyzer.core.errors import InputError

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
    # JSON list [[node, start, end], ...] (unix seconds): the nodes a preemptor was nominated to
    # and when, its room held there for the pods of lower or equal priority (the generator);
    # "[]" otherwise or unknown (collected data: ``analyzer collect`` reads no such field)
    "nominated": "string",
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
    "nominated": "[]",
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
FIXED_COLUMNS = {
    "nodes": NODE_COLUMNS,
    "pods": POD_COLUMNS,
    "node_usage": NODE_USAGE_COLUMNS,
    "pod_usage": POD_USAGE_COLUMNS,
    NODE_STATE_TABLE: NODE_STATE_COLUMNS,
}
RESOURCE_KINDS = {
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


def _coerce(frame: pd.DataFrame, table: str) -> pd.DataFrame:
    """Return ``frame`` with the schema's columns in order and dtypes; extra resource columns kept."""
    fixed = FIXED_COLUMNS[table]
    if not RESOURCE_KINDS[table] and all(
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
    for kind in RESOURCE_KINDS[table]:
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
        {name: pd.Series(dtype=dtype) for name, dtype in FIXED_COLUMNS[table].items()}
    )
    for kind in RESOURCE_KINDS[table]:
        names = ("cpu", "memory") if kind == NONZERO_REQUESTS else tuple(resources)
        for resource in names:
            frame[resource_column(kind, resource)] = pd.Series(dtype="int64")
    return frame


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
    fixed = FIXED_COLUMNS[table]
    missing = [c for c in fixed if c not in frame.columns and c not in JSON_DEFAULTS]
    missing += [c for c in REQUIRED_RESOURCE_COLUMNS[table] if c not in frame.columns]
    if missing:
        raise InputError(
            f"{where}: table {table} lacks column(s) {', '.join(missing)}; "
            "not a snapshot table of this schema, re-create the snapshot"
        )
    expected = dict(fixed)
    for kind in RESOURCE_KINDS[table]:
        expected.update({resource_column(kind, r): "int64" for r in resources_in(frame, kind)})
    wrong = [
        f"{name} is {frame[name].dtype}, expected {dtype}"
        for name, dtype in expected.items()
        if name in frame.columns and not _type_fits(frame[name], dtype)
    ]
    if wrong:
        raise InputError(f"{where}: table {table}: column {wrong[0]}; re-create the snapshot")
