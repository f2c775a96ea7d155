"""``analyzer inspect SNAPSHOT``: a summary of the snapshot, or one table with ``--table T``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pandas as pd

from analyzer import __version__
from analyzer.cli.base import main
from analyzer.core.csvsafe import csv_text
from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot, read_snapshot
from analyzer.core.snapshot_schema import NODE_STATE_TABLE, TABLES
from analyzer.core.summary import SnapshotSummary, summarize
from analyzer.replay.node_state import summary as node_state_summary
from analyzer.scheduling.cluster_version import ClusterVersion, snapshot_version


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """JSON-ready records; ``<kind>:<resource>`` columns folded into ``{kind: {resource: int}}``."""
    out: list[dict[str, Any]] = []
    plain = [c for c in frame.columns if ":" not in c]
    grouped = [c for c in frame.columns if ":" in c]
    for row in frame.itertuples(index=False):
        values = dict(zip(frame.columns, row, strict=True))
        record: dict[str, Any] = {}
        for col in plain:
            value = values[col]
            if value is pd.NA or value is pd.NaT or (isinstance(value, float) and value != value):
                record[col] = None
            elif isinstance(value, pd.Timestamp):
                record[col] = value.isoformat().replace("+00:00", "Z")
            elif col in ("labels", "annotations") and isinstance(value, str):
                record[col] = json.loads(value)
            else:
                record[col] = value.item() if hasattr(value, "item") else value
        for col in grouped:
            kind, resource = col.split(":", 1)
            record.setdefault(kind, {})[resource] = int(values[col])
        out.append(record)
    return out


_CHOICES = (*TABLES, NODE_STATE_TABLE)


def node_state_line(snap: Snapshot) -> str:
    """The node-state intervals in one line: nodes and node-hours per kind."""
    if snap.node_state is None:
        return "none recorded (a replay applies nodes.taints all window long, sees no cordon)"
    figures = node_state_summary(snap)
    if not figures:
        return "no node cordoned, tainted or not ready in the range"
    parts = [
        f"{kind} {int(v['nodes'])} node(s) {v['hours']:.1f} node-hours"
        for kind, v in figures.items()
    ]
    return f"{len(snap.node_state)} interval(s): " + ", ".join(parts)


def summary_text(
    path: Path, summary: SnapshotSummary, version: ClusterVersion, node_state: str = ""
) -> str:
    """The readable summary: one fact per line, each count with what it counts."""
    pools = ", ".join(f"{name} {count}" for name, count in summary.pools.items())
    cover = summary.coverage
    written = f"analyzer {summary.analyzer_version} (schema {summary.schema_version})"
    lines = [
        f"snapshot {path}",
        f"  source:      {summary.source}",
        f"  range:       {summary.start} to {summary.end} ({summary.span}), step {summary.step}",
        f"  nodes:       {summary.nodes} in {len(summary.pools)} pool(s): {pools or '-'}",
        f"  kubernetes:  {version.version} ({version.detail})",
        f"  pods:        {summary.pods} ({summary.pods_scheduled} scheduled, "
        f"{summary.pods_running_at_end} running at the end, "
        f"{summary.pods_pinned} DaemonSet/static)",
        f"  usage rows:  {summary.node_usage_rows} node samples, "
        f"{summary.pod_usage_rows} pod samples",
        f"  coverage:    node cpu samples at {cover.mean_pct:.2f} % of the {cover.grid_points} "
        f"grid points (mean over nodes);",
        f"               lowest node {cover.min_pct:.2f} %, "
        f"{cover.nodes_without_usage} node(s) without usage",
    ]
    if node_state:
        lines.append(f"  node state:  {node_state}")
    if summary.failed_queries:
        lines.append(f"  failed:      {', '.join(summary.failed_queries)} (queries)")
    lines.append(f"  warnings:    {len(summary.warnings) or 'none'}")
    lines += [f"    - {warning}" for warning in summary.warnings]
    lines += [
        f"  written by:  {written}, collected at {summary.collected_at}",
        f"  read by:     analyzer {__version__}",
        f"Tables: analyzer inspect {path} --table {'|'.join(_CHOICES)}",
    ]
    return "\n".join(lines)


@main.command()
@click.argument("snapshot", type=click.Path(path_type=Path))
@click.option(
    "--table",
    type=click.Choice(_CHOICES),
    default=None,
    help="Print this table instead of the summary.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
    help="table: readable text; json: records (the summary as one object); csv: --table only.",
)
@click.option("--limit", type=int, default=None, help="With --table: print at most this many rows.")
def inspect(snapshot: Path, table: str | None, fmt: str, limit: int | None) -> None:
    """Summarise a snapshot, or print one of its tables with --table.

    The summary: source, range and step, nodes per pool, the Kubernetes version a replay uses,
    pods, usage rows, coverage, failed queries, warnings and the analyzer version that wrote it.

    node_state (``--table node_state``): when each node carried a taint, was cordoned or not
    ready (docs/snapshot.md); the summary counts nodes and node-hours per kind.

    Coverage is the share of the range's step-aligned grid points at which a node has a cpu
    usage sample, in percent: the mean over nodes and the lowest node.
    """
    snap = read_snapshot(snapshot)
    if table is None:
        if fmt == "csv" or limit is not None:
            option = "--format csv" if fmt == "csv" else "--limit"
            raise InputError(f"{option}: needs --table (nodes, pods, node_usage or pod_usage)")
        summary = summarize(snap)
        version = snapshot_version(snap)  # the version a replay of this snapshot uses
        if fmt == "json":
            data = {**summary.to_dict(), "kubernetes_version": version.to_dict()}
            if snap.node_state is not None:  # None: a snapshot without intervals
                data["node_state"] = node_state_summary(snap)
            click.echo(json.dumps(data, indent=1))
        else:
            click.echo(summary_text(snapshot, summary, version, node_state_line(snap)))
        return
    frame = snap.table(table)
    if limit is not None:
        frame = frame.head(limit)
    if fmt == "json":
        click.echo(json.dumps(_records(frame), indent=1))
    elif fmt == "csv":
        click.echo(csv_text(frame), nl=False)
    else:
        with pd.option_context("display.max_rows", None, "display.width", 200):
            click.echo(frame.to_string(index=False))
