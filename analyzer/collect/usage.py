"""Build the ``nodes``, ``node_usage`` and ``pod_usage`` tables from the profile's results.

node-exporter series are mapped to Kubernetes nodes by, in order: a ``node`` label on the series;
``instance`` equal to a node name (kube-prometheus); the host part of ``instance`` equal to a
node's ``kube_node_info{internal_ip}`` (kube-prometheus-stack's ``hostIP:9100``); the
``node_uname_info`` kernel hostname. Pod usage is built in ``analyzer.collect.pod_usage``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from analyzer.collect.common import exported_names, label, resource_names, to_units, window_values
from analyzer.core.columns import utc_column
from analyzer.core.quantity import sanitize_resource_name
from analyzer.core.snapshot_schema import ALLOCATABLE, CAPACITY, resource_column
from analyzer.prom.client import Series
from analyzer.prom.fetch import QueryResult
from analyzer.prom.sample_table import FloatArray, Int32Array, IntArray, SampleTable
from analyzer.prom.time_grid import TimeGrid
from analyzer.scheduling.cluster_version import newer_version

# Node labels that name a node pool, most specific first (matched after KSM sanitising).
MEM_TOTAL, MEM_AVAILABLE = "node_memory_total", "node_memory_available"
NODE_USAGE_QUERIES = ("node_cpu_busy", MEM_TOTAL, MEM_AVAILABLE)  # what build_node_usage reads
POOL_LABELS = (
    "pool",
    "node-pool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
)
KNOWN_ANNOTATIONS = ("scheduling.koordinator.sh/usage-thresholds",)
KNOWN_LABELS = (
    *POOL_LABELS,
    "kubernetes.io/hostname",
    "node.kubernetes.io/instance-type",
    "topology.kubernetes.io/zone",
)


def _unsanitise(prefix: str, labels: dict[str, str], known: Iterable[str]) -> dict[str, str]:
    """``label_<x>``/``annotation_<x>`` labels back to their keys where a known key matches."""
    table = {sanitize_resource_name(k): k for k in known}
    out = {}
    for key, value in labels.items():
        if key.startswith(prefix) and value != "":
            raw = key[len(prefix) :]
            out[table.get(raw, raw)] = value
    return out


def build_nodes(
    results: dict[str, QueryResult], extra_resources: Iterable[str] = ()
) -> pd.DataFrame:
    """The ``nodes`` table: one row per node seen in kube_node_info or allocatable."""
    names = resource_names(extra_resources)
    rows: dict[str, dict[str, object]] = {}

    def row(node: str) -> dict[str, object]:
        return rows.setdefault(node, {"node": node, "labels": {}, "annotations": {}})

    infos = window_values(results.get("node_info"))
    exported = exported_names(infos)
    for item in infos:
        node = label(item.labels, "node", exported)
        if node:
            values = row(node)
            values["host_ip"] = item.labels.get("internal_ip") or values.get("host_ip")
            values["kubelet_version"] = newer_version(
                str(values.get("kubelet_version") or ""), item.labels.get("kubelet_version", "")
            )
    for query, kind in (("node_allocatable", ALLOCATABLE), ("node_capacity", CAPACITY)):
        for item in window_values(results.get(query)):
            node = label(item.labels, "node", exported)
            if node and np.isfinite(item.value):
                sanitised = item.labels.get("resource", "")
                resource = names.get(sanitised, sanitised)
                row(node)[resource_column(kind, resource)] = to_units(resource, item.value)
    for query, column in (("node_first_seen", "first_seen"), ("node_last_seen", "last_seen")):
        for item in window_values(results.get(query)):
            node = label(item.labels, "node", exported)
            if node in rows:
                rows[node][column] = item.value
    for query, prefix, known in (
        ("node_labels", "label_", KNOWN_LABELS),
        ("node_annotations", "annotation_", KNOWN_ANNOTATIONS),
    ):
        for item in window_values(results.get(query)):
            node = label(item.labels, "node", exported)
            if node in rows:
                target = rows[node]["labels" if prefix == "label_" else "annotations"]
                assert isinstance(target, dict)
                target.update(_unsanitise(prefix, item.labels, known))
    for values in rows.values():
        node_labels = values["labels"]
        assert isinstance(node_labels, dict)
        values["pool"] = next((node_labels[k] for k in POOL_LABELS if k in node_labels), None)
        values["labels"] = json.dumps(node_labels, sort_keys=True)
        values["annotations"] = json.dumps(values["annotations"], sort_keys=True)
    frame = pd.DataFrame(list(rows.values()))
    if frame.empty:
        return frame
    for column in ("first_seen", "last_seen"):
        if column in frame.columns:
            frame[column] = pd.to_datetime(frame[column].astype("float64"), unit="s", utc=True)
    for kind in (ALLOCATABLE, CAPACITY):
        for resource in ("cpu", "memory"):
            if resource_column(kind, resource) not in frame.columns:
                frame[resource_column(kind, resource)] = 0
    return frame.sort_values("node", kind="stable").reset_index(drop=True)


@dataclass
class NodeMapper:
    """Maps node-exporter series labels to node names and counts which convention matched."""

    nodes: set[str]
    ip_to_node: dict[str, str]
    instance_to_hostname: dict[str, str]
    used: Counter[str] = field(default_factory=Counter)
    unmapped: set[str] = field(default_factory=set)

    @classmethod
    def from_results(cls, nodes: pd.DataFrame, results: dict[str, QueryResult]) -> NodeMapper:
        ips = {}
        if "host_ip" in nodes.columns:
            ips = {
                str(ip): str(n)
                for n, ip in zip(nodes["node"], nodes["host_ip"], strict=True)
                if isinstance(ip, str) and ip
            }
        uname = {
            item.labels.get("instance", ""): item.labels.get("nodename", "")
            for item in window_values(results.get("node_uname_info"))
        }
        return cls(set(nodes["node"]) if not nodes.empty else set(), ips, uname)

    def node_of(self, labels: dict[str, str]) -> str | None:
        """The node for one series, or None (recorded in ``unmapped``)."""
        node = labels.get("node", "")
        instance = labels.get("instance", "")
        host = _host(instance)
        if node in self.nodes:
            self.used["node-label"] += 1
            return node
        if instance in self.nodes or host in self.nodes:
            self.used["node-name"] += 1
            return instance if instance in self.nodes else host
        if host in self.ip_to_node:
            self.used["host-ip"] += 1
            return self.ip_to_node[host]
        hostname = self.instance_to_hostname.get(instance, "")
        if hostname in self.nodes:
            self.used["uname"] += 1
            return hostname
        self.unmapped.add(instance or str(labels))
        return None

    @property
    def convention(self) -> str:
        """The dominant convention: ``node-name``, ``host-ip``, ``node-label``, ``uname`` or ``""``."""
        return self.used.most_common(1)[0][0] if self.used else ""


def _host(instance: str) -> str:
    """``10.0.0.1:9100`` → ``10.0.0.1``; ``[::1]:9100`` → ``::1``; a bare name stays."""
    if instance.startswith("["):
        return instance[1 : instance.find("]")] if "]" in instance else instance
    if instance.count(":") == 1:
        return instance.split(":", 1)[0]
    return instance


def _series_of(result: QueryResult | None, grid: TimeGrid) -> list[Series]:
    """A query's series, also for ``samples`` queries (whose rows live in a table)."""
    if result is None:
        return []
    if result.table is not None and result.spec.name in result.table.names:
        times = np.arange(grid.start, grid.end + 1, grid.step, dtype=np.float64)
        return result.table.series(result.spec.name, times)
    return result.series


def node_memory_series(results: dict[str, QueryResult], grid: TimeGrid) -> list[Series]:
    """MemTotal − MemAvailable per label set, at the steps where both have a value (PromQL's
    ``max by (instance, node) (total) - max by (instance, node) (available)``)."""
    table = _memory_table(results)
    if table is not None:
        return _memory_from_table(table, grid)
    total, available = results.get(MEM_TOTAL), results.get(MEM_AVAILABLE)
    by_labels = {tuple(sorted(s.labels.items())): s for s in _series_of(available, grid)}
    used = []
    for series in _series_of(total, grid):
        other = by_labels.get(tuple(sorted(series.labels.items())))
        if other is None:
            continue
        common, at_total, at_other = np.intersect1d(
            series.timestamps, other.timestamps, assume_unique=True, return_indices=True
        )
        used.append(Series(series.labels, common, series.values[at_total] - other.values[at_other]))
    return used


def _memory_from_table(table: SampleTable, grid: TimeGrid) -> list[Series]:
    """The subtraction on the joined table's rows, part by part (a row holds both gauges at one
    step, NaN where one has no value), without materialising the table's columns."""
    steps: dict[int, list[Int32Array]] = {}
    values: dict[int, list[FloatArray]] = {}
    for group, step, used in _memory_rows(table):
        bounds = np.flatnonzero(np.diff(group)) + 1  # rows are sorted by group, then step
        for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(group)], strict=True):
            if hi > lo:
                steps.setdefault(int(group[lo]), []).append(step[lo:hi])
                values.setdefault(int(group[lo]), []).append(used[lo:hi])
    return [
        Series(
            table.groups[g],
            grid.start + np.concatenate(steps[g]).astype(np.float64) * grid.step,
            np.concatenate(values[g]),
        )
        for g in sorted(steps)
    ]


def build_node_usage(
    results: dict[str, QueryResult], mapper: NodeMapper, grid: TimeGrid
) -> pd.DataFrame:
    """``node_usage``: busy millicores and used memory bytes per node on the step grid.

    Node series are dense on the grid, so each measure fills a nodes × steps matrix (several series
    of one node, e.g. HA copies, keep the larger value); rows are the cells where either is set,
    node by node, then by time.
    """
    nodes = sorted(mapper.nodes)
    index = {n: i for i, n in enumerate(nodes)}
    cpu_series = [
        (index[node], series)
        for series in _series_of(results.get(NODE_USAGE_QUERIES[0]), grid)
        if (node := mapper.node_of(series.labels)) is not None
    ]
    table = _memory_table(results)
    memory_rows: list[tuple[IntArray, Int32Array, FloatArray]] = []
    memory_series: list[tuple[int, Series]] = []
    if table is not None:
        # straight from the joined table's parts: no per-node series in between
        of_group = [mapper.node_of(labels) for labels in table.groups]
        rows = np.array([-1 if n is None else index[n] for n in of_group], dtype=np.int64)
        for group, step, used in _memory_rows(table):
            row = rows[group] if len(rows) else np.zeros(0, dtype=np.int64)
            ok = (row >= 0) & np.isfinite(used)
            memory_rows.append((row[ok], step[ok], used[ok]))
    else:
        memory_series = [
            (index[node], series)
            for series in node_memory_series(results, grid)
            if (node := mapper.node_of(series.labels)) is not None
        ]
    # The matrices span the steps that have data, not the whole range: a day of data in a
    # range of years costs a day of cells.
    first, points = _data_steps(
        [s for _, s in cpu_series] + [s for _, s in memory_series],
        [step for _, step, _ in memory_rows],
        grid,
    )
    cpu = np.full((len(nodes), points), np.nan)
    for row_index, series in cpu_series:
        _put(cpu[row_index], series, 1000.0, grid, first)
    del cpu_series
    memory = np.full((len(nodes), points), np.nan)
    for row, step, used in memory_rows:
        np.fmax.at(memory, (row, step - first), used)  # at: repeated cells keep the max
    del memory_rows
    for row_index, series in memory_series:
        _put(memory[row_index], series, 1.0, grid, first)
    del memory_series
    have = ~np.isnan(cpu.ravel())
    have |= ~np.isnan(memory.ravel())
    if have.all():  # every node at every step (the usual case): the matrices are the columns
        cpu_values, memory_values = cpu.ravel(), memory.ravel()
        del have
        node_of = np.repeat(np.arange(len(nodes), dtype=np.int32), points)
        ns = np.tile(np.arange(points, dtype=np.int64), len(nodes))
    else:
        cells = np.flatnonzero(have)
        del have
        cpu_values, memory_values = cpu.ravel()[cells], memory.ravel()[cells]
        node_of = (cells // points).astype(np.int32)
        ns = np.remainder(cells, points)
        del cells
    del cpu, memory
    ns *= grid.step * 1_000_000_000
    ns += (grid.start + first * grid.step) * 1_000_000_000
    # Arrow's take builds the string column in C; pd.array over a Python object array of names
    # takes ~6 × longer.
    node_column = pd.array(pa.array(nodes, pa.string()).take(node_of), dtype="string")
    del node_of
    return pd.DataFrame(
        {
            "node": node_column,
            "timestamp": utc_column(ns),
            "cpu": cpu_values,
            "memory": memory_values,
        },
        copy=False,
    )


def _data_steps(series: list[Series], steps: list[Int32Array], grid: TimeGrid) -> tuple[int, int]:
    """(first grid step, number of steps) spanning every sample of ``series`` and ``steps``
    inside the grid; (0, 0) when there is none."""
    lows: list[int] = []
    highs: list[int] = []
    for one in series:
        ts = one.timestamps[np.isfinite(one.values)]
        if len(ts):
            lows.append(int(np.rint((ts.min() - grid.start) / grid.step)))
            highs.append(int(np.rint((ts.max() - grid.start) / grid.step)))
    for step in steps:
        if len(step):
            lows.append(int(step.min()))
            highs.append(int(step.max()))
    first = max(0, min(lows, default=0))
    last = min(grid.points - 1, max(highs, default=-1))
    return (first, last - first + 1) if last >= first else (0, 0)


def _put(row: FloatArray, series: Series, scale: float, grid: TimeGrid, first: int) -> None:
    """One series into a node's row of grid steps from step ``first`` on (the larger value
    where the row has one)."""
    step = np.rint((series.timestamps - grid.start) / grid.step).astype(np.int64) - first
    value = series.values * scale
    ok = np.isfinite(value) & (step >= 0) & (step < len(row))
    row[step[ok]] = np.fmax(row[step[ok]], value[ok])


def _memory_rows(table: SampleTable) -> Iterator[tuple[Int32Array, Int32Array, FloatArray]]:
    """Per part of the joined table: (group, step, MemTotal − MemAvailable) where both have a
    value (a row holds both gauges at one step, NaN where one has none)."""
    for group, step, columns in table.parts:
        used = columns[MEM_TOTAL] - columns[MEM_AVAILABLE]
        keep = ~np.isnan(used)
        yield group[keep], step[keep], used[keep]


def _memory_table(results: dict[str, QueryResult]) -> SampleTable | None:
    """The collector's joined MemTotal/MemAvailable table, if both queries live in one."""
    total, available = results.get(MEM_TOTAL), results.get(MEM_AVAILABLE)
    table = total.table if total is not None else None
    if (
        table is not None
        and available is not None
        and available.table is table
        and {MEM_TOTAL, MEM_AVAILABLE} <= set(table.names)
    ):
        return table
    return None
