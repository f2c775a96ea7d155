"""``analyzer whatif`` and ``analyzer report whatif``: replay a snapshot under other strategies."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import pandas as pd

from analyzer.cli.base import is_terminal, main, report
from analyzer.cli.params import Count
from analyzer.cli.pdf_options import pdf_options, pdf_request, print_report
from analyzer.cli.whatif_search import joint_cmd, search_cmd
from analyzer.cli.whatif_settings import settings_of, shared_options, window_days, with_choice
from analyzer.core.errors import InputError
from analyzer.core.snapshot import read_snapshot
from analyzer.replay.input import ARRIVALS
from analyzer.replay.podrows import read_for_replay
from analyzer.replay.strategy import OBSERVED
from analyzer.whatif.autoscaler_choice import resolve_autoscaler
from analyzer.whatif.busiest import cut, replay_window
from analyzer.whatif.compare import WhatIfResult, WhatIfSettings, run_whatif


def _run(
    ctx: click.Context, path: Path, settings: WhatIfSettings, opts: dict[str, Any]
) -> WhatIfResult:
    """The what-if, on requests right-sized first when --rightsize names a recipe; with
    ``--autoscaler auto`` the autoscaler the data suggests, the result saying which and why."""
    # without a window or right-sizing the replay streams the pod usage a day at a time
    plain = window_days(opts) is None and opts["rightsize"] is None
    whole = read_for_replay(path) if plain else read_snapshot(path)
    snapshot, window = replay_window(whole, window_days(opts))
    notes = [window] if window else []
    choice = resolve_autoscaler(settings.autoscaler, snapshot)
    if choice is not None:
        settings = with_choice(ctx, settings, choice.chosen)
    chosen = None if choice is None else choice.to_dict()
    _say_slow_part(settings)
    if opts["rightsize"] is None:
        if opts["rightsize_history"] is not None:
            raise InputError("--rightsize-history: only with --rightsize RECIPE")
        # source: a Dask worker reads the snapshot there (not a window of it: refused there)
        result = run_whatif(snapshot, settings, source=None if window else path)
        return replace(result, notes=[*notes, *result.notes], autoscaler_choice=chosen)
    from analyzer.cli.rightsize_cmds import rightsize_snapshot

    # recommended from the whole snapshot's usage, then cut to the same window
    resized, facts, note = rightsize_snapshot(whole, opts["rightsize"], opts["rightsize_history"])
    if window:
        resized = cut(resized, snapshot.start, snapshot.end)
    result = run_whatif(resized, settings)
    return replace(
        result, rightsized=facts, notes=[note, *notes, *result.notes], autoscaler_choice=chosen
    )


def _say_slow_part(settings: WhatIfSettings) -> None:
    """On a terminal, before the replays under an autoscaler: how many there are and that they
    are this command's slow part (minutes on a week of a few hundred nodes), so a silent wait
    is not taken for a hang. Not in cron logs (``is_terminal``)."""
    if settings.autoscaler == "none" or not is_terminal():
        return
    count = sum(1 for n in settings.strategies if n != OBSERVED) * settings.seeds
    click.echo(
        f"replaying under {settings.autoscaler}: {count} replay{'s' if count != 1 else ''}, one "
        'per strategy and seed, the slow part of this command (docs/autoscaling.md "What it '
        'costs"; --window 1d replays the busiest day)',
        err=True,
    )


def _table(result: WhatIfResult) -> str:
    rows = []
    for c in result.strategies:
        row: dict[str, Any] = {"strategy": c.name, "seeds": len(c.outcomes)}
        # The worst seed's figures, as the verdict and the report's table use them.
        row.update({k: round(c.worst(k), 3) for k in c.compared()})
        rows.append(row)
    for o in result.autoscaled:
        rows.append(
            {
                "strategy": f"{o.strategy} + {o.autoscaler}",
                "seeds": 1,
                "node_hours": round(o.total.node_hours, 3),
                "observed_node_hours": round(o.total.observed_node_hours, 3),
                "nodes_added": o.total.nodes_added,
                "nodes_removed": o.total.nodes_removed,
                "pods_evicted": o.total.pods_evicted,
                "scale_up_wait_pod_s": round(o.pending_pod_seconds_scale_up, 1),
            }
        )
    with pd.option_context("display.max_columns", None, "display.width", 250):
        # a figure a row does not have (an autoscaled row's fixed-node figures): "-", not NaN
        text: str = pd.DataFrame(rows).to_string(index=False, na_rep="-")
        return text


@main.command("whatif")
@click.argument("snapshot", type=click.Path(exists=True, file_okay=False, path_type=Path))
@shared_options
@click.option("--format", "fmt", type=click.Choice(["json", "table"]), default="table",
              show_default=True)  # fmt: skip
@click.option(
    "--search",
    is_flag=True,
    help="Explore a grid of configurations (scoring × resource weights × LoadAware "
    "thresholds × LoadAware weight), report the Pareto front and recommend one.",
)
@click.option(
    "--search-grid",
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML grid replacing or extending the built-in one (docs/whatif.md).",
)
@click.option(
    "--max-configurations",
    type=Count(1, 10**9),
    default=None,
    help="With --search: refuse, before any replay, a search of more replays (configurations "
    "and baselines × seeds; default 250, ≈ 17 min for a 500-node day on 2 cores).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="With --search: write OUT/search.html (+ JSON, CSV, scheduler YAML); with --growth: "
    "OUT/growth.html, growth.json, growth.csv.",
)
@click.option("--templates-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder searched before the bundled templates.")  # fmt: skip
@click.option(
    "--recommendations",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Right-sizing CSV (one row per workload): replay the busiest week as today / "
    "right-size only / repack only / both per pool; --strategy names the baseline and the "
    "repack strategy (default kube-default, most-allocated-loadaware).",
)
@click.option("--blocked", is_flag=True,
              help="With --recommendations: print why each node still needed cannot go.")  # fmt: skip
@click.option(
    "--growth",
    is_flag=True,
    help="Apply growth month by month (the config's growth: section and/or rates "
    "fitted from --history) to the busiest window and replay it with the cluster's "
    "strategy: the first month a pod waits, N+1 per pool, nodes to add (docs/whatif.md).",
)
@click.option(
    "--months",
    type=Count(1, 120),
    default=12,
    show_default=True,
    help="With --growth: months to replay.",
)
@click.option(
    "--history",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="With --growth: fit each namespace's monthly growth from this "
    "history store (a nightly OUT or OUT/history).",
)
@click.option(
    "--growth-days",
    "days",
    type=int,
    default=7,
    show_default=True,
    help="With --growth: whole days of the busiest window replayed.",
)
@click.pass_context
def whatif_cmd(ctx: click.Context, /, snapshot: Path, **opts: Any) -> None:
    """Replay SNAPSHOT's pods under other scheduling strategies and compare the outcomes.

    Per strategy and seed: capacity of active nodes released vs observed (core-hours, GiB-hours,
    money with --prices), pods placed / waited / never placed, active nodes (peak, mean,
    node-hours released vs observed), allocation, projected threshold violations, fragmentation,
    imbalance and the share of pods moved. With --search: a grid of configurations instead, its
    Pareto front (capacity released, violations, waiting pods) and the configuration to apply.
    """
    if opts["growth"]:
        from analyzer.cli.whatif_growth import growth_cmd

        growth_cmd(ctx, snapshot, opts)
        return
    for flag in ("history",):
        if opts[flag] is not None:
            raise InputError(f"--{flag}: only with --growth")
    if opts["arrivals"] != ARRIVALS[0] and (opts["search"] or opts["recommendations"]):
        raise InputError("--arrivals: only for the comparison of strategies (not with --search "
                         "or --recommendations yet)")  # fmt: skip
    if opts["search"]:
        if opts["rightsize"] is not None:
            raise InputError("--rightsize: not with --search yet; run the search without it")
        search_cmd(ctx, snapshot, opts)
        return
    if opts["recommendations"] is not None:
        joint_cmd(ctx, snapshot, opts)
        return
    if opts["blocked"]:
        raise InputError("--blocked: only with --recommendations FILE.csv")
    for flag in ("search_grid", "out", "max_configurations"):
        if opts[flag] is not None:
            raise InputError(f"--{flag.replace('_', '-')}: only with --search")
    settings = settings_of(ctx, opts)
    result = _run(ctx, snapshot, settings, opts)
    if opts["fmt"] == "json":
        from analyzer.report.views import json_tree  # JSON cleaning shared with the report

        click.echo(json.dumps(json_tree(result.to_dict()), indent=1, allow_nan=False))
        return
    if result.rightsized:
        click.echo(result.notes[0])
        click.echo("")
    click.echo(_table(result))
    if result.version is not None:
        click.echo(result.version.sentence)
    if result.autoscaler_choice is not None:
        click.echo(result.autoscaler_choice["why"])
    if result.autoscaled:  # the page's sentence (why none went, when a pool's minSize held)
        from analyzer.report.whatif_autoscaled import autoscaled_sentence, autoscaled_table

        table = autoscaled_table(result)
        assert table is not None
        click.echo(autoscaled_sentence(table, result))
        for note in dict.fromkeys(n for o in result.autoscaled for n in o.notes):
            click.echo(note)
    if settings.seeds > 1:
        click.echo("(every figure is the strategy's worst tie-break seed, as in the verdict)")
    click.echo("")
    click.echo(result.recommendation)


@report.command("whatif")
@click.argument("snapshot", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Output folder: OUT/report.html, report.json and CSVs (new, empty or an earlier what-if report).")  # fmt: skip
@click.option("--templates-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Folder searched before the bundled templates.")  # fmt: skip
@shared_options
@pdf_options
@click.pass_context
def report_whatif_cmd(
    ctx: click.Context, /, snapshot: Path, out: Path, templates_dir: Path | None, **opts: Any
) -> None:
    """The what-if HTML report (with JSON and CSV beside it) for SNAPSHOT."""
    from analyzer.report.output import check_whatif_out
    from analyzer.report.portal import refresh_parent_portal
    from analyzer.report.whatif import write_whatif_report

    check_whatif_out(out)  # before the replays: never lose a run, nor a user's folder
    pdf = pdf_request(opts, out)  # no browser, a bad PATH: refused before the replays (exit 2)
    settings = settings_of(ctx, opts)
    result = _run(ctx, snapshot, settings, opts)
    paths = write_whatif_report(result, out, templates_dir=templates_dir)
    portal = refresh_parent_portal(out, templates_dir=templates_dir)
    click.echo(result.recommendation)
    click.echo(f"report: {paths.html}")
    click.echo(f"json:   {paths.json}")
    if portal is not None:
        click.echo(f"index:  {portal}")
    print_report(pdf, paths.html, width=8)  # the folder is whole: a failed print leaves it as it is
