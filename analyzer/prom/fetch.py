"""Run the query profile: split every query into requests, run them in a bounded thread pool, merge.

The query budget (``PromSettings.max_points``/``parallelism``, ``--max-points-per-request`` and
``--max-in-flight``): no response holds more than N points of one series, and no more than M
requests are in flight. Range queries are split in time into requests of at most N grid points
(never more than Prometheus' 11,000), so each response stays small enough to parse while the
server works on the next; raw-sample requests span N - 1 scrape intervals (or steps, when the step
is the finer), so they hold at most N samples per series. Window queries
(one summary over the whole range) are evaluated every ``span`` seconds back from the end and the
points merged by the caller (``last``/``min``/``max``). Chunks of one series are concatenated and
HA duplicates (equal label sets, e.g. after a replica label is aggregated away) merged. Raw kinds
(``samples``, ``times``) are instant queries of ``selector[span]`` in disjoint time chunks;
``samples`` chunks are evaluated on the grid as they arrive (``analyzer.prom.sample_table``), so
the raw samples of the whole range are never held at once, and ``times`` chunks are reduced to
first/last sample times per series (``analyzer.prom.samples``). Identical requests of different
queries are sent once.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

import numpy as np

from analyzer.core.errors import SourceError
from analyzer.core.memory import release_free_memory
from analyzer.prom.client import PromClient, Series, series_key
from analyzer.prom.faults import ServerFault, Stopped
from analyzer.prom.folds import RunsFold, TimesFold, ValueRuns, WindowFold
from analyzer.prom.profile import LOOKBACK_SECONDS, QuerySpec
from analyzer.prom.sample_table import SampleAccumulator, SampleTable
from analyzer.prom.samples import SampleRule, time_bounds
from analyzer.prom.scrape_interval import rate_window
from analyzer.prom.time_grid import (
    DEFAULT_CHUNK_POINTS,
    TimeGrid,
    budget_chunks,
    range_chunks,
    range_reach,
)

# Raw-sample requests reach this much further back and forward than their chunk (see
# ``run_profile``).
EDGE_OVERLAP_SECONDS = 1
DEFAULT_WINDOW_POINTS = 1440  # inner subquery points per window evaluation (bounded server memory)

# Kinds fetched as raw samples (instant queries of selector[span]) and evaluated here.
RAW_KINDS = ("samples", "times")

Progress = Callable[[int, int], None]


@dataclass
class QueryResult:
    """A query's merged series, or the error that stopped it."""

    spec: QuerySpec
    expr: str
    series: list[Series] = field(default_factory=list)
    error: str | None = None
    requests: int = 0
    # ``kind: samples``: the evaluated rows live in one table shared by the samples queries with
    # the same ``sum`` labels (``series`` stays empty: a week of pod usage as Series would double
    # the memory).
    table: SampleTable | None = None
    # a range query asked for as runs (``run_profile``'s ``as_runs``): each series' runs of equal
    # values, its points never held (``series`` stays empty)
    runs: list[ValueRuns] | None = None

    @property
    def series_count(self) -> int:
        """Series in the result (label groups with a value, for ``samples`` queries)."""
        if self.table is not None and self.spec.name in self.table.names:
            return self.table.series_count(self.spec.name)
        if self.runs is not None:
            return len(self.runs)
        return len(self.series)


@dataclass(frozen=True)
class FetchPlan:
    """How to run the profile over a grid."""

    grid: TimeGrid
    chunk_points: int = DEFAULT_CHUNK_POINTS
    window_points: int = DEFAULT_WINDOW_POINTS
    parallelism: int = 4
    # source → scrape interval in seconds (``analyzer.prom.scrape_interval``); a source not
    # listed keeps rate windows of 2 × step
    scrape_seconds: tuple[tuple[str, int], ...] = ()

    def rate_window(self, spec: QuerySpec) -> int:
        """Seconds of ``spec``'s irate window: max(2 × step, 2 × its source's scrape interval)."""
        return rate_window(self.grid.step, dict(self.scrape_seconds).get(spec.source))

    @property
    def span(self) -> int:
        """Seconds summarised by one window evaluation (never more than the range)."""
        return min(self.grid.end - self.grid.start, self.window_points * self.grid.step)

    @property
    def sample_span(self) -> int:
        """Seconds of raw samples per request of a ``samples`` or ``times`` query: N - 1 times
        the finer of the step and the finest measured scrape interval, so one request holds at
        most N samples per series (the request window is this plus 2 s, see ``run_profile``)."""
        finest = min([self.grid.step, *(s for _, s in self.scrape_seconds if s > 0)])
        return max(1, self.chunk_points - 1) * finest

    @property
    def raw_start(self) -> int:
        """The earliest raw sample time a grid evaluation can use (irate window or lookback)."""
        widest = max([2 * self.grid.step, *(2 * s for _, s in self.scrape_seconds)])
        return self.grid.start - max(widest, LOOKBACK_SECONDS)

    def span_for(self, spec: QuerySpec) -> int:
        """The ``{{span}}`` a query is rendered with."""
        return self.sample_span if spec.kind in RAW_KINDS else self.span

    def requests_for(self, spec: QuerySpec) -> list[tuple[int, int, int]]:
        """``(start, end, step)`` of every request ``spec`` needs."""
        grid = self.grid
        if spec.kind in RAW_KINDS:
            # Raw samples back to one irate window / lookback before the first grid point; an
            # instant query of selector[e - s] at e returns the samples in [s, e]. The earliest
            # request reaches back only as far as needed (``run_profile`` renders its span).
            need = self.raw_start
            ends = [grid.end]
            while ends[-1] - self.sample_span > need:
                ends.append(ends[-1] - self.sample_span)
            return [(max(need, e - self.sample_span), e, 0) for e in reversed(ends)]
        if spec.kind == "range":
            return [(s, e, grid.step) for s, e in budget_chunks(grid, self.chunk_points)]
        span = self.span
        count = math.ceil((grid.end - grid.start) / span)
        first = grid.end - (count - 1) * span
        # one request per worker, unless that would exceed the budget's points per request
        per = min(max(1, math.ceil(count / self.parallelism)), self.chunk_points)
        return [(s, e, span) for s, e in range_chunks(first, grid.end, span, per)]


def _from(series: Series, start: float, *, closed: bool) -> Series:
    """The samples from ``start`` on: ``ts >= start`` when ``closed``, else ``ts > start``
    (timestamps ascend: usually none is cut, and one look says so)."""
    ts = series.timestamps
    if not len(ts) or ts[0] > start or (closed and ts[0] == start):
        return series
    cut = int(np.searchsorted(ts, start, side="left" if closed else "right"))
    return Series(series.labels, ts[cut:], series.values[cut:], series.key)


def _until(series: Series, end: float) -> Series:
    """The samples up to ``end`` (``ts <= end``)."""
    ts = series.timestamps
    if not len(ts) or ts[-1] <= end:
        return series
    cut = int(np.searchsorted(ts, end, side="right"))
    return Series(series.labels, ts[:cut], series.values[:cut], series.key)


def merge_series(parts: list[list[Series]]) -> list[Series]:
    """Concatenate chunks (given in time order) per label set; equal timestamps keep the max."""
    groups: dict[tuple[tuple[str, str], ...], list[Series]] = {}
    for chunk in parts:
        for series in chunk:
            groups.setdefault(series_key(series), []).append(series)
    merged: list[Series] = []
    for pieces in groups.values():
        if len(pieces) == 1:
            merged.append(pieces[0])
            continue
        ts = np.concatenate([p.timestamps for p in pieces])
        values = np.concatenate([p.values for p in pieces])
        if np.any(np.diff(ts) <= 0):
            order = np.lexsort((-values, ts))  # by time, larger value first among duplicates
            ts, values = ts[order], values[order]
            keep = np.concatenate(([True], np.diff(ts) > 0))
            ts, values = ts[keep], values[keep]
        merged.append(Series(pieces[0].labels, ts, values))
    return merged


TaskKey = tuple[str, str, tuple[int, int, int]]


def _tasks(specs: list[QuerySpec], plan: FetchPlan) -> dict[TaskKey, list[tuple[str, int]]]:
    """Every request of ``specs`` → the (query, chunk index) pairs it serves.

    Identical requests (first and last seen read the same raw samples) are sent once.
    """
    tasks: dict[TaskKey, list[tuple[str, int]]] = {}
    for spec in specs:
        for index, window in enumerate(plan.requests_for(spec)):
            tasks.setdefault((spec.kind, spec.expr, window), []).append((spec.name, index))
    return tasks


def request_count(specs: list[QuerySpec], plan: FetchPlan) -> int:
    """How many HTTP requests ``run_profile`` sends for ``specs`` (for a progress total)."""
    return len(_tasks(specs, plan))


class Cancelled(Exception):
    """``run_profile`` stopped because its ``cancel`` event was set."""


def _what(name: str) -> str:
    """A profile query's requests as the client names them (its label cache's key)."""
    return f"query {name}"


def run_profile(
    client: PromClient,
    specs: list[QuerySpec],
    plan: FetchPlan,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
    as_runs: tuple[str, ...] = (),
) -> dict[str, QueryResult]:
    """Run every query of ``specs``; a failing required query raises, an optional one is recorded.

    Setting ``cancel`` (from another thread) stops it: nothing new is sent, and it raises
    ``Cancelled`` once the requests in flight have returned. Each response of a ``window`` or
    ``times`` query, and of the range queries named in ``as_runs`` (their ``runs``, not their
    ``series``), is folded as it arrives (``analyzer.prom.folds``): none of them holds every
    chunk's series until the end.
    """
    results = {
        spec.name: QueryResult(
            spec,
            spec.render(
                step_seconds=plan.grid.step,
                span_seconds=plan.span_for(spec),
                rate_window_seconds=plan.rate_window(spec),
            ),
        )
        for spec in specs
    }
    tasks = _tasks(specs, plan)
    chunks: dict[str, dict[int, list[Series]]] = {name: {} for name in results}
    folds: dict[str, WindowFold | TimesFold | RunsFold] = {}
    for spec in specs:
        if spec.kind == "window":
            folds[spec.name] = WindowFold(spec.combine)
        elif spec.kind == "times":
            folds[spec.name] = TimesFold(spec.by, spec.combine)
        elif spec.kind == "range" and spec.name in as_runs:
            folds[spec.name] = RunsFold(plan.grid.step)
    sampled = [spec for spec in specs if spec.kind == "samples"]
    ends = [float(e) for _, e, _ in plan.requests_for(sampled[0])] if sampled else []
    # One joined table per set of ``sum`` labels: queries grouped alike (pod CPU and memory by
    # namespace, pod) share rows; a query grouped otherwise (node memory by instance, node) gets
    # its own table, so no consumer meets rows of another grouping.
    families: dict[tuple[str, ...], list[QuerySpec]] = {}
    for spec in sampled:
        families.setdefault(spec.sum_by, []).append(spec)
    accumulators: dict[str, SampleAccumulator] = {}
    for family in families.values():
        rules = {spec.name: sample_rule(spec, plan.grid, plan.rate_window(spec)) for spec in family}
        grid = plan.grid
        accumulator = SampleAccumulator.on_steps(rules, grid.start, grid.step, grid.points, ends)
        accumulators.update(dict.fromkeys(rules, accumulator))
    done_count = 0
    if progress:
        progress(0, len(tasks))

    since = plan.grid.start - LOOKBACK_SECONDS  # times: samples the range's first step can see

    def run(kind: str, window: tuple[int, int, int], name: str) -> list[Series]:
        start, end, step = window
        if step == 0:  # samples, times: an instant query of selector[span] at end
            spec = results[name].spec
            # Prometheus ≤ 2.x reads selector[span] at ``end`` as [end - span, end]; Prometheus
            # ≥ 3.0 and VictoriaMetrics as (end - span, end]. Asking for a little more and cutting
            # here gives the same samples under both: (start, end] per request, the first one
            # [raw_start, end], so chunks meet without a gap or an overlap. The request also
            # reaches 1 s past ``end``: VictoriaMetrics reads a window ending exactly at 00:00:00
            # UTC without that day's series index (see ``range_reach``), and would miss a series
            # whose first sample is stamped at that midnight.
            at = end + EDGE_OVERLAP_SECONDS
            span = at - start + EDGE_OVERLAP_SECONDS
            expr = spec.render(
                step_seconds=plan.grid.step,
                span_seconds=span,
                rate_window_seconds=plan.rate_window(spec),
            )
            raw = client.query(expr, at, what=_what(name))
            first = start <= plan.raw_start
            raw = [_until(_from(series, start, closed=first), end) for series in raw]
            return time_bounds(raw, since) if kind == "times" else raw
        expr = results[name].expr
        reach = range_reach(end, step)
        answer = client.query_range(expr, start, reach, step, what=_what(name))
        if reach == end:
            return answer
        kept = [_until(series, end) for series in answer]
        return [series for series in kept if len(series.timestamps)]  # only past ``end``: none

    with ThreadPoolExecutor(max_workers=max(1, plan.parallelism)) as pool:
        # In time order across queries (chunk i of pod CPU and of pod memory finish close
        # together, so the accumulator joins and releases them early), and a few at a time:
        # a response waits in its future until this thread takes it, so submitting everything
        # at once would let fetching run ahead of evaluation and hold a week of raw samples.
        queue = iter(sorted(tasks.items(), key=lambda item: item[0][2][1]))
        futures: dict[Future[list[Series]], list[tuple[str, int]]] = {}
        pending: set[Future[list[Series]]] = set()

        def submit(count: int) -> None:
            for (kind, _, window), users in itertools.islice(queue, count):
                future = pool.submit(run, kind, window, users[0][0])
                futures[future] = users
                pending.add(future)

        submit(max(1, plan.parallelism) + 2)
        try:
            while pending:
                finished, pending = wait(pending, timeout=0.5, return_when=FIRST_EXCEPTION)
                if cancel is not None and cancel.is_set():
                    raise Cancelled
                fault = _server_fault(finished)
                if fault is not None:
                    raise fault  # the server failed: no request would fare better
                if client.clock.expired:
                    raise client.clock.deadline_error()
                for future in finished:
                    done_count += 1
                    # popped: a finished future holds its response, which must not outlive this
                    for name, index in futures.pop(future):
                        result = results[name]
                        result.requests += 1
                        try:
                            if result.spec.kind == "samples":
                                if result.error is None:  # evaluated now, raw samples dropped
                                    accumulators[name].add(name, index, future.result())
                            elif name in folds:
                                if result.error is None:  # reduced now, the response dropped
                                    folds[name].add(index, future.result())
                            else:
                                chunks[name][index] = future.result()
                        except SourceError as exc:
                            if result.spec.required:
                                raise
                            result.error = str(exc)
                            if result.spec.kind == "samples":
                                accumulators[name].abandon(name)
                    if progress:
                        progress(done_count, len(tasks))
                # Only now: a failed result above stops the run before anything new is sent.
                submit(len(finished))
                del finished
                release_free_memory()
        except BaseException:
            client.stop()  # retries end, bodies being read are cut: the pool shuts down soon
            for future in pending:
                future.cancel()
            raise
    client.forget_labels([_what(name) for name in results])  # their last labels: not needed
    unique = {id(a): a for a in accumulators.values()}  # one per family; finish() hands over
    tables = {key: accumulator.finish() for key, accumulator in unique.items()}
    for name, result in results.items():
        if result.spec.kind == "samples":
            result.table = tables[id(accumulators[name])] if result.error is None else None
        elif result.error is None and name in folds:
            fold = folds[name]
            if isinstance(fold, RunsFold):
                result.runs = fold.finish()
            else:
                result.series = fold.finish()
        elif result.error is None:
            ordered = [chunks[name][i] for i in sorted(chunks[name])]
            result.series = merge_series(ordered)
    return results


def _server_fault(finished: set[Future[list[Series]]]) -> ServerFault | None:
    """The first server fault among ``finished`` (a request cut short by the stop comes last)."""
    faults = [
        exc
        for future in finished
        if not future.cancelled() and isinstance(exc := future.exception(), ServerFault)
    ]
    faults.sort(key=lambda exc: isinstance(exc, Stopped))
    return faults[0] if faults else None


def sample_rule(spec: QuerySpec, grid: TimeGrid, window: int | None = None) -> SampleRule:
    """The evaluation rule of a ``samples`` query on ``grid``; irate ``window`` seconds (2 × step
    unless given: ``FetchPlan.rate_window``)."""
    return SampleRule(
        rate=spec.rate == "irate",
        window=window or 2 * grid.step,
        lookback=LOOKBACK_SECONDS,
        dedupe=spec.dedupe,
        sum_by=spec.sum_by,
    )
