"""``analyzer collect`` one UTC day at a time: the usage tables never held whole.

``analyzer.collect.run.collect`` fetches the usage series of the whole range and builds the
usage tables in memory before anything is written: its peak grows with the number of days
(a week of 5,000 nodes at 1 m is ≈ 0.5 billion pod-usage rows). ``collect_to`` instead

1. fetches the summaries (kube-state-metrics windows, first/last seen) and the node-state and
   any other whole-range queries over the range, and builds the pods and nodes tables, as
   ``collect`` does (no kube-state-metrics data: ``PartialDataError``, nothing written);
2. for each UTC day of the range (grid points in ``(midnight, next midnight]``: a sample at
   00:00 closes the day before, docs/snapshot.md "Day partitions"), fetches that day's node and
   pod usage requests, builds that day's rows with the same builders and appends them to the
   two usage parquet files as that day's row groups (``DayGroupWriter``);
3. writes the small tables and ``meta.json`` last, into the same temporary folder, which then
   replaces ``--out`` as a whole (``analyzer.core.atomic``): a failure on any day leaves nothing.

The usage values at a grid point depend only on the samples a look-back or irate window before
it (raw samples are evaluated here exactly as Prometheus does; a range query's point does not
depend on the request's range), so a day's rows equal that day's rows of the whole-range fetch:
the snapshot is the same (tests/test_collect_stream.py compares both). What differs is meta's
request counts: a day's raw requests start at its midnight, so the range needs a few more.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType

import numpy as np

from analyzer.collect.collect_meta import (
    BuildContext,
    UsageTally,
    node_row_counts,
    query_coverage,
    usage_meta,
)
from analyzer.collect.node_state import NODE_STATE_QUERIES, build_node_state
from analyzer.collect.pod_usage import CPU_QUERY, MEMORY_QUERY, UnmatchedKey, pod_usage_rows
from analyzer.collect.run import (
    SUMMARY_KINDS,
    CollectRequest,
    CollectResult,
    build_inventory,
    check_size,
    fetch_plan,
    finish_result,
    release_tables,
    scrape_intervals,
    scrape_meta,
)
from analyzer.collect.usage import NODE_USAGE_QUERIES, build_node_usage
from analyzer.core.atomic import atomic_directory, signal_handler
from analyzer.core.daygroups import DAY_NS, DayGroupWriter
from analyzer.core.errors import EXIT_SIGNAL_BASE
from analyzer.core.memory import gc_paused, release_free_memory
from analyzer.core.outdir import names_matching
from analyzer.core.snapshot import SNAPSHOT_FILES, make_snapshot, write_snapshot_files
from analyzer.core.snapshot_schema import coerce_table, empty_table
from analyzer.prom.client import PromClient, series_key
from analyzer.prom.fetch import QueryResult, request_count, run_profile
from analyzer.prom.profile import QuerySpec
from analyzer.prom.time_grid import TimeGrid

DAY_SECONDS = DAY_NS // 10**9
# The queries whose rows are fetched and built one day at a time: the two usage tables'.
DAILY_QUERIES = (*NODE_USAGE_QUERIES, CPU_QUERY, MEMORY_QUERY)

Progress = Callable[[int, int], None]


def day_grids(grid: TimeGrid) -> list[TimeGrid]:
    """``grid``'s points split by UTC day: each part holds the points ``t`` of one day,
    ``midnight < t <= next midnight`` (00:00 closes the day before), oldest first."""
    parts = []
    first = grid.start
    while first <= grid.end:
        closing = -(-first // DAY_SECONDS) * DAY_SECONDS  # the midnight at or after ``first``
        last = min(grid.end, closing // grid.step * grid.step)  # grid points are step multiples
        parts.append(TimeGrid(first, last, grid.step))
        first = last + grid.step
    return parts


@dataclass
class Streamed:
    """What ``collect_to`` wrote: the result (its snapshot's usage tables are empty: they are
    on disk) and the rows the usage files got."""

    result: CollectResult
    node_usage_rows: int
    pod_usage_rows: int


@dataclass
class _Seen:
    """Per daily query, across days: its distinct series, requests and first error."""

    series: dict[str, set[object]]
    requests: dict[str, int]
    errors: dict[str, str]

    def add(self, results: dict[str, QueryResult]) -> None:
        for name, result in results.items():
            self.requests[name] = self.requests.get(name, 0) + result.requests
            if result.error is not None:
                self.errors.setdefault(name, result.error)
            self.series.setdefault(name, set()).update(_series_keys(result))

    def coverage(self, specs: list[QuerySpec]) -> dict[str, dict[str, object]]:
        """``query_coverage``'s entries, counted over every day."""
        return {
            spec.name: {
                "series": len(self.series.get(spec.name, ())),
                "requests": self.requests.get(spec.name, 0),
                "error": self.errors.get(spec.name),
                "required": spec.required,
            }
            for spec in sorted(specs, key=lambda s: s.name)
        }


def _series_keys(result: QueryResult) -> set[object]:
    """The label sets ``result`` answered with (``QueryResult.series_count`` counts them)."""
    table = result.table
    if table is not None and result.spec.name in table.names:
        seen = np.zeros(len(table.groups), dtype=bool)
        for group, _, values in table.parts:
            seen[group[~np.isnan(values[result.spec.name])]] = True
        return {tuple(sorted(table.groups[g].items())) for g in np.flatnonzero(seen)}
    return {series_key(series) for series in result.series}


def collect_to(request: CollectRequest, out: Path, progress: Progress | None = None) -> Streamed:
    """Collect ``request`` into the snapshot folder ``out``, one UTC day of usage at a time.

    Peak memory is about one day's usage rows plus the pods and nodes tables, whatever the
    number of days. ``out`` appears complete or not at all.
    """
    with gc_paused():
        return _collect_to(request, Path(out), progress)


def _collect_to(request: CollectRequest, out: Path, progress: Progress | None) -> Streamed:
    folder, profile, grid, plan = fetch_plan(request)
    daily = [s for s in profile.values() if s.name in DAILY_QUERIES]
    whole = [s for s in profile.values() if s.name not in DAILY_QUERIES]
    # the same refusal as ``collect`` (the whole-range plan), before any request
    check_size(request_count(whole, plan) + request_count(daily, plan), grid, request.max_requests)
    with PromClient(request.settings) as client:
        intervals = scrape_intervals(client, grid, request.scrape_interval_seconds)
        plan = replace(
            plan,
            scrape_seconds=tuple((k, v.seconds) for k, v in intervals.items() if v.seconds),
        )
        days = [replace(plan, grid=part) for part in day_grids(grid)]
        first = request_count(whole, plan)
        total = first + sum(request_count(daily, day) for day in days)
        results = run_profile(
            client, whole, plan, _shifted(progress, 0, total), as_runs=NODE_STATE_QUERIES
        )
        context = BuildContext(
            source=client.public_url,
            profile=str(folder),
            extra_resources=request.extra_resources,
            priorities=request.priority_classes,
            scrape=scrape_meta(intervals, plan),
        )
        inventory = build_inventory(results, grid, context)  # no KSM data: raises, nothing written
        state = {n: r for n, r in results.items() if r.spec.kind not in SUMMARY_KINDS}
        del results
        node_state = build_node_state(state, inventory.nodes, grid)
        release_free_memory()  # the summaries' series are gone: their pages back before day 1
        seen = _Seen({}, {}, {})
        tally = UsageTally()
        unmatched: set[UnmatchedKey] = set()
        with atomic_directory(out, names_matching(SNAPSHOT_FILES)) as tmp:
            node_file = DayGroupWriter(tmp / "node_usage.parquet")
            pod_file = DayGroupWriter(tmp / "pod_usage.parquet")
            try:
                done = first
                for day in days:
                    with _exit_on_signal(tmp):
                        usage = run_profile(client, daily, day, _shifted(progress, done, total))
                    done += request_count(daily, day)
                    seen.add(usage)
                    node_usage = build_node_usage(usage, inventory.mapper, day.grid)
                    release_tables(usage, NODE_USAGE_QUERIES)  # node rows are in node_usage now
                    pod_usage, missing = pod_usage_rows(usage, inventory.pods, day.grid)
                    del usage
                    unmatched |= missing
                    tally.add(node_row_counts(node_usage), len(pod_usage))
                    node_file.append(coerce_table(node_usage, "node_usage"))
                    del node_usage
                    pod_file.append(coerce_table(pod_usage, "pod_usage"))
                    del pod_usage
                    release_free_memory()  # the day's pages back before the next day's fetch
                node_file.close(empty_table("node_usage"))
                pod_file.close(empty_table("pod_usage"))
            except BaseException:
                node_file.abort()
                pod_file.abort()
                raise
            warnings = list(client.warnings)
            context = replace(context, warnings=tuple(warnings))
            queries = {**inventory.queries, **query_coverage(state), **seen.coverage(daily)}
            errors = _errors(profile, state, seen)
            meta, problems = usage_meta(
                inventory, context, grid, queries, errors, tally, len(unmatched)
            )
            snapshot = make_snapshot(
                meta,
                inventory.nodes,
                inventory.pods,
                empty_table("node_usage"),
                empty_table("pod_usage"),
                node_state=node_state,
            )
            result = CollectResult(snapshot, partial=bool(problems), problems=problems)
            result = finish_result(result, request, plan, total, intervals)
            write_snapshot_files(result.snapshot, tmp, usage=False)
    return Streamed(result, node_file.rows, pod_file.rows)


@contextlib.contextmanager
def _exit_on_signal(tmp: Path) -> Iterator[None]:
    """While a day's requests are out: SIGTERM/SIGINT remove the temporary folder and end the
    run at once (exit 128 + signal, one line).

    Inside an atomic write a signal normally unwinds (``analyzer.core.atomic``), and unwinding
    here would wait for the requests in flight: up to ``--timeout`` on a server that hangs. No
    file is being written during a fetch, so removing the folder is all the cleaning there is
    (the earlier days' rows go with it; an earlier snapshot at ``--out`` is untouched).
    """

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_IGN)
        shutil.rmtree(tmp, ignore_errors=True)
        name = signal.Signals(signum).name
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.write(f"analyzer: error: stopped by {name}; nothing was written\n")
            sys.stderr.flush()
        os._exit(EXIT_SIGNAL_BASE + signum)

    with signal_handler(on_signal):
        yield


def _errors(
    profile: dict[str, QuerySpec], state: dict[str, QueryResult], seen: _Seen
) -> list[tuple[str, str]]:
    """(query, error) of the failed non-summary queries in profile order, as
    ``finish_snapshot`` lists them."""
    errors = []
    for spec in profile.values():
        if spec.kind in SUMMARY_KINDS:
            continue
        error = state[spec.name].error if spec.name in state else seen.errors.get(spec.name)
        if error is not None:
            errors.append((spec.name, error))
    return errors


def _shifted(progress: Progress | None, offset: int, total: int) -> Progress | None:
    """``progress`` of one ``run_profile`` call as part of the whole run's requests."""
    if progress is None:
        return None
    return lambda done, _: progress(offset + done, total)
