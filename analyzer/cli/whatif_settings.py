"""The options ``analyzer whatif`` and ``analyzer report whatif`` share, and the what-if
settings they make (``settings_of``; ``with_choice`` for ``--autoscaler auto``'s choice)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from analyzer.cli.params import EXECUTOR_OPTION, Count
from analyzer.core.errors import InputError
from analyzer.core.executor import parse_executor
from analyzer.replay.autoscale_setup import AUTOSCALERS
from analyzer.replay.input import ARRIVALS
from analyzer.replay.karpenter_setup import autoscaler_settings
from analyzer.usage.thresholds import ThresholdConfig
from analyzer.whatif.busiest import parse_window
from analyzer.whatif.compare import WhatIfSettings

# Tie-break seeds per strategy: the spread shows after a few; beyond 100 a typo asks for hours.
MAX_SEEDS = 100


def _pct(_ctx: click.Context, param: click.Parameter, value: int | None) -> int | None:
    if value is not None and not 0 <= value <= 100:
        raise click.BadParameter(f"{value} must be a percentage in [0, 100]", param=param)
    return value


def settings_of(
    ctx: click.Context, opts: dict[str, Any], *, search: bool = False
) -> WhatIfSettings:
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


def shared_options(func: Any) -> Any:
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


def with_choice(ctx: click.Context, settings: Any, chosen: str) -> Any:
    """``settings`` (a what-if's or a search's) with ``--autoscaler auto``'s choice and that
    autoscaler's options from the config's section (``settings_of`` checked both before any
    work)."""
    section = (ctx.obj or {}).get("config", {}).get("autoscaler")
    return replace(settings, autoscaler=chosen, autoscaling=autoscaler_settings(section, chosen))


def window_days(opts: dict[str, Any]) -> int | None:
    """``--window``'s whole days, None without it (the whole range)."""
    return None if opts.get("window") is None else parse_window(opts["window"])
