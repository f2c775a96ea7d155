"""The search's judgement of its rows: the Pareto front and the recommendation (``RULE``).

Each row (``SearchRow``) is judged on three figures: **capacity released** vs observed (mean over
seeds; money when ``--prices`` prices every pool, else the mean of the core-hour and GiB-hour
shares released: ``analyzer.whatif.capacity``; more is better), **threshold violations** and
**waiting pods** (worst seed; fewer is better). Peak active nodes stand beside; a row whose peak
drops without capacity released is a pool-mix shift, named in the sentence and never recommended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from analyzer.whatif.capacity import money_text, pct_text, pool_mix_sentence, pool_mix_shift

RULE = (
    "Recommended: the most capacity of active nodes released vs observed (money when --prices "
    "prices every pool, else the mean of the core-hour and GiB-hour shares) among the "
    "configurations that release some, are no pool-mix shift (peak nodes down 2 % or more with "
    "less than 1 % of core-hours and of GiB-hours released) and have no more threshold "
    "violations, waiting pods and never-placed pods than observed (worst seed); ties go to fewer "
    "violations, then fewer waiting pods, then fewer peak active nodes."
)
FRONT_RULE = (
    "Pareto front: no other configuration releases at least as much capacity with at most as "
    "many violations and waiting pods, and is strictly better on one."
)


@dataclass
class SearchRow:
    """One configuration's outcome (``kind``: observed, baseline or searched)."""

    name: str
    kind: str
    parameters: dict[str, Any]
    peak_nodes: float
    mean_nodes: float
    violations: float
    waited: float
    never_placed: float
    node_hours_released: float
    document: dict[str, Any] | None
    on_front: bool = False
    eligible: bool = False
    recommended: bool = False
    # capacity released vs observed (mean over seeds; ``analyzer.whatif.capacity``)
    core_hours_released: float = 0.0
    gib_hours_released: float = 0.0
    core_hours_released_pct: float = 0.0
    gib_hours_released_pct: float = 0.0
    cost_released: float | None = None  # with --prices pricing every pool
    pool_mix: bool = False  # fewer peak nodes, no capacity released
    active_core_hours: float = 0.0  # the row's own active capacity (mean over seeds)
    active_gib_hours: float = 0.0
    # vs the first baseline (today's scheduler replayed, default kube-default): filled by the
    # search, empty without a baseline
    vs_baseline: dict[str, Any] = field(default_factory=dict)
    # with ``--autoscaler``: the row replayed under it (``analyzer.whatif.search_autoscaled``),
    # which ``released`` then reads
    autoscaled: dict[str, Any] | None = None

    @property
    def released(self) -> float:
        """What the front and the recommendation maximise: money released when priced, else the
        mean of the core-hour and GiB-hour shares released (under the autoscaler when the row
        was replayed with one: the nodes that existed, not the active ones)."""
        a = self.autoscaled
        if a is not None:
            if a["cost_released"] is not None and self.cost_released is not None:
                return float(a["cost_released"])
            return (float(a["core_hours_released_pct"]) + float(a["gib_hours_released_pct"])) / 2
        if self.cost_released is not None:
            return self.cost_released
        return (self.core_hours_released_pct + self.gib_hours_released_pct) / 2.0

    @property
    def objectives(self) -> tuple[float, float, float]:
        """The three figures the front compares (all: fewer is better; capacity negated)."""
        return (-self.released, self.violations, self.waited)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the document is kept out: the YAML side file holds the recommended one)."""
        return {
            "name": self.name,
            "kind": self.kind,
            **self.parameters,
            "peak_nodes": self.peak_nodes,
            "mean_nodes": self.mean_nodes,
            "violations": self.violations,
            "waited": self.waited,
            "never_placed": self.never_placed,
            "node_hours_released": self.node_hours_released,
            "core_hours_released": self.core_hours_released,
            "gib_hours_released": self.gib_hours_released,
            "core_hours_released_pct": self.core_hours_released_pct,
            "gib_hours_released_pct": self.gib_hours_released_pct,
            "cost_released": self.cost_released,
            "pool_mix_shift": self.pool_mix,
            "active_core_hours": self.active_core_hours,
            "active_gib_hours": self.active_gib_hours,
            "released_vs_baseline": dict(self.vs_baseline),
            **({} if self.autoscaled is None else {"autoscaled": dict(self.autoscaled)}),
            "on_front": self.on_front,
            "eligible": self.eligible,
            "recommended": self.recommended,
        }


def pareto_front(points: Sequence[Sequence[float]]) -> list[bool]:
    """For each point, whether no other point is ≤ on every coordinate and < on one."""

    def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
        return all(x <= y for x, y in zip(a, b, strict=True)) and any(
            x < y for x, y in zip(a, b, strict=True)
        )

    return [not any(dominates(other, p) for other in points if other is not p) for p in points]


def _released_text(row: SearchRow, currency: str | None) -> str:
    a = row.autoscaled
    if a is not None:  # the nodes that existed under the autoscaler vs the data's
        text = (
            f"{a['core_hours_released']:,.0f} core-hours "
            f"({pct_text(a['core_hours_released_pct'])}) and {a['gib_hours_released']:,.0f} "
            f"GiB-hours ({pct_text(a['gib_hours_released_pct'])}) of the nodes' capacity under "
            f"{a['autoscaler']} ({a['node_hours']:,.1f} node-hours, observed "
            f"{a['observed_node_hours']:,.1f})"
        )
        money = money_text(a["cost_released"], currency)
        return text + (f", worth {money}" if money else "")
    text = (
        f"{row.core_hours_released:,.0f} core-hours ({pct_text(row.core_hours_released_pct)}) and "
        f"{row.gib_hours_released:,.0f} GiB-hours ({pct_text(row.gib_hours_released_pct)})"
    )
    money = money_text(row.cost_released, currency)
    return text + (f", worth {money}" if money else "")


def recommend(
    observed: SearchRow, rows: Sequence[SearchRow], currency: str | None = None
) -> tuple[SearchRow | None, str]:
    """The recommended row (see ``RULE``) and one sentence saying which, or why none."""
    for row in rows:
        row.pool_mix = pool_mix_shift(
            observed.peak_nodes,
            row.peak_nodes,
            row.core_hours_released_pct,
            row.gib_hours_released_pct,
        )
        row.eligible = (
            row.violations <= observed.violations
            and row.waited <= observed.waited
            and row.never_placed <= observed.never_placed
            # under the autoscaler: no more pods left waiting at the end than never placed
            and (
                row.autoscaled is None
                or row.autoscaled["pending_pods_at_end"] <= observed.never_placed
            )
        )
    shifts = "".join(
        " "
        + pool_mix_sentence(r.name, observed.peak_nodes, r.peak_nodes, r.core_hours_released_pct)
        for r in rows
        if r.pool_mix
    )
    freeing = [r for r in rows if r.eligible and r.released > 0 and not r.pool_mix]
    if freeing:
        best = min(
            freeing,
            key=lambda r: (-r.released, r.violations, r.waited, r.peak_nodes, rows.index(r)),
        )
        best.recommended = True
        what = "" if best.autoscaled is not None else " of active nodes' capacity"
        active = "" if best.autoscaled is None else " active"  # the fixed-node replay's peak
        return best, (
            f"Apply {best.name}: it releases {_released_text(best, currency)}{what} "
            f"over the window, peaking at {best.peak_nodes:.0f}{active} nodes (observed "
            f"{observed.peak_nodes:.0f}), with {best.violations:.0f} threshold violations "
            f"(observed {observed.violations:.0f}), {best.waited:.0f} waiting pods (observed "
            f"{observed.waited:.0f}) and {best.never_placed:.0f} never placed (observed "
            f"{observed.never_placed:.0f})." + shifts
        )
    if any(r.eligible for r in rows):
        return None, (
            "No configuration releases capacity: every one with no more violations, waiting pods "
            "and never-placed pods than observed held at least the core-hours and GiB-hours "
            "observed, or only moved pods to bigger nodes." + shifts
        )
    return None, (
        f"No configuration releases capacity safely: every one of the {len(rows)} searched had "
        f"more threshold violations (observed {observed.violations:.0f}), waiting pods (observed "
        f"{observed.waited:.0f}) or never-placed pods (observed {observed.never_placed:.0f})"
        + (
            ", or left more pods pending at the end under the autoscaler."
            if any(r.autoscaled is not None for r in rows)
            else "."
        )
        + shifts
    )
