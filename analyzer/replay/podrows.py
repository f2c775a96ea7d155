"""The pod usage rows of a replay on its step grid, one day of grid columns at a time.

The replay's projection (``analyzer.replay.projection``), LoadAwareScheduling's feed
(``analyzer.replay.loadfeed``) and the what-if's pool figures read the snapshot's pod usage as
*grid rows*: the rows of known pods on the grid, sorted by grid column with ties in table order
(a stable sort), as four arrays ``pod`` (position in ``ReplayInput.pod_uids``), ``col`` (grid
column), ``cpu`` and ``memory`` (NaN read as 0).

A week of a 5,000-node cluster is 445 M such rows (~11 GB as grid rows): too many to hold. Every
reader only ever needs sums over a grid column's rows (per node, per pod) or the rows of a few
consecutive columns, so ``PodRows`` hands them out in **chunks of whole grid columns**:

- a snapshot held in memory (``Snapshot.pod_usage``): one chunk, every column, kept (as before);
- a snapshot whose pod usage was left on disk (``Snapshot.usage_dir``, set by the what-if's
  reader): one chunk per UTC day of grid columns (a column at ``t`` belongs to the day of
  ``t − 1 ns``, as docs/snapshot.md "Day partitions"), read from the day's row groups when asked
  and dropped afterwards.

Sums per (node, column) need no sorting: ``PodRows.stream`` hands out every row in table order a
row group at a time, and ``np.add.at`` adds each cell's values one by one in that order — the
order a stable sort by column keeps within a cell — so the sums are the same floats.

Exactness: a chunk holds a column's rows in the same order as the whole range would (rows are
filtered from the table, never reordered across days), and no column is split between chunks, so
a sum per (node, column) or per pod over a column's rows adds the same values in the same order —
bit-identical floats (tests/test_projection_blocks.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from analyzer.core.daygroups import DAY_NS
from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot, read_meta, read_snapshot
from analyzer.replay.input import ReplayInput

RESOURCES = ("cpu", "memory")
Int64Array = np.ndarray[Any, np.dtype[np.int64]]
Rows = dict[str, np.ndarray[Any, Any]]
# with values? -> the consecutive blocks of a pod usage table: pod positions ("pod"), times in ns
# ("ns") and, with values, one float array per resource
Parts = Callable[[bool], Iterator["Rows"]]

# Rows per block when a pod usage table is turned into grid rows: every temporary of the
# conversion (times, grid columns, pod positions, masks, sort keys) is one block's, not the
# whole table's (a 5,000-node day is 63 M rows; each whole-table temporary was 0.5 GB).
BLOCK_ROWS = 4_194_304


def grid_columns(stamps: pd.Series, start: int, step: int, width: int) -> Int64Array:
    """The grid column of each timestamp (-1: outside the grid)."""
    ns = np.asarray(pd.to_datetime(stamps, utc=True).to_numpy(dtype="datetime64[ns]"))
    cols: Int64Array = np.rint((ns.astype(np.int64) - start) / step).astype(np.int64)
    cols[(cols < 0) | (cols >= width)] = -1
    return cols


def pod_positions(pod_index: pd.Index, uids: pd.Series) -> Int64Array:
    """Each usage row's pod position (-1: not a pod of the snapshot). The uid column is
    categorical (``POD_USAGE_COLUMNS``): look up each category once, then gather by code — a
    week's millions of rows cast to strings took seconds."""
    if isinstance(uids.dtype, pd.CategoricalDtype):
        found = pod_index.get_indexer(uids.cat.categories.astype(str))
        codes = uids.cat.codes.to_numpy()
        return np.where(codes >= 0, found[codes], -1).astype(np.int64)
    positions: Int64Array = pod_index.get_indexer(uids.astype(str)).astype(np.int64)
    return positions


class _Grid:
    """What turning a table into grid rows needs: pod index, grid start, step and width."""

    def __init__(self, pod_uids: list[str], start: int, step: int, width: int) -> None:
        self.pods = pd.Index(pod_uids)
        self.start, self.step, self.width = start, step, width

    def columns(self, ns: Int64Array, pods: Int64Array, c0: int, c1: int) -> Int64Array:
        """Grid column of each row (-1: dropped — an unknown pod, off the grid, or a column
        outside ``[c0, c1)``); ``ns``: the rows' times, ``pods``: their pod positions."""
        cols: Int64Array = np.rint((ns - self.start) / self.step).astype(np.int64)
        cols[(pods < 0) | (cols < c0) | (cols >= c1) | (cols >= self.width)] = -1
        return cols

    def rows(self, parts: Parts, c0: int, c1: int) -> Rows:
        """The grid rows in columns ``[c0, c1)`` of the table that ``parts(values)`` yields in
        consecutive blocks (``pod`` positions, ``ns`` times and, with ``values``, the
        resources), sorted by column, ties in table order (a stable sort).

        A counting sort in two passes over the blocks: the first counts each column's rows, the
        second puts each block's rows at their column's next free places. Same arrays as one
        stable ``argsort`` of the whole table (tested), without its whole-table temporaries. Pod
        positions and columns are int32 (a week's rows: 8 bytes a row less)."""
        span = c1 - c0
        counts = np.zeros(span, dtype=np.int64)
        for block in parts(False):
            cols = self.columns(block["ns"], block["pod"], c0, c1)
            counts += np.bincount(cols[cols >= 0] - c0, minlength=span)
        kept = int(counts.sum())
        out: Rows = {
            "pod": np.empty(kept, dtype=np.int32),
            "col": np.empty(kept, dtype=np.int32),
            **{r: np.empty(kept, dtype=np.float64) for r in RESOURCES},
        }
        free = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        for block in parts(True):
            pods = block["pod"]
            cols = self.columns(block["ns"], pods, c0, c1)
            keep = np.flatnonzero(cols >= 0)
            order = keep[np.argsort(cols[keep], kind="stable")]
            local = cols[order] - c0
            # rank of each row among its column's rows in this block
            rank = np.arange(len(order)) - np.searchsorted(local, local, side="left")
            dest = free[local] + rank
            out["pod"][dest] = pods[order]
            out["col"][dest] = cols[order]
            for resource in RESOURCES:
                out[resource][dest] = np.nan_to_num(block[resource][order], nan=0.0)
            free += np.bincount(local, minlength=span)
        return out


def day_chunks(times: Int64Array) -> list[tuple[int, int]]:
    """Column ranges ``[c0, c1)`` of ``times`` (ns, ascending) that fall on one UTC day each
    (the day of ``t − 1 ns``: a column at 00:00 closes the day before)."""
    if len(times) == 0:
        return []
    days = (times - 1) // DAY_NS
    edges = np.flatnonzero(np.diff(days)) + 1
    bounds = [0, *edges.tolist(), len(times)]
    return list(itertools.pairwise(bounds))


def _ns(stamps: Any) -> Int64Array:
    """Timestamps (a pandas series or a numpy datetime array) as UTC ns (NaT: int64 min)."""
    if isinstance(stamps, pd.Series):
        stamps = pd.to_datetime(stamps, utc=True).to_numpy(dtype="datetime64[ns]")
    ns: Int64Array = np.asarray(stamps).astype("datetime64[ns]").astype(np.int64)
    return ns


def frame_blocks(usage: pd.DataFrame, pod_index: pd.Index) -> Parts:
    """``parts`` of a pod usage frame held in memory: blocks of ``BLOCK_ROWS`` rows."""

    def parts(values: bool) -> Iterator[Rows]:
        for a in range(0, len(usage), BLOCK_ROWS):
            frame = usage.iloc[a : a + BLOCK_ROWS]
            block = {"pod": pod_positions(pod_index, frame["uid"]), "ns": _ns(frame["timestamp"])}
            for resource in RESOURCES if values else ():
                block[resource] = frame[resource].to_numpy(dtype=np.float64)
            yield block

    return parts


def _positions(column: pa.ChunkedArray, wanted: pa.Array, known: list[Any]) -> Int64Array:
    """Each row's position in ``wanted`` (the pods' uids; -1: none), looked up once per
    dictionary value when the column is dictionary-encoded (as the snapshot writes it).
    ``known``: [dictionary, its lookup] of the previous row group (row groups written from one
    categorical share the dictionary: looked up once, not per group)."""
    array = column.combine_chunks()
    if pa.types.is_dictionary(array.type):
        if known and known[0].equals(array.dictionary):
            lookup = known[1]
        else:
            found = pc.index_in(pc.cast(array.dictionary, pa.string()), value_set=wanted)
            lookup = found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
            known[:] = [array.dictionary, lookup]
        codes = array.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        if len(lookup) == 0:
            return np.full(len(codes), -1, dtype=np.int64)
        return np.where(codes >= 0, lookup[np.maximum(codes, 0)], -1)
    found = pc.index_in(pc.cast(array, pa.string()), value_set=wanted)
    positions: Int64Array = found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return positions


def pod_groups(
    directory: Path, pod_uids: list[str], times: Int64Array, step: int, c0: int, c1: int
) -> Parts:
    """``parts`` of the pod usage row groups that can hold samples of grid columns
    ``[c0, c1)``, read one row group at a time in file order and converted straight from Arrow
    (uids looked up per dictionary value, no frame)."""
    wanted = pa.array([str(u) for u in pod_uids], type=pa.string())
    known: list[Any] = []
    groups = group_blocks(directory, "pod_usage", times, step, c0, c1)

    def parts(values: bool) -> Iterator[Rows]:
        for group in groups(["uid", "timestamp", *(RESOURCES if values else ())]):
            block = {"pod": _positions(group.column("uid"), wanted, known)}
            block["ns"] = _ns(group.column("timestamp").to_numpy())
            for resource in RESOURCES if values else ():
                block[resource] = group.column(resource).to_numpy().astype(np.float64)
            yield block

    return parts


def group_blocks(
    directory: Path, table: str, times: Int64Array, step: int, c0: int, c1: int
) -> Callable[[list[str]], Iterator[pa.Table]]:
    """The row groups of usage ``table`` that can hold samples of grid columns
    ``[c0, c1)``, read one row group at a time in file order (the caller drops the rows of
    other columns).

    Picked on the row groups' timestamp statistics and read directly, one at a time: a filtered
    read of a 5,000-node day held ~5 GB of buffers for 1.8 GB of rows, a read of its row groups
    at once ~4 GB. A group without statistics is read."""
    path = Path(directory) / f"{table}.parquet"
    # a millisecond of slack: statistics may come back at microsecond precision
    lo = int(times[c0]) - step - 1_000_000
    hi = int(times[c1 - 1]) + step + 1_000_000

    def parts(columns: list[str]) -> Iterator[pa.Table]:
        try:
            source = pq.ParquetFile(path)
            where = source.schema_arrow.get_field_index("timestamp")
            for k in range(source.num_row_groups):
                stats = source.metadata.row_group(k).column(where).statistics
                if stats is not None and stats.has_min_max:
                    first, last = pd.Timestamp(stats.min), pd.Timestamp(stats.max)
                    first = first.tz_localize("UTC") if first.tzinfo is None else first
                    last = last.tz_localize("UTC") if last.tzinfo is None else last
                    if first.value > hi or last.value <= lo:
                        continue
                yield source.read_row_group(k, columns=columns, use_threads=False)
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise InputError(f"{path}: unreadable usage ({exc}); re-create the snapshot") from None

    return parts


def column_slice(rows: Rows, c0: int, c1: int) -> Rows:
    """The rows of columns ``[c0, c1)`` (views; ``rows`` sorted by column)."""
    col = rows["col"]
    # the bounds in the column's own dtype: Python ints would make numpy cast the whole int32
    # column to int64 first, a copy of every row at each call (~30 ms at 30 M rows)
    a, b = np.searchsorted(col, np.array([c0, c1], dtype=col.dtype))
    return {key: values[a:b] for key, values in rows.items()}


class PodRows:
    """A replay's grid rows, handed out in chunks of whole grid columns (module docstring).

    ``pod_uids``, ``start``, ``step``: the replay input's; ``times``: its grid; ``table``: the
    snapshot's pod usage when held in memory; ``directory``: the snapshot to read it from day by
    day otherwise."""

    def __init__(
        self,
        pod_uids: list[str],
        times: Int64Array,
        step: int,
        table: pd.DataFrame,
        directory: Path | None,
    ) -> None:
        start = int(times[0]) if len(times) else 0
        self.grid = _Grid(pod_uids, start, step, len(times))
        self.uids = pod_uids
        self.times, self.step = times, step
        self.table, self.directory = table, directory
        self.chunks = [(0, len(times))] if directory is None else day_chunks(times)
        self._cache: dict[int, Rows] = {}

    def _load(self, k: int) -> Rows:
        c0, c1 = self.chunks[k]
        if self.directory is None:
            return self.grid.rows(frame_blocks(self.table, self.grid.pods), c0, c1)
        parts = pod_groups(self.directory, self.uids, self.times, self.step, c0, c1)
        return self.grid.rows(parts, c0, c1)

    def chunk(self, k: int) -> Rows:
        """Chunk ``k``'s rows, kept for the next call; a streamed snapshot keeps at most this
        chunk and the one before it (the feed's windows cross midnight)."""
        if k not in self._cache:
            if self.directory is not None:
                for old in [j for j in self._cache if j != k - 1]:
                    del self._cache[old]
            self._cache[k] = self._load(k)
        return self._cache[k]

    def each(self) -> Iterator[tuple[int, int, Rows]]:
        """``(c0, c1, rows)`` of every chunk in column order; a streamed chunk is read for the
        pass and not kept (a whole pass holds one day's rows at a time)."""
        for k, (c0, c1) in enumerate(self.chunks):
            kept = self._cache.get(k)
            if kept is None and self.directory is None:
                kept = self.chunk(k)
            rows = dict(kept) if kept is not None else self._load(k)
            yield c0, c1, rows
            # the caller's loop variable still holds this dict while the next day is read:
            # emptying it frees a streamed day's arrays first (a kept chunk's stay cached)
            rows.clear()

    def stream(self) -> Iterator[Rows]:
        """Every grid row of the range, **unsorted** (table order), a block at a time (a row
        group when streamed): ``pod``, ``col`` and the resources (NaN read as 0). For sums per
        cell that add each cell's rows in table order (``np.add.at``): the same order as the
        column-sorted rows, so the same floats, without sorting or holding a day."""
        width = len(self.times)
        if self.directory is None:
            parts = frame_blocks(self.table, self.grid.pods)
        else:
            parts = pod_groups(self.directory, self.uids, self.times, self.step, 0, width)
        for block in parts(True):
            cols = self.grid.columns(block["ns"], block["pod"], 0, width)
            keep = cols >= 0
            yield {
                "pod": block["pod"][keep],
                "col": cols[keep],
                **{r: np.nan_to_num(block[r][keep], nan=0.0) for r in RESOURCES},
            }

    def span(self, c0: int, c1: int) -> Rows:
        """The rows of grid columns ``[c0, c1)`` in column order (views when one chunk holds
        them)."""
        parts = [
            column_slice(self.chunk(k), max(c0, a), min(c1, b))
            for k, (a, b) in enumerate(self.chunks)
            if a < c1 and c0 < b
        ]
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return {key: np.zeros(0, dtype=dtype) for key, dtype in _DTYPES.items()}
        return {key: np.concatenate([p[key] for p in parts]) for key in _DTYPES}

    def whole(self) -> Rows:
        """Every grid row (the whole range in memory: for small snapshots and tests)."""
        return self.span(0, len(self.times))


_DTYPES = {"pod": np.int32, "col": np.int32, "cpu": np.float64, "memory": np.float64}


def pod_rows_for(inp: ReplayInput, times: Int64Array) -> PodRows:
    """The ``PodRows`` of a ``ReplayInput`` (its snapshot's table, or its directory when the
    pod usage was left on disk)."""
    snap = inp.snapshot
    return PodRows(list(inp.pod_uids), times, inp.step, snap.pod_usage, snap.usage_dir)


def sampled_uids(directory: Path, uids: pd.Series) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Which of ``uids`` have at least one row in the snapshot's pod usage at ``directory``,
    reading the uid column one row group at a time (never the table)."""
    path = Path(directory) / "pod_usage.parquet"
    wanted = pa.array(uids.astype(str).tolist(), type=pa.string())
    found = np.zeros(len(uids), dtype=bool)
    try:
        source = pq.ParquetFile(path)
        for group in range(source.num_row_groups):
            column = source.read_row_group(group, columns=["uid"]).column("uid")
            seen = pc.unique(column.combine_chunks())
            if pa.types.is_dictionary(seen.type):  # only the values used, not the dictionary
                seen = seen.dictionary.take(seen.indices)
            seen = pc.cast(seen, pa.string())
            found |= pc.is_in(wanted, value_set=seen).to_numpy(zero_copy_only=False)
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise InputError(f"{path}: unreadable pod usage ({exc}); re-create the snapshot") from None
    return found


# The what-if reads a snapshot's pod usage day by day (False: whole, as before; tests compare).
BY_DAY = True


def read_for_replay(directory: Path) -> Snapshot:
    """The snapshot at ``directory`` for a replay: everything but its usage tables, which the
    replay then reads one day at a time (``Snapshot.usage_dir``); their schemas are still
    checked here. With ``BY_DAY`` off, or a snapshot without ``step_seconds`` (its step is
    inferred from the node usage), the whole snapshot as ``read_snapshot``."""
    directory = Path(directory)
    meta_path = directory / "meta.json"
    if not BY_DAY or not meta_path.is_file() or not read_meta(meta_path).step_seconds:
        return read_snapshot(directory)
    end = pd.Timestamp(read_meta(meta_path).end)
    # an empty window: no usage row is decoded (row groups are skipped on their statistics)
    snapshot = read_snapshot(directory, window=(end, end), pod_usage=False)
    snapshot.usage_dir = directory
    return snapshot
