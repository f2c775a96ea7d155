"""A tiny Chrome DevTools Protocol client over a stdlib WebSocket, for the browser tests.

The ``websocket`` packages are not installed here, and a test needs only: connect, send a JSON
command, read JSON messages (events and results) — so this implements the client side of RFC 6455
for text frames (masked sends, unmasked receives, continuation frames, ping/close) and nothing else.
``Chromium`` starts ``chromium --headless`` with ``--remote-debugging-port=0`` and reads the port
from its "DevTools listening on" line.
"""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import struct
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"


def require_chromium() -> None:
    """Skip the calling test without Chromium; in CI (CI=true) fail instead, loudly."""
    import pytest

    if not Path(CHROMIUM).exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CHROMIUM} is missing (install the Debian chromium package)")
        pytest.skip(f"{CHROMIUM} is missing")


FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class WebSocket:
    """Client side of RFC 6455, text frames only."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        match = re.match(r"ws://([^/:]+):(\d+)(/.*)", url)
        if not match:
            raise ValueError(f"not a ws:// URL: {url}")
        host, port, path = match.group(1), int(match.group(2)), match.group(3)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("closed during the WebSocket handshake")
            response += chunk
        head, _, self.buffer = response.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError(f"handshake refused: {head[:200]!r}")

    def _read(self, count: int) -> bytes:
        while len(self.buffer) < count:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("WebSocket closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        header = bytes([0x80 | opcode])
        size = len(payload)
        if size < 126:
            header += bytes([0x80 | size])
        elif size < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", size)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", size)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def send(self, text: str) -> None:
        self._send_frame(0x1, text.encode())

    def recv(self) -> str:
        message = b""
        while True:
            first, second = self._read(2)
            opcode, size = first & 0x0F, second & 0x7F
            if size == 126:
                size = struct.unpack(">H", self._read(2))[0]
            elif size == 127:
                size = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(size)
            if opcode == 0x9:  # ping → pong
                self._send_frame(0xA, payload)
                continue
            if opcode == 0x8:
                raise ConnectionError("WebSocket closed by the browser")
            message += payload
            if first & 0x80:
                return message.decode()

    def close(self) -> None:
        self.sock.close()


class Chromium:
    """A headless Chromium with one page target driven over CDP."""

    def __init__(self, profile: Path) -> None:
        self.process = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0",
             "--window-size=1280,900", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        port = self._port()
        # Keep draining chromium's log so a full pipe can never stall it.
        self._drain = threading.Thread(target=self._discard_stderr, daemon=True)
        self._drain.start()
        deadline = time.monotonic() + 30
        while True:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as resp:
                targets = json.loads(resp.read())
            pages = [t for t in targets if t.get("type") == "page"]
            if pages or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        self.ws = WebSocket(pages[0]["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _discard_stderr(self) -> None:
        assert self.process.stderr is not None
        for _line in self.process.stderr:
            pass

    def _port(self) -> int:
        assert self.process.stderr is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if not line and self.process.poll() is not None:
                break
            match = re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line)
            if match:
                return int(match.group(1))
        raise RuntimeError("chromium did not print its DevTools port")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command and wait for its result; events seen meanwhile go to ``events``."""
        self.next_id += 1
        ident = self.next_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def open(self, page: Path) -> None:
        """Enable the Runtime, Log and Page domains, load ``page`` and wait for its load event."""
        for domain in ("Runtime", "Log", "Page"):
            self.call(f"{domain}.enable")
        self.call("Page.navigate", url=page.as_uri())
        self.wait_for("Page.loadEventFired")

    def wait_for(self, event: str, timeout: float = 30.0) -> dict[str, Any]:
        """Read messages until ``event`` arrives."""
        for seen in self.events:
            if seen.get("method") == event:
                return seen
        self.ws.sock.settimeout(timeout)
        while True:
            message = json.loads(self.ws.recv())
            self.events.append(message)
            if message.get("method") == event:
                return message

    def console_errors(self) -> list[dict[str, Any]]:
        """Uncaught exceptions, console.error/assert calls and error log entries seen so far."""
        return [
            e for e in self.events
            if (e.get("method") == "Runtime.exceptionThrown")
            or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"))
            or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")
        ]  # fmt: skip

    def evaluate(self, expression: str) -> Any:
        """Evaluate JavaScript in the page and return its JSON value."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def close(self) -> None:
        self.ws.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._drain.join(timeout=10)
        if self.process.stderr is not None:
            self.process.stderr.close()
