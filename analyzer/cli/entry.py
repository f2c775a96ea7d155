"""The process entry point (``analyzer`` and ``python -m analyzer``): run ``main``, then exit at
once with its code.

A finished run skips the interpreter's teardown (``os._exit``). That teardown destroys native
libraries' thread pools while their worker threads may still be alive (at the end of ``analyzer
check`` the process holds six native threads besides Python's one: jemalloc's and those of the
libraries pandas loads, pyarrow among them); now and then that aborts the process with
"terminate called without an active exception" (SIGABRT, exit -6 / 134) after its work and its
output were complete: seen once in this project's CI on ``analyzer check``, as reported
upstream for pyarrow (apache/arrow#34314). A nightly cron job would count that as a failed run.
Nothing is lost by skipping it: every file is written atomically and closed before ``main``
returns, thread and process pools are joined by the ``with`` blocks that own them, and this
function flushes stdout, stderr and the logging handlers itself. Tests call ``main`` in-process (click's runner); only the process entry goes this way.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from analyzer.cli.base import EXIT_STDOUT_CLOSED, main


def exit_code(code: object) -> int:
    """The status ``sys.exit(code)`` gives: None is 0, an int itself (modulo 256 as the OS
    keeps it), anything else is printed on stderr and gives 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def run(args: Sequence[str] | None = None) -> NoReturn:
    """``main(args)`` (the command line when None), then ``os._exit`` with its exit code (module
    docstring). An exception ``main`` lets through (a bug) keeps Python's traceback and exit."""
    try:
        main.main(args=list(args) if args is not None else None)
        code = 0  # not reached: click's standalone mode ends with SystemExit
    except SystemExit as exc:
        code = exit_code(exc.code)
    logging.shutdown()
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left after the last write: as ``base._stdout_closed``
        code = code or EXIT_STDOUT_CLOSED
    except (OSError, ValueError):  # closed or failing: nothing more can be said there
        pass
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    os._exit(code)
