"""Usage tables stored in day-aligned row groups, and reads of a time window of them.

A snapshot's usage tables (``node_usage.parquet``, ``pod_usage.parquet``) are long tables of
tens to hundreds of millions of rows. They stay ONE parquet file each (the snapshot keeps its
fixed set of files, written atomically), but are written one UTC day at a time so that no row
group holds samples of two days ("day partitions", docs/snapshot.md). Parquet keeps each row
group's min and max timestamp, so a read of a window ``(start, end]`` skips every row group
outside it without decoding it: a reader of one day reads that day's rows only, and memory is
bounded by the window, not by the snapshot.

Why one file with day row groups rather than hive-style ``node_usage/date=…/part-0.parquet``
directories: the same pruning (row-group statistics instead of directory names), no change to
the snapshot's file list, its atomic write or its readers, and a snapshot written before this
layout (row groups that span days) reads with the same code, only without the skipping.

A sample at time t covers the step ending at t, so a sample at 00:00 closes the day before: the
day of t is ``floor(t - 1 ns)``, the same convention as nightly and the rollups.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

DAY_NS = 86_400 * 10**9
DAY_LAYOUT = "day-row-groups"  # meta.json extra.usage_layout of a snapshot written this way
ROW_GROUP_ROWS = 1 << 20  # a row group's rows at most (pyarrow's default), within one day


def day_codes(timestamps: pd.Series) -> np.ndarray:
    """Days since 1970-01-01 (int32) of each sample: ``floor(t - 1 ns)`` (00:00 closes a day)."""
    ns = pd.DatetimeIndex(timestamps).as_unit("ns").asi8
    days: np.ndarray = ((ns - 1) // DAY_NS).astype(np.int32)
    return days


def write_day_groups(frame: pd.DataFrame, path: Path) -> None:
    """Write a usage ``frame`` to ``path`` in row groups that never span two UTC days.

    Rows keep their order within a day; days are written oldest first. Only one day's rows are
    copied at a time (a boolean take per day), so writing costs one day of extra memory.
    """
    if frame.empty:
        frame.to_parquet(path, index=False)
        return
    days = day_codes(frame["timestamp"])
    order = np.unique(days)
    writer: pq.ParquetWriter | None = None
    try:
        for day in order:
            rows = np.flatnonzero(days == day)
            part = frame.take(rows)
            schema = writer.schema if writer is not None else None
            table = pa.Table.from_pandas(part, preserve_index=False, schema=schema)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
            del part, table
    finally:
        if writer is not None:
            writer.close()


class DayGroupWriter:
    """Append a usage table to ``path`` one UTC day at a time, in the row groups of
    ``write_day_groups``: for a writer that holds one day's rows, never the whole table.

    Each ``append`` takes the rows of ONE day (the caller's promise; they are written as that
    day's row groups). ``close`` finishes the file; a table that never got a row is written as
    ``empty`` (the schema's columns), as ``write_day_groups`` writes an empty frame.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = 0
        self._writer: pq.ParquetWriter | None = None

    def append(self, frame: pd.DataFrame) -> None:
        """Write ``frame`` (one day's rows, in the table's columns) as that day's row groups."""
        if frame.empty:
            return
        schema = self._writer.schema if self._writer is not None else None
        table = pa.Table.from_pandas(frame, preserve_index=False, schema=schema)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.path, table.schema)
        self._writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
        self.rows += len(frame)

    def close(self, empty: pd.DataFrame) -> None:
        """Finish the file (``empty``: what to write when no day had a row)."""
        if self._writer is None:
            empty.to_parquet(self.path, index=False)
            return
        self._writer.close()
        self._writer = None

    def abort(self) -> None:
        """Close the file after a failure (the caller removes its folder)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


def read_window(
    path: Path, start: pd.Timestamp | None = None, end: pd.Timestamp | None = None
) -> pd.DataFrame:
    """The rows of the parquet usage table at ``path`` with ``start < timestamp <= end``.

    Row groups whose timestamp statistics lie outside the window are skipped unread; rows of a
    row group that straddles an edge are filtered. ``None``: that side is open.
    """
    filters = []
    if start is not None:
        filters.append(("timestamp", ">", pd.Timestamp(start)))
    if end is not None:
        filters.append(("timestamp", "<=", pd.Timestamp(end)))
    table = pq.read_table(path, filters=filters or None)
    # self_destruct: each Arrow column is released as soon as it is converted, so the read
    # peaks near one copy of the rows instead of two (pd.read_parquet keeps the whole Arrow
    # table until the frame is built: 7 GB for a 10,000-node day of pod usage). The dtypes are
    # pd.read_parquet's (str, category, datetime64[ns, UTC], float64).
    frame: pd.DataFrame = table.to_pandas(self_destruct=True, split_blocks=True)
    return frame


def time_bounds(path: Path) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """The first and last timestamp of the usage table at ``path`` (None: no rows).

    Reads the timestamp column only (8 bytes a row), not the table.
    """
    column = pq.read_table(path, columns=["timestamp"])["timestamp"]
    if len(column) == 0:
        return None
    bounds = pc.min_max(column)
    first, last = bounds["min"].as_py(), bounds["max"].as_py()
    if first is None or last is None:
        return None
    return pd.Timestamp(first).tz_convert("UTC"), pd.Timestamp(last).tz_convert("UTC")


def days_between(first: pd.Timestamp, last: pd.Timestamp) -> list[date]:
    """The UTC days holding samples ``first`` .. ``last`` (00:00 closes the day before)."""
    one = pd.Timedelta(1, "ns")
    lo, hi = (first - one).floor("D"), (last - one).floor("D")
    return [d.date() for d in pd.date_range(lo, hi, freq="D")]


def iter_days(path: Path, days: list[date]) -> Iterator[tuple[date, pd.DataFrame]]:
    """``(day, rows of that day)`` for each of ``days``: one day in memory at a time."""
    for day in days:
        start = pd.Timestamp(day, tz="UTC")
        yield day, read_window(path, start, start + pd.Timedelta(days=1))
