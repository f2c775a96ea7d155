"""A tiny programmable HTTP server on 127.0.0.1 for client error-path tests (no mocks of our code)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    """One canned response."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()  # further headers, e.g. Retry-After

    @classmethod
    def json(cls, data: object, status: int = 200) -> Reply:
        return cls(status, json.dumps(data).encode())


@dataclass
class Recorded:
    """One request the stub received."""

    method: str
    path: str
    headers: dict[str, str]
    params: dict[str, list[str]]


@dataclass
class Stub:
    """The running stub: its URL and the requests it saw."""

    url: str
    requests: list[Recorded] = field(default_factory=list)


Handler = Callable[[Recorded], Reply]


@contextmanager
def serve(handler: Handler) -> Iterator[Stub]:
    """Run ``handler`` behind an HTTP server on a free loopback port for the ``with`` block."""
    stub = Stub(url="")

    class _Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            parts = urlsplit(self.path)
            params = parse_qs(parts.query)
            for key, values in parse_qs(body).items():
                params.setdefault(key, []).extend(values)
            record = Recorded(self.command, parts.path, dict(self.headers.items()), params)
            stub.requests.append(record)
            reply = handler(record)
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers:
                self.send_header(name, value)
            try:
                self.end_headers()
                self.wfile.write(reply.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

        do_GET = _handle
        do_POST = _handle
        do_PUT = _handle  # the Pushgateway push (tests/test_metrics_pushgateway.py)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()


def matrix(
    series: list[tuple[dict[str, str], list[tuple[float, str]]]], warnings: list[str] | None = None
) -> Reply:
    """A Prometheus matrix response."""
    data: dict[str, object] = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": m, "values": [[t, v] for t, v in points]} for m, points in series
            ],
        },
    }
    if warnings:
        data["warnings"] = warnings
    return Reply.json(data)
