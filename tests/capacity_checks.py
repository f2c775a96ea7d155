"""Checks of the capacity figures (issue 24 item 4) that any what-if result must pass.

``capacity_problems(comparison)`` reads a what-if ``to_dict()`` (``analyzer whatif --format
json``) and lists what cannot be right: a negative or non-finite active capacity, a capacity
released larger than observed's, a released share above 100 % or not equal to released / total,
a money figure where the prices left a pool unpriced. ``split_pool_mix`` parses the pool-mix
sentences out of a verdict.
"""

from __future__ import annotations

import math
import re
from typing import Any

POOL_MIX = re.compile(
    r"(?:^|(?<=\. ))(?P<name>[^.]+?) peaks at (?P<fewer>[\d,]+) fewer nodes, but (?P<verb>releases only|holds) "
    r"(?P<pct>[\d.]+) % (?:more )?(?:of )?core-hours: pods moved to bigger nodes "
    r"\(a pool-mix shift\)\."
)
KEYS = ("core_hours", "gib_hours")


def split_pool_mix(sentence: str) -> tuple[str, list[tuple[str, int, str, float]]]:
    """The verdict without its pool-mix sentences, and each as (name, fewer, verb, signed % of
    core-hours released: negative when the sentence says the strategy holds more)."""
    found = [
        (
            m["name"],
            int(m["fewer"].replace(",", "")),
            m["verb"],
            float(m["pct"]) * (-1 if m["verb"] == "holds" else 1),
        )
        for m in POOL_MIX.finditer(sentence)
    ]
    return POOL_MIX.sub("", sentence).strip(), found


def pct_shown(cells: set[str] | list[str], pct: float) -> bool:
    """Whether a table row shows the share ``pct`` (one decimal, as a sentence rounds it)."""
    for cell in cells:
        try:
            value = float(cell.replace(",", "").replace("−", "-"))
        except ValueError:
            continue
        if "." in cell and abs(value - pct) <= 0.05 + 1e-9:
            return True
    return False


def capacity_problems(comparison: dict[str, Any]) -> list[str]:
    """Everything impossible among the capacity figures of ``comparison`` (empty when sound)."""
    problems: list[str] = []
    strategies = comparison["strategies"]
    observed = strategies[0]["worst_seed"]
    for s in strategies:
        for outcome in s["outcomes"]:
            where = f"{s['name']} seed {outcome['seed']}"
            for key in KEYS:
                total, freed = outcome[f"active_{key}"], outcome[f"{key}_released"]
                pct, base = outcome[f"{key}_released_pct"], observed[f"active_{key}"]
                if not (math.isfinite(total) and total >= 0):
                    problems.append(f"{where}: active_{key} {total}")
                if not (math.isfinite(freed) and freed <= base + 1e-9):
                    problems.append(f"{where}: {key}_released {freed} > observed's {base}")
                if not (math.isfinite(pct) and pct <= 100):
                    problems.append(f"{where}: {key}_released_pct {pct}")
                if base > 0 and not math.isclose(pct, 100 * freed / base, abs_tol=1e-9):
                    problems.append(f"{where}: {key}_released_pct {pct} ≠ released / total")
                if not math.isclose(base - total, freed, abs_tol=1e-6):
                    problems.append(f"{where}: {key}_released ≠ observed's − active")
            prices = comparison.get("prices")
            if "cost_released" in outcome and (prices is None or prices["unpriced_pools"]):
                problems.append(f"{where}: money without a price for every pool")
    # the pool-mix sentences name exactly the strategies flagged in the result
    _, shifts = split_pool_mix(comparison["recommendation"])
    if sorted(n for n, *_ in shifts) != sorted(comparison.get("pool_mix_shift", [])):
        problems.append(f"pool-mix sentences {shifts} ≠ {comparison.get('pool_mix_shift')}")
    return problems
