"""``analyzer report fleet``: one page across clusters (report.html, report.json, CSVs).

The figures come from ``history/fleet.py`` (DuckDB over the clusters' parquet histories); this
module only turns them into the page's sentence and tables, and writes the folder atomically
(``core/atomic.py``: all files appear together or not at all). Every number carries its unit in
its column name (JSON, CSV) and its header (page); the sentence is built from the fleet row of
the totals table, the very numbers the table shows.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from analyzer.core.atomic import atomic_directory
from analyzer.core.csvsafe import write_csv
from analyzer.core.outdir import check_output_folder, names_matching
from analyzer.core.prices import Prices
from analyzer.history.fleet import FleetMonth
from analyzer.report.format import number
from analyzer.report.output import make_readable
from analyzer.report.render import render

TABLES = ("totals", "pools", "forecasts", "breaches", "hottest")
FLEET_FILES = names_matching(["report.html", "report.json", *(f"{t}.csv" for t in TABLES)])
FLEET = "(fleet)"
# Page headers of the figure columns: figure, resource and unit.
HEADERS = {
    "allocatable": "allocatable", "requested": "requested", "requested_peak": "requested peak",
    "used_p95": "used p95", "idle": "idle", "slack": "slack",
}  # fmt: skip


def check_fleet_folder(folder: Path) -> None:
    """Refuse, before any reading, an ``--out`` holding files a fleet page does not write."""
    check_output_folder(folder, FLEET_FILES, "--out", what="a fleet report")


def _money(fleet: FleetMonth, prices: Prices | None) -> None:
    """``idle_money`` per pool (the idle capacity's price over the month's days with data;
    negative idle counts as 0) and per cluster; None where a pool has no price."""
    if prices is None:
        return
    values = []
    for row in fleet.pools.itertuples(index=False):
        price = prices.for_pool(str(row.pool))
        nodes = float(row.nodes_mean)
        per_node = (
            float(row.allocatable_cpu_cores) / nodes if nodes > 0 else 0.0,
            float(row.allocatable_memory_gib) / nodes if nodes > 0 else 0.0,
        )
        unit = None if price is None else price.per_unit(*per_node)
        if unit is None or math.isnan(row.idle_cpu_cores) or math.isnan(row.idle_memory_gib):
            values.append(math.nan)
            continue
        hours = 24.0 * float(row.days)
        values.append(
            (max(row.idle_cpu_cores, 0.0) * unit[0] + max(row.idle_memory_gib, 0.0) * unit[1])
            * hours
        )
    fleet.pools["idle_money"] = values
    per = fleet.pools.groupby("cluster")["idle_money"].sum(min_count=1)
    total = per.sum(min_count=1) if per.notna().all() else math.nan
    fleet.totals["idle_money"] = [
        total if c == FLEET else per.get(c, math.nan) for c in fleet.totals["cluster"]
    ]


def sentence(fleet: FleetMonth) -> str:
    """The page's answer, from the fleet row of the totals table."""
    row = fleet.totals.iloc[-1]
    clusters = len(fleet.totals) - 1
    alloc, req = row["allocatable_cpu_cores"], row["requested_cpu_cores"]
    share = 100.0 * req / alloc if alloc and alloc > 0 else math.nan
    return (
        f"In {fleet.month}, {clusters} cluster{'s' if clusters != 1 else ''} with "
        f"{int(row['pools'])} pool{'s' if int(row['pools']) != 1 else ''} offered "
        f"{number(alloc)} cores and {number(row['allocatable_memory_gib'])} GiB; "
        f"{number(req)} cores ({number(share)} %) were requested and "
        f"{number(row['idle_cpu_cores'])} cores sat idle (neither requested nor used at p95)."
    )


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """JSON-ready rows: NaN → null."""
    out = []
    for row in frame.to_dict(orient="records"):
        out.append(
            {
                str(k): None
                if isinstance(v, float) and math.isnan(v)
                else (v.item() if hasattr(v, "item") else v)
                for k, v in row.items()
            }
        )
    return out


def payload(fleet: FleetMonth, prices: Prices | None) -> dict[str, Any]:
    """report.json: the tables as rows, the sentence and the units."""
    return {
        "title": f"Fleet capacity, {fleet.month}",
        "fleet": True,
        "month": fleet.month,
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "clusters": [c.name for c in fleet.clusters],
        "sentence": sentence(fleet),
        "currency": None if prices is None else prices.currency,
        "units": {
            "*_cpu_cores": "cores",
            "*_memory_gib": "GiB (2^30 bytes)",
            "nodes_mean": "nodes",
            "breach_node_hours": "node-hours",
            "used_p95_pct_of_allocatable": "%",
            "idle_money": "currency over the month's days with data",
        },
        "missing": fleet.missing,
        **{name: _records(getattr(fleet, name)) for name in TABLES},
    }


def write_fleet_report(
    fleet: FleetMonth, out: Path, prices: Prices | None = None, templates_dir: Path | None = None
) -> Path:
    """Write report.html, report.json and one CSV per table into ``out`` (all or nothing)."""
    from analyzer import __version__

    _money(fleet, prices)
    data = payload(fleet, prices)
    html = render(
        "fleet.html.j2",
        {"ctx": data, "headers": HEADERS, "version": __version__, "fleet_row": FLEET},
        user_dir=templates_dir,
    )
    text = json.dumps(data, sort_keys=True, allow_nan=False)
    target = Path(out)
    with atomic_directory(target, FLEET_FILES) as tmp:
        for name in TABLES:
            write_csv(getattr(fleet, name), tmp / f"{name}.csv")
        (tmp / "report.json").write_text(text + "\n")
        (tmp / "report.html").write_text(html)
        for path in [tmp, *tmp.iterdir()]:
            make_readable(path)
    return target / "report.html"
