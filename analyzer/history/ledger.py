"""The recommendation ledger: ``OUT/history/ledger/<YYYY-MM>.json``, what a monthly review advised.

Each ``analyzer report monthly`` run records what it recommended at the end of the month it
reviewed — per workload the per-pod requests (current and recommended), per pool the nodes to add
or release and by when (with the node count it saw), the scheduler configuration it compared —
so that the next month's review can tell from the history what was adopted, on which day, and
what it changed (``analyzer.monthly.adoption``; docs/monthly.md, "Last month's decisions").

The store keeps a versioned JSON object per month (``schema_version``, like the forecasts beside
it); the shape is checked where it is read: a damaged or foreign file names itself and the fix
(exit 2) instead of scoring nonsense. Written atomically: a crashed run leaves the old file whole.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from analyzer.history.files import (
    MAX_QUANTITY,
    read_month_record,
    refuse,
    write_month_record,
)

SCHEMA_VERSION = 1
FOLDER = "ledger"
_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")

# A workload entry: its key, its pool, replicas and per-pod requests now and recommended (null
# where the review recommended nothing for that resource).
WORKLOAD_TEXT = ("namespace", "owner_kind", "owner_name", "pool")
WORKLOAD_NUMBERS = (
    "replicas",
    "cpu_request_millicores",
    "cpu_recommended_millicores",
    "memory_request_bytes",
    "memory_recommended_bytes",
)
POOL_ACTIONS = ("add", "release", "none")


def ledger_path(root: Path | str, month: str) -> Path:
    """Where the recommendations made at the end of ``month`` (``YYYY-MM``) are stored."""
    if not _MONTH.match(month):
        raise ValueError(f"month {month!r} is not YYYY-MM")
    return Path(root) / FOLDER / f"{month}.json"


def write_ledger(root: Path | str, month: str, payload: dict[str, Any]) -> Path:
    """Store (or replace) ``month``'s recommendations atomically; returns the file."""
    path = ledger_path(root, month)
    record = {"schema_version": SCHEMA_VERSION, "month": month, **payload}
    check_ledger(path, record, month)  # never store what the next review would refuse
    return write_month_record(path, record)


def read_ledger(root: Path | str, month: str) -> dict[str, Any] | None:
    """The recommendations stored for ``month``, or None when that month recorded none."""
    path = ledger_path(root, month)
    data = read_month_record(path, SCHEMA_VERSION)
    if data is None:
        return None
    check_ledger(path, data, month)
    return data


def _number(path: Path, where: str, value: object, *, nullable: bool = True) -> None:
    if value is None and nullable:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        refuse(path, f"has {where} of type {type(value).__name__}, not a number")
    if not math.isfinite(value) or not 0 <= value <= MAX_QUANTITY:
        refuse(path, f"has {where} = {value!r}, not a finite quantity ≥ 0")


def _day(path: Path, where: str, value: object) -> None:
    if value is None:
        return
    if not (isinstance(value, str) and _DAY.match(value)):
        refuse(path, f"has {where} that is not a day (YYYY-MM-DD)")


def check_ledger(path: Path, data: dict[str, Any], month: str) -> None:
    """The shape ``monthly.adoption`` reads, or one line naming the file and the fix."""
    if data.get("month", month) != month:
        refuse(path, f"is the ledger of {str(data.get('month'))[:40]!r}, not of {month}")
    _day(path, "history_end", data.get("history_end"))
    if data.get("history_end") is None:
        refuse(path, "has no history_end day")
    workloads = data.get("workloads", [])
    if not isinstance(workloads, list):
        refuse(path, f"has workloads of type {type(workloads).__name__}, not a list")
    for n, entry in enumerate(workloads):
        where = f"workloads[{n}]"
        if not isinstance(entry, dict):
            refuse(path, f"has {where} of type {type(entry).__name__}, not an object")
        for key in WORKLOAD_TEXT:
            if not isinstance(entry.get(key), str):
                refuse(path, f"has {where}.{key} that is not a text")
        for key in WORKLOAD_NUMBERS:
            _number(path, f"{where}.{key}", entry.get(key), nullable=key != "replicas")
    pools = data.get("pools", [])
    if not isinstance(pools, list):
        refuse(path, f"has pools of type {type(pools).__name__}, not a list")
    for n, entry in enumerate(pools):
        where = f"pools[{n}]"
        if not isinstance(entry, dict):
            refuse(path, f"has {where} of type {type(entry).__name__}, not an object")
        if not isinstance(entry.get("pool"), str):
            refuse(path, f"has {where}.pool that is not a text")
        if entry.get("action") not in POOL_ACTIONS:
            refuse(path, f"has {where}.action that is not one of {', '.join(POOL_ACTIONS)}")
        _number(path, f"{where}.nodes", entry.get("nodes"), nullable=False)
        _number(path, f"{where}.nodes_at_review", entry.get("nodes_at_review"), nullable=False)
        _day(path, f"{where}.by_date", entry.get("by_date"))
    scheduler = data.get("scheduler", {})
    if not isinstance(scheduler, dict) or not all(
        v is None or isinstance(v, str) for v in scheduler.values()
    ):
        refuse(path, "has a scheduler entry that is not an object of texts")
