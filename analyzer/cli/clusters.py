"""``--cluster-label NAME`` with ``--cluster X`` or ``--all-clusters``: one cluster of many behind
one Prometheus, or one run per cluster, each into ``OUT/cluster=X/`` (docs/fleet.md).

``collect``, ``report nightly`` and ``history backfill`` take these options. The label's values
are read from kube-state-metrics' ``kube_node_info`` over the run's range before anything is
written: an unknown value, or a label no series carries, is one line and exit 2. With
``--all-clusters`` the command runs once per value, in order; the exit code is the largest of the
runs' (a partial cluster does not hide a failing one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from analyzer.core.errors import AnalyzerError, InputError
from analyzer.core.text import one_line
from analyzer.history.fleet_source import cluster_dir
from analyzer.prom.client import PromClient
from analyzer.prom.selectors import check_label
from analyzer.prom.settings import PromSettings

INFO = "kube_node_info"
F = TypeVar("F", bound=Callable[..., Any])


def cluster_label_options(func: F) -> F:
    """``--cluster-label NAME`` and ``--all-clusters`` (``--cluster`` is the command's own)."""
    func = click.option(
        "--all-clusters", is_flag=True,
        help="With --cluster-label: one run per value of the label, each into OUT/cluster=VALUE/.",
    )(func)  # fmt: skip
    return click.option(
        "--cluster-label", metavar="NAME", default=None,
        help="The label telling clusters apart on one Prometheus/Thanos/Mimir (e.g. cluster): "
        "with --cluster X every query selects NAME=\"X\" and the output goes to "
        "OUT/cluster=X/; or --all-clusters.",
    )(func)  # fmt: skip


def cluster_values(
    options: dict[str, Any],
    settings_from: Callable[[dict[str, Any]], PromSettings],
    start: datetime,
    end: datetime,
) -> list[str] | None:
    """The clusters to run (None: no ``--cluster-label``, one plain run). Refuses, before any
    write, a missing ``--cluster``, an unknown value and a label no ``kube_node_info`` carries."""
    label = options.get("cluster_label")
    if label is None:
        if options.get("all_clusters"):
            raise InputError(
                "--all-clusters: give --cluster-label NAME, the label telling clusters apart"
            )
        return None
    check_label(label)
    if options.get("all_clusters") and options.get("cluster"):
        raise InputError("--all-clusters and --cluster: give one (all values, or one value)")
    if not options.get("all_clusters") and not options.get("cluster"):
        raise InputError(
            f"--cluster-label {label}: give --cluster VALUE (one cluster) or --all-clusters"
        )
    settings = replace(settings_from({**options, "cluster_label": None}), select=None)
    with PromClient(settings) as client:
        values = client.label_values(label, [INFO], start.timestamp(), end.timestamp())
    if not values:
        raise InputError(
            f"--cluster-label {label}: no {INFO} series carries that label between {start:%Y-%m-%d %H:%M} "
            f"and {end:%Y-%m-%d %H:%M} UTC; `analyzer check` names the likely one (e.g. cluster)"
        )
    wanted = options.get("cluster")
    if wanted is not None and wanted not in values:
        shown = ", ".join(one_line(v, 40) for v in values[:10])
        raise InputError(
            f"--cluster {one_line(wanted, 80)!r}: no such value of label {label} (known: {shown}"
            f"{', …' if len(values) > 10 else ''}); give one of them"
        )
    return values if wanted is None else [wanted]


def for_each_cluster(
    options: dict[str, Any], values: list[str], out_key: str, run: Callable[[dict[str, Any]], int]
) -> int:
    """Run ``run`` once per cluster with ``cluster`` set and ``options[out_key]`` moved to
    ``OUT/cluster=VALUE``; returns the largest exit code. A run that ends in an error is
    reported on one line and the next cluster still runs."""
    worst = 0
    for value in values:
        sub = {**options, "cluster": value, out_key: Path(options[out_key]) / cluster_dir(value)}
        if len(values) > 1:
            click.echo(f"cluster {one_line(value, 80)}: {sub[out_key]}")
        try:
            code = run(sub)
        except AnalyzerError as exc:
            if len(values) == 1:
                raise
            click.echo(f"analyzer: cluster {one_line(value, 80)}: {exc}", err=True)
            code = exc.exit_code
        worst = max(worst, code)
    return worst
