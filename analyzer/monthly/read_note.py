"""What the monthly review read, and at which resolution its days' usage was read from Prometheus.

``report monthly`` reads only the history (``OUT/history``), never Prometheus: a long range is the
history's, recorded one day at a time by the nightly runs (their ``--step``, 1m by default) and by
``history backfill`` (5m unless ``--step``). Each day's ``summary/<day>.json`` keeps the
``step_seconds`` its usage was read at; this module counts the days of the review's window by that
step, so the page can say, e.g., "usage read from Prometheus at 5m on 61 days (history backfill's
default) and at 1m on 31". A day whose summary is missing, unreadable or older than the field
counts as "step not recorded": the sentence is a description, and a review is not refused for it.
Days the store records as generated (``history/generated.py``: the demo's months before its
snapshot) are said as such, with the step they were generated at: they were never read from
Prometheus.
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import Any

from analyzer.core.durations import format_duration
from analyzer.core.errors import InputError
from analyzer.history.files import read_json
from analyzer.history.generated import generated_steps


def _step(path: Path) -> int:
    """The ``step_seconds`` of one summary file, or 0 when it does not say (or cannot be read)."""
    if not path.is_file():
        return 0
    try:
        record = read_json(path)
    except InputError:  # a broken summary is the nightly's business; here it is "not recorded"
        return 0
    value = record.get("step_seconds") if isinstance(record, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return 0


def read_note(root: Path, days: list[date]) -> dict[str, Any]:
    """The review's ``read`` entry: the days it read, the steps they were read at, a sentence."""
    # a day's own summary wins (a nightly run over a generated day read it from Prometheus)
    made = generated_steps(root)
    summary = {day: _step(root / "summary" / f"{day.isoformat()}.json") for day in days}
    steps: dict[int, int] = {}
    generated: dict[int, int] = {}
    for day, step in summary.items():
        if not step and day in made:
            generated[made[day]] = generated.get(made[day], 0) + 1
        else:
            steps[step] = steps.get(step, 0) + 1
    known = sorted((s for s in steps if s), key=lambda s: (-steps[s], s))
    parts = [f"at {_span(s)} on {_days(steps[s])}" for s in known]
    first, last = (days[0], days[-1]) if days else (None, None)
    sentence = (
        f"Read from the history only (not Prometheus): {_days(len(days))}"
        + (f", {first} to {last}" if first else "")
        + " (every day of the history in the month and its trend months)."
    )
    if parts:
        sentence += " Their usage was read from Prometheus " + _join(parts) + "."
    if generated:
        made_parts = [f"at {_span(s)} on {_days(n)}" for s, n in sorted(generated.items())]
        sentence += " Generated (synthetic, not read from Prometheus) " + _join(made_parts) + "."
    if steps.get(0):
        verb = "does not record its" if steps[0] == 1 else "do not record their"
        sentence += f" {_days(steps[0]).capitalize()} {verb} step."
    return {
        "source": "history",
        "days": len(days),
        "first_day": None if first is None else first.isoformat(),
        "last_day": None if last is None else last.isoformat(),
        "steps": [{"step_seconds": s, "days": steps[s]} for s in known],
        "days_step_unknown": steps.get(0, 0),
        "generated": [{"step_seconds": s, "days": n} for s, n in sorted(generated.items())],
        "sentence": sentence,
    }


def _span(seconds: int) -> str:
    return format_duration(timedelta(seconds=seconds))


def _days(count: int) -> str:
    return f"{count} day" if count == 1 else f"{count} days"


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
