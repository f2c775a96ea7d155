"""``analyzer rightsize``: per-workload request recommendations from the history (CSV or YAML
patches); :func:`rightsize_snapshot` serves ``analyzer whatif --rightsize``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import numpy as np
import pandas as pd

from analyzer.cli.base import main
from analyzer.cli.params import Count
from analyzer.core.atomic import atomic_write_text
from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot
from analyzer.core.workloads import apply_recommendations
from analyzer.monthly.rightsize import (
    DEFAULT_DAYS,
    DEFAULT_MIN_SAMPLES,
    SYNTAX,
    Recipe,
    parse_recipe,
    recommend,
)

GIB = 2**30


def history_workloads(directory: Path, days: int | None = None) -> pd.DataFrame:
    """The workload rows under ``directory`` (``OUT/history``, or ``OUT`` holding ``history/``);
    with ``days``, only the last ``days`` days of files (the recommendation's window)."""
    from analyzer.history.capacity import read_workloads

    root = Path(directory)
    if not (root / "workloads").is_dir() and (root / "history" / "workloads").is_dir():
        root = root / "history"
    # The history store's one checked reader (names, columns, days, quantities: history/files.py).
    rows = read_workloads(root, last=days)
    if rows.empty:
        raise InputError(
            f"{directory}: no workload history (workloads/<day>.parquet); point at OUT/history of "
            "'analyzer report nightly' runs or of 'analyzer history backfill'"
        )
    return rows


def totals(recommendations: pd.DataFrame) -> dict[str, Any]:
    """Σ per-pod requests × peak replicas, current and after (kept where not recommended)."""
    out: dict[str, Any] = {
        "workloads": len(recommendations),
        "recommended": int((recommendations["skipped_reason"] == "").sum()),
        "skipped": int((recommendations["skipped_reason"] != "").sum()),
    }
    replicas = recommendations["replicas_max"].to_numpy(dtype=np.float64)
    for resource, unit, scale, label in (
        ("cpu", "millicores", 1000.0, "cores"),
        ("memory", "bytes", float(GIB), "gib"),
    ):
        current = recommendations[f"{resource}_request_{unit}"].to_numpy(dtype=np.float64)
        new = recommendations[f"{resource}_recommended_{unit}"].to_numpy(dtype=np.float64)
        after = np.where(np.isnan(new), current, new)
        out[f"{resource}_requested_{label}_before"] = float(np.nansum(current * replicas) / scale)
        out[f"{resource}_requested_{label}_after"] = float(np.nansum(after * replicas) / scale)
    return out


def summary_line(recommendations: pd.DataFrame, recipe: Recipe) -> str:
    t = totals(recommendations)
    return (
        f"recipe {recipe.name}: {t['recommended']} of {t['workloads']} workloads recommended "
        f"({t['skipped']} skipped, see skipped_reason); requests × peak replicas: cpu "
        f"{t['cpu_requested_cores_before']:,.1f} → {t['cpu_requested_cores_after']:,.1f} cores, "
        f"memory {t['memory_requested_gib_before']:,.1f} → "
        f"{t['memory_requested_gib_after']:,.1f} GiB"
    )


def rightsize_snapshot(
    snapshot: Snapshot, recipe_text: str, history: Path | None
) -> tuple[Snapshot, dict[str, Any], str]:
    """``snapshot`` with right-sized requests, the facts for the what-if result, and a note."""
    from analyzer.nightly.capacity_rollups import workload_days

    recipe = parse_recipe(recipe_text, option="--rightsize")
    if history is not None:
        rows, source = history_workloads(history), f"the history in {history}"
    else:
        rows, source = workload_days(snapshot), "the snapshot's own pod usage"
    recommendations = recommend(rows, recipe)
    facts = {
        "recipe": recipe.name,
        "description": recipe.describe(),
        "usage_from": source,
        **totals(recommendations),
    }
    note = (
        f"Requests right-sized before every replay, recipe {recipe.describe()}, from {source}: "
        f"{facts['recommended']} of {facts['workloads']} workloads changed ({facts['skipped']} "
        "kept their requests: too little history or gone); usage is what was observed. "
        f"Requests × peak replicas: cpu {facts['cpu_requested_cores_before']:,.1f} → "
        f"{facts['cpu_requested_cores_after']:,.1f} cores, memory "
        f"{facts['memory_requested_gib_before']:,.1f} → "
        f"{facts['memory_requested_gib_after']:,.1f} GiB."
    )
    return apply_recommendations(snapshot, recommendations), facts, note


@main.command("rightsize")
@click.argument("history", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--recipe", required=True, help=f"The recipe: {SYNTAX} (docs/rightsizing.md).")
@click.option("--days", type=Count(), default=DEFAULT_DAYS, show_default=True,
              help="History days to use, ending at the history's last day.")  # fmt: skip
@click.option("--min-days", type=Count(), default=1, show_default=True,
              help="Skip workloads with fewer days of usage history.")  # fmt: skip
@click.option("--min-samples", type=Count(0, 10**9), default=DEFAULT_MIN_SAMPLES, show_default=True,
              help="Skip workloads with fewer usage samples (krr's 100 points).")  # fmt: skip
@click.option("--format", "fmt", type=click.Choice(["csv", "yaml"]), default="csv",
              show_default=True,
              help="csv: every workload with evidence; yaml: strategic-merge patches for "
              "Deployments, StatefulSets and DaemonSets.")  # fmt: skip
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here (atomically) instead of standard output.")  # fmt: skip
def rightsize_cmd(history: Path, **opts: Any) -> None:
    """Recommend per-pod CPU and memory requests for every workload of the HISTORY folder.

    HISTORY is OUT/history of nightly runs or of a backfill. Per workload: current and
    recommended requests, the evidence (percentiles, days, samples), the change, the rules
    that applied (memory never below the observed max, OOM bump) and why a workload was
    skipped.
    """
    from analyzer.monthly.rightsize_patches import patches_yaml, recommendations_csv

    recipe = parse_recipe(opts["recipe"])
    recommendations = recommend(
        history_workloads(history, opts["days"]),
        recipe,
        days=opts["days"],
        min_days=opts["min_days"],
        min_samples=opts["min_samples"],
    )
    text = (
        patches_yaml(recommendations)
        if opts["fmt"] == "yaml"
        else recommendations_csv(recommendations)
    )
    if opts["out"] is None:
        click.echo(text, nl=False)
        return
    atomic_write_text(opts["out"], text)
    click.echo(summary_line(recommendations, recipe))
    click.echo(f"{opts['fmt']}: {opts['out']}")
