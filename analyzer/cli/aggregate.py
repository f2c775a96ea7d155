"""``analyzer aggregate``, ``analyzer violations`` and ``analyzer fragmentation``.

All three read a snapshot; ``aggregate`` can also collect just the range its windows need from
``--prometheus`` (same connection options as ``analyzer collect``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import click
import pandas as pd
import yaml

from analyzer.cli.base import main
from analyzer.cli.collect import (
    DEFAULT_MAX_REQUESTS,
    connection_options,
    print_step_note,
    scrape_interval_option,
    scrape_interval_seconds,
    settings_from,
)
from analyzer.collect.run import CollectRequest, collect
from analyzer.core.csvsafe import csv_text
from analyzer.core.durations import (
    format_duration,
    parse_duration,
    parse_duration_list,
    parse_positive_duration,
    parse_time,
)
from analyzer.core.errors import EXIT_PARTIAL, EXIT_VIOLATIONS, InputError
from analyzer.core.snapshot import Snapshot, read_snapshot
from analyzer.fragmentation.measure import default_times, fragmentation
from analyzer.usage.aggregate import (
    DEFAULT_DURATIONS,
    to_nodemetrics,
    window_aggregates,
)
from analyzer.usage.grid import MIN_COVERAGE
from analyzer.usage.percentiles import METHODS
from analyzer.usage.thresholds import AGG_TYPES, AggregatedThreshold, ThresholdConfig
from analyzer.usage.violations import find_violations

_DEFAULT_DURATIONS = ",".join(format_duration(d) for d in DEFAULT_DURATIONS)


def _utc_text(moment: pd.Timestamp) -> str:
    return str(moment.isoformat()).replace("+00:00", "Z")


def longer_than_data(
    snap: Snapshot, frame: pd.DataFrame, at: pd.Timestamp, windows: list[tuple[str, timedelta]]
) -> list[str]:
    """One warning per window that reaches back before the data starts, naming both spans, and
    one when ``--at`` lies outside the data.

    Such a window is still computed (koordlet does the same on a young node): its stats use the
    samples there are, and where those cover less than half the window it is left empty.
    """
    warnings = []
    span = format_duration(snap.end - snap.start)
    data = f"{span} from {_utc_text(snap.start)} to {_utc_text(snap.end)}"
    if at <= snap.start:
        return [
            f"--at {_utc_text(at)} is not after the data's start ({data}); every window is empty"
        ]
    if at > snap.end:
        warnings.append(
            f"--at {_utc_text(at)} is after the data's end ({data}); windows hold only the samples "
            "up to the end and are left empty where those cover under half of them"
        )
    for typed, delta in windows:
        if at - delta >= snap.start:
            continue
        rows = frame[frame["duration"] == delta]
        if len(rows) and bool(rows["missing"].all()):
            outcome = "every node's aggregate for it is left empty (samples cover under half of it)"
        else:
            outcome = (
                "its aggregates use only the data inside it; "
                "nodes whose samples cover under half of it are left empty"
            )
        warnings.append(
            f"--durations {typed}: the window ending {_utc_text(at)} is longer than the data "
            f"({data}); {outcome}"
        )
    return warnings


def _json(data: Any) -> str:
    return json.dumps(data, indent=1, sort_keys=False, default=str)


def _collect_for(
    options: dict[str, Any], at_text: str | None, longest: timedelta
) -> tuple[Snapshot, list[str]]:
    """Collect just the range the windows need from ``--prometheus``; (snapshot, problems)."""
    end = parse_time(at_text, field="--at") if at_text else datetime.now(UTC)
    step = parse_duration(options["step"], field="--step")
    if step.total_seconds() < 1 or step.total_seconds() != int(step.total_seconds()):
        raise InputError(f"--step: {options['step']!r} must be a whole number of seconds >= 1s")
    try:
        start = end - longest
    except OverflowError:
        raise InputError(
            f"--durations: {format_duration(longest)} reaches before the year 1; give shorter "
            "windows (e.g. 7d)"
        ) from None
    request = CollectRequest(
        settings=settings_from(options),
        start=start,
        end=end,
        step_seconds=int(step.total_seconds()),
        max_requests=options["max_requests"],
        scrape_interval_seconds=scrape_interval_seconds(options["scrape_interval"]),
        range_option="--durations",
    )
    result = collect(request)
    print_step_note(result.step_note)
    # Thanos partial responses and the collector's own notes, as collect prints them.
    for warning in result.snapshot.meta.warnings:
        if warning not in result.problems:
            click.echo(f"analyzer: warning: {warning}", err=True)
    return result.snapshot, (result.problems or ["partial data"]) if result.partial else []


@main.command("aggregate")
@click.argument("snapshot", type=click.Path(path_type=Path), required=False)
@connection_options
@click.option(
    "--step",
    default="1m",
    show_default=True,
    help="Sample step when reading --prometheus (a duration: 30s, 1m).",
)
@scrape_interval_option
@click.option(
    "--at",
    "at_text",
    help="Window end: RFC 3339, YYYY-MM-DD (00:00 UTC) or unix seconds. Default: the end of the "
    "data (with --prometheus: now).",
)
@click.option(
    "--durations",
    default=_DEFAULT_DURATIONS,
    show_default=True,
    help="Comma-separated window lengths, each a Prometheus duration (5m, 1h30m, 7d).",
)
@click.option(
    "--method",
    type=click.Choice(METHODS),
    default="nearest-rank",
    show_default=True,
    help="Percentile rule: koordlet's nearest-rank or Prometheus' linear quantile_over_time.",
)
@click.option(
    "--max-requests",
    type=int,
    default=DEFAULT_MAX_REQUESTS,
    show_default=True,
    help="With --prometheus: refuse windows that need more requests than this.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["nodemetric-yaml", "json", "csv"]),
    default="nodemetric-yaml",
    show_default=True,
    help="NodeMetric objects as YAML or a JSON List (cpu '<millicores>m', memory bytes), or CSV "
    "rows (value in millicores or bytes).",
)
def aggregate_cmd(
    snapshot: Path | None,
    at_text: str | None,
    durations: str,
    method: str,
    fmt: str,
    **options: Any,
) -> None:
    """Per-node usage avg/p50/p90/p95/p99 over windows, as Koordinator NodeMetric objects.

    Reads SNAPSHOT, or collects the needed range from --prometheus. A window whose samples cover
    less than half of it is reported missing (koordlet's cold-start rule), never guessed.
    """
    windows = parse_duration_list(durations, field="--durations")
    lengths = [delta for _typed, delta in windows]
    problems: list[str] = []
    if snapshot is not None:
        # node usage only: pod usage (most of a snapshot: 0.7 G rows at 5,000 nodes x 7 days)
        # is never looked at here, so it stays on disk
        snap = read_snapshot(snapshot, pod_usage=False)
    elif options.get("prometheus"):
        snap, problems = _collect_for(options, at_text, max(lengths))
    else:
        raise InputError("aggregate: give a SNAPSHOT directory or --prometheus URL")
    at = pd.Timestamp(parse_time(at_text, field="--at")) if at_text else snap.end
    frame = window_aggregates(snap.node_usage, at=at, durations=lengths, method=method)
    _print_aggregates(snap, frame, at, method, fmt)
    for warning in longer_than_data(snap, frame, at, windows):
        click.echo(f"analyzer: warning: {warning}", err=True)
    if problems:
        click.echo("analyzer: partial data (exit 3): " + "; ".join(problems), err=True)
        raise SystemExit(EXIT_PARTIAL)


def _print_aggregates(
    snap: Snapshot, frame: pd.DataFrame, at: pd.Timestamp, method: str, fmt: str
) -> None:
    if fmt == "csv":
        out = frame.assign(duration=frame["duration"].map(lambda d: format_duration(d)))
        out.insert(0, "at", at.isoformat().replace("+00:00", "Z"))
        out["method"] = method
        click.echo(csv_text(out), nl=False)
        return
    objects = to_nodemetrics(snap, frame, at=at)
    if fmt == "json":
        click.echo(_json({"apiVersion": "v1", "kind": "List", "items": objects}))
    else:
        click.echo(yaml.safe_dump_all(objects, sort_keys=False), nl=False)


def _aggregated(
    spec: str | None, cpu: int | None, memory: int | None, usage: dict[str, int]
) -> AggregatedThreshold | None:
    if not spec:
        return None
    stat, _, window = spec.partition(":")
    if stat not in AGG_TYPES:
        raise InputError(
            f"--aggregated: {spec!r} must be STAT[:WINDOW] with STAT one of {', '.join(AGG_TYPES)} (e.g. p95:30m)"
        )
    duration = parse_duration(window, field="--aggregated") if window else None
    thresholds = dict(usage)
    thresholds.update({k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None})
    return AggregatedThreshold(thresholds, stat, duration)


def _aggregated_longer_than_data(
    snap: Snapshot, config: ThresholdConfig, spec: str | None
) -> list[str]:
    """A warning when the aggregated threshold's window is longer than the data.

    Its stat exists only where the window's samples cover at least half of it (the cold-start
    rule), so such a window is checked late in the range or, past twice the data, never.
    """
    agg = config.aggregated
    if agg is None or agg.duration is None or agg.duration <= snap.end - snap.start:
        return []
    span = snap.end - snap.start
    name = (
        f"--aggregated {spec}"
        if spec
        else f"thresholds: aggregated window {format_duration(agg.duration)}"
    )
    data = f"{format_duration(span)} from {_utc_text(snap.start)} to {_utc_text(snap.end)}"
    if agg.duration * MIN_COVERAGE > span:
        outcome = "no window is ever half covered, so this check cannot find a breach"
    else:
        since = _utc_text(snap.start + agg.duration * MIN_COVERAGE)
        outcome = f"it is checked only from {since} on, once half of a window is covered"
    return [f"{name}: the window is longer than the data ({data}); {outcome}"]


def _pct(_ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and not 0 <= value <= 100:
        raise click.BadParameter(f"{value} is not a percent 0..100", param=param)
    return value


@main.command("violations")
@click.argument("snapshot", type=click.Path(path_type=Path))
@click.option("--cpu", type=int, callback=_pct, help="CPU usage threshold % (default 65; 0 = off).")
@click.option("--memory", type=int, callback=_pct, help="Memory usage threshold % (default 95).")
@click.option(
    "--aggregated",
    help="Also check a stat over a window, e.g. p95:30m (p95 alone = longest NodeMetric window).",
)
@click.option(
    "--aggregated-cpu",
    type=int,
    callback=_pct,
    help="CPU % for --aggregated (default: the usage threshold).",
)
@click.option(
    "--aggregated-memory",
    type=int,
    callback=_pct,
    help="Memory % for --aggregated (default: the usage threshold).",
)
@click.option("--prod-cpu", type=int, callback=_pct, help="Prod pods' CPU usage threshold %.")
@click.option("--prod-memory", type=int, callback=_pct, help="Prod pods' memory usage threshold %.")
@click.option("--annotations/--no-annotations", default=True, show_default=True,
              help="Honour scheduling.koordinator.sh/usage-thresholds node annotations.")  # fmt: skip
@click.option(
    "--usage-window",
    default="5m",
    show_default=True,
    help="Average (a duration) behind instant/prod checks; NodeMetric nodeUsage is a 5-minute "
    "mean.",
)
@click.option(
    "--method",
    type=click.Choice(METHODS),
    default="nearest-rank",
    show_default=True,
    help="Percentile rule for --aggregated: koordlet's nearest-rank or Prometheus' linear.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
    help="table: nodes with breaches, then each breach (minutes, %); json/csv: every breach.",
)
@click.option("--fail-on-violations", is_flag=True, help="Exit 4 when any breach is found.")
@click.pass_context
def violations_cmd(ctx: click.Context, /, snapshot: Path, **opts: Any) -> None:
    """Threshold breaches with Koordinator LoadAwareScheduling semantics, along the whole period.

    usage % = round half away from zero (used / allocatable × 100); a breach is strictly above
    the threshold. Thresholds: flags, else the config file's thresholds: section, else cpu 65 /
    memory 95; per-node overrides from the node annotation, else the node_thresholds: section.
    """
    config_data = (ctx.obj or {}).get("config", {})
    window = parse_positive_duration(opts["usage_window"], field="--usage-window")
    config = ThresholdConfig.from_config(
        config_data, use_annotations=opts["annotations"], method=opts["method"], usage_window=window
    )
    usage = dict(config.usage)
    usage.update({k: opts[k] for k in ("cpu", "memory") if opts[k] is not None})
    prod = dict(config.prod)
    prod.update({k: opts[f"prod_{k}"] for k in ("cpu", "memory") if opts[f"prod_{k}"] is not None})
    aggregated = _aggregated(
        opts["aggregated"], opts["aggregated_cpu"], opts["aggregated_memory"], usage
    )
    if aggregated is None and config.aggregated is not None:
        # --aggregated-cpu/--aggregated-memory adjust the config file's aggregated thresholds.
        thresholds = dict(config.aggregated.thresholds)
        for key in ("cpu", "memory"):
            if opts[f"aggregated_{key}"] is not None:
                thresholds[key] = opts[f"aggregated_{key}"]
        aggregated = replace(config.aggregated, thresholds=thresholds)
    config = replace(config, usage=usage, prod=prod, aggregated=aggregated)
    snap = read_snapshot(snapshot)
    span = (snap.end - snap.start).to_pytimedelta()
    if window > span:  # a rolling average longer than the data is no average; bounded work too
        raise InputError(
            f"--usage-window: {opts['usage_window']} is longer than the snapshot's data "
            f"({format_duration(span)}); give at most {format_duration(span)} (e.g. 5m)"
        )
    result = find_violations(snap, config)
    long_window = _aggregated_longer_than_data(snap, config, opts["aggregated"])
    fmt = opts["fmt"]
    if fmt == "json":
        click.echo(_json(result.to_dict()))
    elif fmt == "csv":
        click.echo(csv_text(result.breaches), nl=False)
    else:
        hot = result.per_node[result.per_node["breaches"] > 0].sort_values(
            "breach_minutes", ascending=False
        )
        click.echo(f"{result.count} breach(es) on {len(hot)} of {len(result.per_node)} node(s)")
        with pd.option_context("display.max_rows", None, "display.width", 200):
            if len(hot):
                click.echo(hot.to_string(index=False))
                click.echo("")
                click.echo(result.breaches.to_string(index=False))
    for warning in [*result.warnings, *long_window]:
        click.echo(f"analyzer: warning: {warning}", err=True)
    if opts["fail_on_violations"] and result.count:
        ctx.exit(EXIT_VIOLATIONS)


@main.command("fragmentation")
@click.argument("snapshot", type=click.Path(path_type=Path))
@click.option(
    "--step",
    default="1h",
    show_default=True,
    help="Spacing of the time points (a duration, e.g. 1h).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="table: the last time point and the headroom per shape; json: every time point.",
)
def fragmentation_cmd(snapshot: Path, step: str, fmt: str) -> None:
    """Free-capacity fragmentation over time: FGD ratio, stranded capacity, headroom per shape."""
    snap = read_snapshot(snapshot)
    every = parse_positive_duration(step, field="--step")
    result = fragmentation(snap, times=default_times(snap, every=every))
    if fmt == "json":
        click.echo(_json(result.to_dict()))
        return
    last = result.over_time[result.over_time["time"] == result.over_time["time"].max()]
    with pd.option_context("display.max_rows", None, "display.width", 200):
        click.echo(f"At {last['time'].iloc[0] if len(last) else snap.end}:")
        click.echo(last.drop(columns="time").to_string(index=False))
        click.echo("\nCommon pod shapes and how many more fit:")
        final = result.headroom[result.headroom["time"] == result.headroom["time"].max()]
        click.echo(final.drop(columns="time").to_string(index=False))
