"""One convention for the numbers every report page shows, used by the context code and jinja.

Pages show CPU in cores, memory and storage in GiB, shares in %, changes of a share in
percentage points (pp), counts as integers with thousands separators ("2,762"), durations in
words ("2 h 14 min"). Side files (CSV/JSON) keep exact numbers with the unit in the column name
(``*_seconds``, ``*_cores``, ``*_gib``); Kubernetes-shaped output keeps Kubernetes quantities.

A missing value (None, NaN, ``pd.NA``) is never shown as a zero: it reads "–" (or the caller's
``missing`` text, such as "no data"). ``register(env)`` installs the functions as jinja filters;
the older names ``num`` and ``delta`` stay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jinja2
import pandas as pd

from analyzer.core.text import escaped

GIB = 2**30
MISSING = "–"


@dataclass(frozen=True)
class Unit:
    """How a resource's raw amount (millicores, bytes, devices) is shown: ``raw / divisor``."""

    name: str  # "cores", "GiB", "" for plain counts
    divisor: int
    digits: int


CORES = Unit("cores", 1000, 1)
GIB_UNIT = Unit("GiB", GIB, 1)
COUNT = Unit("", 1, 0)


def resource_unit(resource: str) -> Unit:
    """cpu → cores; memory, ephemeral-storage, hugepages-* → GiB; everything else → a count."""
    if resource == "cpu":
        return CORES
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return GIB_UNIT
    return COUNT


def unit_label(resource: str) -> str:
    """The unit's name for a header: ``cores``, ``GiB``, else the resource itself (``GPUs``)."""
    unit = resource_unit(resource)
    if unit.name:
        return unit.name
    return "GPUs" if resource.endswith("/gpu") else "units"


def number_or_none(value: Any) -> float | None:
    """A finite float, or None for None / NaN / NA / text that is not a number."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or math.isinf(number) else number


def number(value: Any, digits: int = 1, missing: str = MISSING) -> str:
    """``1234.5`` → ``1,234.5``; digits 0 gives an integer (``2,762``); missing → ``missing``."""
    if isinstance(value, str):
        return value
    x = number_or_none(value)
    if x is None:
        return missing if _is_missing(value) else str(value)
    if digits <= 0:
        return f"{round(x):,}"
    text = f"{x:,.{digits}f}"
    # a value that rounds to zero has no sign: "-0.0" reads as a loss that is not there
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text


def _is_missing(value: Any) -> bool:
    try:
        return value is None or bool(value != value) or math.isinf(float(value))
    except (TypeError, ValueError):
        return value is None or str(value) in ("<NA>", "NaT")


def count(value: Any, missing: str = MISSING) -> str:
    """A count: always an integer with separators (``2,762``, never ``2,762.0``)."""
    return number(value, 0, missing)


def pct(value: Any, digits: int = 1, missing: str = MISSING) -> str:
    """A share already in % (``40.1`` → ``40.1 %``)."""
    text = number(value, digits, missing)
    return text if text == missing else f"{text} %"


def cores(millicores: Any, digits: int = 1, missing: str = MISSING) -> str:
    """Millicores shown as cores (``30500`` → ``30.5 cores``)."""
    x = number_or_none(millicores)
    return missing if x is None else f"{number(x / 1000, digits)} cores"


def gib(value_bytes: Any, digits: int = 1, missing: str = MISSING) -> str:
    """Bytes shown as GiB (``2**31`` → ``2.0 GiB``)."""
    x = number_or_none(value_bytes)
    return missing if x is None else f"{number(x / GIB, digits)} GiB"


def amount(resource: str, raw: Any, missing: str = MISSING) -> str:
    """A raw resource amount in the page's unit: ``amount("cpu", 2500)`` → ``2.5 cores``."""
    x = number_or_none(raw)
    if x is None:
        return missing
    unit = resource_unit(resource)
    text = number(x / unit.divisor, unit.digits)
    return f"{text} {unit_label(resource)}"


def duration(
    seconds: Any,
    missing: str = MISSING,
    *,
    days: bool = True,
    floor: bool = False,
    zero: str = "0 min",
) -> str:
    """Seconds in words: ``8040`` → ``2 h 14 min``, ``90`` → ``1 min 30 s``, ``0`` → ``0 min``.

    Two units at most (days and hours, hours and minutes, minutes and seconds), rounded to the
    smaller one (``floor``: rounded down, so a wait never reads longer than it was). ``days=False``
    stops at hours (``54 h``): node-time summed over many nodes reads better that way than as
    "2 d 6 h". ``zero`` is the text for nothing at all.
    """
    x = number_or_none(seconds)
    if x is None:
        return missing
    sign = "−" if x < 0 else ""
    total = int(abs(x)) if floor else round(abs(x))
    if total == 0:
        return zero
    for big, big_name, small, small_name in (
        (86400, "d", 3600, "h"),
        (3600, "h", 60, "min"),
        (60, "min", 1, "s"),
    ):
        if total >= big and (days or big_name != "d"):
            rounded = (total // small if floor else round(total / small)) * small
            whole, rest = divmod(rounded, big)
            parts = [f"{whole:,} {big_name}"]
            if rest // small:
                parts.append(f"{rest // small} {small_name}")
            return sign + " ".join(parts)
    return f"{sign}{total} s"


def period(start: Any, end: Any) -> str:
    """A report's period as its header shows it: ``2026-11-01 00:00 – 2026-11-08 00:00 UTC``."""
    first, last = (pd.Timestamp(x).strftime("%Y-%m-%d %H:%M") for x in (start, end))
    return f"{first} – {last} UTC"


def signed(value: Any, digits: int = 1, unit: str = "") -> str:
    """A change: ``+1.5 pp`` / ``−2.0 GiB`` / ``±0``; missing → "" (nothing to compare with)."""
    x = number_or_none(value)
    if x is None:
        return ""
    if abs(x) < 0.5 * 10**-digits:
        return "±0" + (f" {unit}" if unit else "")
    text = f"{x:+,.{digits}f}" if digits > 0 else f"{round(x):+,}"
    text = text.replace("-", "−")
    return text + (f" {unit}" if unit else "")


def signed_duration(seconds: Any, *, days: bool = True) -> str:
    """A change of a duration: ``+1 h 5 min`` / ``−20 min`` / ``±0``."""
    x = number_or_none(seconds)
    if x is None:
        return ""
    if round(x) == 0:
        return "±0"
    return ("+" if x > 0 else "") + duration(x, days=days)


def register(env: jinja2.Environment) -> None:
    """Install the formatting filters (``num`` and ``delta`` keep their older behaviour)."""
    env.filters["num"] = number
    env.filters["delta"] = lambda value, digits=1: signed(value, digits).replace("−", "-")
    env.filters["count"] = count
    env.filters["pct"] = pct
    env.filters["cores"] = cores
    env.filters["gib"] = gib
    env.filters["amount"] = lambda raw, resource: amount(resource, raw)
    env.filters["duration"] = duration
    env.filters["signed"] = signed
    # a name from data (cluster, pool, node) on one line, non-printables escaped (core/text.py)
    env.filters["shown"] = lambda value: escaped(value) if value is not None else MISSING
