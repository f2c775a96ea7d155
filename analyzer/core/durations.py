"""Durations in the Prometheus/Kubernetes syntax (``5m``, ``1h30m``, ``30d``) and UTC times."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from analyzer.core.errors import InputError
from analyzer.core.text import one_line

# The longest day count or duration any option takes: 100 years, beyond any history, range,
# window or step a cluster has. Larger values are mistypes; refusing them here also keeps them
# from overflowing ``timedelta``/``date`` arithmetic (OverflowError) further on.
MAX_DAYS = 36_500
MAX_DURATION = timedelta(days=MAX_DAYS)

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)")


def parse_duration(text: str, *, field: str = "duration") -> timedelta:
    """Parse ``1h30m``, ``5m``, ``30d``, ``90s`` (Prometheus units; Go's ``5m0s`` too)."""
    value = str(text).strip()
    pos = 0
    seconds = 0.0
    for match in _PART.finditer(value):
        if match.start() != pos:
            break
        seconds += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if not value or pos != len(value):
        raise InputError(
            f"{field}: '{one_line(text)}' is not a duration (expected e.g. 30s, 5m, 1h30m, 7d)"
        )
    check_at_most(seconds / 86400, MAX_DAYS, field=field, shown=value[:40], unit="d")
    return timedelta(seconds=seconds)


def check_at_most(
    value: float, limit: float, *, field: str, shown: str | None = None, unit: str = ""
) -> None:
    """Refuse ``value`` above ``limit`` (and a non-finite one) in one line naming ``field``.

    The one bound every day count and duration goes through (``MAX_DAYS``): a huge value is
    refused where it is read, before any date arithmetic can overflow.
    """
    if not value <= limit:  # also NaN
        text = shown if shown is not None else f"{value:g}"
        raise InputError(
            f"{field}: {text} is more than {limit:g}{unit} (100 years); give a shorter one"
            if limit == MAX_DAYS
            else f"{field}: {text} is more than {limit:g}{unit}; give at most {limit:g}{unit}"
        )


def parse_positive_duration(text: str, *, field: str = "duration") -> timedelta:
    """``parse_duration`` that also rejects zero; the message quotes the text as the user typed it."""
    delta = parse_duration(text, field=field)
    if delta <= timedelta(0):
        raise InputError(
            f"{field}: '{one_line(str(text).strip())}' is not a positive duration (e.g. 5m)"
        )
    return delta


def parse_duration_list(text: str, *, field: str = "durations") -> list[tuple[str, timedelta]]:
    """Comma-separated positive durations (``5m,1h,1d``) → ``[(as typed, timedelta), ...]``.

    The typed text travels with each value so that later messages can name a window the way the
    user wrote it (``90m``, not ``1h30m`` or ``1:30:00``). An empty item (``5m,,1h``) is an error,
    not skipped: it is usually a typo that dropped a window.
    """
    items = [item.strip() for item in str(text).split(",")]
    if not any(items):
        raise InputError(f"{field}: give at least one duration, e.g. 5m,1h")
    if not all(items):
        raise InputError(
            f"{field}: '{one_line(str(text).strip())}' has an empty item between commas "
            "(write e.g. 5m,1h with no empty entries)"
        )
    return [(item, parse_positive_duration(item, field=field)) for item in items]


def format_duration(delta: timedelta) -> str:
    """Shortest Prometheus-style rendering: ``timedelta(hours=1, minutes=30)`` → ``1h30m``."""
    total = int(delta.total_seconds())
    if total == 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, total = divmod(total, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


def go_duration(delta: timedelta) -> str:
    """Go's ``time.Duration.String()`` for whole seconds, as NodeMetric writes it (``5m0s``)."""
    total = int(delta.total_seconds())
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{minutes}m{seconds}s"
    return f"{seconds}s"


def parse_time(text: str, *, field: str = "time") -> datetime:
    """Parse RFC 3339 / ISO 8601 (``2026-11-01T12:00:00Z``) or unix seconds into aware UTC."""
    value = str(text).strip()
    try:
        if re.fullmatch(r"\d+(\.\d+)?", value):
            return datetime.fromtimestamp(float(value), tz=UTC)
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except (ValueError, OverflowError):
        # A range end given as a day stops at that day's first instant: say so where it matters.
        end_note = (
            "; as an end, a day YYYY-MM-DD excludes that day" if field.endswith("end") else ""
        )
        raise InputError(
            f"{field}: '{one_line(text)}' is not a time (accepted: RFC 3339 like 2026-11-01T12:00:00Z, "
            f"a day YYYY-MM-DD meaning its 00:00 UTC, or unix seconds{end_note})"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


DAY_FORMS = (
    "YYYY-MM-DD, 'yesterday', or an RFC 3339 time or unix seconds, whose UTC day is taken; "
    "one whole UTC day is covered, after 00:00 up to and including 24:00"
)


def parse_day(text: str, *, field: str = "--date", today: date | None = None) -> date:
    """A UTC day: ``2026-11-07``, ``yesterday`` (relative to ``today``, default the UTC date now),
    or a time ``parse_time`` reads whose UTC day is taken (``2026-11-07T23:00:00-02:00`` →
    2026-11-08). The error names every accepted form and which part of the day is covered.
    """
    value = str(text).strip()
    if value.lower() == "yesterday":
        return (today or datetime.now(UTC).date()) - timedelta(days=1)
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            return date.fromisoformat(value)
        return parse_time(value, field=field).date()
    except (ValueError, InputError):
        raise InputError(
            f"{field}: '{one_line(text)}' is not a day (accepted: {DAY_FORMS})"
        ) from None
