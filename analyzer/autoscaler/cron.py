"""Cron schedules of Karpenter's disruption budgets (``budgets[].schedule``, UTC).

The standard five fields (minute hour day-of-month month day-of-week) with ``*``, lists, ranges,
steps and month/day names, and the macros ``@yearly @annually @monthly @weekly @daily @midnight
@hourly``, as ``robfig/cron``'s standard parser that upstream uses. Day-of-month and day-of-week
both restricted: either matches (cron's rule). A budget with ``duration`` is active at ``t`` when
the schedule fired within ``(t - duration, t]`` (upstream ``Budget.IsActive``: the next trigger
after ``t - duration`` is not after ``t``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from analyzer.core.errors import InputError
from analyzer.core.structured import preview

MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# (low, high, names) per field
FIELDS = (
    (0, 59, ()),
    (0, 23, ()),
    (1, 31, ()),
    (1, 12, ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")),
    (0, 6, ("sun", "mon", "tue", "wed", "thu", "fri", "sat")),
)


@dataclass(frozen=True)
class Cron:
    """A parsed schedule: the allowed values of each field."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    any_day: bool  # day-of-month is "*"
    any_weekday: bool  # day-of-week is "*"

    def fires(self, minute: int) -> bool:
        """Whether the schedule triggers at the minute starting ``minute`` × 60 s (epoch, UTC)."""
        at = datetime.fromtimestamp(minute * 60, tz=UTC)
        if at.minute not in self.minutes or at.hour not in self.hours:
            return False
        if at.month not in self.months:
            return False
        day = at.day in self.days
        weekday = (at.weekday() + 1) % 7 in self.weekdays  # cron: Sunday is 0
        if self.any_day or self.any_weekday:
            return day and weekday
        return day or weekday


def _value(text: str, names: tuple[str, ...], where: str) -> int:
    low = text.lower()
    if low in names:
        return names.index(low) + (1 if len(names) == 12 else 0)
    if not text.isdigit():
        raise InputError(f"{where}: {preview(text)} is not a number or a name")
    return int(text)


def _field(text: str, index: int, where: str) -> frozenset[int]:
    low, high, names = FIELDS[index]
    out: set[int] = set()
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) == 0:
                raise InputError(f"{where}: step {preview(step_text)} is not a whole number > 0")
            step = int(step_text)
        if body in ("*", "?"):
            first, last = low, high
        elif "-" in body:
            a, b = body.split("-", 1)
            first, last = _value(a, names, where), _value(b, names, where)
        else:
            first = _value(body, names, where)
            last = high if step_text else first
        if index == 4 and last == 7:  # 7 is Sunday too
            last = 6 if first <= 6 else 0
            out.add(0)
        if not low <= first <= last <= high:
            raise InputError(f"{where}: {preview(part)} is outside {low}-{high}")
        out.update(range(first, last + 1, step))
    return frozenset(out)


def parse_cron(raw: object, where: str) -> Cron:
    """``raw`` as a ``Cron``; one ``InputError`` line naming ``where`` when it is not one."""
    if not isinstance(raw, str):
        raise InputError(f"{where}: {preview(raw)} is not a cron schedule like '0 9 * * 1-5'")
    text = MACROS.get(raw.strip().lower(), raw.strip())
    parts = text.split()
    if len(parts) != 5:
        raise InputError(
            f"{where}: {preview(raw)} needs 5 fields (minute hour day month weekday) or a macro "
            "such as @daily"
        )
    sets = [_field(p, i, f"{where} field {i + 1}") for i, p in enumerate(parts)]
    minutes, hours, days, months, weekdays = sets
    return Cron(
        raw, minutes, hours, days, months, weekdays, parts[2] in ("*", "?"), parts[4] in ("*", "?")
    )


def active(cron: Cron, duration: int, t: float) -> bool:
    """Whether a budget of ``cron`` and ``duration`` seconds is active at ``t`` (epoch s)."""
    last = int(t // 60)
    first = int((t - duration) // 60) + 1  # minutes m with t - duration < 60 m <= t
    return any(cron.fires(m) for m in range(max(first, last - 527_040), last + 1))


def windows(cron: Cron, duration: int, start: float, end: float) -> list[tuple[float, float]]:
    """The ``[from, to)`` spans (epoch s) within ``[start, end]`` when the budget is active."""
    out: list[tuple[float, float]] = []
    for m in range(int((start - duration) // 60), int(end // 60) + 1):
        if not cron.fires(m):
            continue
        lo, hi = max(m * 60.0, start), min(m * 60.0 + duration, end)
        if hi <= lo:
            continue
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out
