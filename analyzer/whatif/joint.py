"""Joint right-size-then-repack scenarios per pool, and why the nodes still needed cannot go.

Four scenarios replay one window of a snapshot (the busiest week, ``analyzer.whatif.busiest``,
unless a window is given); the usage stays what it was in every one:

- **today**: the observed placement (``observed``) with today's requests;
- **right-size only**: today's scheduler (the *baseline* strategy, default ``kube-default``)
  replaying the right-sized requests (``analyzer.core.workloads.apply_recommendations``);
- **repack only**: the *repack* strategy (default ``most-allocated-loadaware``: bin packing with
  LoadAwareScheduling) replaying today's requests;
- **both**: the repack strategy replaying the right-sized requests — except where that fresh
  replay needs more nodes at peak than "repack only": there "both" is repack only's placement
  with the right-sized requests when the repack profile accepts it (``analyzer.whatif.kept``;
  per pool when the pools are independent, else in every pool), so it never needs more nodes
  than "repack only" unless that placement does not pass the filters (a raised request); each
  row's ``placement`` and the notes say which.

Per pool and scenario: ``analyzer.whatif.pool_figures`` (nodes needed at peak, removable,
violations, pods waited, idle and slack). Savings are simulated, never added: each row is its own
replay or, for "both", repack only's placement re-evaluated. The four replays run on ``--executor`` like the what-if comparison's (``analyzer.core.executor``;
each worker prepares both request sets once), then the drain dry run (``analyzer.whatif.drain``) of every pool's
**best** scenario — the one that releases the most of the pool's capacity vs today (the least
active capacity in the pool: money when ``--prices`` prices the pool, else the mean of the shares
of today's core-hours and GiB-hours; ``analyzer.whatif.capacity``) among the scenarios with no
more violations and waiting pods than today both in the pool *and in the whole cluster* (a
scenario that empties a pool by pushing its pods into another pool's breaches is no saving), nor
more pods never placed (ties: fewer nodes needed at peak, then the earlier scenario; none: today,
drained with the baseline's profile) — runs in the same pool, one task per pool.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from analyzer.core.errors import InputError
from analyzer.core.executor import ExecutorSpec, Shared, open_session
from analyzer.core.prices import Prices
from analyzer.core.snapshot import Snapshot, read_snapshot
from analyzer.core.workloads import apply_recommendations, changed_pods
from analyzer.replay.autoscale_setup import AutoscalerSettings
from analyzer.replay.engine import OBSERVED, replay
from analyzer.replay.input import ReplayInput, prepare
from analyzer.replay.karpenter_setup import KarpenterSettings
from analyzer.replay.projection import UsageMatrices, attribute, usage_matrices
from analyzer.replay.result import ReplayResult
from analyzer.scheduling.cluster_version import snapshot_version
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.autoscaled import AutoscaledOutcome
from analyzer.whatif.busiest import busiest_window, cut
from analyzer.whatif.capacity import node_prices
from analyzer.whatif.compare import resolve_strategy
from analyzer.whatif.drain import DrainReport, drain_pool
from analyzer.whatif.evaluate import evaluate
from analyzer.whatif.explain import node_pools
from analyzer.whatif.joint_autoscaled import run_scenario
from analyzer.whatif.joint_result import (
    BOTH,
    MIXED,
    REPACK,
    RIGHTSIZE,
    SCENARIOS,
    TODAY,
    JointResult,
    ScenarioRun,
    best_scenario,
)
from analyzer.whatif.kept import (
    FRESH,
    KEPT,
    OBSERVED_PLACEMENT,
    first_refusal,
    merge,
    pod_pools,
    pools_independent,
    raised_pods,
)
from analyzer.whatif.pool_figures import pool_figures

__all__ = [
    "BOTH",
    "REPACK",
    "RIGHTSIZE",
    "SCENARIOS",
    "TODAY",
    "JointResult",
    "JointSettings",
    "ScenarioRun",
    "best_scenario",
    "run_joint",
]


@dataclass(frozen=True)
class JointSettings:
    """The two strategies, the window, the thresholds and the pool size."""

    baseline: str = "kube-default"
    repack: str = "most-allocated-loadaware"
    kubernetes_version: str | None = None
    thresholds: ThresholdConfig = field(default_factory=ThresholdConfig)
    workers: int | None = None  # default: the machine's cores
    days: int = 7  # the busiest window's length in whole days
    window: tuple[pd.Timestamp, pd.Timestamp] | None = None  # overrides the busiest window
    seed: int = 0
    drain: bool = True
    prices: Prices | None = None  # ``--prices``: the capacity released in money too
    executor: ExecutorSpec = field(default_factory=ExecutorSpec)  # ``--executor``
    # ``--autoscaler``: every scenario also replayed under it (``analyzer.whatif.joint_autoscaled``)
    autoscaler: str = "none"
    autoscaling: AutoscalerSettings | KarpenterSettings = field(default_factory=AutoscalerSettings)

    def scenario(self, name: str) -> tuple[str, bool]:
        """(strategy name, right-sized requests?) of a scenario."""
        return {
            TODAY: (OBSERVED, False),
            RIGHTSIZE: (self.baseline, True),
            REPACK: (self.repack, False),
            BOTH: (self.repack, True),
        }[name]


class _Context:
    """What a worker holds: each request set prepared when first needed, and one usage grid
    (the usage, the pods and their order are the same in both, so the grid is shared)."""

    def __init__(self, today: Snapshot, rightsized: Snapshot, settings: JointSettings) -> None:
        self.snapshots = (today, rightsized)
        self.settings = settings
        self.inputs: dict[bool, ReplayInput] = {}
        self._mats: UsageMatrices | None = None

    def input(self, rightsized: bool) -> ReplayInput:
        """The prepared replay input of today's or the right-sized requests."""
        if rightsized not in self.inputs:
            self.inputs[rightsized] = prepare(self.snapshots[rightsized])
        return self.inputs[rightsized]

    @property
    def mats(self) -> UsageMatrices:
        """The observed usage on the grid (built once, from whichever input came first)."""
        if self._mats is None:
            inp = next(iter(self.inputs.values())) if self.inputs else self.input(False)
            self._mats = usage_matrices(inp)
        return self._mats


def _figures(ctx: _Context, name: str, result: ReplayResult, placement: str) -> ScenarioRun:
    """Scenario ``name``'s figures of the placement ``result`` (with the scenario's requests)."""
    strategy_name, rightsized = ctx.settings.scenario(name)
    inp = ctx.input(rightsized)
    # fragmentation is not reported here: no time points (the rest of the outcome is the same)
    prices = node_prices(inp, ctx.settings.prices)
    owner = attribute(inp, result, ctx.mats)  # one attribution for the outcome and the pools
    outcome = evaluate(
        inp,
        result,
        ctx.mats,
        ctx.settings.thresholds,
        fragmentation_times=[],
        prices=prices,
        owner=owner,
    )
    return ScenarioRun(
        name=name,
        strategy=strategy_name,
        rightsized=rightsized,
        nodes_peak=outcome.active_nodes_peak,
        violations=outcome.violations,
        pods_waited=outcome.waited,
        never_placed=outcome.never_placed,
        pools=pool_figures(inp, result, ctx.mats, outcome, prices, owner=owner),
        placement=placement,
        capacity=outcome.capacity,
    )


def _scenario(ctx: _Context, name: str) -> tuple[ScenarioRun, ReplayResult]:
    settings = ctx.settings
    strategy_name, rightsized = settings.scenario(name)
    strategy = resolve_strategy(strategy_name, settings.kubernetes_version)
    result = replay(ctx.input(rightsized), strategy, settings.seed, matrices=ctx.mats)
    placement = OBSERVED_PLACEMENT if strategy_name == OBSERVED else FRESH
    return _figures(ctx, name, result, placement), result


def _worse(fresh: ScenarioRun, repack: ScenarioRun) -> list[str]:
    """The pools where "both" replayed afresh needs more nodes at peak than "repack only"."""
    return [
        p for p in sorted(fresh.pools) if fresh.pools[p].nodes_peak > repack.pools[p].nodes_peak
    ]


@dataclass(frozen=True)
class Refused:
    """Why repack only's placement cannot be kept: the whole sentence (the notes) and its short
    form with the filters' reasons alone (the monthly decision)."""

    note: str
    short: str


Kept = tuple[ScenarioRun, ReplayResult, str] | Refused


def _kept(
    ctx: _Context, fresh: ScenarioRun, repack: ScenarioRun, results: tuple[ReplayResult, ...]
) -> Kept:
    """ "both" when the fresh replay needs more nodes than "repack only" (docs/whatif.md '"both"
    vs "repack only"'): repack only's placement with the right-sized requests in the pools where
    the fresh one needs more, fresh elsewhere — (run, placement, why every pool is kept: "" when
    not or when every pool needs it) — or why that placement cannot be kept."""
    fresh_result, repack_result = results
    inp = ctx.input(True)
    profile = resolve_strategy(ctx.settings.repack, ctx.settings.kubernetes_version).profile
    assert profile is not None  # the repack strategy is never the observed placement
    raised = raised_pods(ctx.input(False), inp, profile)
    where, reasons = first_refusal(inp, repack_result, profile, ctx.mats) if raised else ("", "")
    if reasons:
        clause = (
            "repack only's placement does not pass the filters with the right-sized requests "
            f"(right-sizing raised the request or load-aware estimate of {len(raised)} pod(s))"
        )
        if not where:
            return Refused(f"{clause}: {reasons}", f"{clause}: {reasons}")
        return Refused(f"{clause}: {where}: {reasons}", f"{clause}; first refusal: {reasons}")
    kept = _figures(ctx, BOTH, repack_result, KEPT)
    for got, want in [
        ((kept.nodes_peak, kept.violations, kept.pods_waited, kept.never_placed),
         (repack.nodes_peak, repack.violations, repack.pods_waited, repack.never_placed)),
        *(((kept.pools[p].nodes_peak, kept.pools[p].violations, kept.pools[p].pods_waited),
           (repack.pools[p].nodes_peak, repack.pools[p].violations, repack.pools[p].pods_waited))
          for p in repack.pools),
    ]:  # fmt: skip
        if got != want:  # the same placement and usage: only slack and idle may change
            raise AssertionError(f"kept placement: {got} differs from repack only's {want}")
    worse = set(_worse(fresh, kept))
    if not worse:
        return kept, repack_result, "the fresh replay needs more nodes in the whole cluster"
    if worse == set(kept.pools):
        return kept, repack_result, ""
    pods = pod_pools(inp, fresh_result, repack_result)
    why = pods if isinstance(pods, str) else pools_independent(inp, profile)
    if why or isinstance(pods, str):
        return kept, repack_result, f"the pools are not independent ({why})"
    mixed = merge(inp, fresh_result, repack_result, pods, worse)
    run = _figures(ctx, BOTH, mixed, MIXED)
    run.pool_placement = {p: KEPT if p in worse else FRESH for p in run.pools}
    if run.nodes_peak > kept.nodes_peak:
        return (
            kept,
            repack_result,
            (
                f"mixed per pool it would need {run.nodes_peak} nodes at peak in the whole cluster, "
                f"more than repack only's {kept.nodes_peak}"
            ),
        )
    return run, mixed, ""


def _drain(
    ctx: _Context, name: str, result: ReplayResult, pool: str, when: int, text: str
) -> DrainReport:
    settings = ctx.settings
    strategy_name, rightsized = settings.scenario(name)
    if strategy_name == OBSERVED:  # today's scheduler places the drained pods
        strategy_name = settings.baseline
    profile = resolve_strategy(strategy_name, settings.kubernetes_version).profile
    assert profile is not None
    inp = ctx.input(rightsized)
    pools = node_pools(inp)
    nodes = [n for n, p in enumerate(pools) if p == pool]
    return drain_pool(inp, result, profile, ctx.mats, pool, nodes, when, text, settings.seed)


# The worker's context (set once per process by the pool initializer).
def joint_context(
    path: Path,
    start: pd.Timestamp,
    end: pd.Timestamp,
    recommendations: pd.DataFrame,
    settings: JointSettings,
) -> _Context:
    """A remote worker's loader: the window of the snapshot at ``path``, today's and right-sized
    (module level: pickled by name with the path, the window, the recommendations)."""
    today = cut(read_snapshot(path), start, end)
    return _Context(today, apply_recommendations(today, recommendations), settings)


def _shared(
    snapshots: tuple[Snapshot, Snapshot],
    source: Path | None,
    window: tuple[pd.Timestamp, pd.Timestamp],
    recommendations: pd.DataFrame,
    settings: JointSettings,
) -> Shared[_Context]:
    """The scenarios' input: ``snapshots`` (today's and right-sized window) here for a local
    run; for a Dask one, built by each worker from ``source`` as ``run_joint`` built them."""
    if not settings.executor.is_dask:
        # both request sets and the usage grid prepared once, here: the pool's processes are
        # forked with them (each used to prepare whichever set its tasks needed first, and most
        # often both in the end: the kept placement and the drains read the other)
        context = _Context(*snapshots, settings)
        context.input(False)
        context.input(True)
        _ = context.mats
        return Shared("joint:memory", value=context)
    if source is None:
        raise InputError(
            f"--executor {settings.executor}: the scenarios need the snapshot's path for remote "
            "workers to read; use --executor local"
        )
    path = Path(source).resolve()
    # the recommendations' content in the key: a long-lived worker never reuses another run's
    digest = int(pd.util.hash_pandas_object(recommendations, index=True).sum())
    key = f"joint:{path}:{window[0]}:{window[1]}:{digest}:{settings}"
    return Shared(key, partial(joint_context, path, *window, recommendations, settings))


def _autoscaled(ctx: _Context, name: str) -> AutoscaledOutcome:
    """Scenario ``name`` replayed with the node autoscaler driving the nodes (a task)."""
    s = ctx.settings
    strategy, rightsized = s.scenario(name)
    return run_scenario(ctx.input(rightsized), strategy, s.baseline, s.kubernetes_version,
                        s.seed, s.autoscaling, s.prices)  # fmt: skip


def run_joint(
    snapshot: Snapshot,
    recommendations: pd.DataFrame,
    settings: JointSettings,
    source: Path | None = None,
) -> JointResult:
    """The four scenarios of every pool over the window, and the best one's drain dry run,
    replayed with the cluster's own Kubernetes version (``scheduling/cluster_version.py``),
    on ``settings.executor`` (a Dask one's workers read the snapshot from ``source``)."""
    version = snapshot_version(snapshot, settings.kubernetes_version)
    settings = replace(settings, kubernetes_version=version.version)
    for name in (settings.baseline, settings.repack):  # fail fast on a bad name or file
        resolve_strategy(name, settings.kubernetes_version)
    start, end = settings.window or busiest_window(snapshot, settings.days)
    today = cut(snapshot, start, end)
    rightsized = apply_recommendations(today, recommendations)
    workers = max(1, min(settings.workers or os.cpu_count() or 1, len(SCENARIOS)))
    # ``--autoscaler``: the four scenarios replayed under it too, in the same pool
    scaled = [] if settings.autoscaler == "none" else list(SCENARIOS)
    runs: list[ScenarioRun] = []
    results: dict[str, ReplayResult] = {}
    drains: dict[str, DrainReport] = {}

    def record(name: str, outcome: tuple[ScenarioRun, ReplayResult]) -> None:
        runs.append(outcome[0])
        results[name] = outcome[1]

    def drain_args(best: dict[str, str], pools: list[str]) -> list[tuple[Any, ...]]:
        return [
            (
                best[p],
                results[best[p]],
                p,
                int(pd.Timestamp(runs[SCENARIOS.index(best[p])].pools[p].peak_time).value),
                runs[SCENARIOS.index(best[p])].pools[p].peak_time,
            )
            for p in pools
        ]

    refused: list[str] = []  # why repack only's placement could not be kept, when it could not

    def settle(kept: Any) -> list[str]:
        """ "both" no worse than "repack only" (``_kept``); the notes that say how."""
        fresh, repack = runs[SCENARIOS.index(BOTH)], runs[SCENARIOS.index(REPACK)]
        if not _worse(fresh, repack) and fresh.nodes_peak <= repack.nodes_peak:
            return []
        outcome = kept(fresh, repack, (results[BOTH], results[REPACK]))
        if isinstance(outcome, Refused):
            refused.append(outcome.short)
        else:
            runs[SCENARIOS.index(BOTH)], results[BOTH] = outcome[0], outcome[1]
        return _notes(fresh, repack, outcome)

    shared = _shared((today, rightsized), source, (start, end), recommendations, settings)
    with open_session(settings.executor, workers, shared) as session:
        # the repack replays (load-aware ones cost most) first, so neither worker idles
        order = sorted(SCENARIOS, key=lambda n: settings.scenario(n)[0] != settings.repack)
        futures = {name: session.submit(_scenario, name) for name in order}
        later = {name: session.submit(_autoscaled, name) for name in scaled}
        for name in SCENARIOS:
            record(name, futures[name].result())
        notes = settle(lambda *args: session.submit(_kept, *args).result())
        best, pools = _choose(runs)
        tasks = drain_args(best, pools) if settings.drain else []
        waiting = [session.submit(_drain, *args) for args in tasks]
        for args, done in zip(tasks, waiting, strict=True):
            drains[args[2]] = done.result()
        autoscaled = {name: future.result() for name, future in later.items()}
    return JointResult(
        autoscaler=settings.autoscaler,
        autoscaled=autoscaled,
        source=snapshot.meta.source,
        start=start.isoformat(),
        end=end.isoformat(),
        baseline=settings.baseline,
        repack=settings.repack,
        changed_pods=changed_pods(today, rightsized),
        scenarios=runs,
        best=best,
        drains=drains,
        notes=notes,
        kept_refused="".join(refused),
        version=version,
    )


def _choose(runs: list[ScenarioRun]) -> tuple[dict[str, str], list[str]]:
    """Every pool's best scenario, and the pools with an active node to drain."""
    best = {pool: best_scenario(runs, pool) for pool in sorted(runs[0].pools)}
    pools = [p for p in best if runs[SCENARIOS.index(best[p])].pools[p].peak_time]
    return best, pools


def _nodes(count: int) -> str:
    return "1 node" if count == 1 else f"{count} nodes"


def _notes(fresh: ScenarioRun, repack: ScenarioRun, kept: Kept) -> list[str]:
    """What "both" is where replayed afresh it needed more nodes than "repack only"."""
    see = '(docs/whatif.md: "both" vs "repack only")'
    if isinstance(kept, Refused):  # the fresh replay stays: say where it needs more, and why
        notes = [
            f"'both' needed {_nodes(fresh.nodes_peak)} at peak in the whole cluster, more than "
            f"'repack only' ({repack.nodes_peak}); {kept.note} {see}"
        ] if fresh.nodes_peak > repack.nodes_peak else []  # fmt: skip
        return notes + [
            f"pool {p}: 'both' needed {_nodes(fresh.pools[p].nodes_peak)} at peak, more than "
            f"'repack only' ({repack.pools[p].nodes_peak}); {kept.note}"
            for p in _worse(fresh, repack)
        ]
    run, _, why = kept
    notes = [f"'both' is repack only's placement with the right-sized requests: {why} {see}"]
    notes = notes if why else []
    return notes + [
        f"pool {p}: 'both' is repack only's placement with the right-sized requests, "
        f"{_nodes(repack.pools[p].nodes_peak)} at peak: replayed afresh one pod at a time as they "
        f"arrived, the right-sized requests needed {fresh.pools[p].nodes_peak} {see}"
        for p in sorted(run.pools)
        if run.placement_of(p) == KEPT and fresh.pools[p].nodes_peak > repack.pools[p].nodes_peak
    ]
