"""The demo's nightly days computed in a forked process while the pages are written.

Each nightly page is written from the history store's previous days (its deltas, its trend), so
the pages go one at a time, oldest first. Their computation (``run_nightly``: pure, from the
snapshot alone; ~30 % of a page's CPU) is not: one forked worker computes the days in order and
hands each result back as the caller writes the page before it, on the other core.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from dataclasses import replace
from datetime import date

from analyzer.core.snapshot import Snapshot
from analyzer.nightly.run import NightlyResult, NightlySettings, run_nightly

# A nightly worker's snapshot and settings: set by the pool's initializer, which a forked
# process runs with the caller's objects (nothing pickled but each day's result).
_NIGHTLY: list[tuple[Snapshot, NightlySettings]] = []


def _nightly_init(snapshot: Snapshot, settings: NightlySettings) -> None:
    _NIGHTLY.append((snapshot, settings))


def _nightly_day(day: date) -> NightlyResult:
    snapshot, settings = _NIGHTLY[-1]
    return run_nightly(snapshot, replace(settings, day=day))


def nightly_results(
    snapshot: Snapshot, settings: NightlySettings, days: list[date]
) -> Iterator[NightlyResult]:
    """``run_nightly`` of each day, in order, computed ahead in a forked process (module
    docstring)."""
    context = multiprocessing.get_context("fork")
    with context.Pool(1, initializer=_nightly_init, initargs=(snapshot, settings)) as pool:
        yield from pool.imap(_nightly_day, days)
