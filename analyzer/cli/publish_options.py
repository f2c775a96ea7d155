"""``--metrics-textfile`` and ``--pushgateway``: a run's metrics for alerting (docs/metrics.md).

``@metrics_options`` adds the options to a command (``report nightly``, ``report monthly``,
``history backfill``) and wraps it: the options are checked before any work (exit 2), the run
is timed, and when it ends — written, or failed with any exit code — its metrics are published:
the textfile first (atomic), then the push. The command hands over its report's numbers with
``record_metrics`` once its output is written; a run that fails before that publishes its status
only, and the last success's numbers stay (``report/metrics.py``).

A publishing failure after the output is written exits 5 (``EXIT_PUBLISH_FAILED``), naming the
run's own exit code; after a failed run it is a warning line and the run's own code stands.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from analyzer.core.errors import (
    EXIT_ERROR,
    EXIT_SIGNAL_BASE,
    AnalyzerError,
    InputError,
    PublishError,
    Terminated,
)
from analyzer.core.outdir import check_writable
from analyzer.prom.pushgateway import PushTarget, check_target

F = TypeVar("F", bound=Callable[..., Any])
_KEY = "analyzer.metrics"  # ctx.meta key the command's numbers are handed over under
_OPTIONS = ("metrics_textfile", "pushgateway", "pushgateway_token_file", "pushgateway_token_env")


CLUSTER_KEY = "analyzer.metrics.cluster"  # ctx.meta: the cluster of a --cluster-label run


def record_metrics(ctx: click.Context, families: Sequence[Any]) -> None:
    """Hand over the report's metric families (``report/metrics.py``) once the output is written.

    In a ``--cluster-label`` run (``cli/clusters.py`` sets ``ctx.meta[CLUSTER_KEY]`` before each
    cluster's run) every sample gets a ``cluster`` label and each cluster's samples are added to
    the ones before: ``--all-clusters`` publishes every cluster's numbers in one textfile (and one
    push), not only the last cluster's."""
    cluster = ctx.meta.get(CLUSTER_KEY)
    if cluster is None:
        ctx.meta[_KEY] = list(families)
        return
    from analyzer.report.metrics import with_label

    ctx.meta[_KEY] = with_label(ctx.meta.get(_KEY, []), families, "cluster", str(cluster))


def _check_textfile(path: Path) -> None:
    if path.suffix != ".prom":
        raise InputError(
            f"--metrics-textfile: {path} must end in .prom (node-exporter's textfile collector "
            "reads only *.prom files)"
        )
    if path.is_dir():
        raise InputError(
            f"--metrics-textfile: {path} is a folder; give a file name ending in .prom"
        )
    check_writable(path, "--metrics-textfile")


def metrics_options(func: F) -> F:
    """Add the metrics options to a click command callback (put it below ``@…command``)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **opts: Any) -> Any:
        textfile, url, token_file, token_env = (opts.pop(k) for k in _OPTIONS)
        if url is None and (token_file is not None or token_env):
            raise InputError(
                "--pushgateway-token-file/--pushgateway-token-env: only with --pushgateway URL"
            )
        if textfile is None and url is None:
            return func(*args, **opts)
        target = None if url is None else PushTarget(url, token_file, token_env)
        if target is not None:
            check_target(target)
        if textfile is not None:
            _check_textfile(Path(textfile))
        ctx = click.get_current_context()
        command = ctx.command.name or "run"
        started = time.monotonic()
        try:
            result = func(*args, **opts)
        except click.exceptions.Exit as exc:
            _publish(ctx, command, exc.exit_code, started, textfile, target)
            raise
        except (AnalyzerError, click.ClickException) as exc:  # ClickException: a usage error
            _publish_failure(ctx, command, exc.exit_code, started, textfile, target)
            raise
        except Terminated as exc:
            _publish_failure(ctx, command, exc.exit_code, started, textfile, target)
            raise
        except KeyboardInterrupt:
            _publish_failure(ctx, command, EXIT_SIGNAL_BASE + 2, started, textfile, target)
            raise
        except Exception:
            _publish_failure(ctx, command, EXIT_ERROR, started, textfile, target)
            raise
        _publish(ctx, command, 0, started, textfile, target)
        return result

    for option in reversed(_DECORATORS):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]


_DECORATORS = [
    click.option(
        "--metrics-textfile",
        type=click.Path(path_type=Path),
        help="Write the run's metrics here for node-exporter's textfile collector "
        "(a *.prom file, written atomically; docs/metrics.md).",
    ),
    click.option(
        "--pushgateway",
        metavar="URL",
        help="Push the run's metrics to this Prometheus Pushgateway (group "
        "job=analyzer, command=<this command>; docs/metrics.md).",
    ),
    click.option(
        "--pushgateway-token-file",
        type=click.Path(path_type=Path),
        help="Bearer token for --pushgateway from this file.",
    ),
    click.option(
        "--pushgateway-token-env",
        metavar="NAME",
        help="Bearer token for --pushgateway from this environment variable.",
    ),
]


def _families(ctx: click.Context, command: str, exit_code: int, started: float) -> list[Any]:
    from analyzer.report.metrics import SUCCESS_EXIT_CODES, run_status

    status = run_status(command, exit_code, time.monotonic() - started, datetime.now(UTC))
    report = ctx.meta.get(_KEY, []) if exit_code in SUCCESS_EXIT_CODES else []
    return [*status, *report]


def _publish(
    ctx: click.Context,
    command: str,
    exit_code: int,
    started: float,
    textfile: Path | None,
    target: PushTarget | None,
) -> None:
    """Publish a run that got to its end (exit 0, 3, 4 — or a code the command chose)."""
    from analyzer.report.metrics import SUCCESS_EXIT_CODES

    if exit_code not in SUCCESS_EXIT_CODES:
        _publish_failure(ctx, command, exit_code, started, textfile, target)
        return
    try:
        _send(_families(ctx, command, exit_code, started), command, textfile, target, True)
    except PublishError as exc:
        raise PublishError(
            f"the output is written (the run's own exit code: {exit_code}), but {exc}"
        ) from None


def _publish_failure(
    ctx: click.Context,
    command: str,
    exit_code: int,
    started: float,
    textfile: Path | None,
    target: PushTarget | None,
) -> None:
    """Publish a failed run's status; a publishing failure then is only a warning."""
    try:
        _send(_families(ctx, command, exit_code, started), command, textfile, target, False)
    except PublishError as exc:
        click.echo(f"analyzer: warning: {exc}", err=True)


def _send(
    families: list[Any],
    command: str,
    textfile: Path | None,
    target: PushTarget | None,
    success: bool,
) -> None:
    from analyzer.prom.pushgateway import push
    from analyzer.report.metrics import STATUS_FAMILIES, render, write_textfile

    problems: list[PublishError] = []
    if textfile is not None:
        try:
            write_textfile(textfile, families)
        except OSError as exc:
            problems.append(
                PublishError(
                    f"writing --metrics-textfile {textfile} failed ({exc.strerror or exc}); "
                    "check the folder's free space and permissions"
                )
            )
    if target is not None:
        # On failure only the status families go, by POST: the last success's stay in the group.
        sent = families if success else [f for f in families if f.name in STATUS_FAMILIES]
        try:
            push(target, {"command": command}, render(sent), replace=success)
        except PublishError as exc:
            problems.append(exc)
    if problems:  # the textfile's problem first; each channel was tried regardless of the other
        raise PublishError("; and ".join(str(p) for p in problems))
