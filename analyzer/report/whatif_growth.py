"""The "Growth replayed" page of a what-if folder (``growth.html``, ``growth.json``,
``growth.csv``) and the small section the monthly page shows (docs/whatif.md "Growth replayed").

The page opens with the short answer (``GrowthResult.sentence``: the first month a pod waits, the
first month each pool's N+1 breaks), then one line per pool — the nodes to add by month; the pools
in trouble first (earliest month a pod waits, N+1 breaks or nodes are needed), two before the fold
— and folds the month × pool table away. Every name from the data is autoescaped by the templates.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analyzer import __version__
from analyzer.core.atomic import atomic_write_text
from analyzer.core.csvsafe import csv_text
from analyzer.core.errors import InputError
from analyzer.core.structured import load_json
from analyzer.report.output import make_readable
from analyzer.report.render import render
from analyzer.report.views import Column, TableView, json_tree
from analyzer.whatif.growth_result import GrowthResult

HTML, JSON, CSV = "growth.html", "growth.json", "growth.csv"
COLUMNS = [
    Column("month", "month", "int"),
    Column("pool", "pool"),
    Column("nodes", "nodes", "int"),
    Column("capacity_cpu_cores", "capacity (cores)", "num"),
    Column("requested_peak_cpu_cores", "requested peak (cores)", "num"),
    Column("capacity_memory_gib", "capacity (GiB)", "num"),
    Column("requested_peak_memory_gib", "requested peak (GiB)", "num"),
    Column("n_plus_1", "N+1 holds", "bool"),
    Column("waiting_pods", "pods waiting (no node added)", "int"),
    Column("nodes_to_add", "nodes to add", "int"),
]


@dataclass
class GrowthView:
    """What the templates show: the answer, a line per pool, the folded table, the notes."""

    sentence: str
    pool_lines: list[str]
    table: TableView
    changes: list[str]
    notes: list[str]
    window: str
    strategy: str
    autoscaler: str
    choice: str | None = None  # ``--autoscaler auto``: the one line saying which and why
    whatif_href: str | None = None  # the what-if page in the same folder, linked back
    # the monthly page only: pools whose forecast decision and this replay disagree, and why
    against_forecast: list[str] = field(default_factory=list)


def _adds(result: GrowthResult, pool: str) -> str:
    """ "month 5: +1, month 7: +2" — the months the pool's node count to add changes."""
    seen, parts = 0, []
    for m in result.months:
        for p in m.pools:
            if p.pool != pool:
                continue
            if p.nodes_to_add is None:
                parts.append(f"month {m.month}: no node count helps")
            elif p.nodes_to_add != seen:
                parts.append(f"month {m.month}: +{p.nodes_to_add}")
                seen = p.nodes_to_add
    return ", ".join(parts) if parts else "none"


def _first_trouble(result: GrowthResult, pool: str) -> int:
    """The first month the pool breaks N+1, has pods waiting or needs nodes (the page's pools
    come in this order, so the two lines before the fold are the ones that need action)."""
    months = [
        m.month
        for m in result.months
        for p in m.pools
        if p.pool == pool and (not p.n_plus_1 or p.waiting_pods or p.nodes_to_add != 0)
    ]
    return min(months, default=len(result.months) + 1)


def growth_view(result: GrowthResult) -> GrowthView:
    """The view of ``result`` (module docstring)."""
    lines = []
    for pool in sorted(result.pools(), key=lambda p: (_first_trouble(result, p), p)):
        broken = result.first_n1_break(pool)
        n1 = "N+1 holds" if broken is None else f"N+1 breaks in month {broken}"
        lines.append(f"{pool}: {n1}; nodes to add by month: {_adds(result, pool)}")
    frame = pd.DataFrame(result.rows(), columns=[c.key for c in COLUMNS] + ["month_waiting_pods"])
    table = TableView("growth", "Month by month, per pool", COLUMNS,
                      frame[[c.key for c in COLUMNS]], limit=None, hot="waiting_pods")  # fmt: skip
    return GrowthView(
        sentence=result.sentence(),
        pool_lines=lines,
        table=table,
        changes=list(result.changes),
        notes=list(result.notes),
        window=f"{result.start:%Y-%m-%d %H:%M} .. {result.end:%Y-%m-%d %H:%M} UTC",
        strategy=result.strategy,
        autoscaler=result.autoscaler,
        choice=None if result.autoscaler_choice is None else result.autoscaler_choice["why"],
    )


def write_growth_report(
    result: GrowthResult, out: Path, *, templates_dir: Path | None = None
) -> Path:
    """Write ``OUT/growth.{csv,json,html}`` (the page last, once what it links to is there)."""
    view = growth_view(result)
    if (Path(out) / "report.html").is_file():
        view.whatif_href = "report.html"
    html = render(
        "growth.html.j2", {"growth": view, "version": __version__}, user_dir=templates_dir
    )
    payload = json.dumps(json_tree(result.to_dict()), indent=1, sort_keys=True, allow_nan=False)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    files = {CSV: csv_text(pd.DataFrame(result.rows())), JSON: payload + "\n", HTML: html}
    for name, text in files.items():
        atomic_write_text(folder / name, text)
        make_readable(folder / name)
    return folder / HTML


def growth_beside(folder: Path) -> dict[str, str] | None:
    """The what-if page's link to a growth replay written into the same ``folder`` earlier:
    ``{"sentence", "href"}`` from its ``growth.json``, None when there is none (or it is not a
    readable growth.json with its page beside it: no link rather than a broken one)."""
    page, data = folder / HTML, folder / JSON
    if not (page.is_file() and data.is_file()):
        return None
    try:
        payload = load_json(data, what="growth replay")
    except InputError:
        return None
    sentence = payload.get("sentence") if isinstance(payload, dict) else None
    if not isinstance(sentence, str) or not sentence:
        return None
    return {"sentence": sentence, "href": HTML}


def carry_growth(folder: Path, into: Path) -> None:
    """Copy a growth replay's files from ``folder`` into ``into`` (the what-if report's new
    folder, which replaces ``folder`` as a whole: the growth run is another run, kept)."""
    for name in (HTML, JSON, CSV):
        source = folder / name
        if source.is_file() and not source.is_symlink():
            shutil.copyfile(source, into / name)
