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
from analyzer.prom.samples import SampleRule

IntArray = NDArray[np.int64]
Int32Array = NDArray[np.int32]
FloatArray = NDArray[np.float64]
GroupKey = tuple[tuple[str, str], ...]
_EMPTY32: Int32Array = np.zeros(0, dtype=np.int32)


Part = tuple["Int32Array", "Int32Array", dict[str, "FloatArray"]]  # group, step, values
Rows = tuple["IntArray", "IntArray", "FloatArray"]  # one query's (group, step, value) rows
# Grid points evaluated at once within a chunk: the evaluation's temporaries are about ten
# arrays of (raw series × points) rows, ≈ 0.2 GB for 4,500 pod series over 12 h at 1 m;
# slices of 2 h keep them to a sixth at the same speed (measured: the work is per row).
SLICE_POINTS = 120
_NO_ROWS: Rows = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))


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
    parts: Mapping[str, tuple[IntArray, IntArray, FloatArray]], width: int
) -> tuple[IntArray, IntArray, dict[str, FloatArray]]:
    """Outer-join per-query (group, step, value) rows on (group, step); sorted by that key.

    Within one query a (group, step) appears at most once (its values were summed already).
    """
    keys: dict[str, IntArray] = {}
    values: dict[str, FloatArray] = {}
    for name, (gid, idx, value) in parts.items():
        key = gid * width + idx
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
        self.grid = grid
        self.names = tuple(rules)
        self.queries = {
            name: _Query(rule, float(rule.window if rule.rate else rule.lookback))
            for name, rule in rules.items()
        }
        his = np.searchsorted(grid, np.asarray(ends, dtype=np.float64), side="right")
        his = np.maximum.accumulate(his) if len(his) else his
        self.bounds = [
            (int(his[i - 1]) if i else 0, int(his[i])) for i in range(len(ends))
        ]  # grid index range [lo, hi) of each chunk
        self.ends = [float(e) for e in ends]
        self.groups: dict[GroupKey, int] = {}
        self._evaluated: dict[int, dict[str, list[Rows]]] = {}  # chunk → query → per slice
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

    def _slices(self, index: int) -> list[tuple[int, int]]:
        """The grid index ranges chunk ``index`` is evaluated and joined in (same for every query)."""
        lo, hi = self.bounds[index]
        return [(a, min(hi, a + SLICE_POINTS)) for a in range(lo, hi, SLICE_POINTS)]

    def _join_chunk(self, index: int) -> None:
        parts = self._evaluated.pop(index)
        for j, (lo, hi) in enumerate(self._slices(index)):
            # group ids and steps within the slice: a small key space, shifted back afterwards
            local = {name: (g, s - lo, v) for name, rows in parts.items() for g, s, v in [rows[j]]}
            group, step, columns = _join(local, max(1, hi - lo))
            if len(group):
                self._joined.append((group.astype(np.int32), (step + lo).astype(np.int32), columns))

    def _evaluate(self, query: _Query, index: int, raw: list[Series]) -> list[Rows]:
        """Grid points of chunk ``index`` for one query: (group id, grid index, value) rows per
        slice of ``_slices(index)``."""
        slices = self._slices(index)
        end = self.ends[index]
        tails = query.tails
        query.tails = {}
        keys: list[GroupKey] = []
        dids: list[int] = []
        pieces_t: list[FloatArray] = []
        pieces_v: list[FloatArray] = []
        lengths: list[int] = []
        for series in raw:
            key = series_key(series)
            tail = tails.pop(key, None)
            if tail is None:
                did = self._dedupe_id(query, series.labels)
                query.raw_series += 1
                length = 0
            else:
                did = tail[0]
                pieces_t.append(tail[1])
                pieces_v.append(tail[2])
                length = len(tail[1])
            pieces_t.append(series.timestamps)
            pieces_v.append(series.values)
            keys.append(key)
            dids.append(did)
            lengths.append(length + len(series.timestamps))
        for key, (did, ts, vs) in tails.items():  # series with no sample in this chunk
            pieces_t.append(ts)
            pieces_v.append(vs)
            keys.append(key)
            dids.append(did)
            lengths.append(len(ts))
        if not keys or not sum(lengths):
            return [_NO_ROWS] * len(slices)
        flat = _Flat(np.concatenate(pieces_t), np.concatenate(pieces_v), np.asarray(lengths))
        del pieces_t, pieces_v
        if slices:  # keys wide enough for the chunk's last grid time, built once
            flat.prepare(float(self.grid[slices[-1][1] - 1]))
        cut = flat.first_at_or_after(end - query.horizon)
        for s in np.flatnonzero(cut < flat.stops):  # keep what later grid points can still see
            start, stop = int(cut[s]), int(flat.stops[s])
            query.tails[keys[s]] = (dids[s], flat.ts[start:stop].copy(), flat.vs[start:stop].copy())
        did_of = np.asarray(dids, dtype=np.int64)
        group_of = np.asarray(query.group_of, dtype=np.int64)
        # ``max by (dedupe)`` only matters where raw series share a dedupe id (HA copies,
        # restart overlap): the other rows are already one value per (dedupe id, step).
        shared = np.bincount(did_of)[did_of] > 1
        out: list[Rows] = []
        for lo, hi in slices:
            seg, idx, val = flat.evaluate(self.grid, lo, hi, query.rule, query.horizon)
            if not len(seg):
                out.append(_NO_ROWS)
                continue
            rows = shared[seg]
            if rows.any():
                max_did, max_idx, max_val = _max_by(did_of[seg[rows]], idx[rows], val[rows], lo, hi)
                row_did = np.concatenate([did_of[seg[~rows]], max_did])
                idx = np.concatenate([idx[~rows], max_idx])
                val = np.concatenate([val[~rows], max_val])
            else:
                row_did = did_of[seg]
            del seg
            out.append(_sum_by(group_of[row_did], idx, val, lo, hi))
        return out

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
            self._evaluated.setdefault(i, {})[name] = [_NO_ROWS] * len(self._slices(i))
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


@dataclass
class _Flat:
    """Raw series of one chunk laid end to end: segment ``s`` is ``[starts[s], stops[s])``.

    Every lookup ("the last sample at or before t in segment s") is one ``searchsorted`` over all
    segments at once, on integer keys ``s * span + milliseconds since base``: sorted, because each
    segment's samples are (Prometheus timestamps are whole milliseconds).
    """

    ts: FloatArray
    vs: FloatArray
    lengths: IntArray
    starts: IntArray = field(init=False)
    stops: IntArray = field(init=False)
    base: float = field(init=False)
    span: int = field(init=False)
    keys: IntArray = field(init=False)

    def __post_init__(self) -> None:
        self.stops = np.cumsum(self.lengths)
        self.starts = self.stops - self.lengths
        self.base = float(np.floor(self.ts.min())) if len(self.ts) else 0.0
        self.span = 0  # until ``prepare``

    def _ms(self, seconds: FloatArray) -> IntArray:
        out: IntArray = np.rint((seconds - self.base) * 1000.0).astype(np.int64)
        return out

    def prepare(self, upto: float) -> None:
        """Build the keys so lookups up to time ``upto`` stay inside their segment."""
        top = max(float(self.ts.max()), upto) if len(self.ts) else upto
        self.span = int(self._ms(np.array([top]))[0]) + 2
        segment = np.repeat(np.arange(len(self.lengths), dtype=np.int64), self.lengths)
        self.keys = segment * self.span + self._ms(self.ts)

    def first_at_or_after(self, t: float) -> IntArray:
        """Per segment, the index of its first sample at or after ``t`` (``stop`` if none)."""
        if self.span == 0 or self.span <= self._ms(np.array([t]))[0]:
            self.prepare(t)  # keys not built yet, or not wide enough for t
        offset = int(np.clip(self._ms(np.array([t]))[0], 0, self.span - 1))
        probe = np.arange(len(self.lengths), dtype=np.int64) * self.span + offset
        found: IntArray = np.searchsorted(self.keys, probe, side="left")
        return np.minimum(np.maximum(found, self.starts), self.stops)

    def evaluate(
        self, grid: FloatArray, lo: int, hi: int, rule: SampleRule, horizon: float
    ) -> tuple[IntArray, IntArray, FloatArray]:
        """Every segment at the grid points ``lo..hi-1`` it can reach: (segment, index, value).

        Gauge: the newest sample within the lookback; counter: ``irate`` of the last two
        samples within the window (a drop is a reset). NaN results are left out.
        """
        if self.span <= self._ms(np.array([grid[hi - 1]]))[0]:
            self.prepare(float(grid[hi - 1]))
        nonempty = self.lengths > 0
        first = np.where(nonempty, self.ts[np.minimum(self.starts, len(self.ts) - 1)], np.inf)
        last = np.where(nonempty, self.ts[np.maximum(self.stops - 1, 0)], -np.inf)
        a = np.maximum(lo, np.searchsorted(grid, first, side="left"))
        b = np.minimum(hi, np.searchsorted(grid, last + horizon, side="right"))
        count = np.clip(b - a, 0, None)
        total = int(count.sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
        seg = np.repeat(np.arange(len(count), dtype=np.int64), count)
        run_start = np.cumsum(count) - count
        idx = a[seg] + (np.arange(total, dtype=np.int64) - run_start[seg])
        times = grid[idx]
        # every grid time is at or after its segment's first sample: the lookup stays inside it
        last_i = np.searchsorted(self.keys, seg * self.span + self._ms(times), side="right") - 1
        ts, vs = self.ts, self.vs
        if rule.rate:
            prev = last_i - 1
            ok = (prev >= self.starts[seg]) & (ts[np.maximum(prev, 0)] >= times - rule.window)
            v2, v1 = vs[last_i[ok]], vs[prev[ok]]
            dt = ts[last_i[ok]] - ts[prev[ok]]
            value = np.where(v2 < v1, v2, v2 - v1) / dt
        else:
            ok = ts[last_i] >= times - rule.lookback
            value = vs[last_i[ok]]
        seg, idx = seg[ok], idx[ok]
        have = ~np.isnan(value)
        return seg[have], idx[have], value[have]


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

    Groups are renumbered within the chunk, so (group, step) cells form a dense space of about the
    chunk's rows: two ``bincount`` passes sum and mark them in linear time (a sort would be
    n log n); a sparse chunk takes the sort instead.
    """
    width = hi - lo
    if not len(group):
        return group, idx, value
    seen = np.bincount(group) > 0  # the chunk's groups (few: one per pod, not per row)
    present: IntArray = np.flatnonzero(seen)
    cells_total = len(present) * width
    if cells_total > 4 * len(group) + 1024:
        return _sorted_reduce(np.add, group, idx, value, lo, hi)
    local = (np.cumsum(seen) - 1)[group]
    cell = local * width + (idx - lo)
    sums = np.bincount(cell, weights=value, minlength=cells_total).astype(np.float64, copy=False)
    cells = np.flatnonzero(np.bincount(cell, minlength=cells_total))
    return present[cells // width], cells % width + lo, sums[cells]
