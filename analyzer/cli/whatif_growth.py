"""``analyzer whatif SNAPSHOT --growth``: growth applied month by month to the busiest window and
replayed with the cluster's strategy (``analyzer.whatif.growth``; docs/whatif.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pandas as pd

from analyzer.core.errors import InputError
from analyzer.core.snapshot import read_snapshot
from analyzer.core.text import escaped
from analyzer.replay.karpenter_setup import autoscaler_settings
from analyzer.whatif.autoscaler_choice import resolve_autoscaler
from analyzer.whatif.growth import run_growth
from analyzer.whatif.growth_plan import Change, GrowthPlan, parse_growth
from analyzer.whatif.growth_result import GrowthResult

DEFAULT_STRATEGY = "kube-default"  # the what-if's "today" scheduler (whatif --recommendations)


def growth_plan(ctx: click.Context, months: int, history: Path | None) -> GrowthPlan:
    """The plan from the config's ``growth:`` section and, with ``history``, fitted rates."""
    obj = ctx.obj or {}
    config_path = obj.get("config_path")
    base = Path(config_path).parent if config_path is not None else Path.cwd()
    fitted: tuple[Change, ...] = ()
    if history is not None:
        from analyzer.monthly.growth_rates import namespace_rates
        from analyzer.monthly.review import history_root

        rates = namespace_rates(history_root(history))
        fitted = tuple(Change("history", r.namespace, rate=r.rate) for r in rates if r.rate)
        if not rates:
            raise InputError(f"--history {history}: no workload rows to fit growth from")
    return parse_growth(obj.get("config", {}), base, months, fitted)


def growth_cmd(ctx: click.Context, snapshot: Path, opts: dict[str, Any]) -> None:
    """Run the growth replay, print its answer (or JSON), write ``--out`` when given."""
    from analyzer.whatif.compare import resolve_strategy

    for flag in ("search", "recommendations", "rightsize", "blocked"):
        if opts[flag]:
            raise InputError(f"--growth: not with --{flag} (run them separately)")
    names = tuple(opts["strategies"])
    if len(names) > 1:
        raise InputError("--strategy: with --growth name one (the cluster's scheduler)")
    if opts["days"] < 1:
        raise InputError(f"--growth-days: {opts['days']} must be at least 1")
    if opts["out"] is not None:
        from analyzer.report.output import check_whatif_out

        check_whatif_out(opts["out"])
    plan = growth_plan(ctx, opts["months"], opts["history"])
    strategy = resolve_strategy(names[0] if names else DEFAULT_STRATEGY, opts["kubernetes_version"])
    asked = opts["autoscaler"]
    section = (ctx.obj or {}).get("config", {}).get("autoscaler")
    if asked != "none":  # a bad autoscaler: key fails here, before the snapshot is read
        autoscaler_settings(section, asked)
    data = read_snapshot(snapshot)
    choice = resolve_autoscaler(asked, data)
    chosen = asked if choice is None else choice.chosen
    autoscaling = None if chosen == "none" else autoscaler_settings(section, chosen)
    result = run_growth(data, plan, strategy, autoscaling, days=opts["days"])
    if choice is not None:
        result.autoscaler_choice = choice.to_dict()
    if opts["out"] is not None:
        from analyzer.report.whatif_growth import write_growth_report

        page = write_growth_report(result, opts["out"], templates_dir=opts["templates_dir"])
    if opts["fmt"] == "json":
        from analyzer.report.views import json_tree

        click.echo(json.dumps(json_tree(result.to_dict()), indent=1, allow_nan=False))
        return
    if choice is not None:
        click.echo(escaped(choice.why))
    click.echo(_table(result))
    click.echo("")
    click.echo(escaped(result.sentence()))
    if opts["out"] is not None:
        click.echo(f"report: {page}")


def _table(result: GrowthResult) -> str:
    rows = [
        {
            "month": r["month"],
            "pool": escaped(r["pool"]),
            "nodes": r["nodes"],
            "cap_cores": round(r["capacity_cpu_cores"], 1),
            "req_peak_cores": round(r["requested_peak_cpu_cores"], 1),
            "cap_gib": round(r["capacity_memory_gib"], 1),
            "req_peak_gib": round(r["requested_peak_memory_gib"], 1),
            "n+1": "yes" if r["n_plus_1"] else "no",
            "waiting": r["waiting_pods"],
            "add_nodes": "-" if r["nodes_to_add"] is None else r["nodes_to_add"],
        }
        for r in result.rows()
    ]
    with pd.option_context("display.max_columns", None, "display.width", 250):
        text: str = pd.DataFrame(rows).to_string(index=False)
        return text
