"""``analyzer report nightly`` and ``analyzer demo``: parse options, call one function, print paths."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import click

from analyzer.cli.base import is_terminal, main, report
from analyzer.cli.clusters import cluster_label_options
from analyzer.cli.collect import (
    F,
    connection_options,
    print_step_note,
    scrape_interval_option,
    scrape_interval_seconds,
    settings_from,
)
from analyzer.cli.notify_options import notify_options, notify_settings, publish
from analyzer.cli.params import Count
from analyzer.cli.publish_options import metrics_options, record_metrics
from analyzer.core.durations import parse_day, parse_duration
from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot, check_snapshot_out, write_snapshot
from analyzer.history.identity import check_identity, identity_for
from analyzer.nightly.collect_day import DaySource, collect_day
from analyzer.nightly.headroom_shapes import HeadroomShape, parse_headroom
from analyzer.nightly.run import NightlySettings, run_nightly
from analyzer.usage.percentiles import METHODS
from analyzer.usage.thresholds import ThresholdConfig


def _pct(_ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and not 0 <= value <= 100:
        raise click.BadParameter(f"{value} is not a percent 0..100", param=param)
    return value


def _day(text: str | None) -> date | None:
    return None if text is None else parse_day(text, field="--date")


def analysis_options(func: F) -> F:
    """``--method``, ``--cpu``, ``--memory``: how a day is analysed (``report nightly`` and
    ``history backfill`` alike; ``nightly_settings`` reads them)."""
    func = click.option(
        "--memory", type=int, callback=_pct, help="Memory usage threshold % (default 95)."
    )(func)
    func = click.option(
        "--cpu", type=int, callback=_pct, help="CPU usage threshold % (default 65; 0 = off)."
    )(func)
    return click.option(
        "--method", type=click.Choice(METHODS), default="nearest-rank", show_default=True,
        help="Percentile method (nearest-rank = koordlet; linear = Prometheus).",
    )(func)  # fmt: skip


def nightly_settings(ctx: click.Context, opts: dict[str, Any]) -> NightlySettings:
    """Thresholds: flags, else the config file's thresholds:/node_thresholds:, else 65/95."""
    config_data = (ctx.obj or {}).get("config", {})
    thresholds = ThresholdConfig.from_config(config_data, method=opts["method"])
    usage = dict(thresholds.usage)
    usage.update({k: opts[k] for k in ("cpu", "memory") if opts[k] is not None})
    if not 0 < opts["min_coverage"] <= 1:
        raise InputError(f"--min-coverage: {opts['min_coverage']} must be in (0, 1]")
    return NightlySettings(
        day=_day(opts["day"]),
        method=opts["method"],
        thresholds=replace(thresholds, usage=usage),
        fail_on_violations=opts["fail_on_violations"],
        min_coverage=opts["min_coverage"],
        headroom_shapes=_declared_shapes(config_data),
    )


def _declared_shapes(config_data: dict[str, Any]) -> tuple[HeadroomShape, ...] | None:
    """The config's ``headroom:`` shapes (None: the day's most common shapes)."""
    shapes = parse_headroom(config_data)
    return None if shapes is None else tuple(shapes)


def _collect_day(
    opts: dict[str, Any], settings: NightlySettings
) -> tuple[Snapshot, NightlySettings]:
    """Collect the report day (plus the look-back) from Prometheus; default day = yesterday UTC."""
    day = settings.day or (datetime.now(UTC) - timedelta(days=1)).date()
    collected = collect_day(day_source(opts), settings, day)
    print_step_note(collected.step_note)
    if opts["save_snapshot"] is not None:
        write_snapshot(collected.snapshot, opts["save_snapshot"], "--save-snapshot")
    return collected.snapshot, collected.settings


def day_source(opts: dict[str, Any]) -> DaySource:
    """The connection options, ``--step``, ``--queries-dir`` and ``--scrape-interval`` of a
    command that collects nightly days (``report nightly``, ``history backfill``)."""
    step = parse_duration(opts["step"], field="--step").total_seconds()
    if step < 1 or step != int(step):
        raise InputError(f"--step: {opts['step']!r} must be a whole number of seconds >= 1s")
    return DaySource(
        settings=settings_from(opts),
        step_seconds=int(step),
        queries_dir=opts["queries_dir"],
        scrape_interval_seconds=scrape_interval_seconds(opts["scrape_interval"]),
    )


def cluster_option(func: Any) -> Any:
    """``--cluster NAME``: the name of the cluster a history is of (docs/history.md, "Which
    cluster"); default: derived from the Prometheus URL or the snapshot's source."""
    return click.option(
        "--cluster",
        default=None,
        help="Name of the cluster this history is of (default: the Prometheus URL without "
        "credentials, or the snapshot's source). A run of another cluster than the history's "
        "is refused; naming the history's cluster accepts it (e.g. a new Prometheus URL). "
        "With --cluster-label: also the label value every query selects.",
    )(func)


@report.command("nightly")
@click.argument("snapshot", type=click.Path(path_type=Path), required=False)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Output folder: writes OUT/<YYYY-MM-DD>/, OUT/index.html, OUT/history/.")  # fmt: skip
@click.option("--date", "day", help="UTC day to report: YYYY-MM-DD or 'yesterday'; the whole day, "
              "after 00:00 up to and including 24:00. Default: the last day with data (snapshot) "
              "or yesterday (--prometheus).")  # fmt: skip
@click.option("--templates-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder of templates searched before the built-in ones.")  # fmt: skip
@click.option("--fail-on-violations", is_flag=True, help="Exit 4 when any threshold was breached.")
@analysis_options
@click.option("--min-coverage", type=float, default=0.95, show_default=True,
              help="Share of expected usage samples below which the data is partial (exit 3).")  # fmt: skip
@connection_options
@click.option("--step", default="1m", show_default=True,
              help="With --prometheus: resolution of the collected usage.")  # fmt: skip
@scrape_interval_option
@cluster_option
@click.option("--queries-dir", type=click.Path(file_okay=False, path_type=Path),
              help="With --prometheus: own query profile folder.")  # fmt: skip
@click.option("--save-snapshot", type=click.Path(file_okay=False, path_type=Path),
              help="With --prometheus: also keep the collected snapshot here.")  # fmt: skip
@cluster_label_options
@notify_options
@metrics_options
@click.pass_context
def nightly_cmd(ctx: click.Context, /, snapshot: Path | None, **opts: Any) -> None:
    """Write the nightly HTML report (+ JSON, CSV) of one day, from SNAPSHOT or --prometheus;
    with --cluster-label, into OUT/cluster=VALUE/ per cluster.

    Exit 0 ok, 3 partial data, 4 violations (only with --fail-on-violations; wins over 3),
    5 report written but --notify failed (wins over 3 and 4).
    """
    from analyzer.cli.clusters import cluster_values, for_each_cluster

    if snapshot is not None and (opts["cluster_label"] is not None or opts["all_clusters"]):
        raise InputError(
            "--cluster-label/--all-clusters: only with --prometheus (a snapshot is one cluster)"
        )
    if opts["cluster_label"] is not None and not opts["prometheus"]:
        raise InputError("--cluster-label: give --prometheus URL, the server holding the clusters")
    day = _day(opts["day"]) or (datetime.now(UTC) - timedelta(days=1)).date()
    start = datetime.combine(day, datetime.min.time(), UTC)
    values = (
        None
        if snapshot is not None
        else cluster_values(
            opts, settings_from, start - timedelta(hours=1), start + timedelta(days=1)
        )
    )
    if values is None:
        code = _nightly_one(ctx, snapshot, opts)
    else:
        from analyzer.report.portal import check_portal_target, write_portal

        if Path(opts["out"]).is_dir():  # a foreign OUT/index.html: refused before any work
            check_portal_target(opts["out"])
        code = for_each_cluster(opts, values, "out", lambda o: _nightly_one(ctx, None, o))
        # OUT/index.html above the clusters' folders: each cluster's portal, the fleet page
        click.echo(f"index: {write_portal(opts['out'])}")
    if code:
        ctx.exit(code)


def _nightly_one(ctx: click.Context, snapshot: Path | None, opts: dict[str, Any]) -> int:
    """One nightly report into ``opts["out"]``; returns its exit code."""
    from analyzer.report.metrics import nightly_metrics
    from analyzer.report.nightly_report import write_nightly_report
    from analyzer.report.output import check_report_out

    check_report_out(opts["out"])  # before any work: never lose a fetch, nor a user's folder
    if opts["save_snapshot"] is not None:
        check_snapshot_out(opts["save_snapshot"], "--save-snapshot")
    settings = nightly_settings(ctx, opts)
    notify = notify_settings(opts)  # secrets read and checked before any work (exit 2)
    history = Path(opts["out"]) / "history"
    if snapshot is not None:
        from analyzer.nightly.read_day import read_nightly_snapshot

        # only the day and its lookback: a week of a large cluster's pod usage stays on disk
        data, settings = read_nightly_snapshot(snapshot, settings)
        cluster = identity_for(data.meta.source, opts["cluster"])
        note = check_identity(history, cluster)
    elif opts["prometheus"]:
        # Before the fetch: a run of another cluster than OUT's history is refused up front.
        cluster = identity_for(opts["prometheus"], opts["cluster"])
        note = check_identity(history, cluster)
        data, settings = _collect_day(opts, settings)
    else:
        raise InputError("report nightly: give a SNAPSHOT folder or --prometheus URL")
    result = run_nightly(data, settings)
    paths = write_nightly_report(
        result, opts["out"], templates_dir=opts["templates_dir"], cluster=cluster
    )
    record_metrics(ctx, nightly_metrics(result))
    if note:
        click.echo(note)
    _print_outcome(result.summary.breaches, result.quality.partial, paths.html, paths.index)
    if notify is not None:  # the report is whole on disk: a failure here is exit 5
        from analyzer.report.notify_message import nightly_message

        publish(notify, nightly_message(paths.run_dir, opts["report_url"]), opts["out"])
    return result.exit_code


@report.command("index")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--templates-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Own templates (index.html.j2) overriding the bundled ones.")  # fmt: skip
def report_index_cmd(out: Path, templates_dir: Path | None) -> None:
    """Write OUT/index.html: every report analyzer wrote under OUT (nightly runs, monthly
    reviews, what-if comparisons, searches), newest first, each with its headline."""
    from analyzer.report.portal import check_portal_target, write_portal

    check_portal_target(out)
    path = write_portal(out, templates_dir=templates_dir)
    click.echo(f"index: {path}")


def _print_outcome(breaches: int, partial: bool, html: Path, index: Path) -> None:
    click.echo(f"report: {html}")
    click.echo(f"index:  {index}")
    click.echo(f"{breaches} threshold breach(es); data {'PARTIAL' if partial else 'complete'}")


@main.command("demo")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("analyzer-demo"),
              show_default=True, help="Folder for the snapshot, aggregates and reports.")  # fmt: skip
@click.option("--seed", type=int, default=42, show_default=True, help="Generator seed.")
@click.option("--nodes", type=int, default=200, show_default=True, help="Synthetic node count.")
@click.option(
    "--days", type=Count(), default=7, show_default=True, help="Days of synthetic history."
)
@click.option("--step", "step_seconds", type=int, default=300, show_default=True,
              help="Usage sample step in seconds.")  # fmt: skip
@click.option("--history-days", type=Count(0), default=90, show_default=True,
              help="Days of pool and workload history (the monthly review's), --days included; "
                   "the days before the snapshot are generated at a 1-hour step.")  # fmt: skip
@click.option("--window", default="2d", show_default=True, metavar="DAYS",
              help="The what-if, the search and the monthly scenarios replay the snapshot's "
                   "busiest DAYS whole days (their pages say which); 'all' replays every day "
                   "(the what-if; the monthly scenarios then replay the busiest week).")  # fmt: skip
@click.option("--regenerate-history", is_flag=True,
              help="Generate the days before the snapshot even when the package ships them (it "
                   "ships the default settings' rows; other settings always generate).")  # fmt: skip
def demo_cmd(
    out: Path,
    seed: int,
    nodes: int,
    days: int,
    step_seconds: int,
    history_days: int,
    window: str,
    regenerate_history: bool,
) -> None:
    """Run the whole pipeline on a synthetic cluster, no Prometheus needed, and print where it went."""
    from analyzer.cli.demo import DemoSettings, run_demo
    from analyzer.whatif.busiest import parse_window

    replay_days = None if window.strip().lower() == "all" else parse_window(window)

    settings = DemoSettings(
        out=out,
        seed=seed,
        nodes=nodes,
        days=days,
        step_seconds=step_seconds,
        history_days=history_days,
        replay_days=replay_days,
        regenerate_history=regenerate_history,
    )
    say = (lambda msg: click.echo(f"  {msg}", err=True)) if is_terminal() else None
    result = run_demo(settings, say)
    latest = result.latest
    summary = result.latest_result.summary
    click.echo(
        f"analyzer demo: {nodes} nodes × {days} days (seed {seed}) in {result.seconds:.1f} s"
    )
    click.echo(f"  snapshot:      {result.snapshot_dir}")
    click.echo(f"  NodeMetrics:   {result.nodemetrics}")
    click.echo(f"  violations:    {result.violations}")
    click.echo(f"  reports:       {result.reports} nightly report(s), index {latest.index}")
    click.echo(
        f"  history:       {result.history_days} day(s) of pools and workloads, {latest.history}"
    )
    if result.history_note:  # the days before the snapshot were not generated by this run
        click.echo(f"  the days before the snapshot: {result.history_note}")
    click.echo(f"  latest report: {latest.html}")
    click.echo(
        f"  {result.latest_result.day}: {summary.nodes_with_breaches} node(s) over threshold, "
        f"{summary.fragmentation_pct:.1f} % of free CPU fragmented, "
        f"data coverage {summary.coverage_pct:.2f} %"
    )
    click.echo(f"  monthly:       {result.monthly_html}")
    click.echo(f"  what-if:       {result.whatif_html}")
    click.echo(f"  {result.whatif_recommendation}")
    click.echo(f"  search:        {result.search_html}")
    click.echo(f"  {result.search_sentence}")
    click.echo(f"  every report:  {result.portal}")
    click.echo(
        f"Open {result.portal} in a browser: it links {latest.html}, {result.monthly_html}, "
        f"{result.whatif_html} and {result.search_html} (they work offline)."
    )
