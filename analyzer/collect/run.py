"""``analyzer collect``: run the query profile over a time range and build a snapshot.

The profile (``queries/*.promql``) runs through ``analyzer.prom`` (chunked, parallel range
queries); the results become the four snapshot tables (``pods``, ``usage``, ``pod_usage``) and a
``meta.json`` with the source URL without credentials, the range, warnings (including Thanos
partial-response warnings) and coverage per query and per node. A failed required query stops the
run (exit 1); a failed optional query, unmapped node-exporter targets or nodes without usage make
the result *partial* (exit 3, snapshot still written); no kube-state-metrics data in the range at
all is ``PartialDataError`` with nothing written.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from analyzer.collect.collect_meta import (
    BuildContext,
    Inventory,
    UsageTally,
    iso_time,
    node_row_counts,
    query_coverage,
    usage_meta,
)
from analyzer.collect.constraints import add_constraints
from analyzer.collect.control_plane import control_plane_versions
from analyzer.collect.enrich import enrich_snapshot
from analyzer.collect.info_answered import check_info_answered
from analyzer.collect.kube_objects import KubeObjects
from analyzer.collect.node_state import NODE_STATE_QUERIES, build_node_state
from analyzer.collect.pod_usage import build_pod_usage
from analyzer.collect.pods import build_pods
from analyzer.collect.usage import NODE_USAGE_QUERIES, NodeMapper, build_node_usage, build_nodes
from analyzer.core.errors import InputError, PartialDataError
from analyzer.core.memory import gc_paused, release_free_memory
from analyzer.core.paths import queries_dir
from analyzer.core.snapshot import Snapshot, make_snapshot
from analyzer.prom.client import PromClient
from analyzer.prom.fetch import (
    DEFAULT_WINDOW_POINTS,
    FetchPlan,
    QueryResult,
    request_count,
    run_profile,
)
from analyzer.prom.profile import QuerySpec, load_profile, require
from analyzer.prom.scrape_interval import (
    PROBES,
    ScrapeInterval,
    detect_intervals,
    rate_window,
    step_note,
)
from analyzer.prom.settings import PromSettings
from analyzer.prom.time_grid import TimeGrid, make_grid

# Queries the collector cannot do without (it looks them up by file name).
CORE_QUERIES = (
    "pod_info",
    "pod_first_seen",
    "pod_last_seen",
    "pod_created",
    "pod_container_requests",
    "pod_container_limits",
    "node_info",
    "node_allocatable",
    "node_first_seen",
    "node_last_seen",
    "node_cpu_busy",
    "node_memory_total",
    "node_memory_available",
    "pod_cpu_usage",
    "pod_memory_working_set",
)


# A week at 1 m is ≈ 400 requests with the bundled profile, a year ≈ 20,000: the default allows
# half a year at 1 m (or years at 5 m) and refuses a mistyped --since 9999d before it runs for
# minutes and grows big; --max-requests raises it.
DEFAULT_MAX_REQUESTS = 10_000


@dataclass(frozen=True)
class CollectRequest:
    """What to collect: where from, which range and step, which profile."""

    settings: PromSettings
    start: datetime
    end: datetime
    step_seconds: int = 60
    queries_dir: Path | None = None
    chunk_points: int | None = None  # None: the budget's ``settings.max_points``
    window_points: int = DEFAULT_WINDOW_POINTS
    extra_resources: tuple[str, ...] = ()
    priority_classes: tuple[tuple[str, int], ...] = ()  # PriorityClass name → value
    max_requests: int = DEFAULT_MAX_REQUESTS  # refuse a larger plan before sending anything
    # --scrape-interval: every source's scrape interval, instead of measuring it
    scrape_interval_seconds: int | None = None
    # --kube-objects: workload templates, nodes, PDBs and PriorityClasses (collect.enrich)
    kube_objects: KubeObjects | None = None
    # What the user typed to give the range (messages name it): --since, a backfill's day, ...
    range_option: str = "--start/--end"


@dataclass
class CollectResult:
    """The snapshot and whether it is partial (exit 3); ``step_note``: the one-line warning
    that ``--step`` is finer than the scrape interval (the CLIs print it)."""

    snapshot: Snapshot
    partial: bool = False
    problems: list[str] = field(default_factory=list)
    step_note: str | None = None


# Summaries (one value per series over the range) are fetched first and become the pods and
# nodes tables; the usage time series follow (see ``collect``).
SUMMARY_KINDS = ("window", "times")


def collect(
    request: CollectRequest, progress: Callable[[int, int], None] | None = None
) -> CollectResult:
    """Collect ``request`` into a snapshot (not written; see ``write_snapshot``).

    Two passes over the profile: the summaries (kube-state-metrics windows, first/last seen),
    then the usage series. The pods and nodes tables are built from the first while the second
    is already fetching, and the summaries' ~30 result series per pod (≈ 0.2 GB of Python
    objects at 500 nodes × 7 days) are dropped before the usage tables grow.
    """
    with gc_paused():
        return _collect(request, progress)


def fetch_plan(request: CollectRequest) -> tuple[Path, dict[str, QuerySpec], TimeGrid, FetchPlan]:
    """The request's query folder, its profile (core queries checked), time grid and fetch plan,
    before any request: shared by the whole-range collect and the day-by-day one (``stream``)."""
    folder = queries_dir(request.queries_dir)
    profile = load_profile(request.queries_dir)
    require(profile, CORE_QUERIES, str(folder))
    grid = make_grid(
        request.start.timestamp(),
        request.end.timestamp(),
        request.step_seconds,
        range_option=request.range_option,
    )
    plan = FetchPlan(
        grid=grid,
        chunk_points=request.chunk_points or request.settings.max_points,
        window_points=request.window_points,
        parallelism=request.settings.parallelism,
    )
    return folder, profile, grid, plan


def _collect(request: CollectRequest, progress: Callable[[int, int], None] | None) -> CollectResult:
    folder, profile, grid, plan = fetch_plan(request)
    summaries = [spec for spec in profile.values() if spec.kind in SUMMARY_KINDS]
    series = [spec for spec in profile.values() if spec.kind not in SUMMARY_KINDS]
    first = request_count(summaries, plan)
    total = first + request_count(series, plan)
    check_size(total, grid, request.max_requests)

    def shifted(offset: int) -> Callable[[int, int], None] | None:
        if progress is None:
            return None
        return lambda done, _: progress(offset + done, total)

    with PromClient(request.settings) as client:
        intervals = scrape_intervals(client, grid, request.scrape_interval_seconds)
        plan = replace(
            plan,
            scrape_seconds=tuple((k, v.seconds) for k, v in intervals.items() if v.seconds),
        )
        first = request_count(summaries, plan)  # wider windows may reach one chunk further back
        total = first + request_count(series, plan)
        results = run_profile(client, summaries, plan, shifted(0))
        context = BuildContext(
            source=client.public_url,
            profile=str(folder),
            extra_resources=request.extra_resources,
            priorities=request.priority_classes,
            scrape=scrape_meta(intervals, plan),
        )
        cancel = threading.Event()
        with ThreadPoolExecutor(max_workers=1) as runner:
            usage = runner.submit(
                run_profile, client, series, plan, shifted(first), cancel, NODE_STATE_QUERIES
            )
            try:
                inventory = build_inventory(results, grid, context)
            except BaseException:
                cancel.set()
                raise
            finally:
                del results  # the summary series; the inventory holds what they said
            release_free_memory()
            usage_results = usage.result()
        warnings = list(client.warnings)
    release_free_memory()  # the responses are gone; give their pages back before building
    context = replace(context, warnings=tuple(warnings))
    result = finish_snapshot(inventory, usage_results, grid, context)
    return finish_result(result, request, plan, total, intervals)


def finish_result(
    result: CollectResult,
    request: CollectRequest,
    plan: FetchPlan,
    requests: int,
    intervals: dict[str, ScrapeInterval],
) -> CollectResult:
    """The step note, the query budget and Thanos entries of meta, and ``--kube-objects``."""
    result.step_note = step_note(plan.grid.step, intervals)
    result.snapshot.meta.extra["query_budget"] = query_budget_meta(plan, requests)
    if request.settings.thanos is not None:  # at which resolution the data was read
        result.snapshot.meta.extra["thanos"] = request.settings.thanos.to_meta()
    if request.kube_objects is not None:
        result.snapshot, _ = enrich_snapshot(result.snapshot, request.kube_objects)
    return result


def query_budget_meta(plan: FetchPlan, requests: int) -> dict[str, int]:
    """``meta.extra["query_budget"]``: the budget the run kept (``--max-points-per-request``,
    ``--max-in-flight``), the seconds of raw samples one request spans, and the requests sent."""
    return {
        "max_points_per_request": plan.chunk_points,
        "max_in_flight": plan.parallelism,
        "raw_span_seconds": plan.sample_span,
        "requests": requests,
    }


def scrape_intervals(
    client: PromClient, grid: TimeGrid, override: int | None
) -> dict[str, ScrapeInterval]:
    """Every source's scrape interval: ``--scrape-interval`` when given, else measured."""
    if override is not None:
        if override < 1:
            raise InputError(f"--scrape-interval: {override}s must be at least 1s")
        return {s: ScrapeInterval(s, override, "--scrape-interval") for s in PROBES}
    return detect_intervals(client, grid.start, grid.end)


def scrape_meta(intervals: dict[str, ScrapeInterval], plan: FetchPlan) -> dict[str, Any]:
    """``meta.extra["scrape"]``: per source the interval (seconds, null when not measured), how
    it was found, and the irate window (seconds) its usage queries used."""
    return {
        source: {
            "interval_seconds": item.seconds,
            "method": item.method,
            "rate_window_seconds": rate_window(plan.grid.step, item.seconds),
        }
        for source, item in intervals.items()
    }


def check_size(requests: int, grid: TimeGrid, limit: int) -> None:
    """Refuse a plan of more than ``limit`` requests (``InputError``, exit 2) before any is sent."""
    if limit < 1:
        raise InputError(f"--max-requests: {limit} must be at least 1")
    if requests > limit:
        raise InputError(
            f"the range {iso_time(grid.start)} .. {iso_time(grid.end)} is {grid.points:,} steps of "
            f"{grid.step}s, {requests:,} requests (more than --max-requests {limit:,}); shorten "
            f"the range, raise --step, or pass --max-requests {requests} to fetch it all"
        )


def build_snapshot(
    results: dict[str, QueryResult], grid: TimeGrid, context: BuildContext
) -> CollectResult:
    """Turn the profile's results into a snapshot; pure (no network), so tests can feed it."""
    return finish_snapshot(build_inventory(results, grid, context), results, grid, context)


def build_inventory(
    results: dict[str, QueryResult], grid: TimeGrid, context: BuildContext
) -> Inventory:
    """The pods and nodes tables from the summary queries of ``results``, whose series it then
    releases (``PartialDataError`` when kube-state-metrics has nothing in the range)."""
    pods = build_pods(
        results, grid.end, grid.step, context.extra_resources, dict(context.priorities)
    )
    nodes = build_nodes(results, context.extra_resources)
    if pods.empty and nodes.empty:
        raise PartialDataError(
            f"no kube-state-metrics data between {iso_time(grid.start)} and {iso_time(grid.end)} at "
            f"{context.source} (kube_pod_info and kube_node_info are empty); check the range and "
            "that kube-state-metrics is scraped ('analyzer check')"
        )
    check_info_answered(results, iso_time(grid.start), iso_time(grid.end), context.source)
    warnings = add_constraints(results, nodes, pods)
    mapper = NodeMapper.from_results(nodes, results)
    consumed = {n: r for n, r in results.items() if r.spec.kind in SUMMARY_KINDS}
    queries = query_coverage(consumed)
    failed = [
        f"optional query {r.spec.name} failed: {r.error}"
        for r in consumed.values()
        if r.error is not None
    ]
    control_plane = control_plane_versions(results)
    for result in consumed.values():
        result.series = []  # counted in ``queries``; the tables hold what they said
    return Inventory(pods, nodes, mapper, list(warnings), queries, failed, control_plane)


def finish_snapshot(
    inventory: Inventory,
    results: dict[str, QueryResult],
    grid: TimeGrid,
    context: BuildContext,
) -> CollectResult:
    """Add the usage tables (from the range and samples queries of ``results``) and meta."""
    nodes, pods, mapper = inventory.nodes, inventory.pods, inventory.mapper
    usage = {n: r for n, r in results.items() if r.spec.kind not in SUMMARY_KINDS}
    # before the usage builders consume the sample tables
    queries = {**inventory.queries, **query_coverage(usage)}
    node_state = build_node_state(usage, nodes, grid)
    node_usage = build_node_usage(usage, mapper, grid)
    release_tables(usage, NODE_USAGE_QUERIES)  # node rows are in node_usage now
    pod_usage, unmatched = build_pod_usage(usage, pods, grid)
    errors = [(r.spec.name, r.error) for r in usage.values() if r.error is not None]
    tally = UsageTally(node_rows=node_row_counts(node_usage), pod_rows=len(pod_usage))
    meta, problems = usage_meta(inventory, context, grid, queries, errors, tally, unmatched)
    snapshot = make_snapshot(meta, nodes, pods, node_usage, pod_usage, node_state=node_state)
    return CollectResult(snapshot, partial=bool(problems), problems=problems)


def release_tables(results: dict[str, QueryResult], names: tuple[str, ...]) -> None:
    """Drop the sample tables of ``names`` that no other query's result shares."""
    keep = {id(r.table) for n, r in results.items() if n not in names and r.table is not None}
    for name in names:
        result = results.get(name)
        if result is not None and id(result.table) not in keep:
            result.table = None
