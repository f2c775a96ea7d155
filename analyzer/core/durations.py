"""Durations in the Prometheus/Kubernetes syntax (``5m``, ``1h30m``, ``30d``) and UTC times."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from analyzer.core.errors import InputError

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
        raise InputError(f"{field}: {text!r} is not a duration (expected e.g. 30s, 5m, 1h30m, 7d)")
    return timedelta(seconds=seconds)


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
        raise InputError(
            f"{field}: {text!r} is not a time (expected RFC 3339 like 2026-11-01T00:00:00Z)"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)
