"""``analyzer demo``: the whole pipeline on a synthetic cluster, with no Prometheus.

Generates the synthetic cluster (fixed seed), writes its snapshot, exports NodeMetric aggregates
at the end of the data, evaluates threshold violations over the whole period, and writes one
nightly report per day (oldest first, so the history store gives each report its deltas vs the
previous day and the index lists every day), then the what-if comparison of the presets and a
demo-sized configuration search (``OUT/whatif/search.html``). The default size is 200 nodes × 7
days at a 5-minute step.

The cluster has three zones and the generator's pod constraints (``sources/pod_constraints.py``:
topology spread constraints and pod (anti-)affinity on the shop's services, coredns and the
renderer, PodDisruptionBudgets and PriorityClasses in the snapshot's objects), so the replays
exercise PodTopologySpread and InterPodAffinity. The observed placement (the generator's crowding
placement) honours the required ones as a real cluster does: a pod with required pod
(anti-)affinity or a DoNotSchedule spread constraint only goes where kube-default's filters allow
(``sources/constrained_placement.py``); the preferred ones are left to the replays' scoring.

The demo stores ~90 days of pool and workload history (``OUT/reports/history/pools|workloads``,
``history_days``): the days before the snapshot are the same growing cluster generated a week at
a time at a 1-hour step (``nightly.synthetic_history``; ``DemoSettings.history_rollouts`` could
roll them out less often, at a price in the forecasts: ``DEMO_HISTORY_ROLLOUTS``), so that the
last days come from the nightly runs themselves and the monthly review has months of trend to
show. They do not depend on the run: at the default settings they are the package's
(``cli/demo_shipped.py``: the same rows, read in a fraction of a second, said so on the terminal
and the pages); other settings or ``--regenerate-history`` generate them in a forked process
(``cli/background.py``) from the demo's start, beside the snapshot's generation and the nightly
pages (which read no coarse day). Either way they are written in day order once the nightly pages
are.

The what-if comparison and the search read only the snapshot and nothing after them reads their
result: they run in a forked process (``cli/background.py``) from the moment the snapshot is
written, beside the history, the nightly reports and the monthly review, and write their pages
there; the portal is written once they are done. That process is niced (``WHATIF_NICE``): it
takes the cores the main line leaves idle, not half of those the main line waits on. It
prepares the replayed window once and forks its comparison's pool and its cluster-autoscaler
row (beside that pool) with it. The nightly days are computed one forked worker ahead of the
pages (``cli/demo_nightly.py``), and the monthly review's growth replay (``cli/demo_growth.py``,
its months in two processes) runs in a forked process beside the review's scenarios and charts,
from the moment the history is final. ``bench/demo.py`` times every phase.

The what-if, the search and the monthly scenarios replay the snapshot's busiest 2 whole days
(``DemoSettings.replay_days``, ``analyzer demo --window``; ``whatif/busiest.py``), not all 7:
the replays were over half the demo's CPU and cost about in proportion to the window. Each page
says which days it replayed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from pathlib import Path

import pandas as pd
import yaml

from analyzer.cli.background import Background
from analyzer.cli.demo_coarse import (
    History,
    demo_crowded,
    generate_history_rows,
    given,
    shipped_history,
    shipped_note,
    write_history,
)
from analyzer.cli.demo_growth import demo_growth
from analyzer.cli.demo_ledger import seed_last_month
from analyzer.cli.demo_nightly import nightly_results
from analyzer.core.atomic import atomic_write_text
from analyzer.core.outdir import check_output_folder, names_matching
from analyzer.core.snapshot import Snapshot, write_snapshot
from analyzer.core.yamltext import SAFE_DUMPER
from analyzer.history.identity import adopt, check_identity, identity_for
from analyzer.monthly.months import last_complete_month
from analyzer.monthly.review import ReviewSettings, build_review, history_days
from analyzer.nightly.run import NightlyResult, NightlySettings
from analyzer.nightly.synthetic_history import DayRows
from analyzer.replay.autoscale_setup import (
    AutoscalerSettings,
    GroupBounds,
    node_pools,
    parse_settings,
)
from analyzer.replay.input import ARRIVALS
from analyzer.report.monthly import joint_settings, write_monthly_report
from analyzer.report.monthly_rightsize import DEFAULT_RECIPE
from analyzer.report.nightly_report import ReportPaths, write_nightly_report
from analyzer.report.portal import write_portal
from analyzer.report.search import write_search_report
from analyzer.report.whatif import DEMO_STRATEGIES, FOLDER, write_whatif_report
from analyzer.scheduling.cluster_version import snapshot_version
from analyzer.sources.constrained_placement import constrained_crowding_place
from analyzer.sources.spec import SyntheticSpec
from analyzer.sources.synthetic import generate
from analyzer.usage.aggregate import DEFAULT_DURATIONS, to_nodemetrics, window_aggregates
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.usage.violations import find_violations
from analyzer.whatif.autoscaled import run_autoscaled
from analyzer.whatif.busiest import replay_window
from analyzer.whatif.compare import prepared_inputs, resolve_strategy, run_whatif
from analyzer.whatif.search import (
    SearchSettings,
    grid_files,
    restrict,
    search_result,
    search_settings,
)
from analyzer.whatif.search_grid import SearchGrid

# The demo cluster's density: 60–75 % of cpu requested on the general pool, a dedicated (tainted)
# memory pool that fills up, workloads that request about twice the cpu they use (as most
# clusters do), hot nodes whose own processes burn (so a placement cannot move the heat), and a
# few crowded nodes whose cpu ran out with memory left over (stranded capacity).
#
# Its growth (the monthly review's data): the replicas of the workloads free to run in any open pool
# grow 3 %/month, the GPU pool's 5 %/month and the memory pool's session caches 15 %/month (that
# pool runs out of memory within the review's 180-day horizon, the others do not); the media
# team's `renderer` grows fast (20 %/month). The first snapshot day has the density above, earlier
# days had fewer replicas. App cpu usage dips 30 % on weekends and its level varies from day to day
# (σ 5 %); the media and analytics teams use a quarter of what the other teams use for the same
# requests (they over-request).
#
# Its topology: nodes round robin over three zones per pool, and the generator's pod constraints
# (spread over zones and hostnames, required and preferred pod anti-affinity, a preferred pod
# affinity). They draw no random number; the observed placement honours the required ones (the
# constrained pods' nodes), the preferred ones only change what the replays may do.
DEMO_GROWTH = (("*", 0.03), ("gpu", 0.05), ("memory", 0.15))
DEMO_FAST_GROWTH = (("renderer", 0.20),)
DEMO_TEAMS = (("media", 0.25), ("analytics", 0.25))
DEMO_ZONES = 3
DEMO_AUTOSCALED = "most-allocated"  # the what-if's one row under cluster-autoscaler
# The demo cluster's node count never changes, so each pool's observed range (the default
# bounds of its node group) would be one size, at which CA may remove no node: the demo lets
# it go down to none, and says so on the page.
DEMO_AUTOSCALER_NOTE = (
    "The demo's cluster-autoscaler row lets each pool go down to no node (autoscaler.node-groups "
    "minSize 0, set by the demo; maxSize stays the pool's observed size). With a snapshot of "
    "your cluster both bounds default to each pool's observed range: a pool whose node count "
    "never changed keeps all its nodes under the autoscaler unless you set its minSize."
)
# The demo replays its snapshot's busiest 2 days, not all 7: the replays' cost is about
# proportional to the window, and they were over half the demo's CPU (docs/benchmarks.md
# "demo60b"); the pages say which days.
DEMO_REPLAY_DAYS = 2
# The coarse history days' rollouts per Deployment a day: None, the snapshot's churn (every 2
# days). Measured (docs/benchmarks.md "demohist2"): 0.1 (every 10 days) places ~5,000 pods a
# week instead of ~10,200 and costs 0.55x the history's CPU, but the days' request peaks get
# more correlated from day to day (pods stay where a week's start put them), and the monthly
# review then no longer finds the general pool's level shift at the demo's adoption (2026-10-07):
# its forecast is fitted through the step and its decision moves from 27 to 37 nodes. Not taken.
DEMO_HISTORY_ROLLOUTS: float | None = None
# The what-if and search process's niceness (``Background``): nothing reads its pages before the
# demo's end, so it takes the cores the history, the nightly pages and the monthly review leave
# idle (one while a nightly page renders alone) instead of half the cores they wait on.
WHATIF_NICE = 10


def demo_spec(seed: int, nodes: int, days: int, step: int) -> SyntheticSpec:
    """The demo's ``SyntheticSpec`` (the density and growth above)."""
    return SyntheticSpec(
        seed=seed,
        nodes=nodes,
        days=days,
        step=step,
        pods_per_node=11.0,
        usage_scale=0.5,
        dedicated_pools=("memory",),
        hot_by_node=True,
        growth=DEMO_GROWTH,
        fast_growth=DEMO_FAST_GROWTH,
        weekend_dip=0.3,
        day_noise=0.05,
        team_usage=DEMO_TEAMS,
        zones=DEMO_ZONES,
        pod_constraints=True,
    )


# A demo-sized search: MostAllocated packing with LoadAwareScheduling at two cpu thresholds.
# Every preset of the what-if page is a baseline: the combined comparison replays them anyway, and
# a search that left one out could recommend a configuration the page beside it shows beaten on
# every figure (it did: most-allocated at 161 nodes and 53 violations next to rtcr-binpack's 160
# and 42).
DEMO_GRID = SearchGrid(
    scoring=("MostAllocated",),
    loadaware_thresholds=((("cpu", 35), ("memory", 95)), (("cpu", 45), ("memory", 95))),
    loadaware_weights=(1,),
    baselines=DEMO_STRATEGIES,
)

# What a demo folder holds (and our temporary names): any other entry means it is not ours.
DEMO_FILES = names_matching(
    (
        *("snapshot", "nodemetrics.yaml", "violations.json", "reports", "whatif", "monthly"),
        "index.html",
        *(".snapshot.*", ".whatif.*", ".monthly.*", ".nodemetrics.yaml.*.tmp", ".index.html.*.tmp"),
        ".violations.json.*.tmp",
    )
)


@dataclass(frozen=True)
class DemoSettings:
    """The demo's size and where it writes (``report_days``: nightly reports for the last N days)."""

    out: Path = Path("analyzer-demo")
    seed: int = 42
    nodes: int = 200
    days: int = 7
    step_seconds: int = 300
    report_days: int | None = None  # None = every day of the snapshot
    settings: NightlySettings = field(default_factory=NightlySettings)
    # Days of pool and workload history in OUT/reports/history/, the snapshot's days included;
    # the days before the snapshot are generated at ``history_step``.
    history_days: int = 90
    history_step: int = 3600
    # Rollouts per Deployment per day on those days (None: the spec's churn, 0.5, as on the
    # snapshot's days): each rollout places every replica again, the history's main cost; fewer
    # change the monthly review's forecasts (DEMO_HISTORY_ROLLOUTS says how).
    history_rollouts: float | None = DEMO_HISTORY_ROLLOUTS
    # The replays (what-if, search, the monthly scenarios) cover the snapshot's busiest this many
    # whole days (``--window``), each page saying which; None: the what-if replays the whole
    # snapshot and the monthly review its busiest week (a user's defaults).
    replay_days: int | None = DEMO_REPLAY_DAYS
    # Generate the coarse days even when the package ships them (``--regenerate-history``).
    regenerate_history: bool = False


@dataclass(frozen=True)
class DemoResult:
    """What the demo wrote, and the latest nightly result."""

    snapshot_dir: Path
    nodemetrics: Path
    violations: Path
    reports_dir: Path
    latest: ReportPaths
    latest_result: NightlyResult
    reports: int
    whatif_html: Path
    whatif_recommendation: str
    search_html: Path
    search_sentence: str
    portal: Path  # OUT/index.html: every report above, one click away
    history_days: int  # days with pool and workload rows in reports/history/
    history_note: str | None  # the coarse days were shipped with the package: how they were made
    monthly_html: Path
    seconds: float


def _days(snapshot: Snapshot) -> list[date]:
    """UTC days with at least half the samples of the fullest day (not a lone midnight sample)."""
    stamps = snapshot.node_usage["timestamp"]
    # A sample at t covers (t - step, t]: a day holds the samples after its midnight up to the next.
    counts = (stamps - pd.Timedelta(1, "ns")).dt.floor("D").value_counts()
    full = counts[counts >= counts.max() / 2]
    return sorted(pd.Timestamp(day).date() for day in full.index)


def _whatif_pages(
    whole: Snapshot, out: Path, thresholds: ThresholdConfig, replay_days: int | None
) -> tuple[Path, str, Path, str]:
    """The what-if page of the presets and the search page of the demo's grid, from one
    comparison (one process pool, observed and kube-default replayed once) over the busiest
    ``replay_days`` of the snapshot (``--window``; None: all of it), split in two:
    (what-if page, its recommendation, search page, its sentence).

    The window is prepared once, here: the comparison's pool processes and the
    cluster-autoscaler row, replayed in a forked process beside that pool, are forked with it
    (the same prepared input each used to prepare for itself)."""
    snapshot, window = replay_window(whole, replay_days)
    said = [window] if window else []  # both pages say which days they replayed, first
    search_settings_ = SearchSettings(grid=DEMO_GRID, thresholds=thresholds)
    with grid_files(DEMO_GRID.configs()) as files:
        settings = search_settings(search_settings_, list(files), *DEMO_STRATEGIES)
        inputs = prepared_inputs(snapshot, settings.arrivals)
        # one row under cluster-autoscaler (docs/autoscaling.md "In the replay"): most-allocated
        # with CA's defaults; the page charts its node count against the observed
        version = snapshot_version(snapshot, settings.kubernetes_version).version
        ca_job = Background(
            run_autoscaled,
            inputs[ARRIVALS[0]][0],
            resolve_strategy(DEMO_AUTOSCALED, version),
            0,
            demo_autoscaler(snapshot),
        )
        try:
            combined = run_whatif(snapshot, settings, inputs=inputs)
            ca_row = ca_job.result()
        finally:
            ca_job.stop()
    whatif = restrict(combined, DEMO_STRATEGIES, snapshot, combined.kubernetes_version)
    whatif = replace(
        whatif,
        autoscaler="cluster-autoscaler",
        autoscaled=[ca_row],
        notes=[*said, DEMO_AUTOSCALER_NOTE, *whatif.notes],
    )
    search = search_result(combined, files, search_settings_, snapshot)
    search.notes = [*said, *search.notes]
    whatif_paths = write_whatif_report(whatif, out / FOLDER, search=search.first_screen())
    # written after the what-if report, which replaces OUT/whatif/ as a whole
    search_paths = write_search_report(search, out / FOLDER)
    return whatif_paths.html, whatif.recommendation, search_paths.html, search.sentence


def demo_autoscaler(snapshot: Snapshot) -> AutoscalerSettings:
    """CA's defaults with every pool's minSize 0 (``DEMO_AUTOSCALER_NOTE``)."""
    return replace(
        parse_settings(None),
        groups={pool: GroupBounds(min_size=0) for pool in set(node_pools(snapshot.nodes))},
        groups_from="the demo",
    )


def run_demo(settings: DemoSettings, progress: Callable[[str], None] | None = None) -> DemoResult:
    """Run the demo (see the module docstring) and return where everything is."""
    say = progress or (lambda _msg: None)
    began = time.monotonic()
    out = Path(settings.out)
    check_output_folder(out, DEMO_FILES, what="a demo folder", inside=True)
    spec = demo_spec(settings.seed, settings.nodes, settings.days, settings.step_seconds)
    # The days before the snapshot do not depend on it: the package ships the default demo's
    # (cli/demo_shipped.py); other settings generate them in a forked process (its own 2-worker
    # pool) from now on, beside the snapshot's generation (one core, the other idle otherwise),
    # and they are written in order once the history folder is checked.
    shipped = shipped_history(spec, settings)
    history_job: Background[list[list[DayRows]]] | None = None
    if shipped is None:
        history_job = Background(generate_history_rows, spec, settings)
        history = History(history_job.result, None)
    else:
        history = History(given(shipped), shipped_note())
    whatif_job: Background[tuple[Path, str, Path, str]] | None = None
    try:
        say(
            f"generating a synthetic cluster: {spec.nodes} nodes × {spec.days:g} days, "
            f"step {spec.step}s"
        )
        snapshot = generate(spec, place=constrained_crowding_place(demo_crowded(spec))).snapshot
        snapshot_dir = write_snapshot(snapshot, out / "snapshot")
        say(f"snapshot written to {snapshot_dir}")
        # The what-if and the search read the snapshot alone and nothing below reads them: they
        # replay in a forked process beside the history, the nightly reports and the monthly
        # review (the second core is otherwise idle while one nightly page renders), and their
        # pages are written there; the same computation as in line, in another process.
        whatif_job = Background(
            _whatif_pages,
            snapshot,
            out,
            settings.settings.thresholds,
            settings.replay_days,
            nice=WHATIF_NICE,
        )
        return _after_snapshot(
            settings, spec, snapshot, snapshot_dir, history, whatif_job, say, began
        )
    finally:
        if history_job is not None:
            history_job.stop()
        if whatif_job is not None:
            whatif_job.stop()


def _after_snapshot(
    settings: DemoSettings,
    spec: SyntheticSpec,
    snapshot: Snapshot,
    snapshot_dir: Path,
    coarse: History,
    whatif_job: Background[tuple[Path, str, Path, str]],
    say: Callable[[str], None],
    began: float,
) -> DemoResult:
    """Everything after the snapshot, while ``whatif_job`` replays (``run_demo``)."""
    out = Path(settings.out)
    reports_dir = out / "reports"
    # The demo's history is of one cluster, the generated one: recorded before its first day.
    identity = identity_for(snapshot.meta.source, None)
    check_identity(reports_dir / "history", identity)
    adopt(reports_dir / "history", identity)

    at = pd.Timestamp(snapshot.node_usage["timestamp"].max())
    durations: list[timedelta] = list(DEFAULT_DURATIONS)
    aggregates = window_aggregates(
        snapshot.node_usage, at=at, durations=durations, method=settings.settings.method
    )
    objects = to_nodemetrics(snapshot, aggregates, at=at)
    nodemetrics = out / "nodemetrics.yaml"
    # libyaml's emitter (1.2 s less of the demo's critical path than PyYAML's pure-Python one);
    # on the generator's names and numbers it writes the same bytes (tests/test_demo.py)
    atomic_write_text(nodemetrics, yaml.dump_all(objects, Dumper=SAFE_DUMPER, sort_keys=False))
    say(f"NodeMetric aggregates at {at:%Y-%m-%d %H:%M} UTC written to {nodemetrics}")

    violations = find_violations(snapshot, settings.settings.thresholds)
    violations_path = out / "violations.json"
    atomic_write_text(violations_path, json.dumps(violations.to_dict(), indent=1) + "\n")
    say(
        f"{violations.count} threshold breach(es) over the whole period written to {violations_path}"
    )

    days = _days(snapshot)
    if settings.report_days is not None:
        days = days[-settings.report_days :]
    latest: ReportPaths | None = None
    result: NightlyResult | None = None
    for day, result in zip(days, nightly_results(snapshot, settings.settings, days), strict=True):
        latest = write_nightly_report(result, reports_dir)
        say(f"nightly report for {day} written to {latest.html}")
    assert latest is not None and result is not None  # a snapshot always has at least one day
    # The coarse days are written only now: a nightly page reads the store's earlier *reports*
    # (summaries and node rollups, which the coarse days do not have), never its pools, workloads
    # or headroom, so the pages above were written while the history's process still ran; the
    # monthly review below is the first reader of the coarse days.
    history = write_history(spec, settings, reports_dir / "history", coarse.rows, say, coarse.note)
    # The monthly review of the last complete month of that history (the coarse days above, then
    # the nightly days just written), with the snapshot's week replayed in the four scenarios.
    thresholds = settings.settings.thresholds
    review_settings = ReviewSettings(
        thresholds=dict(thresholds.usage), method=settings.settings.method
    )
    # last month's advice, stored and partly adopted, for the page's first section (demo_ledger)
    month = last_complete_month(history_days(reports_dir / "history"))
    ledger_note = seed_last_month(
        reports_dir / "history", month, _days(snapshot)[0], review_settings, DEFAULT_RECIPE
    )
    # The growth replay reads the history's workloads, final from here on (the review below
    # only adds its forecast): its seven one-core replays run in a forked process beside the
    # review, its scenarios and its charts, and the page takes the answer when it needs it.
    growth_job = Background(demo_growth, snapshot, reports_dir / "history")
    try:
        review = build_review(reports_dir / "history", review_settings)
        if ledger_note:
            review.payload["notes"].append(ledger_note)
        monthly = write_monthly_report(
            review,
            out / "monthly",
            history=reports_dir / "history",
            snapshot=snapshot,
            joint=joint_settings(review, (), thresholds=thresholds, days=settings.replay_days),
            growth=growth_job.result,
        )
    finally:
        growth_job.stop()
    say(f"monthly review of {review.month} written to {monthly.html}")

    whatif_html, recommendation, search_html, sentence = whatif_job.result()
    say(f"what-if report written to {whatif_html}: {recommendation}")
    say(f"search written to {search_html}: {sentence}")
    portal = write_portal(out)  # the front door: every report above, newest first

    return DemoResult(
        snapshot_dir=snapshot_dir,
        nodemetrics=nodemetrics,
        violations=violations_path,
        reports_dir=reports_dir,
        latest=latest,
        latest_result=result,
        reports=len(days),
        whatif_html=whatif_html,
        whatif_recommendation=recommendation,
        history_days=len(history) + len(days),
        history_note=coarse.note,
        monthly_html=monthly.html,
        search_html=search_html,
        search_sentence=sentence,
        portal=portal,
        seconds=time.monotonic() - began,
    )
