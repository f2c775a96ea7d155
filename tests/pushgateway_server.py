"""A real Pushgateway (Debian ``prometheus-pushgateway``) and a Prometheus that scrapes it.

Both listen on 127.0.0.1 port 0; the port is read from their "Listening on" log line (both log
the address they really bound). Prometheus gets one scrape job for the Pushgateway with
``honor_labels: true`` (the pushed ``job``/``instance`` win over the scrape's, as the
Pushgateway's documentation asks) and a 1 s scrape interval, so a push shows up in a query
within seconds. Without the binaries the tests skip, except under CI, where they fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from processes import stop_process

PUSHGATEWAY = shutil.which("prometheus-pushgateway") or "/usr/bin/prometheus-pushgateway"
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
_LISTENING = re.compile(r'msg="Listening on" address=([0-9.]+):(\d+)')


@dataclass
class Server:
    """A running server we started."""

    url: str
    log: Path
    process: subprocess.Popen[bytes]


def require_binaries() -> None:
    """Skip (or fail under CI) without the Pushgateway and Prometheus binaries."""
    missing = [p for p in (PUSHGATEWAY, PROMETHEUS) if not Path(p).is_file()]
    if not missing:
        return
    message = (
        f"{', '.join(missing)} not installed; apt-get install prometheus-pushgateway prometheus"
    )
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def _start(command: list[str], log: Path, ready_path: str) -> Server:
    with log.open("wb") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    url = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{command[0]} exited: {log.read_text()[-2000:]}")
        if url is None:
            match = _LISTENING.search(log.read_text(errors="replace"))
            if match:
                url = f"http://{match.group(1)}:{match.group(2)}"
        if url is not None:
            try:
                with urllib.request.urlopen(url + ready_path, timeout=2) as response:
                    if response.status == 200:
                        return Server(url, log, process)
            except OSError:
                pass
        time.sleep(0.1)
    stop_process(process)
    raise RuntimeError(f"{command[0]} not ready in 60 s: {log.read_text()[-2000:]}")


def start_pushgateway(workdir: Path) -> Server:
    """A Pushgateway without persistence, on 127.0.0.1."""
    return _start(
        [PUSHGATEWAY, "--web.listen-address=127.0.0.1:0", "--persistence.file="],
        workdir / "pushgateway.log",
        "/-/ready",
    )


def start_scraping_prometheus(workdir: Path, target: str) -> Server:
    """A Prometheus scraping ``target`` (host:port) every second with honor_labels."""
    config = workdir / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: pushgateway\n    honor_labels: true\n"
        f"    static_configs:\n      - targets: ['{target}']\n"
    )
    return _start(
        [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'data'}",
            "--web.listen-address=127.0.0.1:0",
        ],
        workdir / "prometheus.log",
        "/-/ready",
    )


def query(prometheus: str, expr: str) -> list[dict[str, Any]]:
    """The instant-query result vector of ``expr``."""
    url = f"{prometheus}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    with urllib.request.urlopen(url, timeout=10) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def wait_for(prometheus: str, expr: str, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Query ``expr`` until it returns something (a push is seen at the next scrape)."""
    deadline = time.monotonic() + timeout
    while True:
        result = query(prometheus, expr)
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.5)
