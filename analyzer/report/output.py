"""Report output folders: ``OUT/<YYYY-MM-DD>/`` written atomically, and ``OUT/index.html``.

A run folder holds ``report.html``, ``report.json`` (every number shown), one CSV per table and a
``manifest.json`` naming the files this run wrote. It is built in a temporary sibling folder and
swapped in whole (``analyzer.core.atomic.atomic_directory``): readers see the old run or the new one,
a failure mid-render leaves no (new) folder, and files an earlier render of the same day wrote
but this one did not are gone with the old folder. Nothing analyzer did not write is ever
replaced: an ``OUT`` holding other files, or a day folder holding files its manifest does not
name, is refused (``check_report_out``, exit 2). A sub-folder of ``OUT`` holding another report
analyzer writes (``report monthly --out OUT/monthly``, a what-if or search folder) is analyzer's
too: only report files and their ``report.json`` / ``search.json`` (``report_out_owned``). Leftover temporary folders of killed runs are
removed on the next write. ``OUT/index.html`` (``report/portal.py``) lists every run folder that has
a manifest and every other report under ``OUT``.
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

from analyzer.core.atomic import atomic_directory
from analyzer.core.outdir import Owned, check_not_foreign, check_output_folder, names_matching

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


# What a nightly OUT holds: run folders, the index, the history store, the what-if folder and
# our temporary files. OUT holding anything else is not ours: the report is not written there.
# ``lost+found`` is the file system's, at the root of a mounted volume (a CronJob's PVC): OUT is
# written into, never replaced, so it is left alone. ``deliveries`` holds --notify's records
# (analyzer/deliver/record.py).
_OUT_NAME = re.compile(r"^(\d{4}-\d{2}-\d{2}|index\.html|history|whatif|deliveries|lost\+found)$")


# What a what-if folder holds (the report, and the configuration search beside it; report.pdf:
# --pdf's default); the report replaces it as a whole.
WHATIF_FILES = names_matching(
    ("report.html", "report.json", "*.csv", "search.html", "search.json", "search-scheduler.yaml",
     "report.pdf", "growth.html", "growth.json")
)  # fmt: skip


def check_whatif_out(folder: Path, option: str = "--out") -> None:
    """Before any work: a what-if folder can be written and is new, empty or ours (exit 2)."""
    check_output_folder(folder, WHATIF_FILES, option, what="a what-if report")


def owned_by_reports(name: str) -> bool:
    """True for the names analyzer writes directly in a report ``OUT`` folder."""
    return bool(_OUT_NAME.match(name) or _TEMP_NAME.match(name))


# The files of a folder another analyzer report writes (a monthly review, a what-if report, a
# configuration search): a sub-folder of OUT holding only these, and the report.json or
# search.json they all write, is one analyzer wrote (``report monthly --out OUT/monthly``).
_REPORT_FOLDER_FILES = names_matching(
    ("report.html", "report.json", "*.csv", "rightsizing-patches.yaml", "search.html",
     "search.json", "search-scheduler.yaml", "report.pdf")
)  # fmt: skip
# The temporaries of writing such a folder, or a file, beside it (core/atomic.py names them so).
_ATOMIC_TEMP = re.compile(r"^\..+\.(?:[a-z0-9_]{8}\.tmp|old-\d+)$")


def analyzer_report_folder(path: Path) -> bool:
    """True when ``path`` is a folder (not a link) holding nothing but a report analyzer writes."""
    if path.is_symlink() or not path.is_dir():
        return False
    try:
        names = [entry.name for entry in path.iterdir()]
    except OSError:
        return False
    marker = "report.json" in names or "search.json" in names
    return marker and all(_REPORT_FOLDER_FILES(name) for name in names)


def report_out_owned(out: Path) -> Owned:
    """What analyzer writes in a report ``OUT``: its own names (run folders, the index, the
    history, the what-if folder, temporaries) and any sub-folder holding another report analyzer
    writes (a monthly review, a what-if or search folder put inside OUT)."""
    out = Path(out)
    return lambda name: (
        owned_by_reports(name)
        or bool(_ATOMIC_TEMP.match(name))
        or analyzer_report_folder(out / name)
    )


def run_folder_files(folder: Path) -> Owned:
    """The files a run folder's manifest names (plus the manifest): what a new run may replace."""
    try:
        files = json.loads((Path(folder) / MANIFEST).read_text()).get("files", [])
    except (OSError, json.JSONDecodeError, AttributeError):
        files = []
    names = {MANIFEST, *(str(name) for name in files)} if files else set()
    return names.__contains__


def check_report_out(out: Path, option: str = "--out") -> None:
    """Before any work: ``out`` can be written and is new, empty or a report folder (exit 2)."""
    check_output_folder(out, report_out_owned(out), option, what="a report folder", inside=True)
    # The day folder (known only once the data is read) is checked by ``write_run``.


def write_run(out: Path, day: date, fill: Callable[[Path], list[str]]) -> Path:
    """Create ``OUT/<day>/`` atomically; ``fill(tmp)`` writes the files and returns their names.

    An existing ``OUT/<day>/`` is replaced only if it holds nothing but the files its manifest
    names; an ``OUT`` holding anything but reports is refused.
    """
    out = Path(out)
    check_not_foreign(out, report_out_owned(out), what="a report folder")
    remove_stale_temp(out)
    target = out / day.isoformat()
    with atomic_directory(target, run_folder_files(target)) as tmp:
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
