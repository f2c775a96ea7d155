"""Stored monthly forecasts: ``OUT/history/forecasts/<YYYY-MM>.json``, one per reviewed month.

Each ``analyzer report monthly`` run stores the forecasts it made from the history up to the end
of the month it reviewed, so that the next month's review can score them against what happened
(the back-test, docs/monthly.md). The store only keeps JSON objects: what a forecast holds is the
monthly stage's business. Every file carries ``schema_version``; a newer version than this
analyzer reads is refused with the fix, a file that is not a JSON object names the file to delete.
Files are written atomically (``analyzer.core.atomic``): a crashed run leaves the old file whole.
"""

from __future__ import annotations

import math
import re
from datetime import date
from pathlib import Path
from typing import Any

from analyzer.history.files import (
    MAX_QUANTITY,
    read_month_record,
    refuse,
    write_month_record,
)

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
    return write_month_record(path, record)


def read_forecast(root: Path | str, month: str) -> dict[str, Any] | None:
    """The forecast stored for ``month``, or None when there is none."""
    path = forecast_path(root, month)
    data = read_month_record(path, SCHEMA_VERSION)
    if data is None:
        return None
    check_forecast(path, data, month)
    return data


_POINT_VALUES = ("mean", "lo80", "hi80", "lo95", "hi95")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def check_forecast(path: Path, data: dict[str, Any], month: str) -> None:
    """The shape the back-test reads (``monthly/backtest.py``), checked where it is read: the
    month of the file's name; ``pools`` an object of pools, each an object of series, each with a
    list of points ``{date: YYYY-MM-DD, mean, lo80, hi80, lo95, hi95}`` (finite numbers; null for a
    value not computed). Anything else names the file to delete (exit 2)."""
    if data.get("month", month) != month:
        refuse(path, f"is the forecast of {str(data.get('month'))[:40]!r}, not of {month}")
    end = data.get("history_end")
    if end is not None and not (isinstance(end, str) and _is_day(end)):
        refuse(path, "has a history_end that is not a day (YYYY-MM-DD)")
    pools = data.get("pools", {})
    if not isinstance(pools, dict):
        refuse(path, f"has pools of type {type(pools).__name__}, not an object")
    for pool, series in pools.items():
        where = f"pools.{str(pool)[:80]!r}"
        if not isinstance(series, dict):
            refuse(path, f"has {where} of type {type(series).__name__}, not an object")
        for name, entry in series.items():
            here = f"{where}.{str(name)[:80]!r}"
            if not isinstance(entry, dict):
                refuse(path, f"has {here} of type {type(entry).__name__}, not an object")
            if not isinstance(entry.get("method", ""), str):
                refuse(path, f"has {here}.method that is not a text")
            points = entry.get("series", [])
            if not isinstance(points, list):
                refuse(path, f"has {here}.series of type {type(points).__name__}, not a list")
            for n, point in enumerate(points):
                _check_point(path, f"{here}.series[{n}]", point)


def _is_day(text: str) -> bool:
    if not _DAY.match(text):
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _check_point(path: Path, where: str, point: object) -> None:
    if not isinstance(point, dict):
        refuse(path, f"has {where} of type {type(point).__name__}, not an object")
    day = point.get("date")
    if not (isinstance(day, str) and _is_day(day)):
        refuse(path, f"has {where}.date that is not a day (YYYY-MM-DD)")
    for key in _POINT_VALUES:
        if key not in point:
            refuse(path, f"has {where} without {key}")
        value = point[key]
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            refuse(path, f"has {where}.{key} of type {type(value).__name__}, not a number")
        if not math.isfinite(value) or abs(value) > MAX_QUANTITY:
            refuse(path, f"has {where}.{key} = {value!r}, not a finite number")
