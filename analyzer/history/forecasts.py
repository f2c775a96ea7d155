"""Stored monthly forecasts: ``OUT/history/forecasts/<YYYY-MM>.json``, one per reviewed month.

Each ``analyzer report monthly`` run stores the forecasts it made from the history up to the end
of the month it reviewed, so that the next month's review can score them against what happened
(the back-test, docs/monthly.md). The store only keeps JSON objects: what a forecast holds is the
monthly stage's business. Every file carries ``schema_version``; a newer version than this
analyzer reads is refused with the fix, a file that is not a JSON object names the file to delete.
Files are written atomically (``analyzer.core.atomic``): a crashed run leaves the old file whole.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from analyzer.core.atomic import atomic_write_text
from analyzer.core.errors import InputError
from analyzer.core.structured import load_json

SCHEMA_VERSION = 1
FOLDER = "forecasts"
_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")


def forecast_path(root: Path | str, month: str) -> Path:
    """Where the forecast made at the end of ``month`` (``YYYY-MM``) is stored under ``root``."""
    if not _MONTH.match(month):
        raise ValueError(f"month {month!r} is not YYYY-MM")
    return Path(root) / FOLDER / f"{month}.json"


def write_forecast(root: Path | str, month: str, payload: dict[str, Any]) -> Path:
    """Store (or replace) ``month``'s forecast ``payload`` atomically; returns the file."""
    path = forecast_path(root, month)
    record = {"schema_version": SCHEMA_VERSION, "month": month, **payload}
    text = json.dumps(record, sort_keys=True, allow_nan=False) + "\n"  # compact: C encoder
    atomic_write_text(path, text)
    path.chmod(0o644 & ~_umask())  # readable like the rest of the history
    return path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_forecast(root: Path | str, month: str) -> dict[str, Any] | None:
    """The forecast stored for ``month``, or None when there is none."""
    path = forecast_path(root, month)
    if not path.is_file():
        return None
    try:  # core.structured: bounded nesting, one line naming the file
        data = load_json(path, what="history:")
    except InputError as exc:
        raise InputError(f"{exc}; delete that file") from None
    if not isinstance(data, dict):
        raise InputError(f"history: {path} does not hold a JSON object; delete that file")
    version = data.get("schema_version")
    if not isinstance(version, int):
        raise InputError(f"history: {path} has no schema_version number; delete that file")
    if version > SCHEMA_VERSION:
        raise InputError(
            f"history: {path} has schema version {version}, newer than this analyzer reads "
            f"({SCHEMA_VERSION}); upgrade analyzer to read it"
        )
    return data
