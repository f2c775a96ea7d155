"""Report output folders: ``OUT/<YYYY-MM-DD>/`` written atomically, and ``OUT/index.html``.

A run folder holds ``report.html``, ``report.json`` (every number shown), one CSV per table and a
``manifest.json`` naming the files this run wrote. It is built in a temporary sibling folder and
swapped in whole (``analyzer.core.atomic.atomic_directory``): readers see the old run or the new one,
a failure mid-render leaves no (new) folder, and files an earlier render of the same day wrote
but this one did not are gone with the old folder. Leftover temporary folders of killed runs are
removed on the next write. The index lists every run folder that has a manifest.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from analyzer.core.atomic import atomic_directory, atomic_write_text
from analyzer.report.render import render

MANIFEST = "manifest.json"
_RUN_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TEMP_NAME = re.compile(
    r"^\.(\d{4}-\d{2}-\d{2}|index\.html)\..*\.(tmp|old-\d+)$|^\.\d{4}-\d{2}-\d{2}\.old-\d+$"
)
STALE_TEMP_SECONDS = 3600  # a temp folder older than this belongs to a run that died


@dataclass(frozen=True)
class RunEntry:
    """One run listed in the index."""

    day: str
    report: str  # relative link to report.html
    summary: dict[str, Any]
    exit_code: int | None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def make_readable(path: Path) -> None:
    """Give ``path`` the usual modes (0755 folders, 0644 files, minus the umask).

    Temporary files and folders are created private (0600/0700); a report is meant to be read
    by others (a web server, colleagues), so the final files get ordinary permissions.
    """
    mode = 0o755 if path.is_dir() else 0o644
    path.chmod(mode & ~_umask())


def write_run(out: Path, day: date, fill: Callable[[Path], list[str]]) -> Path:
    """Create ``OUT/<day>/`` atomically; ``fill(tmp)`` writes the files and returns their names."""
    out = Path(out)
    remove_stale_temp(out)
    target = out / day.isoformat()
    with atomic_directory(target) as tmp:
        written = fill(tmp)
        manifest = {"day": day.isoformat(), "files": sorted([*written, MANIFEST])}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
        for path in [tmp, *tmp.iterdir()]:
            make_readable(path)
    return target


def remove_stale_temp(out: Path) -> list[Path]:
    """Remove temporary folders/files of runs that died (older than an hour); return them."""
    removed: list[Path] = []
    if not out.is_dir():
        return removed
    now = time.time()
    for path in out.iterdir():
        if _TEMP_NAME.match(path.name) and now - path.stat().st_mtime > STALE_TEMP_SECONDS:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            removed.append(path)
    return removed


def list_runs(out: Path) -> list[RunEntry]:
    """Run folders under ``out`` (newest first) with their summary from ``report.json``."""
    entries: list[RunEntry] = []
    if not Path(out).is_dir():
        return entries
    for folder in sorted(Path(out).iterdir(), reverse=True):
        if not (folder.is_dir() and _RUN_NAME.match(folder.name) and (folder / MANIFEST).is_file()):
            continue
        summary: dict[str, Any] = {}
        try:
            data = json.loads((folder / "report.json").read_text())
            summary = {k: v.get("value") for k, v in data.get("summary", {}).items()}
        except (OSError, json.JSONDecodeError, AttributeError):
            summary = {}
        code = data.get("quality", {}).get("exit_code") if summary else None
        entries.append(RunEntry(folder.name, f"{folder.name}/report.html", summary, code))
    return entries


def refresh_index(out: Path, *, templates_dir: Path | None = None) -> Path:
    """Re-render ``OUT/index.html`` listing every run."""
    from analyzer import __version__

    runs = list_runs(out)
    html = render("index.html.j2", {"runs": runs, "version": __version__}, user_dir=templates_dir)
    path = Path(out) / "index.html"
    atomic_write_text(path, html)
    make_readable(path)
    return path
