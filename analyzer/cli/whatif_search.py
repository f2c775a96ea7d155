"""``analyzer whatif --search`` (a grid of configurations, its Pareto front and the one to
apply) and ``analyzer whatif --recommendations`` (today / right-size only / repack only / both
per pool)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import pandas as pd

from analyzer.cli.whatif_settings import settings_of, window_days, with_choice
from analyzer.core.errors import InputError
from analyzer.core.snapshot import read_snapshot
from analyzer.core.text import escaped
from analyzer.whatif.autoscaler_choice import resolve_autoscaler
from analyzer.whatif.busiest import replay_window


def search_cmd(ctx: click.Context, snapshot: Path, opts: dict[str, Any]) -> None:
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
    base = settings_of(ctx, opts, search=True)
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
    data, window = replay_window(read_snapshot(snapshot), window_days(opts))
    if window:
        say(window)
    choice = resolve_autoscaler(settings.autoscaler, data)
    if choice is not None:
        settings = with_choice(ctx, settings, choice.chosen)
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


def joint_cmd(ctx: click.Context, snapshot: Path, opts: dict[str, Any]) -> None:
    """``whatif --recommendations``: the four scenarios per pool, then why nodes cannot go."""
    from analyzer.whatif.joint import JointSettings, run_joint

    names = tuple(opts["strategies"])
    if len(names) > 2:
        raise InputError(
            "--strategy: with --recommendations name at most two (the baseline, then the "
            "repack strategy)"
        )
    base = settings_of(ctx, {**opts, "strategies": names or ("kube-default",)})
    defaults = JointSettings()
    settings = JointSettings(
        baseline=names[0] if names else defaults.baseline,
        repack=names[1] if len(names) > 1 else defaults.repack,
        kubernetes_version=base.kubernetes_version,
        thresholds=base.thresholds,
        workers=base.workers,
        seed=0,
        drain=opts["blocked"] or opts["fmt"] == "json",
        days=window_days(opts) or defaults.days,
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
        settings = with_choice(ctx, settings, choice.chosen)
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
