"""Collect one nightly day from Prometheus: the day ``(midnight, next midnight]`` plus the
look-back its windowed thresholds need, as ``analyzer report nightly --prometheus`` and
``analyzer history backfill`` both do (one function, so the two cannot drift)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from analyzer.collect.run import CollectRequest, collect
from analyzer.core.snapshot import Snapshot
from analyzer.nightly.run import NightlySettings
from analyzer.prom.settings import PromSettings


@dataclass(frozen=True)
class DaySource:
    """Where and how a day is collected: the server, the step, the profile, the scrape interval."""

    settings: PromSettings
    step_seconds: int = 60
    queries_dir: Path | None = None
    scrape_interval_seconds: int | None = None  # None: measured from the samples


@dataclass(frozen=True)
class CollectedDay:
    """The collected snapshot, the nightly settings for it, and the collector's step note."""

    snapshot: Snapshot
    settings: NightlySettings
    step_note: str | None


def day_request(source: DaySource, day: date, lookback: timedelta) -> CollectRequest:
    """The collect request of ``day``: from midnight minus ``lookback`` to the next midnight."""
    day_start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return CollectRequest(
        settings=source.settings,
        start=day_start - lookback,
        end=day_start + timedelta(days=1),
        step_seconds=source.step_seconds,
        queries_dir=source.queries_dir,
        scrape_interval_seconds=source.scrape_interval_seconds,
        range_option=f"the day {day} and its look-back",
    )


def collect_day(
    source: DaySource,
    settings: NightlySettings,
    day: date,
    progress: Callable[[int, int], None] | None = None,
) -> CollectedDay:
    """Collect ``day`` and return it with ``settings`` set for it (the day, the collector's
    partial flag and problems, which ``run_nightly`` turns into exit 3 and warnings)."""
    result = collect(day_request(source, day, settings.lookback), progress)
    day_settings = replace(
        settings, day=day, source_partial=result.partial, extra_warnings=tuple(result.problems)
    )
    return CollectedDay(result.snapshot, day_settings, result.step_note)
