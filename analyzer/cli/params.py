"""Bounded click types: every count an option takes is a whole number within a plausible range.

click's ``int`` and ``float`` accept any size (``--days 1000000000``, ``--days inf``), and the
value then overflows date arithmetic or asks for years of work. ``Count`` and ``Amount`` refuse
it where it is read, in one line naming the option as the user typed it (exit 2,
``InputError``); the config file's defaults go through the same conversion.
"""

from __future__ import annotations

import math
from typing import Any

import click

from analyzer.core.durations import MAX_DAYS, check_at_most
from analyzer.core.errors import InputError
from analyzer.core.executor import LOCAL


def _name(param: click.Parameter | None) -> str:
    """The option's long flag (``--days``), as the user typed it."""
    if param is None:
        return "value"
    flags = [o for o in getattr(param, "opts", []) if o.startswith("--")]
    return flags[0] if flags else (param.name or "value")


class Count(click.ParamType):  # type: ignore[type-arg]
    """A whole number in ``[low, high]`` (``high`` defaults to ``MAX_DAYS``, 100 years of days)."""

    name = "integer"

    def __init__(self, low: int = 1, high: int = MAX_DAYS) -> None:
        self.low = low
        self.high = high

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        field = _name(param)
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise InputError(f"{field}: expected a whole number, got {type(value).__name__}")
        text = str(value).strip()
        try:
            number = int(text)
        except ValueError:
            raise InputError(f"{field}: {text[:40]!r} is not a whole number") from None
        if number < self.low:
            raise InputError(f"{field}: {number} must be at least {self.low}")
        check_at_most(number, self.high, field=field, shown=text[:40])
        return number


class Amount(click.ParamType):  # type: ignore[type-arg]
    """A finite number in ``(low, high]`` (``--days 0.5`` of the generator): no inf, no NaN."""

    name = "number"

    def __init__(self, low: float = 0.0, high: float = MAX_DAYS) -> None:
        self.low = low
        self.high = high

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        field = _name(param)
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise InputError(f"{field}: {str(value)[:40]!r} is not a number") from None
        if not math.isfinite(number):
            raise InputError(f"{field}: {value} is not a finite number")
        if number <= self.low:
            raise InputError(f"{field}: {number:g} must be more than {self.low:g}")
        check_at_most(number, self.high, field=field, shown=str(value).strip()[:40])
        return number


# ``--executor``: where the sweeps' replays run (analyzer/core/executor.py, docs/executor.md);
# checked when the settings are built, so a bad value is one line naming the option
EXECUTOR_OPTION = click.option(
    "--executor",
    default=LOCAL,
    show_default=True,
    metavar="local|dask://HOST:PORT",
    help="Where the replays run: local (this machine, --workers processes) or a running "
    "dask.distributed scheduler (pip install 'analyzer[dask]'; its workers read the snapshot "
    "from the same path, docs/executor.md).",
)
