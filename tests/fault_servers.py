"""Misbehaving servers on 127.0.0.1 for the network fault tests (tests/test_faults_network.py).

Every server listens on a free loopback port, counts the connections it accepted, and stops with
all its threads when its ``with`` block ends; every loop in them is bounded by a stop event or a
socket timeout, so a test that fails never leaves a thread behind.

- ``refused_url``: a port nothing listens on (a server that is down);
- ``socket_server(behaviour)``: raw sockets for faults HTTP servers cannot produce — ``hang`` (accept,
  read the request, never answer) and ``trickle`` (headers, then one body byte now and then);
- ``proxy(target, transform)``: forwards to a real Prometheus and lets a test rewrite the answer
  (5xx on the first try, Thanos ``warnings``, left-open range windows).
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlencode

from http_stub import Recorded, Reply, serve

STOP_POLL_SECONDS = 0.05


def refused_url() -> str:
    """A loopback URL whose port was free a moment ago: connecting is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@dataclass
class SocketServer:
    """A running raw-socket server: its URL and how many connections it accepted."""

    url: str
    stop: threading.Event
    connections: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def accepted(self) -> None:
        with self._lock:
            self.connections += 1


Behaviour = Callable[[socket.socket, threading.Event], None]


def _read_request(conn: socket.socket, stop: threading.Event) -> None:
    """Read until the end of the request headers and body (or the client or the test gives up)."""
    data = b""
    while b"\r\n\r\n" not in data and not stop.is_set():
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            continue
        if not chunk:
            return
        data += chunk


def hang(conn: socket.socket, stop: threading.Event) -> None:
    """Accept the request and never answer (a wedged server or a black-holing proxy)."""
    _read_request(conn, stop)
    stop.wait()


def trickle(conn: socket.socket, stop: threading.Event) -> None:
    """Answer 200 at once, then send the promised body one byte every 0.2 s (never finishing)."""
    _read_request(conn, stop)
    try:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{"
        )
        while not stop.wait(0.2):
            conn.sendall(b" ")
    except OSError:
        return  # the client gave up and closed the connection


@contextmanager
def socket_server(behaviour: Behaviour) -> Iterator[SocketServer]:
    """Run ``behaviour`` for every connection accepted on a free loopback port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(STOP_POLL_SECONDS)
    server = SocketServer(f"http://127.0.0.1:{listener.getsockname()[1]}", threading.Event())
    threads: list[threading.Thread] = []
    conns: list[socket.socket] = []

    def handle(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(STOP_POLL_SECONDS)
            behaviour(conn, server.stop)

    def accept_loop() -> None:
        while not server.stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            server.accepted()
            conns.append(conn)
            thread = threading.Thread(target=handle, args=(conn,), daemon=True)
            threads.append(thread)
            thread.start()

    acceptor = threading.Thread(target=accept_loop, daemon=True)
    acceptor.start()
    try:
        yield server
    finally:
        server.stop.set()
        acceptor.join(timeout=5)
        listener.close()
        for thread in threads:
            thread.join(timeout=5)
        assert not acceptor.is_alive() and not any(t.is_alive() for t in threads)


@dataclass(frozen=True)
class Answer:
    """What the real server answered a forwarded request."""

    status: int
    body: bytes
    content_type: str


Transform = Callable[[Recorded, Answer], Reply]


def forward(target: str, request: Recorded) -> Answer:
    """Send ``request`` on to ``target`` (form-encoded, as the client sent it)."""
    data = urlencode(request.params, doseq=True).encode()
    if request.method == "POST":
        outgoing = urllib.request.Request(
            f"{target}{request.path}",
            data=data,
            method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
    else:
        outgoing = urllib.request.Request(f"{target}{request.path}?{data.decode()}")
    try:
        with urllib.request.urlopen(outgoing, timeout=30) as response:
            return Answer(
                response.status, response.read(), response.headers.get("Content-Type", "")
            )
    except urllib.error.HTTPError as error:
        return Answer(error.code, error.read(), error.headers.get("Content-Type", ""))


@contextmanager
def proxy(target: str, transform: Transform) -> Iterator[str]:
    """A loopback proxy to ``target`` whose answers ``transform`` may rewrite; yields its URL."""

    def handler(request: Recorded) -> Reply:
        answer = forward(target, request)
        return transform(request, answer)

    with serve(handler) as stub:
        yield stub.url


def passthrough(answer: Answer) -> Reply:
    """The real server's answer unchanged."""
    return Reply(answer.status, answer.body, answer.content_type or "application/json")


def with_warning(answer: Answer, warning: str) -> Reply:
    """A successful JSON answer with a Thanos-style partial-response ``warnings`` entry added."""
    if answer.status != 200:
        return passthrough(answer)
    body = json.loads(answer.body)
    body["warnings"] = [*body.get("warnings", []), warning]
    # compact, as Prometheus writes it (so the client's fast matrix path still reads it)
    return Reply(answer.status, json.dumps(body, separators=(",", ":")).encode())
