"""Errors that end a run, each with its documented exit code.

Exit codes (DESIGN.md, README "Exit codes"):

| code | meaning |
|---|---|
| 0 | ok |
| 1 | error (unexpected failure, unreachable server, server error) |
| 2 | bad usage, config or input (the message names the field and the fix) |
| 3 | partial data: some queries failed or data gaps beyond the limit |
| 4 | threshold violations found (only with ``--fail-on-violations``) |
| 5 | the output is written, but publishing it failed (``--notify``: docs/delivery.md; ``--pushgateway``, ``--metrics-textfile``: docs/metrics.md) |
| 130 | interrupted by SIGINT (Ctrl-C): 128 + 2, temporary folders removed |
| 143 | terminated by SIGTERM (``kill``, a CronJob's deadline): 128 + 15, temporary folders removed |

Library code raises these; only ``analyzer/cli`` turns them into a one-line message and an exit code.
Messages must never contain credentials.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
EXIT_PARTIAL = 3
EXIT_VIOLATIONS = 4
# The report (or history) is safely written, but telling the team failed: a metrics push, the
# metrics textfile, a notification. Its own code, so a CronJob can retry only the publishing.
EXIT_PUBLISH_FAILED = 5
EXIT_SIGNAL_BASE = 128  # a run ended by signal N exits 128 + N (the shell's convention)


class AnalyzerError(Exception):
    """Base class: a failure with a one-line, user-facing message."""

    exit_code = EXIT_ERROR


class InputError(AnalyzerError):
    """Bad usage, config, scenario, quantity or snapshot: the user must fix an input."""

    exit_code = EXIT_BAD_INPUT


class SourceError(AnalyzerError):
    """The metrics source failed: unreachable, refused, not Prometheus, rejected a query."""

    exit_code = EXIT_ERROR


class PartialDataError(AnalyzerError):
    """Some data is missing: failed queries or gaps beyond the allowed limit."""

    exit_code = EXIT_PARTIAL


class PublishError(AnalyzerError):
    """The run's output is written, but publishing it (metrics, notifications) failed, after
    bounded retries.

    Raised only after every output file is safely in place, so a retried job finds the report
    and redoes only the publishing that did not happen.
    """

    exit_code = EXIT_PUBLISH_FAILED


class Terminated(BaseException):
    """SIGTERM arrived: unwind (removing temporary output) and exit ``128 + signal``.

    A ``BaseException`` like ``KeyboardInterrupt``, so no ``except Exception`` swallows it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.exit_code = EXIT_SIGNAL_BASE + signum
