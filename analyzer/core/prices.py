"""``--prices prices.yaml``: what a pool's capacity costs, to put idle and slack in money.

The file::

    currency: EUR            # required: the label shown beside every amount
    pools:                   # per pool, either a node price ...
      general: {node_hour: 0.38}
      highmem: {core_hour: 0.031, gib_hour: 0.0042}   # ... or a core and a GiB price
    default: {core_hour: 0.03, gib_hour: 0.004}       # optional: pools not listed

A node-hour price is split evenly between the node's CPU and its memory (half of it over the pool's
mean allocatable cores per node, half over its mean allocatable GiB per node), so every pool ends
with a price per core-hour and per GiB-hour. Every mistake is one line naming the field.

A price is a number from 0 to ``MAX_PRICE`` (1e9 per hour, in any currency: no machine costs
that, and beyond it a month's money overflows to infinity). YAML 1.1 reads ``5e-2`` and
``1e308`` (an exponent without a dot) and quoted numbers as text; such a price is refused with
the spelling YAML reads as a number (``write node_hour: 0.05``), so the file means one thing to
every YAML reader. The file is read through ``core.structured`` (aliases and nesting bounded).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import describe_value, load_yaml, plain

_KEYS = ("node_hour", "core_hour", "gib_hour")
MAX_PRICE = 1e9  # per hour, any currency; the largest cloud machines cost ~1e2 USD an hour


@dataclass(frozen=True)
class PoolPrice:
    """One pool's price: ``node_hour`` alone, or ``core_hour`` and ``gib_hour``."""

    node_hour: float | None = None
    core_hour: float | None = None
    gib_hour: float | None = None

    def per_unit(self, cores_per_node: float, gib_per_node: float) -> tuple[float, float] | None:
        """(price per core-hour, per GiB-hour); None when a node price meets an empty node."""
        if self.node_hour is None:
            assert self.core_hour is not None and self.gib_hour is not None
            return self.core_hour, self.gib_hour
        if not (cores_per_node > 0 and gib_per_node > 0):
            return None
        return 0.5 * self.node_hour / cores_per_node, 0.5 * self.node_hour / gib_per_node

    def describe(self, currency: str) -> str:
        if self.node_hour is not None:
            return f"{self.node_hour:g} {currency} per node-hour (half to CPU, half to memory)"
        return f"{self.core_hour:g} {currency} per core-hour, {self.gib_hour:g} {currency} per GiB-hour"


@dataclass(frozen=True)
class Prices:
    """The parsed prices file."""

    currency: str
    pools: Mapping[str, PoolPrice]
    default: PoolPrice | None
    source: str

    def for_pool(self, pool: str) -> PoolPrice | None:
        return self.pools.get(pool, self.default)


def _yaml_number(value: float) -> str:
    """``value`` spelled so that YAML 1.1 reads a number (an exponent needs a dot: 1.0e+308)."""
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        text = f"{mantissa}.0e{exponent}"
    return text


def _number(value: Any, where: str, key: str) -> float:
    """A price: a finite number in [0, MAX_PRICE]; else one line saying how to write it."""
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = math.nan
        if math.isfinite(number) and abs(number) <= MAX_PRICE:
            raise InputError(
                f"{where}.{key}: {describe_value(value)} is text to YAML, not a number; "
                f"write {key}: {_yaml_number(number)} (no quotes; an exponent needs a dot)"
            )
        if math.isfinite(number):
            value = number  # what the text means is refused below, for its size
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(
            f"{where}.{key}: {describe_value(value)} is not a number; write e.g. {key}: 0.04"
        )
    if value < 0:
        raise InputError(f"{where}.{key}: {value} is negative; a price is 0 or more")
    if value > MAX_PRICE:
        raise InputError(
            f"{where}.{key}: {value:g} is above {MAX_PRICE:,.0f} per hour, more than any machine "
            "costs in any currency; check the unit (a price per hour)"
        )
    return float(value)


def _price(raw: Any, where: str) -> PoolPrice:
    if not isinstance(raw, Mapping):
        raise InputError(
            f"{where}: expected a mapping with node_hour, or core_hour and gib_hour, "
            f"not {describe_value(raw)}"
        )
    unknown = sorted(plain(k) for k in raw if k not in _KEYS)
    if unknown:
        raise InputError(
            f"{where}.{unknown[0]}: unknown key; use node_hour, or core_hour and gib_hour"
        )
    values: dict[str, float] = {}
    for key in _KEYS:
        if key in raw:
            values[key] = _number(raw[key], where, key)
    if "node_hour" in values:
        if len(values) > 1:
            raise InputError(
                f"{where}: give node_hour alone, or core_hour and gib_hour, not both kinds"
            )
        return PoolPrice(node_hour=values["node_hour"])
    missing = [k for k in ("core_hour", "gib_hour") if k not in values]
    if missing:
        raise InputError(
            f"{where}.{missing[0]}: missing; give node_hour, or core_hour and gib_hour"
        )
    return PoolPrice(core_hour=values["core_hour"], gib_hour=values["gib_hour"])


def load_prices(path: Path) -> Prices:
    """Read and validate ``path`` (``InputError`` naming the field on any mistake)."""
    where = f"--prices {path}"
    data = load_yaml(path, what="--prices")
    if not isinstance(data, Mapping):
        raise InputError(
            f"{where}: expected a mapping with currency and pools, not {describe_value(data)}"
        )
    unknown = sorted(plain(k) for k in data if k not in ("currency", "pools", "default"))
    if unknown:
        raise InputError(f"{where}: {unknown[0]}: unknown key; use currency, pools, default")
    currency = data.get("currency")
    if not isinstance(currency, str) or not currency.strip():
        raise InputError(f"{where}: currency: missing; write e.g. currency: EUR")
    pools_raw = data.get("pools") or {}
    if not isinstance(pools_raw, Mapping):
        raise InputError(f"{where}: pools: expected a mapping of pool name to its price")
    pools = {
        str(name): _price(raw, f"{where}: pools.{plain(name)}") for name, raw in pools_raw.items()
    }
    default = None if data.get("default") is None else _price(data["default"], f"{where}: default")
    if not pools and default is None:
        raise InputError(f"{where}: pools: no pool has a price; add pools: or default:")
    return Prices(currency.strip(), pools, default, str(path))
