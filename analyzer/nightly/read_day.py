"""Read from a snapshot folder only what a nightly run of one day looks at.

A nightly run analyses one UTC day plus ``lookback`` before midnight (``run.run_nightly``
slices exactly that). A week-long snapshot of a large cluster holds seven days of pod usage that
the run would read and drop (5,000 nodes × 7 days × 1 m is ~0.7 billion pod-usage rows), so the
folder is read with the usage window ``(midnight - lookback, next midnight]``: the day-aligned
row groups outside it are never decoded (core/daygroups.py). The result is the same as reading
everything, because the run slices the same window first.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd

from analyzer.core.snapshot import Snapshot, read_snapshot, usage_bounds
from analyzer.nightly.run import NightlySettings


def read_nightly_snapshot(
    directory: Path, settings: NightlySettings
) -> tuple[Snapshot, NightlySettings]:
    """The snapshot at ``directory`` reduced to the run's window, and the settings with its day.

    The day is ``settings.day`` or the last UTC day with node usage (as ``run.default_day``).
    A day outside the data is read without pod usage, so ``run_nightly`` reports it (exit 2)
    with the data's range as before.
    """
    directory = Path(directory)
    present = (directory / "meta.json").is_file() and (directory / "node_usage.parquet").is_file()
    bounds = usage_bounds(directory, "node_usage") if present else None
    if bounds is None:  # no usage (or no file): the full read reports what is wrong
        return read_snapshot(directory, pod_usage=False), settings
    first, last = bounds
    day = settings.day or (last - pd.Timedelta(1, "ns")).floor("D").date()
    start = pd.Timestamp(day, tz="UTC")
    end = start + pd.Timedelta(days=1)
    settings = replace(settings, day=day)
    if last <= start or first > end:
        # run_nightly's "no usage data on that day" names the snapshot's range: node usage whole
        return read_snapshot(directory, pod_usage=False), settings
    window = (start - pd.Timedelta(settings.lookback), end)
    return read_snapshot(directory, window=window), settings
