"""Allocatable capacity of the active nodes over a replay's window, what it costs, what is released.

Definitions (docs/whatif.md "Capacity released"):

- **active capacity**: the allocatable of every node while it is *active* (holds at least one pod
  that is not a DaemonSet/static pod: the same ``_active_matrix`` the peak active nodes count),
  integrated over the usage grid like the active node-hours are (each grid point weighs one step):
  **core-hours** (allocatable CPU in cores × hours) and **GiB-hours** (allocatable memory in GiB,
  2^30 bytes, × hours). A node that is idle or gone counts nothing.
- **money** (with ``--prices``): each active node-hour priced by its pool, per core-hour and
  GiB-hour (a node-hour price split half to CPU, half to memory: ``analyzer.core.prices``).
- **released** vs a reference (observed, or a baseline strategy): the reference's active capacity
  minus this one's (positive = less capacity held), and as a % of the reference's.
- **pool-mix shift**: peak active nodes down by at least ``POOL_MIX_NODES_PCT`` % of the
  reference's while neither core-hours nor GiB-hours released reach ``POOL_MIX_CAPACITY_PCT`` %:
  the pods moved onto fewer, bigger nodes and no capacity came free. The thresholds come from
  the measurements in the scheduler-fidelity research: every node-count change above 2 % it
  measured was a change of pool mix with core-hours within about 1 % (−4.1 to −8.3 % nodes at
  −1.1 to +0.1 % core-hours released), while a packing that frees capacity frees well over 1 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from analyzer.core.prices import Prices
from analyzer.replay.input import ReplayInput
from analyzer.whatif.explain import node_pools

MILLI_PER_CORE = 1000.0
BYTES_PER_GIB = float(1 << 30)
POOL_MIX_NODES_PCT = 2.0
POOL_MIX_CAPACITY_PCT = 1.0
UNIT_LINE = (
    "Capacity released: allocatable CPU (core-hours) and memory (GiB-hours) of the nodes while "
    "they ran a non-DaemonSet pod, the reference's minus the strategy's over the window."
)

FloatArray = np.ndarray[Any, np.dtype[np.float64]]


@dataclass(frozen=True)
class NodePrices:
    """Per node, the price of one core-hour and one GiB-hour of its allocatable."""

    currency: str
    core_hour: FloatArray
    gib_hour: FloatArray
    unpriced: tuple[str, ...]  # pools without a price (their nodes cost nothing: money is None)


def node_prices(inp: ReplayInput, prices: Prices | None) -> NodePrices | None:
    """Each node's price per core-hour and GiB-hour from its pool's (None without ``prices``).

    A node-hour price is split over the pool's mean allocatable per node, as the monthly review
    does, so that a pool's price means the same on both pages."""
    if prices is None:
        return None
    pools = np.array(node_pools(inp), dtype=object)
    cores, gib = allocatable_units(inp)
    core_price = np.zeros(len(pools), dtype=np.float64)
    gib_price = np.zeros(len(pools), dtype=np.float64)
    unpriced = []
    for pool in sorted(set(pools.tolist())):
        mine = pools == pool
        price = prices.for_pool(pool)
        unit = (
            None
            if price is None
            else price.per_unit(float(cores[mine].mean()), float(gib[mine].mean()))
        )
        if unit is None:
            unpriced.append(str(pool))
            continue
        core_price[mine], gib_price[mine] = unit
    return NodePrices(prices.currency, core_price, gib_price, tuple(unpriced))


def allocatable_units(inp: ReplayInput) -> tuple[FloatArray, FloatArray]:
    """Per node, allocatable CPU in cores and memory in GiB."""
    alloc = inp.template.allocatable
    cores = alloc[:, inp.template.resources.index("cpu")].astype(np.float64) / MILLI_PER_CORE
    gib = alloc[:, inp.template.resources.index("memory")].astype(np.float64) / BYTES_PER_GIB
    return cores, gib


@dataclass(frozen=True)
class Capacity:
    """Active capacity over a window: core-hours, GiB-hours and, when priced, its cost."""

    core_hours: float
    gib_hours: float
    cost: float | None = None


def active_capacity(
    inp: ReplayInput,
    active: np.ndarray[Any, Any],
    step_hours: float,
    prices: NodePrices | None = None,
) -> Capacity:
    """The allocatable of the ``active`` (nodes × grid) nodes summed over the grid × one step."""
    cores, gib = allocatable_units(inp)
    points = active.sum(axis=1).astype(np.float64)  # grid points each node was active
    cost = None
    if prices is not None and not prices.unpriced:
        cost = float(np.sum(points * (cores * prices.core_hour + gib * prices.gib_hour)))
        cost *= step_hours
    return Capacity(
        core_hours=float(np.sum(points * cores)) * step_hours,
        gib_hours=float(np.sum(points * gib)) * step_hours,
        cost=cost,
    )


def share(part: float, whole: float) -> float:
    """``part`` as a % of ``whole`` (0 when the whole is 0: nothing to release)."""
    return 100.0 * part / whole if whole > 0 else 0.0


@dataclass(frozen=True)
class Released:
    """Capacity released vs a reference (positive = less held than the reference)."""

    core_hours: float
    gib_hours: float
    core_hours_pct: float
    gib_hours_pct: float
    cost: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, units in the keys."""
        return {
            "core_hours": self.core_hours,
            "gib_hours": self.gib_hours,
            "core_hours_pct": self.core_hours_pct,
            "gib_hours_pct": self.gib_hours_pct,
            "cost": self.cost,
        }


def released(reference: Capacity, this: Capacity) -> Released:
    """What ``this`` holds less than ``reference``, absolute and as % of the reference."""
    core = reference.core_hours - this.core_hours
    gib = reference.gib_hours - this.gib_hours
    cost = None if reference.cost is None or this.cost is None else reference.cost - this.cost
    return Released(
        core, gib, share(core, reference.core_hours), share(gib, reference.gib_hours), cost
    )


def pool_mix_shift(reference_peak: float, peak: float, core_pct: float, gib_pct: float) -> bool:
    """Whether fewer peak nodes come without capacity released (module docstring's rule)."""
    fewer_pct = share(reference_peak - peak, reference_peak)
    return fewer_pct >= POOL_MIX_NODES_PCT and max(core_pct, gib_pct) < POOL_MIX_CAPACITY_PCT


def pool_mix_sentence(name: str, reference_peak: float, peak: float, core_pct: float) -> str:
    """The sentence that names a pool-mix shift, its node count beside its capacity."""
    shown = round(core_pct, 1) + 0.0  # as the tables show it; + 0.0 turns −0.0 into 0.0
    held = (
        f"releases only {pct_text(shown)} of core-hours"
        if shown >= 0
        else f"holds {pct_text(-shown)} more core-hours"
    )
    return (
        f"{name} peaks at {reference_peak - peak:,.0f} fewer nodes, but {held}: pods moved to "
        "bigger nodes (a pool-mix shift)."
    )


def pct_text(value: float) -> str:
    """A share for a sentence, one decimal as the tables show it."""
    if not math.isfinite(value):
        return "n/a"
    text = f"{value:.1f}"
    return ("0.0" if text == "-0.0" else text) + " %"  # a tiny loss rounds to 0.0, not −0.0


def money_text(value: float | None, currency: str | None) -> str:
    """An amount for a sentence: "1,234 EUR" (two decimals below 100)."""
    if value is None or currency is None:
        return ""
    return f"{value:,.2f} {currency}" if abs(value) < 100 else f"{value:,.0f} {currency}"
