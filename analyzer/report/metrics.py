"""Metrics of a run for alerting, in the Prometheus text exposition format (docs/metrics.md).

One renderer for both outputs: the node-exporter textfile (``--metrics-textfile``) and the body
pushed to a Pushgateway (``--pushgateway``); the network push itself is ``prom/pushgateway.py``.
Every family is a gauge named ``analyzer_…`` with its unit in the name, a HELP and a TYPE line.

Label values are bounded: ``command`` (nightly, monthly, backfill), ``pool`` (the cluster's pools,
at most ``MAX_POOLS`` of them), ``series``/``bound``/``resource``/``status`` (fixed sets). Never a
pod, namespace or node name. Values are escaped as the format requires (backslash, double quote,
line feed), so a pool named like a label set stays one label value.

Families fall in two groups. *Status* families (``STATUS_FAMILIES``) describe the run that just
ended, success or failure. Every other family (the last-success time and the report's numbers) is
set only by a successful run, and a failed run keeps the previous values: the Pushgateway is sent
only the status families with POST (which replaces those families only), and the textfile keeps
the previous file's other families (``carry_over``).
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from analyzer.core.atomic import atomic_write_text
from analyzer.nightly.backfill import NO_DATA, SKIPPED, WRITTEN

if TYPE_CHECKING:
    from analyzer.monthly.review import Review
    from analyzer.nightly.backfill import BackfillOutcome
    from analyzer.nightly.run import NightlyResult

PREFIX = "analyzer_"
# Pools exported by the monthly review; pools beyond it (least urgent first) are counted in
# analyzer_monthly_pools_not_exported. 100 pools x 4 series x 2 bounds = 800 series at most.
MAX_POOLS = 100
# A guard against a family growing unbounded by mistake: rendering refuses more than this.
MAX_SERIES_PER_FAMILY = 1000
# The exit codes after which the run's output is written: a success (3 = partial data and
# 4 = violations found still wrote the report; the exit code family tells them apart).
SUCCESS_EXIT_CODES = frozenset({0, 3, 4})

RUN_SUCCESS = "analyzer_run_success"
RUN_EXIT_CODE = "analyzer_run_exit_code"
RUN_DURATION = "analyzer_run_duration_seconds"
RUN_TIMESTAMP = "analyzer_run_timestamp_seconds"
LAST_SUCCESS = "analyzer_run_last_success_timestamp_seconds"
STATUS_FAMILIES = frozenset({RUN_SUCCESS, RUN_EXIT_CODE, RUN_DURATION, RUN_TIMESTAMP})

# The four forecast series of the monthly review (docs/monthly.md) and their two dates.
SERIES = ("requested_cpu_cores", "requested_memory_gib", "used_cpu_cores", "used_memory_gib")
BOUNDS = {"expected": "expected_date", "earliest": "earliest_date"}


@dataclass(frozen=True)
class Sample:
    """One series: its labels (name, value) in order, and its value."""

    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass(frozen=True)
class Family:
    """A gauge family: name, HELP text and samples."""

    name: str
    help: str
    samples: tuple[Sample, ...]


def gauge(name: str, help_text: str, value: float, **labels: str) -> Family:
    """A family of one sample."""
    return Family(name, help_text, (Sample(tuple(labels.items()), float(value)),))


def with_label(
    before: Sequence[Family], families: Iterable[Family], name: str, value: str
) -> list[Family]:
    """``before`` with ``families``' samples added, each labelled ``name="value"`` first: a
    family named in both keeps one HELP and holds both sets of samples (one run, many clusters)."""
    merged = {f.name: f for f in before}
    for family in families:
        samples = tuple(Sample(((name, value), *s.labels), s.value) for s in family.samples)
        old = merged.get(family.name)
        merged[family.name] = Family(
            family.name, family.help, (old.samples if old else ()) + samples
        )
    return list(merged.values())


def escape_label_value(value: str) -> str:
    """A label value as the text format wants it: ``\\``, ``"`` and line feed escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    """A sample value: ``NaN``, ``+Inf``/``-Inf``, integers without a fraction, else repr."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


def render(families: Iterable[Family]) -> str:
    """The exposition text of ``families``: HELP, TYPE, then one line per sample."""
    lines: list[str] = []
    for family in families:
        if not family.name.startswith(PREFIX):
            raise ValueError(f"metric {family.name}: every analyzer metric starts with {PREFIX}")
        if len(family.samples) > MAX_SERIES_PER_FAMILY:
            raise ValueError(f"metric {family.name}: {len(family.samples)} series, over the cap")
        lines.append(f"# HELP {family.name} {_escape_help(family.help)}")
        lines.append(f"# TYPE {family.name} gauge")
        for sample in family.samples:
            labels = ",".join(f'{k}="{escape_label_value(v)}"' for k, v in sample.labels)
            series = f"{family.name}{{{labels}}}" if labels else family.name
            lines.append(f"{series} {format_value(sample.value)}")
    return "\n".join(lines) + "\n" if lines else ""


def run_status(
    command: str, exit_code: int, duration_seconds: float, finished: datetime
) -> list[Family]:
    """The status families of a run that ended with ``exit_code``, and on success its time."""
    success = exit_code in SUCCESS_EXIT_CODES
    stamp = finished.timestamp()
    families = [
        gauge(RUN_SUCCESS, "1 when the last run wrote its output (exit 0, 3 or 4), else 0.",
              1.0 if success else 0.0, command=command),
        gauge(RUN_EXIT_CODE, "Exit code of the last run (README 'Exit codes').",
              exit_code, command=command),
        gauge(RUN_DURATION, "Wall-clock time of the last run.", duration_seconds, command=command),
        gauge(RUN_TIMESTAMP, "Unix time the last run ended.", stamp, command=command),
    ]  # fmt: skip
    if success:
        families.append(
            gauge(LAST_SUCCESS, "Unix time the last successful run ended.", stamp, command=command)
        )
    return families


def _day_end(day: date) -> float:
    """Unix time of the midnight that closes ``day`` (UTC): the day's data runs up to it."""
    return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() + 86400.0


def nightly_metrics(result: NightlyResult) -> list[Family]:
    """The nightly report's headline numbers, as its summary cards (report.json) show them."""
    s = result.summary
    return [
        gauge("analyzer_nightly_report_day_end_timestamp_seconds",
              "End (next midnight UTC) of the day the nightly figures describe.",
              _day_end(result.day)),
        gauge("analyzer_nightly_nodes", "Nodes seen during the report day.", s.nodes),
        gauge("analyzer_nightly_nodes_over_threshold",
              "Nodes whose usage went over a threshold during the report day.",
              s.nodes_with_breaches),
        gauge("analyzer_nightly_breaches", "Threshold breaches during the report day.", s.breaches),
        gauge("analyzer_nightly_breach_node_seconds",
              "Node-time over threshold during the report day, summed over nodes.",
              s.breach_node_seconds),
        gauge("analyzer_nightly_coverage_ratio",
              "Observed / expected usage samples of the report day (1 = complete).",
              s.coverage_pct / 100.0),
        gauge("analyzer_nightly_fragmentation_ratio",
              "Share of free capacity the common pod shapes cannot use (FGD, mean over the day).",
              s.fragmentation_pct / 100.0, resource="cpu"),
        *_headroom_families(result),
    ]  # fmt: skip


def _headroom_families(result: NightlyResult) -> list[Family]:
    """Copies of each pod shape that fit (``nightly/headroom.py``): at the day's last point and
    at its tightest hour; no family when no shape was counted (at most 20 shapes: the config's
    bound, or the 3 most common)."""
    shapes = result.shape_headroom.shapes
    if shapes.empty:
        return []
    now, tight = [], []
    for row in shapes.itertuples(index=False):
        labels = (("shape", str(row.shape)), ("source", str(row.source)))
        now.append(Sample(labels, float(row.copies_now)))
        tight.append(Sample(labels, float(row.copies_min)))
    return [
        Family("analyzer_nightly_headroom_copies",
               "More copies of the pod shape that fit by the scheduler's filters at the report "
               "day's last point (cluster-capacity's count).", tuple(now)),
        Family("analyzer_nightly_headroom_copies_min",
               "Fewest copies of the pod shape that fit at any hour of the report day.",
               tuple(tight)),
    ]  # fmt: skip


def _pool_urgency(pool: dict[str, Any]) -> tuple[str, str]:
    """Sort key: the pool whose earliest capacity date comes first, then by name."""
    dates = [e["earliest_date"] for e in pool["forecast"]["exhaustion"] if e["earliest_date"]]
    return (min(dates) if dates else "9999-12-31", str(pool["name"]))


def monthly_metrics(review: Review, max_pools: int = MAX_POOLS) -> list[Family]:
    """Per pool: days until each capacity line is reached, and the nodes the decision adds or
    releases (the review's ``report.json``: ``pools[].forecast.exhaustion``, ``decision``);
    the ``max_pools`` most urgent pools only."""
    pools = sorted(review.payload["pools"], key=_pool_urgency)
    kept = pools[:max_pools]
    days: list[Sample] = []
    stamps: list[Sample] = []
    add: list[Sample] = []
    release: list[Sample] = []
    for pool in kept:
        name = str(pool["name"])
        decision = pool["decision"]
        nodes = float(decision.get("nodes") or 0)
        add.append(Sample((("pool", name),), nodes if decision["action"] == "add" else 0.0))
        release.append(Sample((("pool", name),), nodes if decision["action"] == "release" else 0.0))
        for series in SERIES:
            fc = review.forecasts[name][series]
            if not fc.points:  # no forecast (too little history): no date to give
                continue
            last_history_day = fc.points[0].day - timedelta(days=1)
            for bound, attribute in BOUNDS.items():
                when: date | None = getattr(fc.exhaustion, attribute)
                labels = (("pool", name), ("series", series), ("bound", bound))
                if when is None:  # not within the horizon
                    days.append(Sample(labels, math.inf))
                    stamps.append(Sample(labels, math.inf))
                else:
                    days.append(Sample(labels, 86400.0 * (when - last_history_day).days))
                    stamps.append(Sample(labels, _day_end(when) - 86400.0))
    return [
        gauge("analyzer_monthly_pools", "Pools in the reviewed month.", len(pools)),
        gauge("analyzer_monthly_pools_not_exported",
              f"Pools left out of the per-pool metrics (at most {max_pools}, most urgent first).",
              len(pools) - len(kept)),
        Family("analyzer_monthly_time_to_capacity_line_seconds",
               "Time from the end of the last day of history to the day the forecast reaches the "
               "capacity line, whole days (bound=expected: the mean; earliest: the upper 95 % "
               "band); +Inf: not within the horizon; 0: already reached.", tuple(days)),
        Family("analyzer_monthly_capacity_line_timestamp_seconds",
               "Unix time (start of the UTC day) the forecast reaches the capacity line; +Inf: "
               "not within the horizon.", tuple(stamps)),
        Family("analyzer_monthly_nodes_to_add",
               "Nodes the monthly decision adds to the pool (0 unless the decision is add).",
               tuple(add)),
        Family("analyzer_monthly_nodes_to_release",
               "Nodes the monthly decision releases from the pool (0 unless it is release).",
               tuple(release)),
    ]  # fmt: skip


def backfill_metrics(outcome: BackfillOutcome) -> list[Family]:
    """Days of the backfill range by what happened to them."""
    counts = {
        "written": outcome.count(WRITTEN) - outcome.partial,
        "partial": outcome.partial,
        "skipped": outcome.count(SKIPPED),
        "no_data": outcome.count(NO_DATA),
    }
    return [
        Family(
            "analyzer_backfill_day_outcomes",
            "Days of the last backfill range by outcome (partial days are written too).",
            tuple(Sample((("status", k),), float(v)) for k, v in counts.items()),
        )
    ]


_FAMILY_LINE = re.compile(r"^# (HELP|TYPE) (analyzer_[a-zA-Z0-9_]*)(?: .*)?$")
_SAMPLE_LINE = re.compile(r"^(analyzer_[a-zA-Z0-9_]*)(\{.*\})? (\S+)$")


def carry_over(old_text: str, keep_out: Sequence[str] = tuple(STATUS_FAMILIES)) -> str:
    """The families of an earlier textfile that only a success sets (not ``keep_out``).

    A failed run calls this on the file it replaces so that the last success's time and numbers
    survive. Only lines in the shape ``render`` writes are kept; anything else (a file edited by
    hand, cut short by a crash before atomic writes) is dropped rather than passed on.
    """
    kept: list[str] = []
    # Lines end at "\n" only: str.splitlines would also cut at "\r", "\u2028" and the other
    # Unicode breaks, which the format leaves unescaped inside a label value.
    for line in old_text.split("\n"):
        match = _FAMILY_LINE.match(line) or _SAMPLE_LINE.match(line)
        if match is None:
            continue
        name = match.group(2) if line.startswith("#") else match.group(1)
        if name not in keep_out:
            kept.append(line)
    return "\n".join(kept) + "\n" if kept else ""


def write_textfile(path: Path, families: Sequence[Family]) -> None:
    """Write ``families`` to ``path`` atomically (node-exporter never reads half a file).

    Without a last-success family in ``families`` (a failed run), the previous file's
    success-only families are kept, so the last success's time and numbers survive a failure.
    """
    text = render(families)
    if not any(f.name == LAST_SUCCESS for f in families):
        # No earlier file: nothing to keep.
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            text += carry_over(Path(path).read_text(encoding="utf-8", errors="replace"))
    atomic_write_text(Path(path), text)
