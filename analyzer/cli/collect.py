"""``analyzer collect``, ``analyzer check`` and ``analyzer queries``: reading Prometheus.

Exit codes: 0 ok; 1 server unreachable, refused (401/403), not a Prometheus API, wrong path or a
rejected query; 2 bad options or config; 3 partial data (snapshot written, some optional data
missing) or no kube-state-metrics data in the range (nothing written).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import click

from analyzer.cli.base import is_terminal, main
from analyzer.cli.clusters import (
    cluster_label_options,
    cluster_values,
    config_clusters,
    for_each_cluster,
)
from analyzer.collect.check import format_table, run_check
from analyzer.collect.kube_objects import read_kube_objects
from analyzer.collect.run import DEFAULT_MAX_REQUESTS as DEFAULT_MAX_REQUESTS  # aggregate uses it
from analyzer.collect.run import CollectRequest
from analyzer.collect.stream import collect_to
from analyzer.core.durations import format_duration, parse_duration, parse_time
from analyzer.core.errors import EXIT_PARTIAL, InputError
from analyzer.core.memory import limit_heap_growth
from analyzer.core.paths import queries_dir as profile_folder
from analyzer.core.snapshot import check_snapshot_out
from analyzer.prom.profile import load_profile
from analyzer.prom.selectors import check_label
from analyzer.prom.settings import (
    DEFAULT_DEADLINE_SECONDS,
    DEFAULT_MAX_POINTS,
    DEFAULT_PARALLELISM,
    DEFAULT_TIMEOUT_SECONDS,
    PromSettings,
    check_limits,
    parse_headers,
)
from analyzer.prom.thanos import AUTO, RESOLUTIONS, ThanosParams
from analyzer.prom.time_grid import make_grid

F = TypeVar("F", bound=Callable[..., Any])
_DEFAULT_DEADLINE = format_duration(timedelta(seconds=DEFAULT_DEADLINE_SECONDS))


def connection_options(func: F) -> F:
    """The options every Prometheus-reading command shares (secrets only from files or env)."""
    options = [
        click.option(
            "--prometheus",
            envvar="ANALYZER_PROMETHEUS_URL",
            help="API root incl. any path prefix (http://host:9090, http://mimir/prometheus). Env: ANALYZER_PROMETHEUS_URL.",
        ),
        click.option(
            "--token-file",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Bearer token from this file.",
        ),
        click.option(
            "--token-env", metavar="NAME", help="Bearer token from this environment variable."
        ),
        click.option(
            "--basic-auth-user", help="Basic-auth user (password from --basic-auth-password-env)."
        ),
        click.option(
            "--basic-auth-password-env",
            metavar="NAME",
            help="Environment variable holding the basic-auth password.",
        ),
        click.option(
            "--ca-bundle",
            type=click.Path(dir_okay=False, path_type=Path),
            help="CA bundle to verify TLS.",
        ),
        click.option(
            "--insecure-skip-verify", is_flag=True, help="Do not verify TLS certificates."
        ),
        click.option(
            "--header",
            "headers",
            multiple=True,
            metavar="K=V",
            help="Extra HTTP header, repeatable (X-Scope-OrgID=tenant).",
        ),
        click.option(
            "--timeout",
            type=float,
            default=DEFAULT_TIMEOUT_SECONDS,
            show_default=True,
            help="Per-request timeout, seconds.",
        ),
        click.option(
            "--max-in-flight",
            "--parallelism",
            "parallelism",
            type=int,
            default=DEFAULT_PARALLELISM,
            show_default=True,
            help="Query budget: requests in flight at most, 1-64 (docs/collect.md).",
        ),
        click.option(
            "--max-points-per-request",
            "--chunk-points",
            "max_points",
            type=int,
            default=DEFAULT_MAX_POINTS,
            show_default=True,
            help="Query budget: points of one series per response at most, 2-11000; range "
            "requests span N - 1 steps, raw-sample requests N - 1 scrape intervals.",
        ),
        click.option(
            "--thanos",
            is_flag=True,
            help="The server is a Thanos Querier: send partial_response, dedup and "
            "max_source_resolution with every query (docs/collect.md).",
        ),
        click.option(
            "--thanos-partial-response",
            is_flag=True,
            help="With --thanos: accept answers missing a store (recorded as warnings); "
            "default: refuse them.",
        ),
        click.option(
            "--thanos-dedup/--thanos-no-dedup",
            default=True,
            show_default=True,
            help="With --thanos: merge the replicas of an HA Prometheus pair.",
        ),
        click.option(
            "--thanos-max-source-resolution",
            type=click.Choice([AUTO, *RESOLUTIONS]),
            default=AUTO,
            show_default=True,
            help="With --thanos: coarsest downsampled level read; auto = raw unless the step "
            "holds five points of a level (25m step: 5m, 5h step: 1h).",
        ),
        click.option(
            "--deadline",
            default=_DEFAULT_DEADLINE,
            show_default=True,
            help="Time limit for all requests of the run (e.g. 30m); past it the run stops, exit 1.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def settings_from(options: dict[str, Any]) -> PromSettings:
    """Build ``PromSettings`` from the shared options (limits checked: exit 2 before any request)."""
    settings = PromSettings(
        url=options.get("prometheus") or "",
        token_file=options.get("token_file"),
        token_env=options.get("token_env"),
        basic_auth_user=options.get("basic_auth_user"),
        basic_auth_password_env=options.get("basic_auth_password_env"),
        ca_bundle=options.get("ca_bundle"),
        insecure_skip_verify=bool(options.get("insecure_skip_verify")),
        headers=parse_headers(list(options.get("headers") or ())),
        # ``or DEFAULT`` would turn an explicit 0 into the default: 0 is an error, not "unset".
        timeout=float(_given(options, "timeout", DEFAULT_TIMEOUT_SECONDS)),
        parallelism=int(_given(options, "parallelism", DEFAULT_PARALLELISM)),
        max_points=int(_given(options, "max_points", DEFAULT_MAX_POINTS)),
        deadline=duration(str(_given(options, "deadline", _DEFAULT_DEADLINE)), "--deadline"),
        thanos=_thanos(options),
        select=_select(options),
    )
    check_limits(settings)
    return settings


def _select(options: dict[str, Any]) -> tuple[str, str] | None:
    """``--cluster-label NAME`` with ``--cluster X``: every selector gets NAME="X"."""
    label = options.get("cluster_label")
    if label is None or options.get("cluster") is None:
        return None
    return (check_label(label), str(options["cluster"]))


def _thanos(options: dict[str, Any]) -> ThanosParams | None:
    """The Thanos parameters, or None without ``--thanos`` (whose own options then refuse)."""
    if options.get("thanos"):
        return ThanosParams(
            partial_response=bool(options.get("thanos_partial_response")),
            dedup=bool(_given(options, "thanos_dedup", True)),
            max_source_resolution=str(_given(options, "thanos_max_source_resolution", AUTO)),
        )
    alone = (
        ("thanos_partial_response", "--thanos-partial-response", False),
        ("thanos_dedup", "--thanos-no-dedup", True),
        ("thanos_max_source_resolution", "--thanos-max-source-resolution", AUTO),
    )
    for name, option, default in alone:
        if _given(options, name, default) != default:
            raise InputError(
                f"{option}: only read with --thanos; add --thanos (the server is a Thanos "
                "Querier) or drop it"
            )
    return None


def duration(text: str, field: str) -> float:
    """Seconds of a duration flag; one that overflows a timedelta is an input error, not a crash."""
    try:
        return parse_duration(text, field=field).total_seconds()
    except OverflowError:
        raise InputError(f"{field}: {text!r} is too long; give e.g. 30m, 12h or 30d") from None


def _given(options: dict[str, Any], name: str, default: object) -> Any:
    value = options.get(name)
    return default if value is None else value


def resolve_range(
    start: str | None, end: str | None, since: str | None
) -> tuple[datetime, datetime]:
    """``--start/--end`` or ``--since`` (default 1d back from now) → aware UTC datetimes."""
    if since and start:
        raise InputError("--since and --start: give one of them")
    end_time = parse_time(end, field="--end") if end else datetime.now(UTC)
    if start:
        start_time = parse_time(start, field="--start")
    else:
        try:
            start_time = end_time - timedelta(seconds=duration(since or "1d", "--since"))
        except OverflowError:
            raise InputError(
                f"--since: {since!r} reaches before the year 1; give a shorter range (e.g. 30d)"
            ) from None
    if end_time <= start_time:
        raise InputError(
            f"{range_option(start, since)}: the range is empty (end must be after start)"
        )
    return start_time, end_time


def range_option(start: str | None, since: str | None) -> str:
    """The options the user gave the range with, for messages about it."""
    return "--start/--end" if start or not since else "--since"


def scrape_interval_option(func: F) -> F:
    """``--scrape-interval``: every source's scrape interval, instead of measuring it."""
    return click.option(
        "--scrape-interval",
        help="How often node-exporter and cAdvisor are scraped (e.g. 5m). Default: measured "
        "from the samples. Rate windows are max(2 x --step, 2 x this).",
    )(func)


def scrape_interval_seconds(text: str | None) -> int | None:
    """``--scrape-interval`` in whole seconds (``None``: measure it)."""
    if text is None:
        return None
    seconds = parse_duration(text, field="--scrape-interval").total_seconds()
    if seconds < 1 or seconds != int(seconds):
        raise InputError(
            f"--scrape-interval: {text!r} must be a whole number of seconds >= 1s (e.g. 30s, 5m)"
        )
    return int(seconds)


def print_step_note(note: str | None) -> None:
    """The one stderr line saying ``--step`` is finer than the scrape interval."""
    if note:
        click.echo(f"analyzer: warning: {note}", err=True)


def _step_seconds(step: str) -> int:
    seconds = parse_duration(step, field="--step").total_seconds()
    if seconds < 1 or seconds != int(seconds):
        raise InputError(f"--step: {step!r} must be a whole number of seconds >= 1s")
    return int(seconds)


def _priority_classes(items: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    out = []
    for item in items:
        name, _, value = item.partition("=")
        try:
            out.append((name.strip(), int(value)))
        except ValueError:
            raise InputError(
                f"--priority-class: {item!r} is not NAME=INTEGER (e.g. high=10000)"
            ) from None
    return tuple(out)


def _progress_bar(done: int, total: int) -> None:
    """A one-line bar on stderr (terminals only; cron logs stay clean)."""
    width = 30
    filled = width * done // max(total, 1)
    bar = "#" * filled + "-" * (width - filled)
    click.echo(f"\rcollect [{bar}] {done}/{total} requests", err=True, nl=False)


@main.command("collect")
@connection_options
@click.option("--start", help="Range start (RFC 3339 or unix seconds).")
@click.option("--end", help="Range end (default now).")
@click.option("--since", help="Range length back from --end, e.g. 7d (default 1d).")
@click.option("--step", default="1m", show_default=True, help="Resolution of the usage tables.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Snapshot directory to write.",
)
@click.option(
    "--queries-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Own query profile folder.",
)
@click.option(
    "--max-requests",
    type=int,
    default=DEFAULT_MAX_REQUESTS,
    show_default=True,
    help="Refuse a range that needs more requests than this (a mistyped --since 9999d).",
)
@click.option(
    "--extended-resource",
    "extended_resources",
    multiple=True,
    metavar="NAME",
    help="Extended resource name to recognise (e.g. example.com/fpga), repeatable.",
)
@click.option(
    "--priority-class",
    "priority_classes",
    multiple=True,
    metavar="NAME=VALUE",
    help="PriorityClass value (KSM does not export them), repeatable.",
)
@click.option(
    "--kube-objects",
    type=click.Path(path_type=Path),
    help="'kubectl get deploy,sts,ds,rs,job,cronjob,svc,ns,nodes,pdb,priorityclass -A -o json' "
    "output (a file, or a folder of .json files): adds each pod's affinity, spread constraints "
    "and priority from its owner's template, and the nodes' labels and taints; keeps the "
    "objects default topology spreading and preemption read.",
)
@scrape_interval_option
@click.option("--cluster", default=None,
              help="With --cluster-label: the value of the cluster to read.")  # fmt: skip
@cluster_label_options
def collect_cmd(**options: Any) -> None:
    """Read a time range from Prometheus into a snapshot directory (written atomically); with
    --cluster-label, OUT/cluster=VALUE/ per cluster."""
    plain = (
        options["cluster_label"] is None
        and not options["all_clusters"]
        and not (options["cluster"] and config_clusters())
    )
    if plain:  # a cluster's folder is checked by its own run below
        check_snapshot_out(options["out"])  # before the fetch: never lose a fetch, nor a folder
    # read and checked before the fetch too: a bad file costs nothing (one read for every cluster)
    objects = read_kube_objects(options["kube_objects"]) if options["kube_objects"] else None
    start, end = resolve_range(options["start"], options["end"], options["since"])
    values = cluster_values(options, settings_from, start, end)
    if values is None:
        code = _collect_one(options, start, end, objects)
    else:
        code = for_each_cluster(
            options, values, "out", lambda o: _collect_one(o, start, end, objects)
        )
    if code:
        raise SystemExit(code)


def _collect_one(options: dict[str, Any], start: datetime, end: datetime, objects: Any) -> int:
    check_snapshot_out(options["out"])  # before the fetch: never lose a whole fetch, nor a folder
    request = CollectRequest(
        settings=settings_from(options),
        start=start,
        end=end,
        step_seconds=_step_seconds(options["step"]),
        queries_dir=options["queries_dir"],
        extra_resources=tuple(options["extended_resources"]),
        priority_classes=_priority_classes(options["priority_classes"]),
        max_requests=options["max_requests"],
        scrape_interval_seconds=scrape_interval_seconds(options["scrape_interval"]),
        kube_objects=objects,
        range_option=range_option(options["start"], options["since"]),
    )
    limit_heap_growth()  # resident memory close to live data over a long fetch (glibc)
    out = Path(options["out"])
    # one UTC day of usage in memory at a time, written as it comes (analyzer.collect.stream)
    streamed = collect_to(request, out, _progress_bar if is_terminal() else None)
    if is_terminal():
        click.echo("", err=True)
    result = streamed.result
    print_step_note(result.step_note)
    snapshot = result.snapshot
    click.echo(
        f"wrote {out}: {len(snapshot.nodes)} nodes, {len(snapshot.pods)} pods, "
        f"{streamed.node_usage_rows} node-usage and {streamed.pod_usage_rows} pod-usage rows, "
        f"{snapshot.meta.start} .. {snapshot.meta.end} step {snapshot.meta.step_seconds}s"
    )
    if request.settings.thanos is not None:
        click.echo(request.settings.thanos.sentence())
    for warning in snapshot.meta.warnings:
        click.echo(f"analyzer: warning: {warning}", err=True)
    if result.partial:
        click.echo("analyzer: partial data (exit 3): " + "; ".join(result.problems), err=True)
        return EXIT_PARTIAL
    return 0


@main.command("check")
@connection_options
@click.option("--start", help="Range start (RFC 3339 or unix seconds).")
@click.option("--end", help="Range end (default now).")
@click.option("--since", help="Range length back from --end (default 1d).")
@click.option("--step", default="1m", show_default=True, help="Step the range is aligned to.")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def check_cmd(**options: Any) -> None:
    """Pre-flight: which server? which metrics and label conventions? coverage? (exit 0 usable; 3 partially or not usable)."""
    start, end = resolve_range(options["start"], options["end"], options["since"])
    grid = make_grid(
        start.timestamp(),
        end.timestamp(),
        _step_seconds(options["step"]),
        range_option=range_option(options["start"], options["since"]),
    )
    report = run_check(settings_from(options), grid)
    if options["fmt"] == "json":
        click.echo(json.dumps(report.to_json(), indent=1))
    else:
        click.echo(format_table(report, grid.step))
    if report.missing_sources:
        # one line for logs (a cron job keeps stderr); the report above has each fix
        click.echo(
            f"analyzer: not usable (exit {report.exit_code}): no "
            f"{', '.join(report.missing_sources)} data in the range; the report names the fixes",
            err=True,
        )
    if report.exit_code:
        raise SystemExit(report.exit_code)


@main.group("queries")
def queries_group() -> None:
    """The query profile (queries/*.promql) collect runs."""


@queries_group.command("list")
@click.option(
    "--queries-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Own query profile folder.",
)
def queries_list(queries_dir: Path | None) -> None:
    """List the profile's queries: name, kind, source, required or optional, and below each,
    what it returns (wrapped to the terminal width, $COLUMNS)."""
    from analyzer.cli.listing import terminal_width, wrapped_listing

    click.echo(f"# {_folder(queries_dir)}")
    rows = [
        ([spec.name, spec.kind, spec.source, "required" if spec.required else "optional"],
         spec.description)
        for spec in load_profile(queries_dir).values()
    ]  # fmt: skip
    click.echo(wrapped_listing(rows, terminal_width()))


@queries_group.command("show")
@click.argument("name")
@click.option(
    "--queries-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Own query profile folder.",
)
def queries_show(name: str, queries_dir: Path | None) -> None:
    """Print one query file."""
    profile = load_profile(queries_dir)
    if name not in profile:
        raise InputError(f"queries show: no query {name!r} (one of {', '.join(sorted(profile))})")
    click.echo((_folder(queries_dir) / f"{name}.promql").read_text(), nl=False)


def _folder(override: Path | None) -> Path:
    return profile_folder(override)
