"""Backfill the history store from Prometheus: past days, one at a time, as the nightly job.

For each complete UTC day of the range (oldest first) the day and its look-back are collected
exactly as ``analyzer report nightly --prometheus`` collects them (``collect_day``), analysed by
``run_nightly`` and recorded by ``record_day``, the function the nightly report records with: a
backfilled day is the same four files a nightly run of that day at the same step writes; only the
HTML report is not made.

- **Bounded memory:** one day's snapshot and result are alive at a time; both are dropped (and
  their pages given back) before the next day is collected.
- **Resumable:** a day whose four files are all present is skipped unless ``force``; every file
  is written atomically, so a run that dies leaves the days before it whole, and the next run
  starts at the first day missing a file.
- **Partial days** (coverage below ``min_coverage``, a failed optional query) are written and
  counted; a day with no data at all (no kube-state-metrics data, no node existing during it, or
  no node usage in it: before the server's retention or the cluster's first day, after its last)
  writes nothing and is counted. Either makes the run's exit code 3.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import pandas as pd

from analyzer.core.durations import format_duration
from analyzer.core.errors import EXIT_OK, EXIT_PARTIAL, InputError, PartialDataError
from analyzer.core.memory import release_free_memory
from analyzer.core.snapshot import Snapshot
from analyzer.history.identity import ClusterIdentity
from analyzer.nightly.collect_day import DaySource, collect_day
from analyzer.nightly.record import is_recorded, record_day
from analyzer.nightly.run import NightlySettings, run_nightly
from analyzer.usage.grid import snapshot_step

WRITTEN = "written"
SKIPPED = "skipped"
NO_DATA = "no data"


def backfill_days(since: timedelta, until: date, today: date) -> list[date]:
    """The complete UTC days of the ``since`` before the end of ``until``, oldest first.

    The range is ``(end − since, end]`` with ``end`` the midnight closing ``until``; a day counts
    when all of it lies inside, so ``--since 90d`` is the 90 days ending with ``until``.
    ``today`` (UTC) is not complete yet: ``until`` must be before it.
    """
    if until >= today:
        raise InputError(
            f"--until: {until} is not a complete UTC day yet (today is {today}); "
            f"give {today - timedelta(days=1)} (yesterday) or earlier"
        )
    if since <= timedelta(0):
        raise InputError("--since: give a positive duration of whole days, e.g. 90d")
    count = int(since.total_seconds() // 86400)
    if count < 1:
        raise InputError(
            f"--since: {format_duration(since)} holds no complete UTC day before the end of "
            f"{until}; "
            "give at least 1d (e.g. 30d)"
        )
    try:
        first = until - timedelta(days=count - 1)
    except OverflowError:
        raise InputError(
            f"--since: {format_duration(since)} reaches before the year 1; give a shorter "
            "range (e.g. 90d)"
        ) from None
    return [first + timedelta(days=n) for n in range(count)]


@dataclass(frozen=True)
class DayOutcome:
    """What happened to one day: ``written``, ``skipped`` (present) or ``no data``."""

    day: date
    status: str
    partial: bool = False
    seconds: float = 0.0
    note: str = ""  # why there was no data, or the partial day's first warning
    step_note: str | None = None


@dataclass
class BackfillOutcome:
    """Every day's outcome, in order."""

    days: list[DayOutcome] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for d in self.days if d.status == status)

    @property
    def partial(self) -> int:
        return sum(1 for d in self.days if d.status == WRITTEN and d.partial)

    @property
    def exit_code(self) -> int:
        """3 when a written day was partial or a day had no data, else 0."""
        return EXIT_PARTIAL if self.partial or self.count(NO_DATA) else EXIT_OK

    def line(self) -> str:
        """The final line: N written, M skipped, K partial (and days without data)."""
        text = (
            f"backfill: {self.count(WRITTEN)} day(s) written, {self.count(SKIPPED)} skipped "
            f"(already present), {self.partial} partial"
        )
        empty = [d.day for d in self.days if d.status == NO_DATA]
        if empty:
            span = f"{empty[0]}" if len(empty) == 1 else f"{empty[0]} .. {empty[-1]}"
            text += f", {len(empty)} without data ({span}; nothing written)"
        return text


def _has_usage(frame: pd.DataFrame, start: pd.Timestamp) -> bool:
    stamps = frame["timestamp"]
    return bool(((stamps > start) & (stamps <= start + pd.Timedelta(days=1))).any())


def _has_nodes(nodes: pd.DataFrame, start: pd.Timestamp, step: pd.Timedelta) -> bool:
    """A node existed for more than one step inside the day (unknown first/last seen: the
    whole day). A cluster whose first samples come at the midnight closing the day (the
    collector sees it from one step before), or whose last ones at the midnight opening it (a
    usage value Prometheus' 5-minute look-back carries past the end), is not a day of data."""
    end = start + pd.Timedelta(days=1)
    first = pd.to_datetime(nodes["first_seen"], utc=True).fillna(start).clip(lower=start)
    last = pd.to_datetime(nodes["last_seen"], utc=True).fillna(end).clip(upper=end)
    return bool(((last - first) > step).any())


def _no_data(snapshot: Snapshot, day: date) -> str:
    """Why ``day`` has no data in ``snapshot`` ("" when it has)."""
    start = pd.Timestamp(day, tz="UTC")
    if not _has_nodes(snapshot.nodes, start, snapshot_step(snapshot)):
        return f"no node existed during {day} for more than one step (kube-state-metrics)"
    if not _has_usage(snapshot.node_usage, start):
        return f"no node usage samples in {day}"
    return ""


def backfill_day(
    source: DaySource,
    settings: NightlySettings,
    day: date,
    history: Path,
    progress: Callable[[int, int], None] | None = None,
    cluster: ClusterIdentity | None = None,
) -> DayOutcome:
    """Collect, analyse and record ``day`` (whether or not it is present); ``progress(done,
    total)`` follows the day's requests."""
    began = time.perf_counter()
    try:
        collected = collect_day(source, settings, day, progress)
    except PartialDataError as exc:  # no kube-state-metrics data in the day at all
        return DayOutcome(day, NO_DATA, seconds=time.perf_counter() - began, note=str(exc))
    snapshot = collected.snapshot
    missing = _no_data(snapshot, day)
    if missing:
        seconds = time.perf_counter() - began
        return DayOutcome(
            day, NO_DATA, seconds=seconds, note=missing, step_note=collected.step_note
        )
    result = run_nightly(snapshot, collected.settings)
    step_note = collected.step_note
    del snapshot, collected
    try:
        record_day(result, history, cluster)
    except OSError as exc:  # disk full, file too large: the error line says which day
        exc.add_note(f"while recording the day {day}")
        raise
    quality = result.quality
    note = ""
    if quality.partial:
        note = "; ".join([f"usage coverage {quality.coverage * 100:.1f} %", *quality.warnings[:1]])
    return DayOutcome(
        day,
        WRITTEN,
        partial=quality.partial,
        seconds=time.perf_counter() - began,
        note=note,
        step_note=step_note,
    )


def run_backfill(
    source: DaySource,
    settings: NightlySettings,
    days: list[date],
    history: Path,
    *,
    force: bool = False,
    on_day: Callable[[DayOutcome, int, int], None] | None = None,
    on_requests: Callable[[date, int, int], None] | None = None,
    cluster: ClusterIdentity | None = None,
) -> BackfillOutcome:
    """Backfill ``days`` (oldest first) into ``history`` (``OUT/history``); see the module
    docstring. ``on_day(outcome, done, total)`` is called after each day, ``on_requests(day,
    done, total)`` as the day's requests finish; ``cluster``: the run's identity (the caller
    checked it against the history's before: a day of another cluster is never "already
    present"). A source error (the server unreachable, a
    query rejected) ends the run there: the days before it stay written."""
    if not days:
        raise InputError("history backfill: no day in the range; give --since of at least 1d")
    outcome = BackfillOutcome()
    for done, day in enumerate(days, start=1):
        if not force and is_recorded(history, day):
            result = DayOutcome(day, SKIPPED)
        else:
            progress = _for_day(on_requests, day)
            result = backfill_day(source, settings, day, history, progress, cluster)
            release_free_memory()  # the day's snapshot is gone: give its pages back
        outcome.days.append(result)
        if on_day is not None:
            on_day(result, done, len(days))
    return outcome


def _for_day(
    on_requests: Callable[[date, int, int], None] | None, day: date
) -> Callable[[int, int], None] | None:
    if on_requests is None:
        return None
    return lambda done, total: on_requests(day, done, total)
