"""``analyzer report fleet``: one page across the clusters of a fleet's history root."""

from __future__ import annotations

import re
from pathlib import Path

import click

from analyzer.cli.base import report
from analyzer.core.errors import InputError

_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")


@report.command("fleet")
@click.argument("history_root")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output folder: report.html, report.json and CSVs (default HISTORY_ROOT/fleet "
              "for a local root).")  # fmt: skip
@click.option("--month", default=None,
              help="Month, YYYY-MM (default: the newest month with history).")  # fmt: skip
@click.option("--prices", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="prices.yaml (docs/monthly.md): puts each pool's idle capacity in money.")  # fmt: skip
@click.option("--templates-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder searched before the bundled templates (fleet.html.j2).")  # fmt: skip
def report_fleet_cmd(
    history_root: str, out: Path | None, month: str | None, prices: Path | None,
    templates_dir: Path | None,
) -> None:  # fmt: skip
    """One page across clusters from HISTORY_ROOT (a folder or an fsspec URL such as
    s3://bucket/fleet holding cluster=NAME/history/ folders, or older OUT folders): per cluster
    and pool the month's allocatable, requested, used p95, idle and slack, stored forecasts and
    decisions, the worst violations and the fleet's total, computed with DuckDB (docs/fleet.md)."""
    from analyzer.core.prices import load_prices

    if month is not None and not _MONTH.match(month):
        raise InputError(f"--month: {month[:20]!r} is not a month; write YYYY-MM, e.g. 2026-10")
    loaded = None if prices is None else load_prices(prices)
    if out is None:
        if "://" in history_root:
            raise InputError(
                "--out: HISTORY_ROOT is a URL; give --out DIR, a local folder for the page"
            )
        out = Path(history_root) / "fleet"
    from analyzer.history.fleet import fleet_month
    from analyzer.history.fleet_source import FleetSource
    from analyzer.report.fleet import check_fleet_folder, write_fleet_report

    check_fleet_folder(out)  # before reading: never lose a user's folder
    fleet = fleet_month(FleetSource(history_root), month)
    path = write_fleet_report(fleet, out, loaded, templates_dir)
    click.echo(f"fleet: {path}")
