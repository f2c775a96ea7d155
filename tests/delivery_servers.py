"""Real receivers on 127.0.0.1 for the delivery tests: an HTTP server that records what webhooks
POST, and an SMTP server (aiosmtpd) with STARTTLS and AUTH required. Both can be told to fail the
first N tries (HTTP 500, a dropped connection, SMTP 451) so retries are forced, never mocked.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message as EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest


@dataclass
class Posted:
    """One request the receiver answered with ``status`` (0: connection dropped)."""

    path: str
    headers: dict[str, str]
    body: bytes
    status: int


@dataclass
class Receiver:
    """The HTTP receiver: ``plan[path]`` lists the answers to give first ("500", "drop", "200"),
    then it answers 200."""

    url: str
    plan: dict[str, list[str]] = field(default_factory=dict)
    posted: list[Posted] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def delivered(self, path: str) -> list[Posted]:
        """The requests to ``path`` that were answered 2xx: what counts as a delivery."""
        return [p for p in self.posted if p.path == path and 200 <= p.status < 300]


@contextmanager
def http_receiver(tls: tuple[Path, Path] | None = None) -> Iterator[Receiver]:
    """An HTTP server on a free loopback port, recording every POST; HTTPS with ``tls``
    (certificate, key)."""
    receiver = Receiver(url="")

    class _Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            with receiver.lock:
                steps = receiver.plan.get(self.path, [])
                action = steps.pop(0) if steps else "200"
                status = 0 if action == "drop" else int(action)
                receiver.posted.append(Posted(self.path, dict(self.headers), body, status))
            if action == "drop":  # close without an answer: the client sees a dropped connection
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:  # quiet: pytest shows stderr on failure
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    scheme = "http"
    if tls is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    receiver.url = f"{scheme}://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


def self_signed_cert(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1/localhost and its key, made with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed (apt-get install openssl)")
    cert, key = folder / "relay-cert.pem", folder / "relay-key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


@dataclass
class Relay:
    """The SMTP relay: ``fail_next`` DATA commands are answered 451, then 250."""

    host: str
    port: int
    cert: Path
    user: str
    password: str
    fail_next: int = 0
    messages: list[EmailMessage] = field(default_factory=list)
    logins: list[bytes] = field(default_factory=list)
    refused: int = 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def smtp_relay(folder: Path, user: str, password: str, *, tls: bool = True) -> Iterator[Relay]:
    """aiosmtpd on 127.0.0.1: STARTTLS with a self-signed certificate, AUTH required (and only
    over TLS), every accepted message parsed into ``messages``. ``tls=False``: a relay of the old
    kind, plain text only, taking mail without a login."""
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult, LoginPassword

    cert, key = self_signed_cert(folder)
    relay = Relay("127.0.0.1", _free_port(), cert, user, password)

    class _Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            if relay.fail_next > 0:
                relay.fail_next -= 1
                relay.refused += 1
                return "451 4.3.0 try again later"
            relay.messages.append(message_from_bytes(envelope.content))
            return "250 2.0.0 accepted"

    def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> Any:
        ok = (
            isinstance(data, LoginPassword)
            and data.login == user.encode()
            and data.password == password.encode()
        )
        if isinstance(data, LoginPassword):
            relay.logins.append(data.login)
        # handled=False: aiosmtpd then answers 535 itself (its default, True, answers nothing)
        return AuthResult(success=ok, handled=False)

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert), str(key))
    secure: dict[str, Any] = {
        "tls_context": context,
        "require_starttls": True,
        "auth_required": True,
        "auth_require_tls": True,
        "authenticator": authenticate,
    }
    controller = Controller(
        _Handler(), hostname="127.0.0.1", port=relay.port, **(secure if tls else {})
    )
    controller.start()
    try:
        yield relay
    finally:
        controller.stop()
