"""Raw-sample queries evaluated chunk by chunk into one joined long table, in bounded memory.

``kind: samples`` queries (pod CPU and memory from cAdvisor) are fetched as raw samples in
disjoint time chunks. Holding every chunk of a week before evaluating them costs memory in
proportion to the raw data of the whole range, and evaluating each raw series on the whole grid
costs series × grid points. Here each chunk is evaluated as soon as it and its predecessors have
arrived: the grid points up to the chunk's end depend only on samples up to that time, so after a
chunk only a short tail per raw series is kept (the samples within the irate window or the gauge
lookback of the chunk's end). Each raw series is evaluated only on the grid points it can reach.

The evaluation is exactly ``analyzer.prom.samples.evaluate`` (``sum by (sum) (max by (dedupe)
(f(raw)))``): tests compare both with each other and with Prometheus. The result of all
samples queries of a profile is one :class:`SampleTable`: one row per (label group, grid step)
with one value column per query (NaN where that query has no value), so the two pod-usage
queries are joined chunk by chunk instead of in one pass over a week of data.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from analyzer.prom.client import Series, series_key
from analyzer.prom.grid_eval import Grid, first_at_or_after, grid_rows
from analyzer.prom.samples import SampleRule

IntArray = NDArray[np.int64]
Int32Array = NDArray[np.int32]
FloatArray = NDArray[np.float64]
GroupKey = tuple[tuple[str, str], ...]
_EMPTY32: Int32Array = np.zeros(0, dtype=np.int32)


Part = tuple["Int32Array", "Int32Array", dict[str, "FloatArray"]]  # group, step, values
# one query's (group, step, value) rows; int32 while they wait for the join (≈ 50 MB a chunk)
Rows = tuple["Int32Array", "Int32Array", "FloatArray"]
# Raw samples evaluated together (whole label groups, so sums never straddle two blocks): the
# temporaries of a block, about twenty arrays of this length, stay below the 128 kB at which
# malloc maps fresh pages (``analyzer.core.memory``) and in the CPU cache. Evaluating 2 h of every
# series of a chunk at once (the earlier code) faulted in ≈ 36 GB of fresh pages over a week at
# 500 nodes: ≈ 40 % of the collector's CPU time went to the kernel.
BLOCK_ROWS = 8192
# Joined rows per part handed to consumers, who build their own temporaries part by part.
PART_ROWS = 1 << 19
_NO_ROWS: Rows = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0))


@dataclass
class SampleTable:
    """Evaluated samples queries: rows of (group, grid step) and one value column per query.

    The rows are kept as the parts they were joined in (one per time chunk, each sorted by group
    then step), so a consumer can turn them into its own table part by part (``pop_parts``)
    without a second full-size copy; ``group``/``step``/``values`` concatenate on demand.
    """

    names: tuple[str, ...]
    groups: list[dict[str, str]]  # group id → its labels (the query's ``sum`` labels)
    parts: list[Part]
    # per query, every distinct set of its ``dedupe`` labels seen in the raw samples (e.g. the
    # app containers of each pod, for free: the raw series carry them)
    dedupe_keys: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    def __len__(self) -> int:
        return sum(len(part[0]) for part in self.parts)

    @property
    def group(self) -> Int32Array:
        return np.concatenate([p[0] for p in self.parts]) if self.parts else _EMPTY32

    @property
    def step(self) -> Int32Array:
        """Index into the grid."""
        return np.concatenate([p[1] for p in self.parts]) if self.parts else _EMPTY32

    @property
    def values(self) -> dict[str, FloatArray]:
        """Per query; NaN where it has no value at that row (every column concatenated: for
        checks; consumers read ``column`` or ``pop_parts``)."""
        return {name: self.column(name) for name in self.names}

    def column(self, name: str) -> FloatArray:
        """One query's values over all rows (NaN where it has no value)."""
        return np.concatenate([p[2][name] for p in self.parts]) if self.parts else np.zeros(0)

    def pop_parts(self) -> Iterator[Part]:
        """Yield the parts oldest first, each dropped from the table as it is handed out."""
        while self.parts:
            yield self.parts.pop(0)

    def series_count(self, name: str) -> int:
        """How many label groups ``name`` has a value for (its result's series count)."""
        seen = np.zeros(len(self.groups), dtype=bool)
        for group, _, values in self.parts:
            seen[group[~np.isnan(values[name])]] = True  # linear; np.unique would sort
        return int(np.count_nonzero(seen))

    def series(self, name: str, grid: FloatArray) -> list[Series]:
        """``name``'s result in the ``Series`` shape (groups in id order; for checks and tests)."""
        values = self.column(name)
        have = ~np.isnan(values)
        group, step, value = self.group[have], self.step[have], values[have]
        order = np.lexsort((step, group))
        group, step, value = group[order], step[order], value[order]
        bounds = np.flatnonzero(np.diff(group)) + 1
        out = []
        for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(group)], strict=True):
            if hi > lo:
                out.append(Series(self.groups[int(group[lo])], grid[step[lo:hi]], value[lo:hi]))
        return out

    @classmethod
    def from_series(
        cls, by_name: Mapping[str, Sequence[Series]], start: float, step: float
    ) -> SampleTable:
        """A table from evaluated series on the grid ``start + k * step`` (tests, custom sources)."""
        groups: dict[GroupKey, int] = {}
        parts: dict[str, tuple[IntArray, IntArray, FloatArray]] = {}
        for name, series_list in by_name.items():
            gid, idx, val = [], [], []
            for series in series_list:
                key = series_key(series)
                g = groups.setdefault(key, len(groups))
                gid.append(np.full(len(series.timestamps), g, dtype=np.int64))
                idx.append(np.rint((series.timestamps - start) / step).astype(np.int64))
                val.append(np.asarray(series.values, dtype=np.float64))
            parts[name] = (
                np.concatenate(gid) if gid else np.zeros(0, dtype=np.int64),
                np.concatenate(idx) if idx else np.zeros(0, dtype=np.int64),
                np.concatenate(val) if val else np.zeros(0),
            )
        width = 1 + max((int(p[1].max()) for p in parts.values() if len(p[1])), default=0)
        group, index, columns = _join(parts, width)
        return cls(
            names=tuple(by_name),
            groups=[dict(key) for key in groups],
            parts=[(group.astype(np.int32), index.astype(np.int32), columns)] if len(group) else [],
        )


def _join(
    parts: Mapping[str, tuple[NDArray[np.integer], NDArray[np.integer], FloatArray]], width: int
) -> tuple[IntArray, IntArray, dict[str, FloatArray]]:
    """Outer-join per-query (group, step, value) rows on (group, step); sorted by that key.

    Within one query a (group, step) appears at most once (its values were summed already).
    """
    keys: dict[str, IntArray] = {}
    values: dict[str, FloatArray] = {}
    for name, (gid, idx, value) in parts.items():
        key = gid.astype(np.int64) * width + idx
        if len(key) > 1 and not bool(np.all(key[1:] > key[:-1])):
            order = np.argsort(key, kind="stable")
            key, value = key[order], value[order]
        keys[name], values[name] = key, value
    union: IntArray = np.concatenate(list(keys.values())) if keys else np.zeros(0, np.int64)
    # sorted runs: a stable sort merges them in linear time (np.unique would hash: ~10 x slower)
    union.sort(kind="stable")
    if len(union):
        union = union[np.r_[True, union[1:] > union[:-1]]]
    columns: dict[str, FloatArray] = {}
    for name, key in keys.items():
        column = np.full(len(union), np.nan)
        column[np.searchsorted(union, key)] = values[name]
        columns[name] = column
    return union // width, union % width, columns


@dataclass
class _RawChunk:
    """One query's raw series for one chunk (each with the tail kept from the chunk before)."""

    keys: list[GroupKey] = field(default_factory=list)  # label sets
    dids: list[int] = field(default_factory=list)  # dedupe ids
    pieces: list[list[tuple[FloatArray, FloatArray]]] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)  # samples per series

    def add(self, key: GroupKey, did: int, pieces: list[tuple[FloatArray, FloatArray]]) -> None:
        self.keys.append(key)
        self.dids.append(did)
        self.pieces.append(pieces)
        self.lengths.append(sum(len(t) for t, _ in pieces))


@dataclass
class _Query:
    """Per-query state: the rule, chunks waiting for their predecessors, the raw tails."""

    rule: SampleRule
    horizon: float  # how far back from a grid time a sample can still matter
    next_index: int = 0
    waiting: dict[int, list[Series]] = field(default_factory=dict)
    # raw series label set → (dedupe id, timestamps, values) still within the horizon
    tails: dict[GroupKey, tuple[int, FloatArray, FloatArray]] = field(default_factory=dict)
    dedupe_ids: dict[tuple[str, ...], int] = field(default_factory=dict)
    group_of: list[int] = field(default_factory=list)  # dedupe id → group id
    raw_series: int = 0
    abandoned: bool = False


class SampleAccumulator:
    """Feed raw chunks (any order, by chunk index) of several samples queries; get one table.

    ``ends[i]`` is the time of chunk ``i``'s last possible sample: chunk ``i`` holds samples in
    ``(ends[i-1], ends[i]]``, and every query is fetched with the same chunks. Chunk ``i`` of a
    query is evaluated once chunks ``0..i`` of that query have arrived; the grid points of chunk
    ``i`` are joined across queries once every query has evaluated it, so memory holds the
    evaluated rows plus about ``parallelism`` raw chunks.
    """

    def __init__(
        self, rules: Mapping[str, SampleRule], grid: FloatArray, ends: Sequence[float]
    ) -> None:
        his = np.searchsorted(grid, np.asarray(ends, dtype=np.float64), side="right")
        self._setup(rules, Grid.of(grid), his, ends)

    @classmethod
    def on_steps(
        cls,
        rules: Mapping[str, SampleRule],
        start: int,
        step: int,
        points: int,
        ends: Sequence[float],
    ) -> SampleAccumulator:
        """The same for the grid ``start + k × step`` (``k < points``, whole seconds), without
        building it: a range of years then costs no grid-sized array, only the data does."""
        after = np.floor((np.asarray(ends, dtype=np.float64) - start) / step) + 1
        his = np.clip(after, 0, points).astype(np.int64)  # grid points <= each end
        accumulator = cls.__new__(cls)
        accumulator._setup(rules, Grid(float(start), step * 1000), his, ends)
        return accumulator

    def _setup(
        self, rules: Mapping[str, SampleRule], spec: Grid, his: IntArray, ends: Sequence[float]
    ) -> None:
        self.spec = spec
        self.names = tuple(rules)
        self.queries = {
            name: _Query(rule, float(rule.window if rule.rate else rule.lookback))
            for name, rule in rules.items()
        }
        his = np.maximum.accumulate(his) if len(his) else his
        self.bounds = [
            (int(his[i - 1]) if i else 0, int(his[i])) for i in range(len(ends))
        ]  # grid index range [lo, hi) of each chunk
        self.ends = [float(e) for e in ends]
        self.groups: dict[GroupKey, int] = {}
        self._evaluated: dict[int, dict[str, list[Rows]]] = {}  # chunk → query → row blocks
        self._joined: list[Part] = []

    def add(self, name: str, index: int, raw: list[Series]) -> None:
        """Chunk ``index`` of query ``name`` arrived; evaluate whatever is now in order."""
        query = self.queries[name]
        if query.abandoned:
            return
        query.waiting[index] = raw
        while query.next_index in query.waiting:
            i = query.next_index
            part = self._evaluate(query, i, query.waiting.pop(i))
            self._evaluated.setdefault(i, {})[name] = part
            query.next_index += 1
            if len(self._evaluated[i]) == len(self.queries):
                self._join_chunk(i)

    def _join_chunk(self, index: int) -> None:
        """Outer-join the queries' rows of chunk ``index`` on (group, step), a few groups at a
        time (each query's blocks cover ascending, disjoint group ranges), into parts of about
        ``PART_ROWS`` rows."""
        blocks = {name: list(rows) for name, rows in self._evaluated.pop(index).items()}
        lo, hi = self.bounds[index]
        width = max(1, hi - lo)
        pieces: list[tuple[IntArray, IntArray, dict[str, FloatArray]]] = []
        held = 0
        while any(blocks.values()):
            # up to the smallest last group among the queries' current blocks: no query has
            # rows of those groups in a later block
            upto = min(int(rows[0][0][-1]) for rows in blocks.values() if rows)
            local = {}
            for name, rows in blocks.items():
                if not rows:
                    local[name] = _NO_ROWS
                    continue
                group, step, value = rows[0]
                cut = int(np.searchsorted(group, upto, side="right"))
                local[name] = (group[:cut], step[:cut] - lo, value[:cut])
                if cut == len(group):
                    rows.pop(0)
                else:
                    rows[0] = (group[cut:], step[cut:], value[cut:])
            piece = _join(local, width)
            if len(piece[0]):
                pieces.append(piece)
                held += len(piece[0])
            if pieces and (held >= PART_ROWS or not any(blocks.values())):
                self._joined.append(
                    (
                        np.concatenate([p[0] for p in pieces]).astype(np.int32),
                        (np.concatenate([p[1] for p in pieces]) + lo).astype(np.int32),
                        {n: np.concatenate([p[2][n] for p in pieces]) for n in self.names},
                    )
                )
                pieces, held = [], 0

    def _evaluate(self, query: _Query, index: int, raw: list[Series]) -> list[Rows]:
        """Grid points of chunk ``index`` for one query: blocks of (group id, grid index, value)
        rows, each sorted by group, then index, over ascending, disjoint ranges of groups (raw
        series are taken a block of whole groups at a time)."""
        lo, hi = self.bounds[index]
        end = self.ends[index]
        tails = query.tails
        query.tails = {}
        chunk = _RawChunk()
        for series in raw:
            key = series_key(series)
            tail = tails.pop(key, None)
            if tail is None:
                did = self._dedupe_id(query, series.labels)
                query.raw_series += 1
                chunk.add(key, did, [(series.timestamps, series.values)])
            else:
                chunk.add(key, tail[0], [(tail[1], tail[2]), (series.timestamps, series.values)])
        for key, (did, ts, vs) in tails.items():  # series with no sample in this chunk
            chunk.add(key, did, [(ts, vs)])
        group_of = [query.group_of[did] for did in chunk.dids]
        # by group, then dedupe id: a block holds whole groups, and a dedupe id's series are
        # neighbours (they share its group)
        order = sorted(range(len(chunk.keys)), key=lambda s: (group_of[s], chunk.dids[s]))
        out: list[Rows] = []
        block: list[int] = []
        size = 0
        for position, s in enumerate(order):
            block.append(s)
            size += chunk.lengths[s]
            following = order[position + 1] if position + 1 < len(order) else None
            if following is None or (size >= BLOCK_ROWS and group_of[following] != group_of[s]):
                rows = self._evaluate_block(query, chunk, block, end, (lo, hi))
                if len(rows[0]):
                    out.append(rows)
                block, size = [], 0
        return out

    def _evaluate_block(
        self, query: _Query, chunk: _RawChunk, block: list[int], end: float, span: tuple[int, int]
    ) -> Rows:
        """Series ``block`` of ``chunk`` (whole groups, in group order) at grid indices
        ``span``: ``sum by (max by (f(raw)))`` rows; keeps the tails later chunks still need."""
        lo, hi = span
        parts = [piece for s in block for piece in chunk.pieces[s]]
        ts = np.concatenate([t for t, _ in parts])
        vs = np.concatenate([v for _, v in parts])
        lengths = np.array([chunk.lengths[s] for s in block], dtype=np.int64)
        stops = np.cumsum(lengths)
        cut = first_at_or_after(ts, stops - lengths, stops, end - query.horizon)
        for b in np.flatnonzero(cut < stops):  # keep what later grid points can still see
            a, z, s = int(cut[b]), int(stops[b]), block[b]
            query.tails[chunk.keys[s]] = (chunk.dids[s], ts[a:z].copy(), vs[a:z].copy())
        seg, idx, val = grid_rows(ts, vs, lengths, self.spec, query.rule, lo, hi)
        if not len(seg):
            return _NO_ROWS
        did_of = np.array([chunk.dids[s] for s in block], dtype=np.int64)
        group_of = np.array([query.group_of[d] for d in did_of.tolist()], dtype=np.int64)
        # block-local group numbers (the block's groups ascend): a small dense key space
        starts_group = np.r_[True, group_of[1:] != group_of[:-1]]
        local = np.cumsum(starts_group) - 1
        row_group = local[seg]
        # ``max by (dedupe)`` only matters where series share a dedupe id (HA copies, restart
        # overlap; such series are neighbours): other rows are one value per (dedupe id, step).
        same = did_of[1:] == did_of[:-1]
        shared = (np.r_[same, False] | np.r_[False, same])[seg]
        if shared.any():
            max_did, max_idx, max_val = _max_by(
                did_of[seg[shared]], idx[shared], val[shared], lo, hi
            )
            local_of = dict(zip(did_of.tolist(), local.tolist(), strict=True))
            max_group = np.array([local_of[d] for d in max_did.tolist()], dtype=np.int64)
            row_group = np.concatenate([row_group[~shared], max_group])
            idx = np.concatenate([idx[~shared], max_idx])
            val = np.concatenate([val[~shared], max_val])
        group, step, value = _sum_by(row_group, idx, val, lo, hi)
        return group_of[starts_group][group].astype(np.int32), step.astype(np.int32), value

    def _dedupe_id(self, query: _Query, labels: Mapping[str, str]) -> int:
        rule = query.rule
        key = tuple(labels.get(name, "") for name in rule.dedupe)
        did = query.dedupe_ids.get(key)
        if did is None:
            did = len(query.dedupe_ids)
            query.dedupe_ids[key] = did
            group = tuple((n, labels[n]) for n in rule.sum_by if labels.get(n, ""))
            query.group_of.append(self.groups.setdefault(group, len(self.groups)))
        return did

    def abandon(self, name: str) -> None:
        """Query ``name`` failed: its column stays NaN and its later chunks are ignored."""
        query = self.queries[name]
        if query.abandoned:
            return
        query.abandoned = True
        query.waiting.clear()
        query.tails.clear()
        while query.next_index < len(self.bounds):
            i = query.next_index
            self._evaluated.setdefault(i, {})[name] = []
            query.next_index += 1
            if len(self._evaluated[i]) == len(self.queries):
                self._join_chunk(i)

    def raw_series(self, name: str) -> int:
        """Distinct raw series (label sets seen anew) of query ``name`` so far."""
        return self.queries[name].raw_series

    def finish(self) -> SampleTable:
        """The joined table of every chunk (call after the last chunk of every query)."""
        missing = [name for name, q in self.queries.items() if q.next_index != len(self.bounds)]
        if missing:
            raise RuntimeError(f"samples chunks missing for {', '.join(missing)}")
        parts, self._joined = self._joined, []
        keys = {
            name: [dict(zip(q.rule.dedupe, key, strict=True)) for key in q.dedupe_ids]
            for name, q in self.queries.items()
            if not q.abandoned
        }
        return SampleTable(
            names=self.names,
            groups=[dict(key) for key in self.groups],
            parts=parts,
            dedupe_keys=keys,
        )


def _max_by(
    did: IntArray, idx: IntArray, value: FloatArray, lo: int, hi: int
) -> tuple[IntArray, IntArray, FloatArray]:
    """``max`` per (dedupe id, step)."""
    return _sorted_reduce(np.maximum, did, idx, value, lo, hi)


def _sorted_reduce(
    op: np.ufunc, key_id: IntArray, idx: IntArray, value: FloatArray, lo: int, hi: int
) -> tuple[IntArray, IntArray, FloatArray]:
    """``op`` over the rows of each (id, step), by sorting on one integer key; rows sorted."""
    width = hi - lo
    key = key_id * width + (idx - lo)
    order = np.argsort(key, kind="stable")
    key, value = key[order], value[order]
    starts = np.flatnonzero(np.r_[True, np.diff(key) > 0])
    key, value = key[starts], op.reduceat(value, starts)
    return key // width, key % width + lo, value


def _sum_by(
    group: IntArray, idx: IntArray, value: FloatArray, lo: int, hi: int
) -> tuple[IntArray, IntArray, FloatArray]:
    """``sum`` per (group, step); rows sorted by both.

    Groups are renumbered among those present, so (group, step) cells form a dense space of about
    the rows' count: two ``bincount`` passes sum and mark them in linear time (a sort would be
    n log n); sparse rows take the sort instead.
    """
    width = hi - lo
    if not len(group):
        return group, idx, value
    seen = np.bincount(group) > 0  # the groups present (few: one per pod, not per row)
    present: IntArray = np.flatnonzero(seen)
    cells_total = len(present) * width
    if cells_total > 4 * len(group) + 1024:
        return _sorted_reduce(np.add, group, idx, value, lo, hi)
    local = (np.cumsum(seen) - 1)[group]
    cell = local * width + (idx - lo)
    sums = np.bincount(cell, weights=value, minlength=cells_total).astype(np.float64, copy=False)
    cells = np.flatnonzero(np.bincount(cell, minlength=cells_total))
    return present[cells // width], cells % width + lo, sums[cells]
