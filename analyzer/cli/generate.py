"""``analyzer generate``: write a synthetic cluster's snapshot (and optionally its OpenMetrics)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import click

from analyzer.cli.base import main
from analyzer.cli.params import Amount
from analyzer.core.atomic import atomic_write_text
from analyzer.core.durations import parse_duration, parse_positive_duration, parse_time
from analyzer.core.errors import InputError
from analyzer.core.quantity import parse_quantity
from analyzer.core.snapshot import check_snapshot_out, write_snapshot
from analyzer.scheduling.cluster_version import release_key
from analyzer.sources import (
    DEFAULT_START,
    OpenMetricsOptions,
    SyntheticSpec,
    generate,
    write_openmetrics,
)
from analyzer.sources.catalog import KUBELET_VERSION
from analyzer.sources.kube_objects import kube_objects
from analyzer.sources.openmetrics import CONVENTIONS, OpenMetricsStats, estimate_openmetrics

DEFAULT_MAX_BYTES = "2G"
_SHRINK = "--nodes, --days, a longer --step, --node-exporter-cpus 1 or --constant-step 5m"


def human_bytes(count: int) -> str:
    """``16558268230`` → ``16.6 GB`` (decimal units, as ``--max-bytes 2G`` reads them)."""
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def check_size(estimate: OpenMetricsStats, limit: int, limit_text: str) -> None:
    """Refuse (exit 2, nothing written) when the estimated OpenMetrics file is above the limit."""
    if estimate.bytes > limit:
        raise InputError(
            f"--openmetrics: the file would be about {human_bytes(estimate.bytes)} "
            f"({estimate.bytes} bytes), above --max-bytes {limit_text} ({limit} bytes); "
            f"raise --max-bytes or shrink it with {_SHRINK}; nothing was written"
        )


def _size_limit(text: str) -> int:
    """``--max-bytes``: a positive byte count written as a Kubernetes quantity (``2G``)."""
    try:
        quantity = parse_quantity(text, field="--max-bytes")
    except InputError:
        quantity = Fraction(0)
    if quantity <= 0 or quantity.denominator != 1:  # "500m" would be half a byte
        raise InputError(
            f"--max-bytes: {text!r} is not a whole positive number of bytes "
            "(e.g. 500M, 2G, 1Gi or plain bytes; M is 10^6, Mi 2^20, lower-case m is milli)"
        )
    return int(quantity)


def _constant_step(text: str, step_text: str, step_seconds: int) -> int:
    """``--constant-step`` in seconds; the message names both durations as typed."""
    seconds = int(parse_positive_duration(text, field="--constant-step").total_seconds())
    if seconds % step_seconds or not step_seconds <= seconds <= 300:
        raise InputError(
            f"--constant-step: {text!r} must be a multiple of --step {step_text!r} and at most 5m "
            "(Prometheus' lookback)"
        )
    return seconds


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
    help="Also write OpenMetrics text for 'promtool tsdb create-blocks-from openmetrics'. "
    "Its estimated size is printed first; see --max-bytes.",
)
@click.option(
    "--max-bytes",
    default=DEFAULT_MAX_BYTES,
    show_default=True,
    help="Refuse to write an OpenMetrics file estimated above this many bytes (a quantity: "
    "500M, 2G, 1Gi, or plain bytes). Nothing is written when refused.",
)
@click.option("--nodes", type=int, default=200, show_default=True, help="Number of nodes.")
@click.option(
    "--days", type=Amount(), default=7.0, show_default=True, help="Days of history (e.g. 0.5)."
)
@click.option(
    "--step", default="1m", show_default=True, help="Sample step, a duration (30s, 1m, 5m)."
)
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
    help="Sample constant-valued series (KSM info, requests, ...) only this often, a duration "
    "(multiple of --step, at most 5m), keeping each run's first and last sample; a size knob.",
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
@click.option(
    "--kube-objects",
    "kube_objects_out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the cluster's Kubernetes objects (Nodes, Deployments, ReplicaSets, ..., "
    "PDBs, PriorityClasses) as one List, the input of 'collect --kube-objects'.",
)
@click.option(
    "--zones",
    type=int,
    default=0,
    show_default=True,
    help="Label nodes with topology.kubernetes.io/zone, round robin over this many zones.",
)
@click.option(
    "--pod-constraints/--no-pod-constraints",
    default=False,
    show_default=True,
    help="Give some workloads topologySpreadConstraints and pod (anti-)affinity.",
)
@click.option(
    "--kubelet-version",
    default=KUBELET_VERSION,
    show_default=True,
    help="Every node's kubelet (kube_node_info{kubelet_version}): the version replays read.",
)
@click.option(
    "--node-events/--no-node-events",
    default=False,
    show_default=True,
    help="Cordon two nodes, taint a third of the open nodes for minutes as cluster-autoscaler "
    "does and let one node join not ready (kube_node_spec_taint, kube_node_spec_unschedulable, "
    "kube_node_status_condition in time; the snapshot's node_state table).",
)
@click.option(
    "--autoscaled/--no-autoscaled",
    default=False,
    show_default=True,
    help="One pool of general nodes that join and leave by cluster-autoscaler's rules "
    "(--nodes at the start, at most twice as many; no DaemonSets; pods placed as kube-default "
    "would); docs/autoscaling.md. Not with --openmetrics.",
)
def generate_cmd(
    out: Path,
    openmetrics: Path | None,
    max_bytes: str,
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
    kube_objects_out: Path | None = None,
    zones: int = 0,
    pod_constraints: bool = False,
    kubelet_version: str = KUBELET_VERSION,
    node_events: bool = False,
    autoscaled: bool = False,
) -> None:
    """Generate a synthetic cluster: the ground-truth snapshot, optionally its OpenMetrics."""
    check_snapshot_out(out)  # before generating: never replace a folder that is not a snapshot
    if release_key(kubelet_version) is None:
        raise InputError(
            f"--kubelet-version: {kubelet_version[:40]!r} is not a Kubernetes release "
            "(write e.g. v1.33.4)"
        )
    if autoscaled and openmetrics is not None:
        raise InputError(
            "--autoscaled: its nodes exist for part of the range, which --openmetrics does not "
            "render yet; drop --openmetrics (the snapshot alone is written)"
        )
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
        zones=zones,
        pod_constraints=pod_constraints,
        kubelet_version=kubelet_version,
        node_events=node_events,
        autoscaled=autoscaled,
    )
    options = OpenMetricsOptions(
        instance_convention=instance_convention,
        node_exporter_cpus=node_exporter_cpus,
        node_labels=node_labels,
        node_annotations=node_annotations,
        exclude_metrics=frozenset(exclude_metrics),
        constant_step=None
        if constant_step is None
        else _constant_step(constant_step, step, int(step_seconds)),
        ksm_honor_labels=ksm_honor_labels,
        ha_replicas=ha_replicas,
    )
    options.stride(spec.step)  # bad options fail before anything is written
    limit = _size_limit(max_bytes)
    cluster = generate(spec)
    if openmetrics is not None:
        estimate = estimate_openmetrics(cluster, options)
        click.echo(
            f"openmetrics {openmetrics}: estimated {human_bytes(estimate.bytes)} "
            f"({estimate.series} series, {estimate.samples} samples)"
        )
        check_size(estimate, limit, max_bytes)
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
            f"{stats.bytes} bytes ({human_bytes(stats.bytes)})"
        )
    if kube_objects_out is not None:
        listing = kube_objects(cluster)
        atomic_write_text(kube_objects_out, json.dumps(listing, indent=1, sort_keys=True) + "\n")
        click.echo(f"kube objects {kube_objects_out}: {len(listing['items'])} objects")
