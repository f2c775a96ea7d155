"""The embedded history store under ``OUT/history/``: one set of files per report day.

Layout::

    OUT/history/
      rollups/<YYYY-MM-DD>.parquet   daily rollups of that day (node × resource × stat)
      summary/<YYYY-MM-DD>.json      the run's summary numbers (the cards of the report)

One file per day (not one growing file) so that re-running a day replaces exactly that day, a
crashed run can never corrupt earlier days, and a month of history is read by listing a folder.
Every write is atomic (``analyzer.core.atomic``). Reports read it back for "delta vs the previous run"
and for trends over the last days. Every file is checked when read (``history.files``): a damaged
file, one of another day or cluster, or one holding impossible numbers ends in one line naming it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa

from analyzer.core.atomic import atomic_write_bytes, atomic_write_text
from analyzer.history.files import (
    MAX_QUANTITY,
    check_day,
    check_kinds,
    check_quantities,
    day_files,
    make_readable,
    read_json,
    read_parquet,
    refuse,
    rerun,
)
from analyzer.history.identity import check_cluster, stored_cluster

# The rollups' columns (``usage.aggregate.daily_rollups``) by kind; a file lacking one, or holding
# one of another kind, is not a rollups file.
ROLLUP_KINDS = {
    "node": "text", "pool": "text", "day": "time", "resource": "text", "stat": "text",
    "value": "number", "allocatable": "number", "requested": "number", "samples": "number",
    "missing": "bool",
}  # fmt: skip
# Histories of early versions (and the tests' small ones) hold only these; the others are checked
# when present.
_ROLLUP_REQUIRED = frozenset({"node", "value"})
_ROLLUP_QUANTITIES = ["value", "allocatable", "requested", "samples"]
# Summary keys that are not numbers: the day and the history's cluster.
_SUMMARY_TEXT = ("day", "cluster")


@dataclass(frozen=True)
class HistoryStore:
    """The history folder of one output directory (``OUT/history``)."""

    root: Path

    @property
    def rollups_dir(self) -> Path:
        return self.root / "rollups"

    @property
    def summary_dir(self) -> Path:
        return self.root / "summary"

    def write_day(self, day: date, rollups: pd.DataFrame, summary: dict[str, Any]) -> None:
        """Store (or replace) ``day``: its rollups table and its summary numbers."""
        name = day.isoformat()
        buffer = rollups.reset_index(drop=True).to_parquet(index=False)
        atomic_write_bytes(self.rollups_dir / f"{name}.parquet", buffer)
        cluster = stored_cluster(self.root)
        record = {"day": name, **summary, **({"cluster": cluster} if cluster else {})}
        atomic_write_text(
            self.summary_dir / f"{name}.json", json.dumps(record, sort_keys=True, indent=1) + "\n"
        )
        for path in (self.rollups_dir / f"{name}.parquet", self.summary_dir / f"{name}.json"):
            make_readable(path)

    def days(self) -> list[date]:
        """Days that have a stored summary, oldest first."""
        return [day for day, _ in day_files(self.summary_dir, "json")]

    def summary(self, day: date) -> dict[str, Any] | None:
        """The stored summary of ``day`` (checked), or None."""
        path = self.summary_dir / f"{day.isoformat()}.json"
        if not path.exists():
            return None
        data = read_json(path, rerun(day))
        if not isinstance(data, dict):
            refuse(path, "does not hold a JSON object", rerun(day))
        if data.get("day") != day.isoformat():
            refuse(
                path, f"is the summary of {str(data.get('day'))[:40]!r}, not of {day}", rerun(day)
            )
        check_cluster(path, data.get("cluster"), [stored_cluster(self.root)])
        for key, value in data.items():
            if key in _SUMMARY_TEXT or value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                refuse(
                    path,
                    f"has {str(key)[:80]!r} of type {type(value).__name__}, not a number",
                    rerun(day),
                )
            if not math.isfinite(value) or value < 0 or value > MAX_QUANTITY:
                refuse(
                    path,
                    f"has {str(key)[:80]!r} = {value!r}, not a finite number in 0..1e18",
                    rerun(day),
                )
        return data

    def previous_summary(self, day: date) -> dict[str, Any] | None:
        """The summary of the latest stored day strictly before ``day`` (the previous run)."""
        earlier = [d for d in self.days() if d < day]
        return self.summary(earlier[-1]) if earlier else None

    def summaries(self, *, until: date | None = None, last: int | None = None) -> pd.DataFrame:
        """All stored summaries up to ``until`` (inclusive) as a frame, one row per day."""
        days = [d for d in self.days() if until is None or d <= until]
        if last is not None:
            days = days[-last:]
        rows = [s for s in (self.summary(d) for d in days) if s is not None]
        return pd.DataFrame(rows)

    def rollups(self, days: list[date] | None = None) -> pd.DataFrame:
        """Stored rollups of ``days`` (default: all) concatenated, oldest first; each file checked
        (its columns, its day, its quantities)."""
        stored = dict(day_files(self.rollups_dir, "parquet"))
        wanted = sorted(stored) if days is None else [d for d in days if d in stored]
        frames = []
        for day in wanted:
            path = stored[day]
            table = read_parquet(path, day)
            check_kinds(path, table, ROLLUP_KINDS, _ROLLUP_REQUIRED)
            if "day" in table.schema.names:
                day_ns = table.column("day").cast(pa.timestamp("ns", tz="UTC"))
                check_day(path, pa.table({"day": day_ns}), day)
            present = [c for c in _ROLLUP_QUANTITIES if c in table.schema.names]
            check_quantities(table, present, [(0, path)], {path: day})
            frames.append(table.to_pandas())
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames, ignore_index=True)
