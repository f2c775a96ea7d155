"""``analyzer report monthly``: the monthly capacity review of a history folder."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from analyzer.cli.base import report
from analyzer.cli.notify_options import notify_options, notify_settings, publish
from analyzer.cli.params import EXECUTOR_OPTION
from analyzer.cli.pdf_options import pdf_options, pdf_request, print_report
from analyzer.cli.publish_options import metrics_options, record_metrics
from analyzer.core.errors import InputError
from analyzer.core.executor import parse_executor
from analyzer.core.outdir import check_writable
from analyzer.usage.thresholds import ThresholdConfig


def _pct(_ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and not 0 < value <= 100:
        raise click.BadParameter(f"{value} must be a percentage in 1..100", param=param)
    return value


@report.command("monthly")
@click.argument("history_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Output folder: OUT/report.html, report.json and CSVs (new, empty or an "
              "earlier monthly review).")  # fmt: skip
@click.option("--month", default=None,
              help="Month to review, YYYY-MM (default: the last complete month in the history).")  # fmt: skip
@click.option("--months", type=int, default=6, show_default=True,
              help="Months of trend, ending with the reviewed month.")  # fmt: skip
@click.option("--horizon-days", type=int, default=180, show_default=True,
              help="Forecast horizon in days (90..180).")  # fmt: skip
@click.option("--prices", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="prices.yaml: per pool per node-hour, or per core-hour and GiB-hour "
              "(docs/monthly.md); puts idle and slack in money.")  # fmt: skip
@click.option("--cpu", type=int, callback=_pct,
              help="CPU usage threshold % the used forecast is held to (default: config, else 65).")  # fmt: skip
@click.option("--memory", type=int, callback=_pct,
              help="Memory usage threshold % (default: config, else 95).")  # fmt: skip
@click.option("--recipe", default="krr", show_default=True,
              help="Right-sizing recipe over the month's workload history: vpa, krr or "
              "[cpu=|memory=]percentile:P[,headroom:H] (docs/rightsizing.md; why krr: "
              "docs/monthly.md).")  # fmt: skip
@click.option("--snapshot", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None,
              help="A snapshot of the month's busiest week: replayed as today / right-size only / "
              "repack only / both per pool, with the nodes that cannot go and why.")  # fmt: skip
@click.option("--window", default=None, metavar="DAYS",
              help="With --snapshot: replay its busiest DAYS whole days (e.g. 2d; default 7d, "
              "the busiest week); the page says which days.")  # fmt: skip
@click.option("--strategy", "strategies", multiple=True,
              help="With --snapshot: today's scheduler, then the repack configuration (preset or "
              "KubeSchedulerConfiguration file; default kube-default, most-allocated-loadaware).")  # fmt: skip
@click.option("--workers", type=int, default=None,
              help="With --snapshot: parallel processes (default: the machine's cores).")  # fmt: skip
@EXECUTOR_OPTION
@click.option("--autoscaler", type=click.Choice(("none", "cluster-autoscaler", "karpenter", "auto")),
              default="none", show_default=True,
              help="With --snapshot: also replay each scenario with this node autoscaler (options: "
              "the config's autoscaler: section); the nodes released are then what it would "
              "release. auto: the one the snapshot suggests (docs/autoscaling.md).")  # fmt: skip
@click.option("--templates-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder searched before the bundled templates.")  # fmt: skip
@click.option(
    "--growth-snapshot",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Replay this snapshot's busiest window month by month with the "
    "growth fitted from HISTORY_DIR (and the config's growth: section): the page's "
    "'Growth replayed' section (docs/whatif.md).",
)
@click.option(
    "--growth-months",
    type=click.IntRange(1, 120),
    default=12,
    show_default=True,
    help="With --growth-snapshot: months replayed.",
)
@click.option(
    "--growth-days",
    type=click.IntRange(1, 31),
    default=7,
    show_default=True,
    help="With --growth-snapshot: whole days of its busiest window replayed.",
)
@pdf_options
@notify_options
@metrics_options
@click.pass_context
def report_monthly_cmd(ctx: click.Context, /, history_dir: Path, out: Path, **opts: Any) -> None:
    """The monthly capacity review of HISTORY_DIR (a nightly OUT, or OUT/history).

    Per pool and for the cluster: month-over-month allocatable, requested, used, idle and slack;
    N+1; forecasts with 80 %/95 % intervals and days until exhaustion; the back-test of last
    month's forecast; workloads and their right-sizing (CSV and YAML patches); with --snapshot,
    the four scenarios per pool and why the nodes still needed cannot go; a decision per pool. Stores this month's forecast under
    HISTORY_DIR's history/forecasts/ for next month's back-test.
    """
    from analyzer.core.prices import load_prices

    # the prices file first: it needs no history, and a bad one is refused before the review's
    # libraries (statsmodels, matplotlib: seconds to import) are loaded
    prices = None if opts["prices"] is None else load_prices(opts["prices"])
    from analyzer.monthly.months import Month
    from analyzer.monthly.review import ReviewSettings, build_review, history_root
    from analyzer.monthly.rightsize import parse_recipe
    from analyzer.report.metrics import monthly_metrics
    from analyzer.report.monthly import check_monthly_out, joint_settings, write_monthly_report

    check_monthly_out(out)  # before any work: never lose a user's folder
    pdf = pdf_request(opts, out)  # no browser, a bad PATH: refused before the review (exit 2)
    notify = notify_settings(opts)  # secrets read and checked before any work (exit 2)
    month = None if opts["month"] is None else Month.parse(opts["month"])
    config = ThresholdConfig.from_config((ctx.obj or {}).get("config", {}))
    usage = dict(config.usage)
    usage.update({k: opts[k] for k in ("cpu", "memory") if opts[k] is not None})
    missing = [r for r in ("cpu", "memory") if r not in usage]
    if missing:
        raise InputError(
            f"config thresholds: no {missing[0]} usage threshold; add it or pass --{missing[0]}"
        )
    settings = ReviewSettings(
        month=month,
        months=opts["months"],
        horizon_days=opts["horizon_days"],
        thresholds={"cpu": int(usage["cpu"]), "memory": int(usage["memory"])},
        prices=prices,
    )
    settings.check()
    parse_recipe(opts["recipe"])  # a bad recipe fails before any work
    executor = parse_executor(opts["executor"])
    from analyzer.whatif.busiest import parse_window

    window = None if opts["window"] is None else parse_window(opts["window"])
    if opts["snapshot"] is None and (
        opts["strategies"] or opts["workers"] is not None or executor.is_dask
    ):
        raise InputError(
            "--strategy/--workers/--executor: only with --snapshot SNAP (the scenarios)"
        )
    if opts["snapshot"] is None and opts["window"] is not None:
        raise InputError("--window: only with --snapshot SNAP (the window it replays)")
    if opts["snapshot"] is None and opts["autoscaler"] != "none":
        raise InputError("--autoscaler: only with --snapshot SNAP (the scenarios it replays)")
    from analyzer.replay.karpenter_setup import autoscaler_settings

    section = (ctx.obj or {}).get("config", {}).get("autoscaler")
    autoscaling = autoscaler_settings(section, opts["autoscaler"])  # checked before any work
    if opts["workers"] is not None and opts["workers"] < 1:
        raise InputError(f"--workers: {opts['workers']} must be at least 1")
    root = history_root(history_dir)
    # The run stores its forecast under the history afterwards: refuse a read-only one up front.
    check_writable(root / "forecasts" / "x", "HISTORY_DIR")
    growth_plan = None
    if opts["growth_snapshot"] is not None:  # a bad growth: section fails before the review
        from analyzer.cli.whatif_growth import growth_plan as plan_of

        growth_plan = plan_of(ctx, opts["growth_months"], root)
    review = build_review(root, replace(settings))
    growth = None
    if growth_plan is not None:
        from analyzer.core.snapshot import read_snapshot
        from analyzer.whatif.compare import resolve_strategy
        from analyzer.whatif.growth import run_growth

        names = opts["strategies"]
        growth = run_growth(
            read_snapshot(opts["growth_snapshot"]),
            growth_plan,
            resolve_strategy(names[0] if names else "kube-default"),
            days=opts["growth_days"],
        )
    joint, choice, snapshot = None, None, opts["snapshot"]
    if opts["snapshot"] is not None:
        joint = joint_settings(
            review,
            opts["strategies"],
            thresholds=replace(config, usage=usage),
            workers=opts["workers"],
            prices=prices,
            executor=executor,
            days=window,
        )
        autoscaler = opts["autoscaler"]
        if autoscaler == "auto":  # the snapshot read once, for the choice and the scenarios
            from analyzer.core.snapshot import read_snapshot
            from analyzer.whatif.autoscaler_choice import choose_autoscaler

            snapshot = read_snapshot(opts["snapshot"])
            choice = choose_autoscaler(snapshot)
            autoscaler = choice.chosen
            autoscaling = autoscaler_settings(section, autoscaler)
        joint = replace(joint, autoscaler=autoscaler, autoscaling=autoscaling)
        from analyzer.whatif.compare import resolve_strategy

        for name in (joint.baseline, joint.repack):  # a bad name fails before the replays
            resolve_strategy(name, joint.kubernetes_version)
    paths = write_monthly_report(
        review,
        out,
        history=root,
        templates_dir=opts["templates_dir"],
        recipe=opts["recipe"],
        snapshot=snapshot,
        joint=joint,
        autoscaler_choice=None if choice is None else choice.to_dict(),
        growth=growth,
    )
    from analyzer.report.portal import refresh_parent_portal

    portal = refresh_parent_portal(out, templates_dir=opts["templates_dir"])
    record_metrics(ctx, monthly_metrics(review))
    print_report(pdf, paths.html)  # the folder is whole: a failed print leaves it as it is
    for pool in review.payload["pools"]:
        click.echo(f"{pool['name']}: {pool['decision']['sentence']}")
        if pool.get("simulated_decision"):
            click.echo(f"{pool['name']} (simulated): {pool['simulated_decision']['sentence']}")
    click.echo(f"report:   {paths.html}")
    click.echo(f"json:     {paths.json}")
    click.echo(f"forecast: {paths.forecast}")
    if paths.ledger is not None:
        click.echo(f"ledger:   {paths.ledger}")
    if portal is not None:
        click.echo(f"index:    {portal}")
    if notify is not None:  # the review is whole on disk: a failure here is exit 5
        from analyzer.report.notify_message import monthly_message

        publish(notify, monthly_message(out, opts["report_url"]), out)
