"""The what-if verdict: which strategy to recommend and the sentence that says so.

``VERDICT_RULE``: every compared figure of a strategy is its worst seed; the recommendation is
the strategy that releases the most allocatable capacity of active nodes vs observed
(``analyzer.whatif.capacity``: money when ``--prices`` prices every pool, else the mean of the
core-hour and GiB-hour shares released; ties go to the fewer peak active nodes) among those that
release some, are no pool-mix shift and have no more threshold violations, waiting pods or
never-placed pods than observed. Every pool-mix shift is named in the sentence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from analyzer.whatif.capacity import (
    POOL_MIX_CAPACITY_PCT,
    POOL_MIX_NODES_PCT,
    money_text,
    pct_text,
    pool_mix_sentence,
)


class StrategyComparison(Protocol):
    """What the verdict reads of ``analyzer.whatif.compare.StrategyComparison`` (a protocol: the
    comparison imports this module, not the other way round)."""

    name: str

    @property
    def outcomes(self) -> Sequence[Any]: ...

    @property
    def priced(self) -> bool: ...

    def worst(self, key: str) -> float: ...

    def pool_mix(self, observed: Any) -> bool: ...


VERDICT_RULE = (
    "Each strategy's figures are its worst tie-break seed (most nodes, waiting pods, unplaced pods "
    "and violations; least capacity released). Recommended: the most allocatable capacity of "
    "active nodes released vs observed (money when --prices prices every pool, else the mean of "
    "the core-hour and GiB-hour shares released; ties: fewer peak nodes) among strategies that "
    f"release some, are no pool-mix shift (peak nodes down {POOL_MIX_NODES_PCT:g} % or more while "
    f"less than {POOL_MIX_CAPACITY_PCT:g} % of core-hours and of GiB-hours is released) and have no "
    "more violations, waiting pods or never-placed pods than observed."
)


def _count(value: float) -> str:
    return f"{value:,.0f}"


def rank_key(c: StrategyComparison) -> float:
    """What the recommendation maximises: money released when priced, else the mean of the
    core-hour and GiB-hour shares released (worst seed)."""
    if c.priced:
        return c.worst("cost_released")
    return (c.worst("core_hours_released_pct") + c.worst("gib_hours_released_pct")) / 2.0


def capacity_clause(c: StrategyComparison, currency: str | None = None) -> str:
    """ "1,234 core-hours (5.0 %) and 4,321 GiB-hours (4.8 %)[, worth 12 EUR]" released."""
    money = money_text(c.worst("cost_released"), currency) if c.priced else ""
    return (
        f"{_count(c.worst('core_hours_released'))} core-hours "
        f"({pct_text(c.worst('core_hours_released_pct'))}) and "
        f"{_count(c.worst('gib_hours_released'))} GiB-hours "
        f"({pct_text(c.worst('gib_hours_released_pct'))})" + (f", worth {money}" if money else "")
    )


def pool_mix_sentences(comparisons: Sequence[StrategyComparison]) -> list[str]:
    """One sentence per strategy that is a pool-mix shift vs observed."""
    observed = comparisons[0]
    return [
        pool_mix_sentence(
            c.name,
            observed.worst("active_nodes_peak"),
            c.worst("active_nodes_peak"),
            c.worst("core_hours_released_pct"),
        )
        for c in comparisons[1:]
        if c.pool_mix(observed)
    ]


def recommend(
    comparisons: Sequence[StrategyComparison], currency: str | None = None
) -> tuple[str | None, str]:
    """The recommendation and its sentence, by ``VERDICT_RULE`` (worst seed of every figure)."""
    observed = comparisons[0]
    base = {k: observed.worst(k) for k in ("violations", "waited", "never_placed")}
    base_peak = observed.worst("active_nodes_peak")
    several = any(len(c.outcomes) > 1 for c in comparisons[1:])
    worst = " in its worst seed" if several else ""
    shifts = pool_mix_sentences(comparisons)
    tail = "".join(f" {line}" for line in shifts)
    releasing = [c for c in comparisons[1:] if rank_key(c) > 0 and not c.pool_mix(observed)]
    eligible = [c for c in releasing if all(c.worst(k) <= base[k] for k in base)]
    if not eligible:
        most = max(releasing, key=rank_key, default=None)
        if most is None:
            return None, "No strategy would have released capacity of active nodes." + tail
        return None, (
            "No strategy would have released capacity of active nodes without more threshold "
            f"violations, waiting pods or unplaced pods than observed. Most released: {most.name} "
            f"({capacity_clause(most, currency)}{worst}), at the cost of "
            f"{_count(most.worst('violations'))} violations (observed "
            f"{_count(base['violations'])}), {_count(most.worst('waited'))} pods waiting "
            f"(observed {_count(base['waited'])}) and {_count(most.worst('never_placed'))} "
            f"never placed (observed {_count(base['never_placed'])})." + tail
        )
    best = max(eligible, key=lambda c: (rank_key(c), -c.worst("active_nodes_peak")))
    return best.name, (
        f"{best.name} would have released the most capacity of active nodes: "
        f"{capacity_clause(best, currency)} over the window{worst}, peaking at "
        f"{_count(best.worst('active_nodes_peak'))} nodes (observed {_count(base_peak)}), with no "
        f"more threshold violations ({_count(best.worst('violations'))} vs "
        f"{_count(base['violations'])}), waiting pods ({_count(best.worst('waited'))} vs "
        f"{_count(base['waited'])}) or unplaced pods ({_count(best.worst('never_placed'))} vs "
        f"{_count(base['never_placed'])}) than observed." + tail
    )
