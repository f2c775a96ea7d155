"""``analyzer inspect SNAPSHOT --table T``: print one snapshot table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pandas as pd

from analyzer.cli.base import main
from analyzer.core.csvsafe import csv_text
from analyzer.core.snapshot import TABLES, read_snapshot


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


@main.command()
@click.argument("snapshot", type=click.Path(path_type=Path))
@click.option("--table", type=click.Choice(TABLES), default="nodes", show_default=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
)
@click.option("--limit", type=int, default=None, help="Print at most this many rows.")
def inspect(snapshot: Path, table: str, fmt: str, limit: int | None) -> None:
    """Print a snapshot table (nodes, pods, node_usage, pod_usage)."""
    frame = read_snapshot(snapshot).table(table)
    if limit is not None:
        frame = frame.head(limit)
    if fmt == "json":
        click.echo(json.dumps(_records(frame), indent=1))
    elif fmt == "csv":
        click.echo(csv_text(frame), nl=False)
    else:
        with pd.option_context("display.max_rows", None, "display.width", 200):
            click.echo(frame.to_string(index=False))
