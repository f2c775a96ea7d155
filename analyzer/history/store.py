"""The embedded history store under ``OUT/history/``: one set of files per report day.

Layout::

    OUT/history/
      rollups/<YYYY-MM-DD>.parquet   daily rollups of that day (node × resource × stat)
      summary/<YYYY-MM-DD>.json      the run's summary numbers (the cards of the report)

One file per day (not one growing file) so that re-running a day replaces exactly that day, a
crashed run can never corrupt earlier days, and a month of history is read by listing a folder.
Every write is atomic (``analyzer.core.atomic``). Reports read it back for "delta vs the previous run"
and for trends over the last days.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd

from analyzer.core.atomic import atomic_write_bytes, atomic_write_text
from analyzer.core.errors import InputError

_DAY_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.(parquet|json)$")


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
        record = {"day": name, **summary}
        atomic_write_text(
            self.summary_dir / f"{name}.json", json.dumps(record, sort_keys=True, indent=1) + "\n"
        )
        for path in (self.rollups_dir / f"{name}.parquet", self.summary_dir / f"{name}.json"):
            path.chmod(0o644 & ~_umask())

    def days(self) -> list[date]:
        """Days that have a stored summary, oldest first."""
        return sorted(_days_in(self.summary_dir, "json"))

    def summary(self, day: date) -> dict[str, Any] | None:
        """The stored summary of ``day``, or None."""
        path = self.summary_dir / f"{day.isoformat()}.json"
        if not path.is_file():
            return None
        try:
            data: dict[str, Any] = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"history: {path} is unreadable ({exc}); delete that file") from None
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
        """Stored rollups of ``days`` (default: all) concatenated, oldest first."""
        wanted = sorted(_days_in(self.rollups_dir, "parquet")) if days is None else days
        frames = []
        for day in wanted:
            path = self.rollups_dir / f"{day.isoformat()}.parquet"
            if path.is_file():
                frames.append(pd.read_parquet(path))
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames, ignore_index=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _days_in(folder: Path, suffix: str) -> list[date]:
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        match = _DAY_FILE.match(path.name)
        if match and match.group(2) == suffix:
            found.append(date.fromisoformat(match.group(1)))
    return found
