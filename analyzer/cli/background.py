"""One function run in a forked process while the caller goes on; its answer comes back by a pipe.

The demo's what-if and search replay only the snapshot, and nothing else the demo does reads
them: started in a ``Background`` right after the snapshot, they run beside the history, the
nightly reports and the monthly review, so the machine's second core works while the first
renders a nightly page alone.

Fork, not spawn: the child inherits the caller's objects (a 4-million-row snapshot) without
pickling them. It is an ordinary (non-daemon) process, so it may start its own process pool, as
``run_whatif`` does. Its return value and any exception it raises are pickled back;
``result()`` returns the one or raises the other, as a call in the caller would. ``stop()`` ends
the child if it is still running (the caller failed first: nothing waits for it).

``nice``: the child lowers its own scheduling priority by that much first (``os.nice``; the
processes it starts inherit it). The demo's what-if and search are needed only at its very end:
niced, they take the cores the demo's main line (history, nightly pages, monthly review) leaves
idle rather than half of those it needs, and still every core once nothing else runs.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, Generic, TypeVar

from analyzer.core.errors import AnalyzerError

T = TypeVar("T")


def _child(send: Connection, target: Callable[..., Any], args: tuple[Any, ...], nice: int) -> None:
    try:
        if nice:
            os.nice(nice)
        answer: tuple[bool, Any] = (True, target(*args))
    except BaseException as error:
        answer = (False, error)
    try:
        send.send(answer)
    finally:
        send.close()


class Background(Generic[T]):
    """``target(*args)`` running in a forked child from construction on (module docstring)."""

    def __init__(self, target: Callable[..., T], *args: Any, nice: int = 0) -> None:
        context = multiprocessing.get_context("fork")
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=_child, args=(send, target, args, nice))
        self._process.start()
        send.close()  # the child holds the only writing end: its exit reads as end of file

    def result(self) -> T:
        """The target's return value (waits for it), or its exception raised here."""
        try:
            ok, value = self._receive.recv()
        except EOFError:
            self._process.join()
            raise AnalyzerError(
                f"a background process of the demo ended (exit code {self._process.exitcode}) "
                "without an answer: run the demo again; if it fails again, report it"
            ) from None
        self._process.join()
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def stop(self) -> None:
        """End the child if it still runs (the caller gave up on its answer)."""
        if self._process.is_alive():
            self._process.terminate()
        self._process.join()
        self._receive.close()
