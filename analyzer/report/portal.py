"""``OUT/index.html``: one front door to every report analyzer wrote into a folder.

Above ``OUT/cluster=NAME/`` folders (``--all-clusters``, docs/fleet.md) it first links each
cluster's own portal (``cluster=NAME/index.html``) with its nightly runs' count and newest day.
The portal lists, newest first and each with its headline figure, the nightly runs
(``OUT/<YYYY-MM-DD>/``), the fleet pages (``report fleet``), the monthly reviews, the what-if comparisons and the configuration searches
found under ``OUT`` — by what their ``report.json`` / ``search.json`` hold, not by folder names, so a
review written with ``report monthly --out OUT/monthly-2026-10`` is found as well as the demo's
``monthly/``. The walk is bounded: at most ``MAX_DEPTH`` folders down, symbolic links and hidden,
temporary, ``history`` and ``snapshot`` folders skipped, at most ``MAX_REPORTS`` reports, JSON files
larger than ``MAX_JSON_BYTES`` skipped (a folder of someone else's files cannot make it slow).

A report file that cannot be read (damaged, half-copied) is listed as such, not dropped: the page
says how many it could not read. Figures are the reports' own (the same JSON their pages show);
durations use ``format.duration`` with the nightly page's convention (node-time in hours).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from analyzer.core.atomic import atomic_write_text
from analyzer.core.errors import InputError
from analyzer.core.structured import load_json
from analyzer.core.text import escaped, shortened
from analyzer.report.format import count, duration
from analyzer.report.output import MANIFEST, list_runs, make_readable
from analyzer.report.render import render

MAX_DEPTH = 3
MAX_REPORTS = 2000
MAX_JSON_BYTES = 64 << 20
HEADLINE_CHARS = 1000  # a report's own sentence is shown whole; only an absurd one is cut
PORTAL_MARK = "analyzer-portal"  # ``<meta name="analyzer-portal">``: this index.html is ours
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_SKIP = {"history", "snapshot", "deliveries", "__pycache__"}
KINDS = ("fleet", "monthly", "whatif", "search", "trace")
TITLES = {
    "fleet": "Fleet pages",
    "monthly": "Monthly capacity reviews",
    "whatif": "What-if comparisons",
    "search": "Configuration searches",
    "trace": "Trace replays",
}
# how the header counts them: (one, many)
COUNTED = {
    "fleet": ("fleet page", "fleet pages"),
    "monthly": ("monthly review", "monthly reviews"),
    "whatif": ("what-if comparison", "what-if comparisons"),
    "search": ("configuration search", "configuration searches"),
    "trace": ("trace replay", "trace replays"),
}


def counted(kind: str, number: int) -> str:
    """``1 monthly review``, ``3 nightly runs``: the header's count of one kind."""
    one, many = COUNTED.get(kind, ("nightly run", "nightly runs"))
    return f"{count(number)} {one if number == 1 else many}"


@dataclass(frozen=True)
class PortalEntry:
    """One report the portal links to."""

    kind: str  # one of KINDS
    href: str  # relative to OUT, with "/" separators
    title: str
    when: str  # what the report covers or when it was written, as shown
    sort_key: str  # ISO text: newest first
    headline: str


@dataclass(frozen=True)
class ClusterLink:
    """A ``cluster=NAME`` folder directly under ``OUT`` (``--all-clusters``): its own portal."""

    name: str  # the cluster's name (its history's cluster.json, else the folder's), shown
    href: str | None  # its portal, ``cluster=NAME/index.html``, None when it has none yet
    runs: int  # its nightly runs
    newest: str  # its newest nightly run's day ("" without)


@dataclass
class Portal:
    """Everything under ``OUT`` the portal lists."""

    runs: list[Any] = field(default_factory=list)  # output.RunEntry, nightly runs newest first
    entries: dict[str, list[PortalEntry]] = field(default_factory=dict)
    unreadable: list[str] = field(default_factory=list)  # relative paths of unreadable reports
    truncated: bool = False
    clusters: list[ClusterLink] = field(default_factory=list)  # OUT/cluster=NAME/ folders


def _clusters(out: Path) -> list[ClusterLink]:
    """The ``cluster=NAME`` folders directly under ``out``, by name (docs/fleet.md)."""
    links = []
    try:
        folders = sorted(e.name for e in os.scandir(out) if e.is_dir(follow_symlinks=False))
    except OSError:
        return []
    for name in folders[:MAX_REPORTS]:
        if not name.startswith("cluster="):
            continue
        shown_name = unquote(name[len("cluster=") :])
        data = _load(out / name / "history" / "cluster.json")
        if data is not None and isinstance(data.get("cluster"), str):
            shown_name = data["cluster"]
        runs = list_runs(out / name)
        index = out / name / "index.html"
        links.append(
            ClusterLink(
                name=_text(shown_name),
                href=f"{quote(name, safe='=')}/index.html" if index.is_file() else None,
                runs=len(runs),
                newest=max((r.day for r in runs), default=""),
            )
        )
    return links


def _walk(root: Path) -> Iterator[Path]:
    """Folders under ``root`` (itself included), depth-bounded, no links, no hidden or data folders."""
    stack: list[tuple[Path, int]] = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        yield folder
        if depth >= MAX_DEPTH:
            continue
        try:
            children = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
        except OSError:
            continue
        for entry in children:
            if entry.name.startswith(".") or entry.name in _SKIP:
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append((Path(entry.path), depth + 1))


def _load(path: Path) -> dict[str, Any] | None:
    """A report JSON as a mapping, or None when it cannot be read as one."""
    try:
        if path.is_symlink() or path.stat().st_size > MAX_JSON_BYTES:
            return None
        data = load_json(path)  # the one reader: depth bound, one-line errors
    except (OSError, InputError):
        return None
    return data if isinstance(data, dict) else None


def _text(value: Any) -> str:
    """A report's own sentence, on one line and not too long (names inside are data)."""
    return shortened(escaped(value), HEADLINE_CHARS) if isinstance(value, str) else ""


def _written(path: Path) -> tuple[str, str]:
    """``(shown, sort key)`` of a file's modification time in UTC."""
    stamp = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return stamp.strftime("written %Y-%m-%d %H:%M UTC"), stamp.isoformat()


def _monthly_headline(data: dict[str, Any]) -> str:
    """One clause per pool decision: ``compute: release 5 nodes now; memory: add 4 nodes by …``
    — the page's one decision per pool (``pool_decision``), else the forecast's (a review
    written before it had one)."""
    parts = []
    for pool in data.get("pools") or []:
        decision = pool.get("decision") if isinstance(pool, dict) else None
        if not isinstance(decision, dict) or not isinstance(pool.get("name"), str):
            continue
        one = pool.get("pool_decision")
        if isinstance(one, dict) and isinstance(one.get("label"), str):
            if one.get("action") in ("release", "add"):
                parts.append(f"{pool['name']}: {one['label']}")
            continue
        action, nodes = decision.get("action"), decision.get("nodes")
        if action in ("release", "add") and isinstance(nodes, int) and nodes > 0:
            verb = "release up to" if action == "release" else "add"
            clause = f"{pool['name']}: {verb} {count(nodes)} node{'s' if nodes != 1 else ''}"
            if action == "add" and isinstance(decision.get("by_date"), str):
                clause += f" by {decision['by_date']}"
            parts.append(clause)
    if not parts:
        return "no pool needs nodes added or released"
    return "; ".join(parts)


def _classify(path: Path, data: dict[str, Any], out: Path) -> PortalEntry | None:
    """The portal entry of one report JSON, by its content (None: not a report it lists)."""
    folder = path.parent
    href = (folder / ("search.html" if path.name == "search.json" else "report.html")).relative_to(
        out
    )
    if not (out / href).is_file():
        return None
    link = href.as_posix()
    title = _text(data.get("title")) or link
    if path.name == "search.json" and "recommended" in data:
        shown, key = _written(path)
        return PortalEntry("search", link, title, shown, key, _text(data.get("sentence")))
    if data.get("fleet") is True and "totals" in data:  # report fleet (report/fleet.py)
        month = str(data.get("month") or "")
        clusters = data.get("clusters")
        number_of = len(clusters) if isinstance(clusters, list) else 0
        when = f"month {_text(month)}, {count(number_of)} cluster(s)"
        return PortalEntry(
            "fleet", link, title, when, f"{month} {data.get('generated_at') or ''}",
            _text(data.get("sentence")),
        )  # fmt: skip
    if "month" in data and "pools" in data:
        month = str(data.get("month") or "")
        generated = str(data.get("generated_at") or "")
        cluster = data.get("cluster") if isinstance(data.get("cluster"), str) else None
        when = f"month {month}" + (f", cluster {_text(cluster)}" if cluster else "")
        read = data.get("read")
        shipped = isinstance(read, dict) and bool(read.get("generated_notes"))
        if shipped:  # the demo's coarse days, shipped with the package
            when += "; its generated days were shipped with the analyzer package"
        return PortalEntry(
            "monthly", link, title, when, f"{month} {generated}", _monthly_headline(data)
        )
    if "comparison" in data and "recommendation" in data:
        shown, key = _written(path)
        return PortalEntry("whatif", link, title, shown, key, _text(data.get("recommendation")))
    if "protocol" in data or "policies" in data or "curve" in data:
        shown, key = _written(path)
        return PortalEntry("trace", link, title, shown, key, _text(data.get("sentence")))
    return None


def scan(out: Path) -> Portal:
    """Find every report under ``out`` (nightly runs through ``output.list_runs``)."""
    portal = Portal(entries={kind: [] for kind in KINDS})
    found = 0
    run_parents: list[Path] = []
    for folder in _walk(out):
        if folder != out and _DAY.match(folder.name) and (folder / MANIFEST).is_file():
            if folder.parent not in run_parents:
                run_parents.append(folder.parent)
            continue  # a nightly run: listed with its folder's runs below
        for name in ("report.json", "search.json"):
            path = folder / name
            if not path.is_file():
                continue
            if found >= MAX_REPORTS:
                portal.truncated = True
                break
            found += 1
            data = _load(path)
            if data is None:
                portal.unreadable.append(path.relative_to(out).as_posix())
                continue
            entry = _classify(path, data, out)
            if entry is not None:
                portal.entries[entry.kind].append(entry)
    for entries in portal.entries.values():
        entries.sort(key=lambda e: e.sort_key, reverse=True)
    for parent in sorted(run_parents):
        prefix = parent.relative_to(out).as_posix()
        for run in list_runs(parent):
            href = run.report if prefix == "." else f"{prefix}/{run.report}"
            shown = run.day if prefix == "." else f"{prefix}/{run.day}"
            portal.runs.append(replace(run, report=href, day=shown))
    portal.runs.sort(key=lambda r: (r.day.rsplit("/", 1)[-1], r.day), reverse=True)
    portal.clusters = _clusters(out)
    return portal


def write_portal(out: Path, *, templates_dir: Path | None = None) -> Path:
    """Render ``out/index.html`` (atomically) from what ``scan`` finds; return its path."""
    from analyzer import __version__

    portal = scan(out)
    html = render(
        "index.html.j2",
        {
            "runs": portal.runs,
            "portal": portal,
            "titles": TITLES,
            "kinds": KINDS,
            "version": __version__,
            "node_time": lambda seconds: duration(seconds, days=False),
            "counted": counted,
            "mark": PORTAL_MARK,
        },
        user_dir=templates_dir,
    )
    path = Path(out) / "index.html"
    atomic_write_text(path, html)
    make_readable(path)
    return path


def is_portal(path: Path) -> bool:
    """True when ``path`` is an index.html analyzer's portal wrote (safe to rewrite)."""
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_JSON_BYTES:
            return False
        with path.open(encoding="utf-8", errors="replace") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    # an index written before the portal (nightly runs only) is ours too
    older = (
        '<meta name="generator" content="analyzer' in head
        and "<title>analyzer reports</title>" in head
    )
    return f'<meta name="{PORTAL_MARK}"' in head or older


def check_portal_target(out: Path) -> None:
    """``report index OUT``: OUT must be a folder, and an ``index.html`` in it one of ours."""
    folder = Path(out)
    if not folder.is_dir():
        raise InputError(
            f"report index: {folder} is not a folder; give the folder reports were written to"
        )
    index = folder / "index.html"
    if (index.exists() or index.is_symlink()) and not is_portal(index):
        raise InputError(
            f"report index: {index} is not an index analyzer wrote; it is left alone — move it "
            "away or give another folder"
        )


def refresh_parent_portal(folder: Path, *, templates_dir: Path | None = None) -> Path | None:
    """After a report is written into ``folder``: refresh the portal of the folder above it when
    that folder already has one of ours (a report written beside nightly runs appears there)."""
    parent = Path(folder).resolve().parent
    index = parent / "index.html"
    if is_portal(index):
        return write_portal(parent, templates_dir=templates_dir)
    return None
