"""The demo's "Growth replayed" section: the growth the demo's history shows, fitted per
namespace (``analyzer.monthly.growth_rates``), replayed on the snapshot's busiest day for
``DEMO_MONTHS`` months with kube-default (docs/monthly.md "The demo").

Kept small on purpose: one day, six months — each month is a replay of the whole day (about
3 CPU seconds at the demo's 200 nodes), plus the nodes-to-add search in the months a pod waits.
"""

from __future__ import annotations

from pathlib import Path

from analyzer.core.snapshot import Snapshot
from analyzer.monthly.growth_rates import namespace_rates
from analyzer.whatif.compare import resolve_strategy
from analyzer.whatif.growth import run_growth
from analyzer.whatif.growth_plan import Change, GrowthPlan
from analyzer.whatif.growth_result import GrowthResult

DEMO_MONTHS = 6
DEMO_DAYS = 1


def demo_growth(snapshot: Snapshot, history: Path) -> GrowthResult | None:
    """The growth replay of the demo (None when its history shows no namespace growing)."""
    changes = tuple(
        Change("history", r.namespace, rate=r.rate) for r in namespace_rates(history) if r.rate
    )
    if not changes:
        return None
    plan = GrowthPlan(changes, DEMO_MONTHS, ("history",))
    # two processes replay the months (none waits in the demo: they are independent, run_growth)
    return run_growth(snapshot, plan, resolve_strategy("kube-default"), days=DEMO_DAYS, workers=2)
