"""``analyzer history backfill``: build the history store of past days from Prometheus.

Exit codes: 0 every day written or already present; 3 a day was partial or had no data (the
other days are written); 1 server unreachable or a query rejected (the days before it stay
written); 2 bad options (``--since``, ``--until``, ``--step``, ``--out``).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from analyzer.cli.base import AnalyzerGroup, is_terminal, main
from analyzer.cli.clusters import (
    cluster_label_options,
    cluster_values,
    config_clusters,
    for_each_cluster,
)
from analyzer.cli.collect import (
    connection_options,
    duration,
    print_step_note,
    scrape_interval_option,
    settings_from,
)
from analyzer.cli.publish_options import metrics_options, record_metrics
from analyzer.cli.report_cmds import analysis_options, cluster_option, day_source, nightly_settings
from analyzer.core.durations import format_duration, parse_day
from analyzer.core.errors import InputError, SourceError
from analyzer.core.memory import limit_heap_growth
from analyzer.history.identity import check_identity, identity_for
from analyzer.nightly.backfill import NO_DATA, SKIPPED, DayOutcome, backfill_days, run_backfill
from analyzer.nightly.run import NightlySettings
from analyzer.prom.client import PromClient
from analyzer.prom.recording_rules import RULES, check_rule

STEP_DEFAULT = "5m"  # every backfill range (docs/history.md, "The step")


@main.group("history", cls=AnalyzerGroup)
def history_group() -> None:
    """The history store under OUT/history/: per-day rollups the reports read."""


def _day_line(outcome: DayOutcome) -> str:
    if outcome.status == SKIPPED:
        return f"{outcome.day}: skipped (already present; --force rewrites it)"
    if outcome.status == NO_DATA:
        return f"{outcome.day}: no data, nothing written ({outcome.note})"
    text = f"{outcome.day}: written in {outcome.seconds:.1f} s"
    return text + (f", data PARTIAL ({outcome.note})" if outcome.partial else "")


def _bar(done: int, total: int, last: str) -> None:
    width = 30
    filled = width * done // max(total, 1)
    bar = "#" * filled + "-" * (width - filled)
    line = f"backfill [{bar}] {done}/{total} days {last}"
    click.echo("\r" + line.ljust(90), err=True, nl=False)  # padded: covers a longer last line


@history_group.command("backfill")
@connection_options
@click.option("--since", required=True,
              help="How far back: the complete UTC days of this duration ending with --until "
              "(90d = 90 days).")  # fmt: skip
@click.option("--until", help="Last day to backfill, YYYY-MM-DD (default: yesterday, UTC).")
@click.option("--step", default=STEP_DEFAULT, show_default=True,
              help="Resolution of the collected usage (a nightly run's default is 1m).")  # fmt: skip
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Output folder of the nightly reports: writes OUT/history/.")  # fmt: skip
@click.option("--force", is_flag=True, help="Re-make days already present.")
@cluster_option
@analysis_options
@click.option("--min-coverage", type=float, default=0.95, show_default=True,
              help="Share of expected usage samples below which a day is partial.")  # fmt: skip
@scrape_interval_option
@click.option("--queries-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Own query profile folder.")  # fmt: skip
@cluster_label_options
@metrics_options
@click.pass_context
def backfill_cmd(ctx: click.Context, /, **opts: Any) -> None:
    """Record past days in OUT/history/ from Prometheus, one day at a time, as the nightly
    report records its day (same rollups, summary, pools and workloads; no HTML).

    Days already present are skipped unless --force. Exit 0 ok, 3 a day partial or without data.
    """
    if not opts["prometheus"] and not config_clusters():
        raise InputError("history backfill: give --prometheus URL (or ANALYZER_PROMETHEUS_URL)")
    settings = nightly_settings(ctx, {**opts, "day": None, "fail_on_violations": False})
    since = timedelta(seconds=duration(opts["since"], "--since"))
    today = datetime.now(UTC).date()
    until = (
        parse_day(opts["until"], field="--until", today=today)
        if opts["until"]
        else today - timedelta(days=1)
    )
    days = backfill_days(since, until, today)
    first = datetime.combine(days[0], time(), UTC)
    last = datetime.combine(days[-1] + timedelta(days=1), time(), UTC)
    values = cluster_values(opts, settings_from, first, last)
    if values is None:
        code = _backfill_one(ctx, opts, settings, days)
    else:
        code = for_each_cluster(
            opts, values, "out", lambda o: _backfill_one(ctx, o, settings, days)
        )
    if code:
        ctx.exit(code)


def _backfill_one(
    ctx: click.Context, opts: dict[str, Any], settings: NightlySettings, days: list[date]
) -> int:
    """One cluster's (or the only) backfill into ``opts["out"]``; returns its exit code."""
    from analyzer.report.metrics import backfill_metrics
    from analyzer.report.output import check_report_out

    check_report_out(opts["out"])  # before any request: never write into a user's folder
    source = day_source(opts)
    history = Path(opts["out"]) / "history"
    # Before any request: a day of another cluster is refused, never "already present".
    cluster = identity_for(opts["prometheus"], opts["cluster"])
    note = check_identity(history, cluster)
    if note:
        click.echo(note)
    terminal = is_terminal()
    noted: list[str] = []
    finished = [0]  # days done, for the bar drawn while a day's requests run

    def on_day(outcome: DayOutcome, done: int, total: int) -> None:
        if outcome.step_note and not noted:
            noted.append(outcome.step_note)
            if terminal:
                click.echo("", err=True)
            print_step_note(outcome.step_note)
        if not terminal:
            click.echo(_day_line(outcome))
            return
        finished[0] = done
        if outcome.status == NO_DATA or outcome.partial:
            click.echo("\r" + _day_line(outcome), err=True)
        _bar(done, total, f"(last {outcome.day} {outcome.status})")

    def on_requests(day: date, done: int, total: int) -> None:
        _bar(finished[0], len(days), f"({day}: {done}/{total} requests)")

    limit_heap_growth()  # resident memory close to one day's data over a long run (glibc)
    if terminal:
        _bar(0, len(days), f"({days[0]} .. {days[-1]})")
    outcome = run_backfill(
        source,
        settings,
        days,
        history,
        force=opts["force"],
        on_day=on_day,
        on_requests=on_requests if terminal else None,
        cluster=cluster,
    )
    if terminal:
        click.echo("", err=True)
    record_metrics(ctx, backfill_metrics(outcome))
    click.echo(f"history: {history}")
    given = ctx.get_parameter_source("step") is not ParameterSource.DEFAULT
    click.echo(_step_line(given, source.step_seconds))
    end = datetime.combine(days[-1] + timedelta(days=1), time(), UTC).timestamp()
    for rule in RULES:  # cpu, then memory: at most two instant queries each, whatever the range
        try:
            with PromClient(source.settings) as client:
                check = check_rule(client, rule, end)
        except SourceError as exc:  # the days are written: a failed cross-check does not undo them
            click.echo(f"recording rule {rule.name}: not checked ({exc})")
            check = None
        if check is not None:
            click.echo(check.line())
    click.echo(outcome.line())
    return outcome.exit_code


def _step_line(given: bool, step_seconds: int) -> str:
    """What the run read: the usage step, and whether it was the user's or the default."""
    how = "--step" if given else f"the backfill default for any range ({STEP_DEFAULT})"
    return f"read: usage at a {format_duration(timedelta(seconds=step_seconds))} step ({how})"
