"""``analyzer whatif`` and ``analyzer report whatif``: replay a snapshot under other strategies."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import pandas as pd

from analyzer.cli.base import main, report
from analyzer.cli.params import EXECUTOR_OPTION, Count
from analyzer.cli.pdf_options import pdf_options, pdf_request, print_report
from analyzer.core.errors import InputError
from analyzer.core.executor import parse_executor
from analyzer.core.snapshot import read_snapshot
from analyzer.core.text import escaped
from analyzer.replay.autoscale_setup import AUTOSCALERS
from analyzer.replay.input import ARRIVALS
from analyzer.replay.karpenter_setup import autoscaler_settings
from analyzer.replay.podrows import read_for_replay
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.autoscaler_choice import resolve_autoscaler
from analyzer.whatif.busiest import cut, parse_window, replay_window
from analyzer.whatif.compare import WhatIfResult, WhatIfSettings, run_whatif

# Tie-break seeds per strategy: the spread shows after a few; beyond 100 a typo asks for hours.
MAX_SEEDS = 100


def _pct(_ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and not 0 <= value <= 100:
        raise click.BadParameter(f"{value} must be a percentage in [0, 100]", param=param)
    return value


def _settings(ctx: click.Context, opts: dict[str, Any], *, search: bool = False) -> WhatIfSettings:
    """Strategies (at least one), seeds, workers and thresholds (flags, then config, then 65/95)."""
    strategies = tuple(opts["strategies"])
    if not strategies and not search:
        raise InputError(
            "--strategy: name at least one strategy or KubeSchedulerConfiguration file "
            "(see 'analyzer strategies'), e.g. --strategy most-allocated"
        )
    if opts["workers"] is not None and opts["workers"] < 1:
        raise InputError(f"--workers: {opts['workers']} must be at least 1")
    thresholds = ThresholdConfig.from_config((ctx.obj or {}).get("config", {}))
    usage = dict(thresholds.usage)
    usage.update({k: opts[k] for k in ("cpu", "memory") if opts[k] is not None})
    from analyzer.core.prices import load_prices

    autoscaler = opts.get("autoscaler") or "none"
    section = (ctx.obj or {}).get("config", {}).get("autoscaler")
    return WhatIfSettings(
        autoscaler=autoscaler,
        autoscaling=autoscaler_settings(section, autoscaler),
        prices=None if opts["prices"] is None else load_prices(opts["prices"]),
        strategies=strategies,
        seeds=opts["seeds"],
        kubernetes_version=opts["kubernetes_version"],
        thresholds=replace(thresholds, usage=usage),
        workers=opts["workers"],
        arrivals=opts["arrivals"],
        executor=parse_executor(opts["executor"]),
    )


def _options(func: Any) -> Any:
    """The options both commands share."""
    for option in reversed(
        [
            click.option(
                "--strategy",
                "strategies",
                multiple=True,
                help="A preset (kube-default, most-allocated, rtcr-binpack, koord-loadaware; "
                "GPU sharing: fgd, bestfit, gpu-packing, gpu-clustering, dotprod, random) or a "
                "KubeSchedulerConfiguration file; repeat to compare several. observed is always "
                "included first.",
            ),
            click.option("--seeds", type=Count(1, MAX_SEEDS), default=1, show_default=True,
                          help="Tie-break seeds per strategy (0..N-1); the report shows the spread."),
            click.option("--workers", type=int, default=None,
                         help="Parallel processes (default: the machine's cores)."),
            EXECUTOR_OPTION,
            click.option("--kubernetes-version", default=None,
                         help="Scheduler arithmetic of this version (default: the cluster's "
                              "own, the newest kubelet version in the snapshot; 1.36 when it "
                              "names none)."),
            click.option("--prices", type=click.Path(dir_okay=False, path_type=Path),
                         default=None,
                         help="prices.yaml: per pool per node-hour, or per core-hour and "
                         "GiB-hour (the monthly review's file, docs/monthly.md); puts the "
                         "capacity released in money and ranks by it."),
            click.option("--cpu", type=int, callback=_pct,
                         help="CPU usage threshold % for violations (default 65)."),
            click.option("--memory", type=int, callback=_pct,
                         help="Memory usage threshold % for violations (default 95)."),
            click.option("--rightsize", "rightsize", default=None,
                         help="Replay with requests right-sized by this recipe (vpa, krr or "
                         "percentile:P,headroom:H; docs/rightsizing.md); usage stays as observed."),
            click.option("--rightsize-history", type=click.Path(exists=True, file_okay=False,
                         path_type=Path), default=None,
                         help="With --rightsize: recommend from this history folder instead of "
                         "the snapshot's own pod usage."),
            click.option("--arrivals", type=click.Choice(ARRIVALS), default=ARRIVALS[0],
                         show_default=True,
                         help="When the strategies' pods arrive: when they were scheduled (the "
                         "data's waits and preemptions as recorded) or when they were created "
                         "(the replay waits and preempts by itself; docs/scheduling.md)."),
            click.option("--window", default=None, metavar="DAYS",
                         help="Replay only the busiest DAYS whole days of the snapshot (e.g. "
                         "2d: the days with the highest CPU-request peak, whatif/busiest.py) "
                         "instead of its whole range; the pages say which days. Default: the "
                         "whole range (with --recommendations: the busiest week)."),
            click.option("--autoscaler", type=click.Choice((*AUTOSCALERS, "auto")),
                         default="none", show_default=True,
                         help="Also replay each strategy with this node autoscaler adding and "
                         "removing nodes (options: the config's autoscaler: section; "
                         "docs/autoscaling.md). none keeps the data's nodes as observed; auto "
                         "picks the one the data suggests (node labels, CA's taints, nodes "
                         "joining and leaving) and says why."),
        ]
    ):  # fmt: skip
        func = option(func)
    return func


def _chosen(ctx: click.Context, settings: Any, chosen: str) -> Any:
    """``settings`` (a what-if's or a search's) with ``--autoscaler auto``'s choice and that
    autoscaler's options from the config's section (``_settings`` checked both before any
    work)."""
    section = (ctx.obj or {}).get("config", {}).get("autoscaler")
    return replace(settings, autoscaler=chosen, autoscaling=autoscaler_settings(section, chosen))


def _run(
    ctx: click.Context, path: Path, settings: WhatIfSettings, opts: dict[str, Any]
) -> WhatIfResult:
    """The what-if, on requests right-sized first when --rightsize names a recipe; with
    ``--autoscaler auto`` the autoscaler the data suggests, the result saying which and why."""
    # without a window or right-sizing the replay streams the pod usage a day at a time
    plain = _window(opts) is None and opts["rightsize"] is None
    whole = read_for_replay(path) if plain else read_snapshot(path)
    snapshot, window = replay_window(whole, _window(opts))
    notes = [window] if window else []
    choice = resolve_autoscaler(settings.autoscaler, snapshot)
    if choice is not None:
        settings = _chosen(ctx, settings, choice.chosen)
    chosen = None if choice is None else choice.to_dict()
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


def _window(opts: dict[str, Any]) -> int | None:
    """``--window``'s whole days, None without it (the whole range)."""
    return None if opts.get("window") is None else parse_window(opts["window"])


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
        text: str = pd.DataFrame(rows).to_string(index=False)
        return text


@main.command("whatif")
@click.argument("snapshot", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_options
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
        _search(ctx, snapshot, opts)
        return
    if opts["recommendations"] is not None:
        _joint(ctx, snapshot, opts)
        return
    if opts["blocked"]:
        raise InputError("--blocked: only with --recommendations FILE.csv")
    for flag in ("search_grid", "out", "max_configurations"):
        if opts[flag] is not None:
            raise InputError(f"--{flag.replace('_', '-')}: only with --search")
    settings = _settings(ctx, opts)
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
@_options
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
    settings = _settings(ctx, opts)
    result = _run(ctx, snapshot, settings, opts)
    paths = write_whatif_report(result, out, templates_dir=templates_dir)
    portal = refresh_parent_portal(out, templates_dir=templates_dir)
    click.echo(result.recommendation)
    click.echo(f"report: {paths.html}")
    click.echo(f"json:   {paths.json}")
    if portal is not None:
        click.echo(f"index:  {portal}")
    print_report(pdf, paths.html, width=8)  # the folder is whole: a failed print leaves it as it is


def _search(ctx: click.Context, snapshot: Path, opts: dict[str, Any]) -> None:
    """``whatif --search``: run the grid, print the table, the sentence and the YAML to apply."""
    from analyzer.whatif.search import (
        DEFAULT_MAX_CONFIGURATIONS,
        SearchSettings,
        check_search_size,
        search_size,
    )
    from analyzer.whatif.search_finalists import run_any
    from analyzer.whatif.search_grid import load_grid

    if opts["out"] is not None:
        from analyzer.report.output import check_whatif_out

        check_whatif_out(opts["out"])  # before the replays: never lose a user's folder
    base = _settings(ctx, opts, search=True)
    grid = load_grid(opts["search_grid"])
    if base.strategies:  # --strategy adds baselines to the grid's
        grid = replace(grid, baselines=(*grid.baselines, *base.strategies))
    settings = SearchSettings(
        grid=grid,
        seeds=base.seeds,
        kubernetes_version=base.kubernetes_version,
        thresholds=base.thresholds,
        workers=base.workers,
        prices=base.prices,
        autoscaler=base.autoscaler,
        autoscaling=base.autoscaling,
        executor=base.executor,
    )
    size = search_size(settings)
    limit = opts["max_configurations"] or DEFAULT_MAX_CONFIGURATIONS
    check_search_size(size, limit)  # before reading the snapshot: counted from the grid alone
    say = _announcer(opts["fmt"])
    data, window = replay_window(read_snapshot(snapshot), _window(opts))
    if window:
        say(window)
    choice = resolve_autoscaler(settings.autoscaler, data)
    if choice is not None:
        settings = _chosen(ctx, settings, choice.chosen)
        say(choice.why)
    if settings.autoscaler == "karpenter":
        from analyzer.whatif.search_finalists import FINALISTS

        say(f"search: then the baselines and the {FINALISTS} best replayed again under karpenter "
            "(finalists only: its replay is slow; docs/whatif.md)")  # fmt: skip
    elif settings.autoscaler != "none":
        say(f"search: each replayed again under {settings.autoscaler}, one at a time")
    say(f"search: {size.line()} (and observed, the reference); replaying...")
    progress = _estimator(say, base.workers)
    result = run_any(data, settings, progress, source=None if window else snapshot)
    if choice is not None:
        result.autoscaler_choice = choice.to_dict()
    if window:
        result.notes = [window, *result.notes]

    paths = None
    if opts["out"] is not None:
        from analyzer.report.portal import refresh_parent_portal
        from analyzer.report.search import write_search_report

        paths = write_search_report(result, opts["out"], templates_dir=opts["templates_dir"])
        refresh_parent_portal(opts["out"], templates_dir=opts["templates_dir"])
    if opts["fmt"] == "json":
        from analyzer.report.views import json_tree

        click.echo(json.dumps(json_tree(result.to_dict()), indent=1, allow_nan=False))
        return
    short = "ca" if result.autoscaler == "cluster-autoscaler" else result.autoscaler
    rows = [
        {
            "configuration": r.name,
            "core_hours_released": round(r.core_hours_released, 1),
            "gib_hours_released": round(r.gib_hours_released, 1),
            **({} if r.cost_released is None else {"cost_released": round(r.cost_released, 2)}),
            "peak_nodes": round(r.peak_nodes, 1),
            "violations": int(r.violations),  # worst seed: a whole count
            "waited": int(r.waited),
            "never_placed": int(r.never_placed),
            **(
                {}
                if r.autoscaled is None
                else {
                    f"node_hours_{short}": round(r.autoscaled["node_hours"], 1),
                    f"released_{short}_%": round(
                        (
                            r.autoscaled["core_hours_released_pct"]
                            + r.autoscaled["gib_hours_released_pct"]
                        )
                        / 2,
                        1,
                    ),
                    f"pending_end_{short}": r.autoscaled["pending_pods_at_end"],
                }
            ),
            "front": "*" if r.on_front else "",
            "recommended": "<==" if r.recommended else "",
        }
        for r in result.rows
    ]
    with pd.option_context("display.max_columns", None, "display.width", 250):
        click.echo(pd.DataFrame(rows).to_string(index=False))
    click.echo("")
    click.echo(result.sentence)
    text = result.recommended_yaml()
    if text is not None:
        click.echo("")
        click.echo(text.rstrip())
    if paths is not None:
        click.echo(f"report: {paths.html}")
        if paths.yaml is not None:
            click.echo(f"yaml:   {paths.yaml}")


def _announcer(fmt: str) -> Any:
    """Where the search's plan and estimate go: stdout before its table; with --format json
    (stdout is the JSON) to stderr, and only on a terminal (cron mails any stderr)."""
    from analyzer.cli.base import is_terminal

    def say(text: str) -> None:
        if fmt != "json":
            click.echo(text)
        elif is_terminal():
            click.echo(text, err=True)

    return say


def _estimator(say: Any, workers: int | None) -> Any:
    """A ``progress`` hook that times the first replay of a searched configuration (observed
    and a kube-default baseline are several times faster than a load-aware one, so they would
    underestimate) and says how long the rest should take on the pool."""
    import math
    import os
    import time

    began = time.monotonic()
    told = [False]

    def progress(strategy: str, done: int, total: int) -> None:
        if told[0] or not strategy.endswith(".yaml") or done >= total:
            return
        told[0] = True
        took = time.monotonic() - began
        pool = max(1, min(workers or os.cpu_count() or 1, total))
        rounds = math.ceil((total - done) / pool)
        say(
            f"search: {done} of {total} replays done in {took:.1f} s; about {took * rounds:,.0f} s "
            f"more ({total - done} replays on {pool} worker{'s' if pool != 1 else ''}, at the "
            "time this first grid configuration took)"
        )

    return progress


def _joint(ctx: click.Context, snapshot: Path, opts: dict[str, Any]) -> None:
    """``whatif --recommendations``: the four scenarios per pool, then why nodes cannot go."""
    from analyzer.whatif.joint import JointSettings, run_joint

    names = tuple(opts["strategies"])
    if len(names) > 2:
        raise InputError(
            "--strategy: with --recommendations name at most two (the baseline, then the "
            "repack strategy)"
        )
    base = _settings(ctx, {**opts, "strategies": names or ("kube-default",)})
    defaults = JointSettings()
    settings = JointSettings(
        baseline=names[0] if names else defaults.baseline,
        repack=names[1] if len(names) > 1 else defaults.repack,
        kubernetes_version=base.kubernetes_version,
        thresholds=base.thresholds,
        workers=base.workers,
        seed=0,
        drain=opts["blocked"] or opts["fmt"] == "json",
        days=_window(opts) or defaults.days,
        autoscaler=base.autoscaler,
        autoscaling=base.autoscaling,
        executor=base.executor,
    )
    from analyzer.core.workloads import read_recommendations

    # checked at the boundary: the writer's formula mark undone, every value a finite number
    recs = read_recommendations(
        opts["recommendations"], f"--recommendations {opts['recommendations']}"
    )
    data = read_snapshot(snapshot)
    choice = resolve_autoscaler(settings.autoscaler, data)
    if choice is not None:
        settings = _chosen(ctx, settings, choice.chosen)
    result = run_joint(data, recs, settings, source=snapshot)
    if opts["fmt"] == "json":
        from analyzer.report.views import json_tree

        payload = result.to_dict()
        if choice is not None:
            payload["autoscaler_choice"] = choice.to_dict()
        click.echo(json.dumps(json_tree(payload), indent=1, allow_nan=False))
        return
    click.echo(f"window {result.start} .. {result.end}; {result.changed_pods:,} pods right-sized")
    rows = [
        {
            "pool": escaped(pool),  # names from the cluster reach a terminal: no escapes
            "scenario": row["name"],
            "strategy": row["strategy"],
            "nodes_peak": row["nodes_peak"],
            "removable": row["nodes_removable"],
            "violations": row["violations"],
            "pods_waited": row["pods_waited"],
            **(
                {"released_by_autoscaler": row["autoscaler"]["nodes_released"]}
                if "autoscaler" in row
                else {}
            ),
            "idle_cpu_%": round(row["idle_pct"]["cpu"], 1),
            "slack_cpu_%": round(row["slack_pct"]["cpu"], 1),
            "best": "<==" if result.best[pool] == row["name"] else "",
        }
        for pool in result.pools()
        for row in result.pool_rows(pool)
    ]
    with pd.option_context("display.max_columns", None, "display.width", 250):
        click.echo(pd.DataFrame(rows).to_string(index=False))
    if result.version is not None:
        click.echo(result.version.sentence)
    if choice is not None:
        click.echo(choice.why)
    if result.autoscaled:
        click.echo(
            f"released_by_autoscaler: how many fewer nodes the pool ran under {result.autoscaler} "
            "on average over the window ('today' with the baseline scheduler; docs/autoscaling.md)"
        )
    for note in result.notes:
        click.echo(f"note: {escaped(note)}")
    for pool, drain in sorted(result.drains.items()) if opts["blocked"] else []:
        click.echo("")
        click.echo(
            f"pool {escaped(pool)} ({result.best[pool]}, at {drain.time}): {len(drain.needed)} "
            f"nodes needed, {len(drain.blocked_nodes)} cannot go alone; "
            f"{len(drain.greedy_drained)} more could go together (greedy drain)"
        )
        for blocked in drain.blocked_nodes:
            click.echo(f"  {escaped(blocked['node'])}:")
            for reason in blocked["reasons"]:
                click.echo(f"    {escaped(reason)}")
