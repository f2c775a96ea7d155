"""``--cluster-label NAME`` with ``--cluster X`` or ``--all-clusters``: one cluster of many behind
one Prometheus, or one run per cluster, each into ``OUT/cluster=X/`` (docs/fleet.md).

``collect``, ``report nightly`` and ``history backfill`` take these options. The label's values
are read from kube-state-metrics' ``kube_node_info`` over the run's range before anything is
written: an unknown value, or a label no series carries, is one line and exit 2. With
``--all-clusters`` the command runs once per value, in order; the exit code is the largest of the
runs' (a partial cluster does not hide a failing one).

A Prometheus per cluster: the config file's ``clusters:`` list, each entry a ``name`` and that
cluster's connection settings (``prometheus``, ``token_file``, ``token_env``,
``basic_auth_user``, ``basic_auth_password_env``, ``ca_bundle``, ``insecure_skip_verify``,
``headers``, ``timeout``, ``parallelism``, ``max_points``). ``--all-clusters`` then runs every entry with its own
connection, ``--cluster NAME`` the one named. Secrets stay names of files or variables (checked
as every connection's are); no value of an entry is ever printed, only its key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from analyzer.cli.publish_options import CLUSTER_KEY as METRICS_CLUSTER
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


# The connection settings a ``clusters:`` entry may set (the option names, underscored).
ENTRY_KEYS = ("prometheus", "token_file", "token_env", "basic_auth_user", "basic_auth_password_env",
              "ca_bundle", "insecure_skip_verify", "headers", "timeout", "parallelism", "max_points")  # fmt: skip
_PATHS = ("token_file", "ca_bundle")


def config_clusters() -> dict[str, dict[str, Any]]:
    """The config file's ``clusters:`` entries by name, as option overrides (``{}`` without)."""
    ctx = click.get_current_context(silent=True)
    config = ((ctx.find_root().obj or {}) if ctx else {}).get("config") or {}
    raw = config.get("clusters")
    if raw is None:
        return {}
    if not isinstance(raw, list) or not raw:
        raise InputError("config clusters: must be a non-empty list of {name, prometheus, …}")
    entries: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(raw):
        where = f"config clusters[{i}]"
        if not isinstance(entry, dict):
            raise InputError(f"{where}: must be a mapping with name and prometheus")
        name = entry.get("name")
        if (
            not isinstance(name, str)
            or not name.strip()
            or not name.isprintable()
            or len(name) > 200
        ):
            raise InputError(
                f"{where}.name: give the cluster's name (1 to 200 printable characters)"
            )
        if name in entries:
            raise InputError(
                f"{where}.name: {one_line(name, 80)!r} is named twice; names must differ"
            )
        overrides: dict[str, Any] = {}
        for key, value in entry.items():
            norm = str(key).replace("-", "_")
            if norm == "name":
                continue
            if norm not in ENTRY_KEYS:
                raise InputError(
                    f"{where}: unknown key {one_line(key, 40)!r} (known: name, {', '.join(ENTRY_KEYS)})"
                )
            if norm == "headers":
                if not isinstance(value, list) or not all(isinstance(h, str) for h in value):
                    raise InputError(f"{where}.headers: a list of 'Name=value' texts")
                value = tuple(value)
            elif norm in _PATHS:
                value = Path(str(value))
            overrides[norm] = value
        if not overrides.get("prometheus"):
            raise InputError(f"{where}: no prometheus URL; add prometheus: URL to the entry")
        entries[name] = overrides
    return entries


def cluster_values(
    options: dict[str, Any],
    settings_from: Callable[[dict[str, Any]], PromSettings],
    start: datetime,
    end: datetime,
) -> list[tuple[str, dict[str, Any]]] | None:
    """The clusters to run (None: no ``--cluster-label``, one plain run). Refuses, before any
    write, a missing ``--cluster``, an unknown value and a label no ``kube_node_info`` carries."""
    label = options.get("cluster_label")
    entries = config_clusters()
    if label is None and entries:
        return _from_config(options, entries)
    if label is None:
        if options.get("all_clusters"):
            raise InputError(
                "--all-clusters: give --cluster-label NAME, the label telling clusters apart, or "
                "a clusters: list in the config file"
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
    return [(v, {}) for v in (values if wanted is None else [wanted])]


def _from_config(
    options: dict[str, Any], entries: dict[str, dict[str, Any]]
) -> list[tuple[str, dict[str, Any]]] | None:
    """The config file's clusters to run: every entry with ``--all-clusters``, the one named by
    ``--cluster`` (when it names one; otherwise a plain run that names its history)."""
    wanted = options.get("cluster")
    if options.get("all_clusters"):
        if wanted:
            raise InputError("--all-clusters and --cluster: give one (all entries, or one)")
        return list(entries.items())
    if wanted is None:
        return None  # a plain run with the command's own connection
    if wanted not in entries:
        shown = ", ".join(one_line(n, 40) for n in list(entries)[:10])
        raise InputError(
            f"--cluster {one_line(wanted, 80)!r}: no such entry in the config file's clusters: "
            f"(known: {shown}); give one of them"
        )
    return [(wanted, entries[wanted])]


def for_each_cluster(
    options: dict[str, Any],
    values: list[tuple[str, dict[str, Any]]],
    out_key: str,
    run: Callable[[dict[str, Any]], int],
) -> int:
    """Run ``run`` once per cluster with ``cluster`` set and ``options[out_key]`` moved to
    ``OUT/cluster=VALUE``; returns the largest exit code. A run that ends in an error is
    reported on one line and the next cluster still runs."""
    worst = 0
    for value, overrides in values:
        sub = {**options, **overrides, "cluster": value,
               out_key: Path(options[out_key]) / cluster_dir(value)}  # fmt: skip
        if len(values) > 1:
            click.echo(f"cluster {one_line(value, 80)}: {sub[out_key]}")
        # record_metrics labels this run's metrics with its cluster (cli/publish_options.py)
        click.get_current_context().meta[METRICS_CLUSTER] = value
        try:
            code = run(sub)
        except AnalyzerError as exc:
            if len(values) == 1:
                raise
            click.echo(f"analyzer: cluster {one_line(value, 80)}: {exc}", err=True)
            code = exc.exit_code
        worst = max(worst, code)
    return worst
