"""What a growth replay (``whatif.growth``) answers: per month and pool, and the months' answers.

``PoolMonth`` (a pool's capacity, requested peak, N+1, waiting pods and nodes to add in one month),
``GrowthMonth`` (one month's pools) and ``GrowthResult`` (the months, the first month a pod waits,
the first N+1 break per pool, the sentence, ``growth.json`` and the CSV rows). Split from
``whatif.growth``, which replays the months.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

# a pod waits when pending longer than this (0: any wait), or still pending at the replay's end
WAIT_THRESHOLD_S = 0


@dataclass
class PoolMonth:
    """One pool in one month (module docstring)."""

    pool: str
    nodes: int
    capacity_cpu_cores: float
    capacity_memory_gib: float
    largest_cpu_cores: float
    largest_memory_gib: float
    requested_peak_cpu_cores: float
    requested_peak_memory_gib: float
    waiting_pods: int
    nodes_to_add: int | None

    @property
    def n_plus_1(self) -> bool:
        """Whether the pool survives losing its largest node at the month's requested peak."""
        cpu = self.capacity_cpu_cores - self.largest_cpu_cores - self.requested_peak_cpu_cores
        mem = self.capacity_memory_gib - self.largest_memory_gib - self.requested_peak_memory_gib
        return cpu >= -1e-9 and mem >= -1e-9

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, units in the keys."""
        out = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in vars(self).items()}
        out["n_plus_1"] = self.n_plus_1
        return out


@dataclass
class GrowthMonth:
    """Every pool of one month, and the pods that waited."""

    month: int
    pods: int
    waiting_pods: int
    pools: list[PoolMonth]


@dataclass
class GrowthResult:
    """The months of a growth replay and the answers drawn from them."""

    strategy: str
    autoscaler: str
    start: pd.Timestamp
    end: pd.Timestamp
    changes: list[str]
    months: list[GrowthMonth]
    notes: list[str] = field(default_factory=list)
    # ``--autoscaler auto``: what was asked, chosen and the one line why (``AutoscalerChoice``)
    autoscaler_choice: dict[str, str] | None = None

    def first_wait_month(self) -> int | None:
        """The first month (0 = today) in which a pod waits, None within the horizon."""
        return next((m.month for m in self.months if m.waiting_pods), None)

    def pools(self) -> list[str]:
        """Every pool, sorted."""
        return sorted({p.pool for m in self.months for p in m.pools})

    def first_n1_break(self, pool: str) -> int | None:
        """The first month ``pool``'s N+1 breaks, None within the horizon."""
        return next(
            (m.month for m in self.months for p in m.pools if p.pool == pool and not p.n_plus_1),
            None,
        )

    def sentence(self) -> str:
        """The short answer: the first month a pod waits and the first N+1 break per pool."""
        first = self.first_wait_month()
        horizon = self.months[-1].month
        wait = (
            f"no pod waits within {horizon} months"
            if first is None
            else "pods already wait today"
            if first == 0
            else f"the first pod waits in month {first}"
        )
        breaks = [
            f"{pool}: N+1 breaks in month {b}" if b else f"{pool}: N+1 already broken today"
            for pool in self.pools()
            if (b := self.first_n1_break(pool)) is not None
        ]
        holds = "N+1 holds in every pool" if not breaks else "; ".join(breaks)
        scheduler = self.strategy + ("" if self.autoscaler == "none" else f" and {self.autoscaler}")
        return f"Growth replayed with {scheduler}: {wait}; {holds}."

    def rows(self) -> list[dict[str, Any]]:
        """One row per month and pool (the CSV)."""
        return [
            {"month": m.month, "month_waiting_pods": m.waiting_pods, **p.to_dict()}
            for m in self.months
            for p in m.pools
        ]

    def to_dict(self) -> dict[str, Any]:
        """``growth.json``."""
        return {
            "strategy": self.strategy,
            "autoscaler": self.autoscaler,
            "window": {"start": self.start.isoformat(), "end": self.end.isoformat()},
            "wait_threshold_s": WAIT_THRESHOLD_S,
            "changes": list(self.changes),
            "first_wait_month": self.first_wait_month(),
            "first_n_plus_1_break": {p: self.first_n1_break(p) for p in self.pools()},
            "sentence": self.sentence(),
            "months": [
                {
                    "month": m.month,
                    "pods": m.pods,
                    "waiting_pods": m.waiting_pods,
                    "pools": [p.to_dict() for p in m.pools],
                }
                for m in self.months
            ],
            "notes": list(self.notes),
            **(
                {}
                if self.autoscaler_choice is None
                else {"autoscaler_choice": self.autoscaler_choice}
            ),
        }
