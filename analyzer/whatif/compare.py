"""What-if comparison: every strategy × seed replayed and evaluated, in a local process pool.

``observed`` always comes first (it is deterministic, so it runs once); every other strategy runs
once per seed (0 .. seeds−1), and the comparison reports the mean and the spread (min–max) over
seeds. Workers receive the snapshot once (pool initializer) and return typed ``Outcome`` objects.
The recommendation answers the issue's question: which strategy would have needed the fewest
nodes (peak active nodes) without more threshold violations, more waiting pods or more pods
never placed than ``observed``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.core.snapshot import Snapshot
from analyzer.replay.engine import OBSERVED, OBSERVED_STRATEGY, Strategy, replay
from analyzer.replay.input import ReplayInput, prepare
from analyzer.replay.projection import UsageMatrices, usage_matrices
from analyzer.scheduling.strategies import STRATEGIES, load_strategy
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.evaluate import Outcome, evaluate

CAVEATS = (
    "Node affinity, nodeSelectors, taints and tolerations are not in the snapshot, so every "
    "strategy may put any pod on any node with room (only DaemonSet and static pods stay on "
    "their node).",
    "The scheduler scores every node (percentageOfNodesToScore 100); pod priority and "
    "preemption are not replayed: the pending queue is FIFO by arrival.",
)
COMPARED = (
    "active_nodes_peak",
    "active_nodes_mean",
    "node_hours_released",
    "waited",
    "never_placed",
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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: per-seed outcomes and the spread of the compared figures."""
        return {
            "name": self.name,
            "source": self.source,
            "description": self.description,
            "seeds": [o.seed for o in self.outcomes],
            "spread": {key: self.stat(key) for key in COMPARED},
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
    notes: list[str] = field(default_factory=lambda: list(CAVEATS))

    def to_dict(self) -> dict[str, Any]:
        """Every number of the comparison, JSON-ready."""
        return {
            "source": self.source,
            "start": self.start,
            "end": self.end,
            "best": self.best,
            "recommendation": self.recommendation,
            "thresholds": self.thresholds.to_dict(),
            "notes": list(self.notes),
            "strategies": [s.to_dict() for s in self.strategies],
        }


# The worker's prepared snapshot (set once per process by the pool initializer).
_WORKER: dict[str, Any] = {}


def _init_worker(snapshot: Snapshot) -> None:
    inp = prepare(snapshot)
    _WORKER["input"] = inp
    _WORKER["matrices"] = usage_matrices(inp)


def _run_one(
    inp: ReplayInput,
    mats: UsageMatrices,
    name: str,
    seed: int,
    settings: WhatIfSettings,
) -> Outcome:
    strategy = resolve_strategy(name, settings.kubernetes_version)
    result = replay(inp, strategy, seed, matrices=mats)
    return evaluate(inp, result, mats, settings.thresholds)


def _task(name: str, seed: int, settings: WhatIfSettings) -> Outcome:
    return _run_one(_WORKER["input"], _WORKER["matrices"], name, seed, settings)


def _tasks(settings: WhatIfSettings) -> list[tuple[str, int]]:
    names = [OBSERVED, *[s for s in settings.strategies if s != OBSERVED]]
    return [(n, 0) if n == OBSERVED else (n, seed) for n in names for seed in (
        [0] if n == OBSERVED else range(settings.seeds)
    )]  # fmt: skip


def run_whatif(snapshot: Snapshot, settings: WhatIfSettings) -> WhatIfResult:
    """Replay and evaluate every strategy × seed; observed first; pick the recommendation."""
    for name in settings.strategies:  # fail fast on a bad name or file, before any work
        resolve_strategy(name, settings.kubernetes_version)
    tasks = _tasks(settings)
    workers = max(1, min(settings.workers or os.cpu_count() or 1, len(tasks)))
    if workers == 1:
        inp = prepare(snapshot)
        mats = usage_matrices(inp)
        outcomes = [_run_one(inp, mats, n, s, settings) for n, s in tasks]
    else:
        with ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(snapshot,)) as pool:
            futures = [pool.submit(_task, n, s, settings) for n, s in tasks]
            outcomes = [f.result() for f in futures]
    return compare(snapshot, settings, tasks, outcomes)


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
        groups.setdefault(name, []).append(outcome)
    comparisons = []
    for name, group in groups.items():
        strategy = resolve_strategy(name, settings.kubernetes_version)
        description = (
            "the placement that really happened"
            if strategy.observed
            else (strategy.profile.description if strategy.profile else "")
        )
        comparisons.append(StrategyComparison(name, strategy.source, description, group))
    best, sentence = recommend(comparisons)
    return WhatIfResult(
        source=snapshot.meta.source,
        start=snapshot.meta.start,
        end=snapshot.meta.end,
        strategies=comparisons,
        best=best,
        recommendation=sentence,
        thresholds=settings.thresholds,
    )


def recommend(comparisons: Sequence[StrategyComparison]) -> tuple[str | None, str]:
    """The strategy with the fewest peak active nodes (mean over seeds) among those with no more
    violations, waiting pods or never-placed pods than observed (worst seed counts)."""
    observed = comparisons[0]
    base = {k: observed.stat(k)["max"] for k in ("violations", "waited", "never_placed")}
    base_peak = observed.stat("active_nodes_peak")["mean"]
    eligible = [
        c
        for c in comparisons[1:]
        if all(c.stat(k)["max"] <= base[k] for k in base)
        and c.stat("active_nodes_peak")["mean"] < base_peak
    ]
    if not eligible:
        sentence = (
            f"No strategy would have needed fewer than the {base_peak:.0f} nodes observed at peak "
            "without more threshold violations, waiting pods or unplaced pods."
        )
        fewest = min(
            comparisons[1:], key=lambda c: c.stat("active_nodes_peak")["mean"], default=None
        )
        if fewest is not None and fewest.stat("active_nodes_peak")["mean"] < base_peak:
            sentence += (
                f" Fewest nodes: {fewest.name} ({fewest.stat('active_nodes_peak')['mean']:.0f} at "
                f"peak), at the cost of {fewest.stat('violations')['max']:.0f} violations (observed "
                f"{base['violations']:.0f}), {fewest.stat('waited')['max']:.0f} pods waiting "
                f"(observed {base['waited']:.0f}) and {fewest.stat('never_placed')['max']:.0f} "
                f"never placed (observed {base['never_placed']:.0f})."
            )
        return None, sentence
    best = min(
        eligible,
        key=lambda c: (c.stat("active_nodes_peak")["mean"], c.stat("active_nodes_mean")["mean"]),
    )
    peak = best.stat("active_nodes_peak")
    released = best.stat("node_hours_released")["mean"]
    return best.name, (
        f"{best.name} would have needed the fewest nodes: {peak['mean']:.0f} at peak "
        f"(observed {base_peak:.0f}), {released:.0f} node-hours released, with no more "
        f"threshold violations ({best.stat('violations')['max']:.0f} vs "
        f"{base['violations']:.0f}), waiting pods ({best.stat('waited')['max']:.0f} vs "
        f"{base['waited']:.0f}) or unplaced pods than observed."
    )
