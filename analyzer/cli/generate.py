"""``analyzer generate``: write a synthetic cluster's snapshot (and optionally its OpenMetrics)."""

from __future__ import annotations

from pathlib import Path

import click

from analyzer.cli.base import main
from analyzer.core.durations import parse_duration, parse_time
from analyzer.core.errors import InputError
from analyzer.core.snapshot import check_snapshot_out, write_snapshot
from analyzer.sources import (
    DEFAULT_START,
    OpenMetricsOptions,
    SyntheticSpec,
    generate,
    write_openmetrics,
)
from analyzer.sources.openmetrics import CONVENTIONS


@main.command(name="generate")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Snapshot directory to write (replaced atomically).",
)
@click.option(
    "--openmetrics",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write OpenMetrics text for 'promtool tsdb create-blocks-from openmetrics'.",
)
@click.option("--nodes", type=int, default=200, show_default=True, help="Number of nodes.")
@click.option("--days", type=float, default=7.0, show_default=True, help="Days of history.")
@click.option("--step", default="1m", show_default=True, help="Sample step (e.g. 30s, 1m, 5m).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option(
    "--churn",
    type=float,
    default=0.5,
    show_default=True,
    help="Rollouts per Deployment per day; also scales Job arrivals.",
)
@click.option(
    "--pods-per-node",
    type=float,
    default=8.0,
    show_default=True,
    help="Mean long-running app pods per node (DaemonSet pods come on top).",
)
@click.option(
    "--start",
    default=DEFAULT_START.isoformat().replace("+00:00", "Z"),
    show_default=True,
    help="Range start (RFC 3339, UTC).",
)
@click.option(
    "--instance-convention",
    type=click.Choice(CONVENTIONS),
    default="node-name",
    show_default=True,
    help="node-exporter instance label: node name (kube-prometheus) or hostIP:9100 "
    "(kube-prometheus-stack).",
)
@click.option(
    "--node-exporter-cpus",
    type=int,
    default=None,
    help="Emit only this many cpu label values per node (size knob; busy time is preserved).",
)
@click.option(
    "--exclude-metric",
    "exclude_metrics",
    multiple=True,
    help="Leave this metric family out of the OpenMetrics (repeatable; a size knob).",
)
@click.option(
    "--constant-step",
    default=None,
    help="Sample constant-valued series (KSM info, requests, ...) only this often, keeping "
    "each run's first and last sample (multiple of --step, at most 5m; a size knob).",
)
@click.option(
    "--node-labels/--no-node-labels",
    default=False,
    show_default=True,
    help="Emit kube_node_labels (KSM >= 2.10 needs --metric-labels-allowlist for it).",
)
@click.option(
    "--node-annotations/--no-node-annotations",
    default=False,
    show_default=True,
    help="Emit kube_node_annotations (opt-in in KSM via --metric-annotations-allowlist).",
)
@click.option(
    "--ksm-honor-labels/--no-ksm-honor-labels",
    default=True,
    show_default=True,
    help="Without honor_labels KSM's namespace/pod/container/node become exported_*.",
)
@click.option(
    "--ha-replicas",
    type=int,
    default=1,
    show_default=True,
    help="Write every series this many times with a prometheus_replica label (HA pair).",
)
def generate_cmd(
    out: Path,
    openmetrics: Path | None,
    nodes: int,
    days: float,
    step: str,
    seed: int,
    churn: float,
    pods_per_node: float,
    start: str,
    instance_convention: str,
    node_exporter_cpus: int | None,
    exclude_metrics: tuple[str, ...],
    constant_step: str | None,
    node_labels: bool,
    node_annotations: bool,
    ksm_honor_labels: bool,
    ha_replicas: int,
) -> None:
    """Generate a synthetic cluster: the ground-truth snapshot, optionally its OpenMetrics."""
    check_snapshot_out(out)  # before generating: never replace a folder that is not a snapshot
    step_seconds = parse_duration(step, field="--step").total_seconds()
    if step_seconds < 1 or step_seconds != int(step_seconds):
        raise InputError(f"--step: {step!r} must be a whole number of seconds, at least 1s")
    spec = SyntheticSpec(
        seed=seed,
        nodes=nodes,
        days=days,
        step=int(step_seconds),
        start=parse_time(start, field="--start"),
        churn=churn,
        pods_per_node=pods_per_node,
    )
    options = OpenMetricsOptions(
        instance_convention=instance_convention,
        node_exporter_cpus=node_exporter_cpus,
        node_labels=node_labels,
        node_annotations=node_annotations,
        exclude_metrics=frozenset(exclude_metrics),
        constant_step=None
        if constant_step is None
        else int(parse_duration(constant_step, field="--constant-step").total_seconds()),
        ksm_honor_labels=ksm_honor_labels,
        ha_replicas=ha_replicas,
    )
    options.stride(spec.step)  # bad options fail before anything is written
    cluster = generate(spec)
    write_snapshot(cluster.snapshot, out)
    snap = cluster.snapshot
    click.echo(
        f"snapshot {out}: {len(snap.nodes)} nodes, {len(snap.pods)} pods, "
        f"{len(snap.node_usage)} node samples, {len(snap.pod_usage)} pod samples"
    )
    if openmetrics is not None:
        stats = write_openmetrics(cluster, openmetrics, options)
        click.echo(
            f"openmetrics {openmetrics}: {stats.series} series, {stats.samples} samples, "
            f"{stats.bytes} bytes"
        )
