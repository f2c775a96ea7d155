"""``analyzer autoscale SCENARIO.yaml``: the node autoscaler's scale-down decision at one instant."""

from __future__ import annotations

import json
from pathlib import Path

import click

from analyzer.autoscaler.decide import decide
from analyzer.autoscaler.result import explain_text, karpenter_text, table_text
from analyzer.autoscaler.scenario import load
from analyzer.cli.base import main
from analyzer.core.text import escaped

_FILE = click.Path(dir_okay=False, path_type=Path)


@main.command()
@click.argument("scenario", type=_FILE)
@click.option(
    "--explain",
    is_flag=True,
    help="Print the per-node table and where each moved pod goes, instead of JSON.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "table"]),
    default="json",
    show_default=True,
    help="JSON (the documented shape) or a table per node.",
)
def autoscale(scenario: Path, explain: bool, fmt: str) -> None:
    """Which nodes cluster-autoscaler (or Karpenter) would remove now, and why not the others.

    Prints JSON: nodes[] {name, utilization, utilizationByResource, candidate, removable,
    unremovableReason, blockingPod, destinations} and removed (CA's deletion order); for
    Karpenter, the consolidation decision. See docs/autoscaling.md.
    """
    result = decide(load(scenario))
    if fmt == "json" and not explain:
        click.echo(json.dumps(result, indent=1))
        return
    if result["autoscaler"] == "karpenter":
        text = karpenter_text(result)
    else:
        text = explain_text(result) if explain else table_text(result)
    click.echo("\n".join(escaped(line) for line in text.split("\n")))
