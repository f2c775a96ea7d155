"""Joint right-size-then-repack scenarios per pool, and why the nodes still needed cannot go.

Four scenarios replay one window of a snapshot (the busiest week, ``analyzer.whatif.busiest``,
unless a window is given); the usage stays what it was in every one:

- **today**: the observed placement (``observed``) with today's requests;
- **right-size only**: today's scheduler (the *baseline* strategy, default ``kube-default``)
  replaying the right-sized requests (``analyzer.core.workloads.apply_recommendations``);
- **repack only**: the *repack* strategy (default ``most-allocated-loadaware``: bin packing with
  LoadAwareScheduling) replaying today's requests;
- **both**: the repack strategy replaying the right-sized requests.

Per pool and scenario: ``analyzer.whatif.pool_figures`` (nodes needed at peak, removable,
violations, pods waited, idle and slack). Savings are simulated, never added: each row is its own
replay. The four replays run in a process pool like the what-if comparison's (each worker prepares
both request sets once), then the drain dry run (``analyzer.whatif.drain``) of every pool's
**best** scenario — the fewest nodes needed at peak among the scenarios with no more violations
and waiting pods than today both in the pool *and in the whole cluster* (a scenario that empties
a pool by pushing its pods into another pool's breaches is no saving), nor more pods never placed
(ties: the earlier scenario; none: today, drained with the baseline's profile) — runs in the same
pool, one task per pool.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.snapshot import Snapshot
from analyzer.core.workloads import apply_recommendations, changed_pods
from analyzer.replay.engine import OBSERVED, replay
from analyzer.replay.input import ReplayInput, prepare
from analyzer.replay.projection import UsageMatrices, usage_matrices
from analyzer.replay.result import ReplayResult
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.busiest import busiest_window, cut
from analyzer.whatif.compare import resolve_strategy
from analyzer.whatif.drain import DrainReport, drain_pool
from analyzer.whatif.evaluate import evaluate
from analyzer.whatif.explain import node_pools
from analyzer.whatif.pool_figures import PoolFigures, pool_figures

TODAY, RIGHTSIZE, REPACK, BOTH = "today", "right-size only", "repack only", "both"
SCENARIOS = (TODAY, RIGHTSIZE, REPACK, BOTH)


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

    def scenario(self, name: str) -> tuple[str, bool]:
        """(strategy name, right-sized requests?) of a scenario."""
        return {
            TODAY: (OBSERVED, False),
            RIGHTSIZE: (self.baseline, True),
            REPACK: (self.repack, False),
            BOTH: (self.repack, True),
        }[name]


@dataclass
class ScenarioRun:
    """One scenario's replay: whole-cluster figures and every pool's."""

    name: str
    strategy: str
    rightsized: bool
    nodes_peak: int  # whole cluster: the what-if page's peak active nodes
    violations: int
    pods_waited: int
    never_placed: int
    pools: dict[str, PoolFigures]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the whole-cluster row)."""
        return {
            "name": self.name,
            "strategy": self.strategy,
            "requests": "right-sized" if self.rightsized else "today",
            "nodes_peak": self.nodes_peak,
            "violations": self.violations,
            "pods_waited": self.pods_waited,
            "never_placed": self.never_placed,
        }


@dataclass
class JointResult:
    """Four scenarios per pool, the best one, and its blocked nodes."""

    source: str
    start: str
    end: str
    baseline: str
    repack: str
    changed_pods: int
    scenarios: list[ScenarioRun]
    best: dict[str, str]  # pool -> scenario name
    drains: dict[str, DrainReport]
    notes: list[str] = field(default_factory=list)

    def run(self, name: str) -> ScenarioRun:
        """The scenario called ``name``."""
        return next(s for s in self.scenarios if s.name == name)

    def pools(self) -> list[str]:
        """Every pool, sorted."""
        return sorted(self.scenarios[0].pools)

    def pool_rows(self, pool: str) -> list[dict[str, Any]]:
        """The four rows of ``pool`` (``report.json``'s ``pools[].scenarios``)."""
        rows = []
        for run in self.scenarios:
            figures = run.pools[pool]
            rows.append({"name": run.name, "strategy": run.strategy, **figures.to_dict()})
            rows[-1].pop("pool")
        return rows

    def to_dict(self) -> dict[str, Any]:
        """Every number, JSON-ready: ``pools[].scenarios``, ``pools[].blocked_nodes``."""
        pools = []
        for pool in self.pools():
            drain = self.drains.get(pool)
            pools.append(
                {
                    "pool": pool,
                    "scenarios": self.pool_rows(pool),
                    "best": self.best[pool],
                    "blocked_nodes": list(drain.blocked_nodes) if drain else [],
                    "drain": drain.to_dict() if drain else None,
                }
            )
        return {
            "source": self.source,
            "start": self.start,
            "end": self.end,
            "baseline": self.baseline,
            "repack": self.repack,
            "changed_pods": self.changed_pods,
            "cluster": [s.to_dict() for s in self.scenarios],
            "pools": pools,
            "notes": list(self.notes),
        }


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


def _scenario(ctx: _Context, name: str) -> tuple[ScenarioRun, ReplayResult]:
    settings = ctx.settings
    strategy_name, rightsized = settings.scenario(name)
    strategy = resolve_strategy(strategy_name, settings.kubernetes_version)
    inp = ctx.input(rightsized)
    result = replay(inp, strategy, settings.seed, matrices=ctx.mats)
    # fragmentation is not reported here: no time points (the rest of the outcome is the same)
    outcome = evaluate(inp, result, ctx.mats, settings.thresholds, fragmentation_times=[])
    run = ScenarioRun(
        name=name,
        strategy=strategy_name,
        rightsized=rightsized,
        nodes_peak=outcome.active_nodes_peak,
        violations=outcome.violations,
        pods_waited=outcome.waited,
        never_placed=outcome.never_placed,
        pools=pool_figures(inp, result, ctx.mats, outcome),
    )
    return run, result


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
_WORKER: dict[str, _Context] = {}


def _init_worker(today: Snapshot, rightsized: Snapshot, settings: JointSettings) -> None:
    _WORKER["ctx"] = _Context(today, rightsized, settings)


def _scenario_task(name: str) -> tuple[ScenarioRun, ReplayResult]:
    return _scenario(_WORKER["ctx"], name)


def _drain_task(name: str, result: ReplayResult, pool: str, when: int, text: str) -> DrainReport:
    return _drain(_WORKER["ctx"], name, result, pool, when, text)


def best_scenario(runs: list[ScenarioRun], pool: str) -> str:
    """The best scenario of ``pool`` (module docstring's rule)."""
    first = runs[0]
    today = first.pools[pool]
    eligible = [
        r
        for r in runs
        if r.pools[pool].violations <= today.violations
        and r.pools[pool].pods_waited <= today.pods_waited
        and r.violations <= first.violations
        and r.pods_waited <= first.pods_waited
        and r.never_placed <= first.never_placed
    ]
    return min(eligible, key=lambda r: r.pools[pool].nodes_peak).name if eligible else TODAY


def run_joint(
    snapshot: Snapshot, recommendations: pd.DataFrame, settings: JointSettings
) -> JointResult:
    """The four scenarios of every pool over the window, and the best one's drain dry run."""
    for name in (settings.baseline, settings.repack):  # fail fast on a bad name or file
        resolve_strategy(name, settings.kubernetes_version)
    start, end = settings.window or busiest_window(snapshot, settings.days)
    today = cut(snapshot, start, end)
    rightsized = apply_recommendations(today, recommendations)
    workers = max(1, min(settings.workers or os.cpu_count() or 1, len(SCENARIOS)))
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

    if workers == 1:
        ctx = _Context(today, rightsized, settings)
        for name in SCENARIOS:
            record(name, _scenario(ctx, name))
        best, pools = _choose(runs)
        for args in drain_args(best, pools) if settings.drain else []:
            drains[args[2]] = _drain(ctx, *args)
    else:
        with ProcessPoolExecutor(
            workers, initializer=_init_worker, initargs=(today, rightsized, settings)
        ) as executor:
            # the repack replays (load-aware ones cost most) first, so neither worker idles
            order = sorted(SCENARIOS, key=lambda n: settings.scenario(n)[0] != settings.repack)
            futures = {name: executor.submit(_scenario_task, name) for name in order}
            for name in SCENARIOS:
                record(name, futures[name].result())
            best, pools = _choose(runs)
            tasks = drain_args(best, pools) if settings.drain else []
            waiting = [executor.submit(_drain_task, *args) for args in tasks]
            for args, done in zip(tasks, waiting, strict=True):
                drains[args[2]] = done.result()
    return JointResult(
        source=snapshot.meta.source,
        start=start.isoformat(),
        end=end.isoformat(),
        baseline=settings.baseline,
        repack=settings.repack,
        changed_pods=changed_pods(today, rightsized),
        scenarios=runs,
        best=best,
        drains=drains,
        notes=_notes(runs),
    )


def _choose(runs: list[ScenarioRun]) -> tuple[dict[str, str], list[str]]:
    """Every pool's best scenario, and the pools with an active node to drain."""
    best = {pool: best_scenario(runs, pool) for pool in sorted(runs[0].pools)}
    pools = [p for p in best if runs[SCENARIOS.index(best[p])].pools[p].peak_time]
    return best, pools


def _notes(runs: list[ScenarioRun]) -> list[str]:
    notes = []
    both, repack = runs[SCENARIOS.index(BOTH)], runs[SCENARIOS.index(REPACK)]
    if both.nodes_peak > repack.nodes_peak:
        notes.append(
            f"'both' needed {both.nodes_peak} nodes at peak in the whole cluster, more than "
            f'\'repack only\' ({repack.nodes_peak}) (docs/whatif.md: "both" vs "repack only")'
        )
    for pool in sorted(both.pools):
        if both.pools[pool].nodes_peak > repack.pools[pool].nodes_peak:
            notes.append(
                f"pool {pool}: 'both' needed {both.pools[pool].nodes_peak} nodes at peak, more "
                f"than 'repack only' ({repack.pools[pool].nodes_peak}): smaller requests placed "
                "one by one as they arrived packed worse here"
            )
    return notes


def removable_total(result: JointResult, name: str) -> int:
    """Nodes removable in scenario ``name`` summed over pools (pools' peaks may differ in time)."""
    return int(np.sum([f.nodes_removable for f in result.run(name).pools.values()]))
