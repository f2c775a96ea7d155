"""The joint scenarios' results: one row per scenario (whole cluster and per pool), the best
scenario and drain of every pool (``analyzer.whatif.joint`` computes them).

Every row carries the allocatable capacity of its active nodes over the window (core-hours,
GiB-hours, money when priced) and the capacity it releases vs today's row of the same pool (or
of the whole cluster): ``analyzer.whatif.capacity``. A whole-cluster row whose peak drops without
capacity released is flagged ``pool_mix_shift``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.scheduling.cluster_version import ClusterVersion
from analyzer.whatif.capacity import Capacity, pool_mix_shift, released, share
from analyzer.whatif.drain import DrainReport
from analyzer.whatif.joint_autoscaled import pool_release
from analyzer.whatif.kept import FRESH
from analyzer.whatif.pool_figures import PoolFigures

TODAY, RIGHTSIZE, REPACK, BOTH = "today", "right-size only", "repack only", "both"
SCENARIOS = (TODAY, RIGHTSIZE, REPACK, BOTH)
MIXED = "per pool"  # the cluster row of a "both" that is fresh in some pools, kept in others


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
    placement: str = FRESH  # FRESH, KEPT, MIXED or OBSERVED_PLACEMENT (module docstring)
    pool_placement: dict[str, str] = field(default_factory=dict)  # MIXED: each pool's
    capacity: Capacity = field(default_factory=lambda: Capacity(0.0, 0.0))  # whole cluster

    def placement_of(self, pool: str) -> str:
        """The placement the row of ``pool`` comes from: ``fresh``, ``observed`` or KEPT."""
        return self.pool_placement.get(pool, self.placement)

    def to_dict(self, today: ScenarioRun | None = None) -> dict[str, Any]:
        """JSON-ready (the whole-cluster row), with the capacity released vs ``today``."""
        base = today or self
        freed = released(base.capacity, self.capacity)
        return {
            "name": self.name,
            "strategy": self.strategy,
            "placement": self.placement,
            "requests": "right-sized" if self.rightsized else "today",
            "nodes_peak": self.nodes_peak,
            "violations": self.violations,
            "pods_waited": self.pods_waited,
            "never_placed": self.never_placed,
            "active_core_hours": self.capacity.core_hours,
            "active_gib_hours": self.capacity.gib_hours,
            "active_cost": self.capacity.cost,
            **released_keys(freed.to_dict()),
            "pool_mix_shift": pool_mix_shift(
                base.nodes_peak, self.nodes_peak, freed.core_hours_pct, freed.gib_hours_pct
            ),
        }


def released_keys(freed: dict[str, Any]) -> dict[str, Any]:
    """``Released.to_dict()`` with the JSON's key names (``core_hours_released``, ...)."""
    return {
        "core_hours_released": freed["core_hours"],
        "gib_hours_released": freed["gib_hours"],
        "core_hours_released_pct": freed["core_hours_pct"],
        "gib_hours_released_pct": freed["gib_hours_pct"],
        "cost_released": freed["cost"],
    }


def pool_released(today: PoolFigures, figures: PoolFigures) -> dict[str, Any]:
    """The capacity a pool's row releases vs today's row of the pool (JSON key names)."""
    freed = released(
        Capacity(today.core_hours, today.gib_hours, today.cost),
        Capacity(figures.core_hours, figures.gib_hours, figures.cost),
    )
    return released_keys(freed.to_dict())


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
    # "both" replayed afresh needed more nodes than "repack only" somewhere and repack only's
    # placement could not be kept: why (a clause naming the first refusal), else ""
    kept_refused: str = ""
    version: ClusterVersion | None = None  # the Kubernetes version the replays used
    # ``autoscaler`` other than none: every scenario replayed under it too (joint_autoscaled):
    # scenario name -> its outcome
    autoscaler: str = "none"
    autoscaled: dict[str, Any] = field(default_factory=dict)

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
            rows.append(
                {
                    "name": run.name,
                    "strategy": run.strategy,
                    "placement": run.placement_of(pool),
                    **figures.to_dict(),
                    **pool_released(self.scenarios[0].pools[pool], figures),
                }
            )
            rows[-1].pop("pool")
            if self.autoscaled:  # what the autoscaler would release (joint_autoscaled)
                rows[-1]["autoscaler"] = pool_release(self.autoscaled[run.name], pool)
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
            "kubernetes_version": self.version.to_dict() if self.version else None,
            "start": self.start,
            "end": self.end,
            "baseline": self.baseline,
            "repack": self.repack,
            "changed_pods": self.changed_pods,
            "cluster": [s.to_dict(self.scenarios[0]) for s in self.scenarios],
            "pools": pools,
            "notes": list(self.notes),
            **({"autoscaler": self.autoscaler} if self.autoscaled else {}),
        }


def best_scenario(runs: list[ScenarioRun], pool: str) -> str:
    """The best scenario of ``pool`` (``analyzer.whatif.joint``'s docstring has the rule)."""
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
    if not eligible:
        return TODAY

    def held(run: ScenarioRun) -> float:
        """The pool's active capacity (money, else the mean share of today's), less is better."""
        figures = run.pools[pool]
        if today.cost is not None and figures.cost is not None:
            return figures.cost
        shares = [
            share(mine, base)
            for mine, base in ((figures.core_hours, today.core_hours),
                               (figures.gib_hours, today.gib_hours))
        ]  # fmt: skip
        return sum(shares) / 2.0

    return min(eligible, key=lambda r: (held(r), r.pools[pool].nodes_peak)).name


def removable_total(result: JointResult, name: str) -> int:
    """Nodes removable in scenario ``name`` summed over pools (pools' peaks may differ in time)."""
    return int(np.sum([f.nodes_removable for f in result.run(name).pools.values()]))
