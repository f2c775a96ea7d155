"""How a run meets a failing server: bounded retries, one deadline, and stopping at the first fault.

A nightly job must end in bounded time whatever the server does. Three things bound it:

- **tries**: a request is retried only for faults that can heal (5xx, 429, a connection broken off,
  one more try after a timeout or a refused connection), with doubling backoff;
- **the deadline** (``--deadline``) bounds the whole run: every wait is capped by the time left, and
  when it passes a watchdog shuts the sockets of the responses being read (a server trickling a
  body byte by byte never trips a per-read timeout);
- **stop at the first server fault**: once a request has used up its tries, the server is down,
  hung or failing, and every other request would meet the same fault, so the run stops (nothing new
  is sent, retries end) instead of opening new connections.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta
from typing import Any

from analyzer.core.durations import format_duration
from analyzer.core.errors import SourceError

BACKOFF_CAP_SECONDS = 10.0  # one wait between tries never exceeds this (nor the time left)
RETRY_AFTER_CAP_SECONDS = 30.0  # a server's Retry-After is honoured up to this


class ServerFault(SourceError):
    """The server or the path to it failed (unreachable, hung, 5xx after retries, cut-off body).

    Unlike a rejected query, this ends the run even for an optional query: the next request
    would meet the same server.
    """


class DeadlineExceeded(ServerFault):
    """The run's ``--deadline`` passed."""


class Stopped(ServerFault):
    """A request cut short because the run is stopping for another request's fault."""


class Transient(Exception):
    """A try that failed in a way that may heal; ``final(tries)`` is the error once tries run out."""

    def __init__(
        self, message: Callable[[int], str], *, retries: int, retry_after: str | None = None
    ) -> None:
        super().__init__()
        self.message = message
        self.retries = retries
        self.retry_after = retry_after

    def final(self, tries: int) -> ServerFault:
        """The error to raise once ``tries`` tries have failed this way."""
        return ServerFault(self.message(tries))


def count_tries(count: int) -> str:
    """How many tries a message says were made: ``1 try``, ``3 tries``."""
    return "1 try" if count == 1 else f"{count} tries"


def describe_seconds(seconds: float) -> str:
    """``1800`` → ``30m``, ``2.5`` → ``2.5s``: how a flag value is echoed in a message."""
    if seconds >= 1 and seconds == int(seconds):
        return format_duration(timedelta(seconds=seconds))
    return f"{seconds:g}s"


class RunClock:
    """The run's deadline, the requests in flight, and the stop switch, shared by all threads."""

    def __init__(self, deadline_seconds: float, public_url: str) -> None:
        self.deadline_seconds = deadline_seconds
        self.public_url = public_url
        self._ends_at = time.monotonic() + deadline_seconds
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._expired = False
        self._in_flight: dict[int, str] = {}
        self._sockets: dict[int, socket.socket] = {}
        self._ids = iter(range(1 << 62))
        # A daemon timer: it never keeps the process alive, and close() cancels it.
        self._timer = threading.Timer(min(deadline_seconds, threading.TIMEOUT_MAX), self._expire)
        self._timer.daemon = True
        self._timer.start()

    # -- time ------------------------------------------------------------------------------------

    def left(self) -> float:
        """Seconds until the deadline (≤ 0 once it passed)."""
        return self._ends_at - time.monotonic()

    @property
    def expired(self) -> bool:
        return self._expired or self.left() <= 0

    @property
    def stopped(self) -> bool:
        """True once the run is stopping (a fault elsewhere, or the deadline)."""
        return self._stopped.is_set() or self.expired

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` (capped by the time left); returns early when the run stops."""
        self._stopped.wait(max(0.0, min(seconds, self.left())))

    # -- stopping --------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop the run: no retry starts, and the bodies being read are cut off."""
        self._stopped.set()
        with self._lock:
            sockets = list(self._sockets.values())
        for sock in sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv()

    def _expire(self) -> None:
        self._expired = True
        self.stop()

    def close(self) -> None:
        """Cancel the watchdog (the run is over)."""
        self._timer.cancel()

    # -- requests in flight ----------------------------------------------------------------------

    @contextmanager
    def flight(self, what: str) -> Iterator[int]:
        """Mark ``what`` as in flight for the ``with`` block (named if the deadline passes)."""
        with self._lock:
            ident = next(self._ids)
            self._in_flight[ident] = what
        try:
            yield ident
        finally:
            with self._lock:
                self._in_flight.pop(ident, None)
                self._sockets.pop(ident, None)

    def reading(self, ident: int, raw: Any) -> None:
        """Register the socket of a response whose body ``ident`` is about to read."""
        connection = getattr(raw, "_connection", None) or getattr(raw, "connection", None)
        sock = getattr(connection, "sock", None)
        if isinstance(sock, socket.socket):
            with self._lock:
                self._sockets[ident] = sock
            if self.stopped:  # stopped between the check and the registration
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def in_flight(self) -> list[str]:
        with self._lock:
            return sorted(set(self._in_flight.values()))

    def deadline_error(self, current: str | None = None) -> DeadlineExceeded:
        """The one line for a passed deadline, naming what was in flight."""
        names = self.in_flight()
        if current is not None and current not in names:
            names.insert(0, current)
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        what = f"while waiting for {shown}" if names else "between requests"
        return DeadlineExceeded(
            f"the run's --deadline of {describe_seconds(self.deadline_seconds)} passed {what} "
            f"from {self.public_url}; raise --deadline or shorten the range"
        )


def backoff_seconds(base: float, tries_done: int, retry_after: str | None = None) -> float:
    """The wait before the next try: ``base`` doubled per try, or the server's Retry-After."""
    if retry_after is not None:
        try:
            return min(max(0.0, float(retry_after)), RETRY_AFTER_CAP_SECONDS)
        except ValueError:
            pass  # an HTTP date: fall back to our own backoff
    return float(min(base * 2 ** (tries_done - 1), BACKOFF_CAP_SECONDS))
