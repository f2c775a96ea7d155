"""The nightly report: the one entry point the CLI and the demo call.

``write_nightly_report(result, out)`` is the one entry point the CLI and the demo call: it reads
the previous run from the history store, renders ``OUT/<day>/report.html`` with its JSON and CSV
side files atomically, then records the day in ``OUT/history/`` and refreshes ``OUT/index.html``
(in that order, so a failed render changes nothing).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analyzer import __version__
from analyzer.core.csvsafe import write_csv
from analyzer.history.identity import ClusterIdentity
from analyzer.history.store import HistoryStore
from analyzer.nightly.record import record_day
from analyzer.nightly.run import NightlyResult
from analyzer.report.context import NightlyContext, build_context
from analyzer.report.output import write_run
from analyzer.report.portal import write_portal
from analyzer.report.render import render

TREND_DAYS = 30


@dataclass(frozen=True)
class ReportPaths:
    """Where a run's files went."""

    run_dir: Path
    html: Path
    json: Path
    index: Path
    history: Path
    html_bytes: int


def render_nightly_html(context: NightlyContext, *, templates_dir: Path | None = None) -> str:
    """The nightly report's HTML for ``context``."""
    return render(
        "nightly.html.j2", {"ctx": context, "version": __version__}, user_dir=templates_dir
    )


def write_nightly_report(
    result: NightlyResult,
    out: Path,
    *,
    templates_dir: Path | None = None,
    cluster: ClusterIdentity | None = None,
) -> ReportPaths:
    """Write the nightly report of ``result`` under ``out`` (see the module docstring)."""
    out = Path(out)
    store = HistoryStore(out / "history")
    previous = store.previous_summary(result.day)
    summary = result.summary.to_dict()
    earlier = store.summaries(until=result.day, last=TREND_DAYS)
    if len(earlier):
        earlier = earlier[earlier["day"] != result.day.isoformat()]
    history = pd.concat(
        [earlier, pd.DataFrame([{"day": result.day.isoformat(), **summary}])], ignore_index=True
    )
    earlier_days = [d for d in store.days() if d < result.day][-(TREND_DAYS - 1) :]
    past = store.rollups(earlier_days)
    rollups = pd.concat([past, result.rollups], ignore_index=True) if len(past) else result.rollups
    context = build_context(result, previous=previous, history=history, history_rollups=rollups)
    html_size = 0

    def fill(folder: Path) -> list[str]:
        nonlocal html_size
        written = []
        for name, table in context.tables.items():
            write_csv(table.csv_frame(), folder / f"{name}.csv")
            written.append(f"{name}.csv")
        (folder / "report.json").write_text(
            json.dumps(context.to_json(), indent=1, sort_keys=True, allow_nan=False) + "\n"
        )
        html = render_nightly_html(context, templates_dir=templates_dir)
        data = html.encode("utf-8")
        (folder / "report.html").write_bytes(data)
        html_size = len(data)
        return [*written, "report.json", "report.html"]

    run_dir = write_run(out, result.day, fill)
    record_day(
        result, store.root, cluster
    )  # the same call as ``history backfill`` (nightly/record.py)
    index = write_portal(out, templates_dir=templates_dir)
    return ReportPaths(
        run_dir=run_dir,
        html=run_dir / "report.html",
        json=run_dir / "report.json",
        index=index,
        history=store.root,
        html_bytes=html_size,
    )
