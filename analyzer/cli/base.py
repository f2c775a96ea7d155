"""The click group every command hangs off, config-file loading, and error → exit code mapping.

Command modules (``analyzer/cli/<name>.py``) import ``main`` (or ``report``) from here and add
their commands; each command parses options, builds settings, calls one library function, and
prints. Library code raises ``analyzer.core.errors.AnalyzerError``; it becomes one line on stderr and the
documented exit code here, never a traceback.
"""

from __future__ import annotations

import importlib
import os
import signal
import stat
import sys
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import click

from analyzer import __version__
from analyzer.cli.helpformat import AnalyzerCommand, AnalyzerContext, summary
from analyzer.core.atomic import handle_termination
from analyzer.core.config import build_default_map, load_config_file
from analyzer.core.errors import EXIT_ERROR, EXIT_SIGNAL_BASE, AnalyzerError, Terminated
from analyzer.core.text import escaped

# stdout closed by its reader (``analyzer ... | head -1``): the exit a process killed by SIGPIPE
# gets from the shell, as ``cat`` or ``grep`` there; not 0, since the output was cut short.
EXIT_STDOUT_CLOSED = EXIT_SIGNAL_BASE + signal.SIGPIPE


def one_line(message: str) -> str:
    """``message`` as one line: its lines (every Unicode line break ``str.splitlines`` knows,
    ``\\r`` and ``\\u2028`` too) stripped and joined with a space, so a library text ending in
    a newline (pandas' tokenizer, thrift) keeps its tail (often the fix) on the same line; any
    other non-printable character (a terminal escape ``\\x1b``, a bidi override) is shown
    escaped, never sent to the terminal (``core/text.py``'s rule)."""
    return escaped(" ".join(part.strip() for part in message.splitlines() if part.strip()))


def _fail(message: str, code: int) -> None:
    click.echo(f"analyzer: error: {one_line(message)}", err=True)
    sys.exit(code)


def _stdout_is_pipe() -> bool:
    try:
        mode = os.fstat(sys.stdout.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _stdout_closed() -> None:
    """The reader of stdout went away: end quietly, as a process killed by SIGPIPE would.

    stdout is pointed at /dev/null first, so that the interpreter's final flush of what is
    still buffered cannot print "Exception ignored ... BrokenPipeError" on its way out.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(EXIT_STDOUT_CLOSED)


class AnalyzerGroup(click.Group):
    """A group that turns ``AnalyzerError`` into a one-line message and its exit code.

    Its commands and subgroups format their help without cutting words (``cli/helpformat.py``).
    """

    context_class = AnalyzerContext
    command_class = AnalyzerCommand

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands with their first help paragraph, wrapped rather than cut."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, summary(command)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with handle_termination():  # SIGTERM/SIGINT: no temporary output left (core/atomic)
                return super().invoke(ctx)
        except AnalyzerError as exc:
            _fail(str(exc), exc.exit_code)
        except Terminated as exc:
            _fail("terminated by SIGTERM; nothing half-written was left", exc.exit_code)
        except KeyboardInterrupt:
            _fail("interrupted (SIGINT); nothing half-written was left", 130)
        except click.UsageError as exc:
            _usage_error(exc)
        except OSError as exc:  # disk full, file too large, I/O error: the machine, not the input
            if isinstance(exc, BrokenPipeError) and _stdout_is_pipe():
                _stdout_closed()
            _fail(os_error_line(exc), EXIT_ERROR)
        return None

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """The group's own options parsed; a usage error there is one line too."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            _usage_error(exc)
            raise  # not reached: _usage_error exits


def _usage_error(exc: click.UsageError) -> None:
    """click's usage error (4 lines: usage, hint, blank, error) as one line with the hint.

    A group called without a command keeps click's help text: that is help asked for, not an
    error message.
    """
    if type(exc).__name__ == "NoArgsIsHelpError":
        raise exc
    where = exc.ctx.command_path if exc.ctx is not None else "analyzer"
    _fail(f"{exc.format_message()} (see '{where} --help')", exc.exit_code)


def os_error_line(exc: OSError) -> str:
    """One line for a file-system failure: what failed, on which file (and what the run was
    doing, from the exception's notes: the day of a backfill), and what to check."""
    what = exc.strerror or str(exc) or type(exc).__name__
    where = f" on {exc.filename}" if exc.filename else ""
    code = f" (errno {exc.errno})" if exc.errno and f"errno {exc.errno}" not in what else ""
    doing = "".join(f", {note}" for note in getattr(exc, "__notes__", ()))
    return (
        f"{what}{where}{code}{doing}; check the free space, file size limits and permissions "
        "there; nothing half-written was left"
    )


AnalyzerGroup.group_class = AnalyzerGroup  # plain subgroups (``queries``) format help the same


class LazyGroup(AnalyzerGroup):
    """A group whose commands are defined in modules imported on first use.

    ``analyzer collect`` then imports ``analyzer.cli.collect`` and what it needs, not the report,
    replay and trace stacks. ``homes`` maps a command name to the module defining it; a name it
    does not know (or that its module does not define), ``--help`` and config-file validation
    import every module of ``modules`` (see ``analyzer.cli.COMMAND_MODULES``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.modules: tuple[str, ...] = ()
        self.homes: dict[str, str] = {}

    def set_modules(self, modules: Sequence[str], homes: Mapping[str, str]) -> None:
        """Where this group's commands are defined (the modules add them on import)."""
        self.modules = tuple(modules)
        self.homes = dict(homes)

    def load_all(self) -> None:
        """Import every command module, so ``self.commands`` is complete."""
        for module in self.modules:
            importlib.import_module(module)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            home = self.homes.get(cmd_name)
            if home is not None:
                importlib.import_module(home)
            if cmd_name not in self.commands:
                self.load_all()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self.load_all()
        return super().list_commands(ctx)


def _all_commands(group: click.Group) -> MutableMapping[str, click.Command]:
    if isinstance(group, LazyGroup):
        group.load_all()
    return group.commands


def _option_names(command: click.Command) -> dict[str, str]:
    """Config keys a command accepts → its click parameter names.

    Both spellings work in a config file: the flag (``header`` for ``--header``) and the
    parameter (``headers``); dashes and underscores are the same.
    """
    names: dict[str, str] = {}
    for param in command.params:
        if isinstance(param, click.Option) and param.name:
            names[param.name] = param.name
            for flag in param.opts:
                if flag.startswith("--"):
                    names.setdefault(flag[2:].replace("-", "_"), param.name)
    return names


def command_options(group: click.Group, prefix: str = "") -> dict[str, dict[str, str]]:
    """Map each command path (``collect``, ``report-nightly``) to its config keys → parameters."""
    result: dict[str, dict[str, str]] = {}
    for name, command in _all_commands(group).items():
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            result.update(command_options(command, prefix=f"{path}-"))
        else:
            result[path] = _option_names(command)
    return result


def _nest(flat: dict[str, dict[str, Any]], group: click.Group) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for name, command in _all_commands(group).items():
        if isinstance(command, click.Group):
            sub = {k[len(name) + 1 :]: v for k, v in flat.items() if k.startswith(f"{name}-")}
            nested[name] = _nest(sub, command)
        elif flat.get(name):
            nested[name] = flat[name]
    return nested


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="analyzer")
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="ANALYZER_CONFIG",
    help="YAML or TOML file of option defaults (flags win). Env: ANALYZER_CONFIG.",
)
@click.pass_context
def main(ctx: click.Context, config_file: Path | None) -> None:
    """Metrics-driven batch analyser for Kubernetes clusters.

    Exit codes: 0 ok, 1 error, 2 bad usage/config/input, 3 partial data,
    4 threshold violations (only with --fail-on-violations), 141 stdout closed by its reader
    (e.g. piped into head; nothing printed on stderr).
    """
    ctx.ensure_object(dict)
    ctx.obj["config"] = {}
    if config_file is not None:
        data = load_config_file(config_file)
        assert isinstance(ctx.command, click.Group)
        flat = build_default_map(data, command_options(ctx.command), source=str(config_file))
        ctx.default_map = _nest(flat, ctx.command)
        ctx.obj["config"] = data
        ctx.obj["config_path"] = config_file


@main.group(cls=LazyGroup)
def report() -> None:
    """Render HTML reports (with JSON and CSV beside them)."""


def is_terminal() -> bool:
    """True when stderr is an interactive terminal (progress bars only there, not in cron logs)."""
    return sys.stderr.isatty() and os.environ.get("TERM") != "dumb"
