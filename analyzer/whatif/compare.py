"""What-if comparison: every strategy × seed replayed and evaluated, on ``--executor``.

``observed`` always comes first (it is deterministic, so it runs once); every other strategy runs
once per seed (0 .. seeds−1). Workers get the prepared snapshot once (``analyzer.core.executor``:
a local pool's initializer, or a Dask worker reading it from the snapshot's path) and return
typed ``Outcome`` objects.

One rule for the verdict and the table (``VERDICT_RULE``): every compared figure of a strategy is
its **worst seed** — the most peak active nodes, waiting pods, never-placed pods and violations,
the least capacity and node-hours released. The recommendation is the strategy that releases the
most allocatable capacity of active nodes vs observed (``analyzer.whatif.capacity``: money when
``--prices`` prices every pool, else the mean of the core-hour and GiB-hour shares released; ties
go to the fewer peak active nodes) among those that release some, are no pool-mix shift (fewer
nodes, no capacity released) and whose worst seed has no more threshold violations, waiting pods
or never-placed pods than ``observed``. Peak node counts stand beside, never on top. The
report's comparison table shows these same worst-seed figures, so the sentence's numbers are in it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.core.executor import ExecutorSpec, Shared, open_session
from analyzer.core.prices import Prices
from analyzer.core.snapshot import Snapshot
from analyzer.replay.autoscale_setup import AutoscalerSettings
from analyzer.replay.engine import OBSERVED, OBSERVED_STRATEGY, Strategy, replay
from analyzer.replay.input import ARRIVALS, ReplayInput, prepare
from analyzer.replay.karpenter_setup import KarpenterSettings
from analyzer.replay.podrows import read_for_replay
from analyzer.replay.projection import UsageMatrices, usage_matrices
from analyzer.scheduling.cluster_version import ClusterVersion, snapshot_version
from analyzer.scheduling.strategies import STRATEGIES, load_strategy
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.autoscaled import AutoscaledOutcome, run_autoscaled
from analyzer.whatif.capacity import node_prices, pool_mix_shift, released
from analyzer.whatif.evaluate import Outcome, evaluate
from analyzer.whatif.notes import whatif_notes
from analyzer.whatif.verdict import VERDICT_RULE, recommend

# figures where fewer is better; for the others (node-hours released) more is better
HIGHER_IS_WORSE = {
    "active_nodes_peak": True,
    "active_nodes_mean": True,
    "node_hours_released": False,
    "active_core_hours": True,
    "active_gib_hours": True,
    "core_hours_released": False,
    "gib_hours_released": False,
    "core_hours_released_pct": False,
    "gib_hours_released_pct": False,
    "active_cost": True,
    "cost_released": False,
    "waited": True,
    "never_placed": True,
    "preempted": True,
    "violations": True,
    "nodes_with_violations": True,
    "moved_share": True,
}
COMPARED = (
    "core_hours_released",
    "gib_hours_released",
    "core_hours_released_pct",
    "gib_hours_released_pct",
    "active_core_hours",
    "active_gib_hours",
    "active_nodes_peak",
    "active_nodes_mean",
    "node_hours_released",
    "waited",
    "never_placed",
    "preempted",
    "violations",
    "nodes_with_violations",
    "moved_share",
)


@dataclass(frozen=True)
class WhatIfSettings:
    """What to compare: strategy names or KubeSchedulerConfiguration files, seeds, thresholds."""

    strategies: tuple[str, ...] = ("kube-default", "most-allocated")
    seeds: int = 1
    kubernetes_version: str | None = None
    thresholds: ThresholdConfig = field(default_factory=ThresholdConfig)
    workers: int | None = None  # default: the machine's cores
    # how the strategies' replays read arrivals (``analyzer.replay.input.ARRIVALS``); observed
    # always keeps the data as recorded
    arrivals: str = ARRIVALS[0]
    prices: Prices | None = None  # ``--prices``: capacity in money too
    # ``--autoscaler``: also replay every strategy with this node autoscaler driving the nodes
    # (``analyzer.whatif.autoscaled``), its settings from the config's ``autoscaler:`` section
    autoscaler: str = "none"
    autoscaling: AutoscalerSettings | KarpenterSettings = field(default_factory=AutoscalerSettings)
    executor: ExecutorSpec = field(default_factory=ExecutorSpec)  # ``--executor``


def resolve_strategy(name: str, kubernetes_version: str | None = None) -> Strategy:
    """``observed``, a preset name, or a KubeSchedulerConfiguration file (``InputError`` if not)."""
    if name == OBSERVED:
        return OBSERVED_STRATEGY
    profile = load_strategy(name, kubernetes_version)
    source = "preset" if name in STRATEGIES else "file"
    return Strategy(name, profile, source)


@dataclass
class StrategyComparison:
    """One strategy's outcomes over seeds, with mean and spread of the compared figures."""

    name: str
    source: str
    description: str
    outcomes: list[Outcome]

    def stat(self, key: str) -> dict[str, float]:
        """mean, min and max over seeds of one summary figure."""
        values = np.array([float(o.summary()[key]) for o in self.outcomes], dtype=np.float64)
        return {
            "mean": float(values.mean()),
            "min": float(values.min()),
            "max": float(values.max()),
        }

    def worst(self, key: str) -> float:
        """The worst seed's value of a compared figure (the value the verdict and table use)."""
        stat = self.stat(key)
        return stat["max"] if HIGHER_IS_WORSE.get(key, True) else stat["min"]

    @property
    def priced(self) -> bool:
        """Whether every seed's capacity has a money figure (``--prices`` priced every pool)."""
        return all("cost_released" in o.summary() for o in self.outcomes)

    def compared(self) -> tuple[str, ...]:
        """The compared figures: ``COMPARED`` plus the money ones when priced."""
        return (*COMPARED, "active_cost", "cost_released") if self.priced else COMPARED

    def pool_mix(self, observed: StrategyComparison) -> bool:
        """Whether this strategy's fewer peak nodes come without capacity released
        (``analyzer.whatif.capacity.pool_mix_shift``, worst seed)."""
        return pool_mix_shift(
            observed.worst("active_nodes_peak"),
            self.worst("active_nodes_peak"),
            self.worst("core_hours_released_pct"),
            self.worst("gib_hours_released_pct"),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: per-seed outcomes, the worst seed and the spread of the compared figures."""
        return {
            "name": self.name,
            "source": self.source,
            "description": self.description,
            "seeds": [o.seed for o in self.outcomes],
            "worst_seed": {key: self.worst(key) for key in self.compared()},
            "spread": {key: self.stat(key) for key in self.compared()},
            "outcomes": [o.to_dict() for o in self.outcomes],
        }


@dataclass
class WhatIfResult:
    """The comparison: observed first, then every strategy; the recommendation sentence."""

    source: str
    start: str
    end: str
    strategies: list[StrategyComparison]
    best: str | None
    recommendation: str
    thresholds: ThresholdConfig
    notes: list[str] = field(default_factory=list)
    rule: str = VERDICT_RULE
    # Set when the snapshot's requests were right-sized before the replays (``analyzer whatif
    # --rightsize``): recipe, where the usage came from, workloads changed, request totals.
    rightsized: dict[str, Any] | None = None
    # The Kubernetes version whose scheduler arithmetic the replays used, and where it came from
    version: ClusterVersion | None = None
    # ``--prices``: currency and file, and the pools without a price (then no money anywhere)
    prices: dict[str, Any] | None = None
    pool_mix: list[str] = field(default_factory=list)  # the strategies that are pool-mix shifts
    autoscaler: str = "none"  # ``--autoscaler``; with one, ``autoscaled`` holds its rows
    autoscaled: list[AutoscaledOutcome] = field(default_factory=list)
    # ``--autoscaler auto``: what the data suggested and why (``whatif.autoscaler_choice``)
    autoscaler_choice: dict[str, str] | None = None

    @property
    def kubernetes_version(self) -> str | None:
        """The replayed minor (``"1.33"``), None before it was resolved."""
        return self.version.version if self.version else None

    def to_dict(self) -> dict[str, Any]:
        """Every number of the comparison, JSON-ready."""
        return {
            "source": self.source,
            "kubernetes_version": self.version.to_dict() if self.version else None,
            "start": self.start,
            "end": self.end,
            "best": self.best,
            "recommendation": self.recommendation,
            "rule": self.rule,
            "thresholds": self.thresholds.to_dict(),
            "notes": list(self.notes),
            "rightsized": self.rightsized,
            "units": UNITS,
            "prices": self.prices,
            "pool_mix_shift": list(self.pool_mix),
            "strategies": [s.to_dict() for s in self.strategies],
            **(
                {}
                if self.autoscaler_choice is None
                else {"autoscaler_choice": self.autoscaler_choice}
            ),
            **(
                {}
                if self.autoscaler == "none"
                else {
                    "autoscaler": self.autoscaler,
                    "autoscaled": [o.to_dict() for o in self.autoscaled],
                }
            ),
        }


UNITS = {
    "active_core_hours": "allocatable CPU cores of active nodes × hours over the window",
    "active_gib_hours": "allocatable memory GiB (2^30 bytes) of active nodes × hours",
    "core_hours_released": "observed active core-hours minus the strategy's (positive = freed)",
    "gib_hours_released": "observed active GiB-hours minus the strategy's (positive = freed)",
    "core_hours_released_pct": "core_hours_released as % of observed active core-hours",
    "gib_hours_released_pct": "gib_hours_released as % of observed active GiB-hours",
    "active_cost": "active capacity priced by --prices, in prices.currency",
    "cost_released": "observed active_cost minus the strategy's, in prices.currency",
}


ARRIVALS_NOTE = (
    "Arrivals: the strategies' replays offer every pod at its creation and make their own "
    "preemptions (--arrivals created; a pod the data marks as preempted runs until a replay "
    "preempts it); observed keeps the data as recorded."
)
Inputs = dict[str, tuple[ReplayInput, UsageMatrices]]  # arrivals -> prepared input, matrices


def prepared_inputs(snapshot: Snapshot, arrivals: str) -> Inputs:
    """The prepared snapshot for observed (arrivals as recorded) and, when ``arrivals`` differs,
    for the strategies: what every replay of a comparison reads (``run_whatif(inputs=...)``)."""
    out: Inputs = {}
    for how in dict.fromkeys((ARRIVALS[0], arrivals)):
        inp = prepare(snapshot, how)
        out[how] = (inp, usage_matrices(inp))
    return out


def _run_one(inputs: Inputs, strategy: Strategy, seed: int, settings: WhatIfSettings) -> Outcome:
    """One replay and its outcome (a task: ``inputs`` is the worker's, the rest is small)."""
    inp, mats = inputs[ARRIVALS[0] if strategy.observed else settings.arrivals]
    result = replay(inp, strategy, seed, matrices=mats)
    prices = node_prices(inp, settings.prices)
    return evaluate(inp, result, mats, settings.thresholds, prices=prices)


def _run_autoscaled(
    inputs: Inputs, strategy: Strategy, seed: int, settings: WhatIfSettings
) -> AutoscaledOutcome:
    """One "strategy + autoscaler" replay (a task, as ``_run_one``)."""
    inp = inputs[settings.arrivals][0]
    return run_autoscaled(inp, strategy, seed, settings.autoscaling, settings.prices)


def _tasks(settings: WhatIfSettings) -> list[tuple[str, int]]:
    names = [OBSERVED, *[s for s in settings.strategies if s != OBSERVED]]
    return [(n, 0) if n == OBSERVED else (n, seed) for n in names for seed in (
        [0] if n == OBSERVED else range(settings.seeds)
    )]  # fmt: skip


# ``progress(strategy, done, total)`` after each replay (in the order they finish).
Progress = Callable[[str, int, int], None]


def snapshot_inputs(path: Path, arrivals: str) -> Inputs:
    """A worker's loader: the snapshot at ``path`` read and prepared (module level: pickled by
    name, with only the path and the arrivals rule)."""
    return prepared_inputs(read_for_replay(path), arrivals)


def shared_inputs(
    snapshot: Snapshot, settings: WhatIfSettings, source: Path | None, inputs: Inputs | None = None
) -> Shared[Inputs]:
    """The sweep's input: prepared here for a local run (``inputs``: already prepared, held by
    every forked pool process as it is); for a Dask one, read by each worker from ``source`` (the
    snapshot's path, unchanged since it was read), which must be given."""
    if inputs is not None and not settings.executor.is_dask:
        return Shared("whatif:memory", value=inputs)
    if settings.executor.is_dask:
        if source is None:
            raise InputError(
                f"--executor {settings.executor}: this what-if replays a snapshot changed in "
                "memory (--rightsize, a window), which remote workers cannot read; "
                "use --executor local"
            )
        path = Path(source).resolve()
        return Shared(f"whatif:{path}:{settings.arrivals}", partial(snapshot_inputs, path,
                                                                   settings.arrivals))  # fmt: skip
    # locally each pool process prepares the snapshot it is handed (in parallel, as ever)
    return Shared("whatif:memory", partial(prepared_inputs, snapshot, settings.arrivals))


def run_whatif(
    snapshot: Snapshot,
    settings: WhatIfSettings,
    progress: Progress | None = None,
    source: Path | None = None,
    inputs: Inputs | None = None,
) -> WhatIfResult:
    """Replay and evaluate every strategy × seed; observed first; pick the recommendation.

    The replays use the cluster's own Kubernetes version (``settings.kubernetes_version`` when
    given, else the data's: ``scheduling/cluster_version.py``); the result says which.
    ``progress`` is told of each finished replay (the search times its first one to estimate
    the rest). They run on ``settings.executor`` (``analyzer.core.executor``); with a Dask one
    the workers read the snapshot from ``source``, its directory. ``inputs``: ``snapshot``
    already prepared (``prepared_inputs``) by a caller that replays it again besides (the demo's
    autoscaler row): a local pool's processes are forked with it instead of each preparing its
    own."""
    version = snapshot_version(snapshot, settings.kubernetes_version)
    settings = replace(settings, kubernetes_version=version.version)
    # fail fast on a bad name or file, before any work; resolved here, so a worker needs no file
    strategies = {n: resolve_strategy(n, settings.kubernetes_version)
                  for n in dict.fromkeys((OBSERVED, *settings.strategies))}  # fmt: skip
    tasks = _tasks(settings)
    autoscaled = [(strategies[n], seed) for n in settings.strategies if n != OBSERVED
                  for seed in range(settings.seeds)] if settings.autoscaler != "none" else []  # fmt: skip
    workers = replay_workers(settings, len(tasks) + len(autoscaled))
    shared = shared_inputs(snapshot, settings, source, inputs)
    with open_session(settings.executor, workers, shared) as session:
        # the autoscaled rows are submitted first: they are the longest, so none waits last
        waiting = [session.submit(_run_autoscaled, s, seed, settings) for s, seed in autoscaled]

        def done(index: int, count: int) -> None:
            if progress is not None:
                progress(tasks[index][0], count, len(tasks))

        outcomes = session.map(_run_one, [(strategies[n], s, settings) for n, s in tasks], done)
        rows = [w.result() for w in waiting]
    result = compare(snapshot, settings, tasks, outcomes)
    if settings.autoscaler != "none":
        result = replace(result, autoscaler=settings.autoscaler, autoscaled=rows)
    # the version is said by the result itself (pages' header, JSON, the CLI's table), a
    # default one with what to do about it: not repeated among the notes
    return replace(result, version=version)


def replay_workers(settings: WhatIfSettings, tasks: int) -> int:
    """How many processes replay ``tasks`` replays (``--workers``, default the machine's cores)."""
    return max(1, min(settings.workers or os.cpu_count() or 1, tasks))


def compare(
    snapshot: Snapshot,
    settings: WhatIfSettings,
    tasks: Sequence[tuple[str, int]],
    outcomes: Sequence[Outcome],
) -> WhatIfResult:
    """Group outcomes by strategy, fill node-hours released vs observed, recommend one."""
    observed = next(o for (n, _), o in zip(tasks, outcomes, strict=True) if n == OBSERVED)
    groups: dict[str, list[Outcome]] = {}
    for (name, _), outcome in zip(tasks, outcomes, strict=True):
        outcome.node_hours_released = observed.active_node_hours - outcome.active_node_hours
        outcome.capacity_released = released(observed.capacity, outcome.capacity)
        groups.setdefault(name, []).append(outcome)
    comparisons = []
    strategies = []
    for name, group in groups.items():
        strategy = resolve_strategy(name, settings.kubernetes_version)
        strategies.append(strategy)
        description = (
            "the placement that really happened"
            if strategy.observed
            else (strategy.profile.description if strategy.profile else "")
        )
        comparisons.append(StrategyComparison(name, strategy.source, description, group))
    best, sentence = recommend(comparisons, settings.prices.currency if settings.prices else None)
    return WhatIfResult(
        prices=_prices_block(snapshot, settings.prices),
        pool_mix=[c.name for c in comparisons[1:] if c.pool_mix(comparisons[0])],
        source=snapshot.meta.source,
        start=snapshot.meta.start,
        end=snapshot.meta.end,
        strategies=comparisons,
        best=best,
        recommendation=sentence,
        thresholds=settings.thresholds,
        notes=[
            *whatif_notes(snapshot, strategies),
            *([ARRIVALS_NOTE] if settings.arrivals != ARRIVALS[0] else []),
        ],
    )


def _prices_block(snapshot: Snapshot, prices: Prices | None) -> dict[str, Any] | None:
    """``report.json``'s ``prices``: currency, file, and the pools the file does not price."""
    if prices is None:
        return None
    pools = snapshot.nodes["pool"] if "pool" in snapshot.nodes.columns else []
    names = sorted({str(p) if isinstance(p, str) and p else "(none)" for p in pools})
    return {
        "currency": prices.currency,
        "source": prices.source,
        "unpriced_pools": [p for p in names if prices.for_pool(p) is None],
    }
