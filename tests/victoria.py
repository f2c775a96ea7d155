"""A real VictoriaMetrics (Debian ``victoria-metrics``, single-node) for the tests, on 127.0.0.1.

VictoriaMetrics is the second Prometheus-compatible store the collector must read exactly like
Prometheus. Its raw-sample windows are open on the left, as Prometheus 3.x's are, so it also stands in
for the newer Prometheus semantics (Debian ships 2.42, left-closed).

Data goes in through ``/api/v1/import/prometheus`` (the text exposition format, timestamps in
milliseconds): the OpenMetrics files the synthetic generator writes for promtool carry timestamps in
seconds, so ``import_openmetrics`` rewrites each sample line's timestamp and drops the comment lines.
``/internal/force_flush`` makes the samples searchable; ``import_openmetrics`` then returns once
the server counts every sample it was sent.

Two VictoriaMetrics 1.79 behaviours meet here, and together they made a collect from a fresh
server differ from run to run:

- An import request is parsed in blocks by several workers at once, and a series new to the
  server that spans two blocks can be registered twice: two internal series ids for one label set
  (``vm_new_timeseries_created_total`` was 3,538 and 3,553 for the same 3,457 series in two runs).
  Queries merge them by labels, and each id is in the per-day series index only for the days it
  has samples, so which id holds which samples changes from one fresh server to the next.
- A query whose time range ends exactly at 00:00:00.000 UTC does not look in that day's index
  (``TimeRange.DateRange`` subtracts 1 ms from the end). A sample stamped at that midnight whose
  id has no sample before it is invisible to such a query, though stored.

The collector's requests therefore never end on a UTC midnight (``analyzer.prom.fetch``), and the
count below reaches 1 s past the last sample: counted up to the last sample itself (a midnight
here), a run held "609,446 of the 609,447 samples" for as long as one waited.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from processes import stop_process

VICTORIA = shutil.which("victoria-metrics") or "/usr/bin/victoria-metrics"
CHUNK_BYTES = 8 << 20


@dataclass
class VictoriaServer:
    """A running test server."""

    url: str
    data_dir: Path
    log: Path
    process: subprocess.Popen[bytes]


def require_victoria() -> None:
    """Skip (or fail under CI) when victoria-metrics is not installed."""
    if Path(VICTORIA).is_file():
        return
    message = f"victoria-metrics not installed ({VICTORIA}); apt-get install victoria-metrics"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_victoria(workdir: Path) -> VictoriaServer:
    """Start victoria-metrics on an empty data dir and wait for ``/health``."""
    data = workdir / "vmdata"
    log = workdir / "victoria.log"
    for _attempt in range(3):  # the probed port can be taken before the server binds it
        port = _free_port()
        with log.open("wb") as handle:
            process = subprocess.Popen(
                [
                    VICTORIA,
                    f"-httpListenAddr=127.0.0.1:{port}",
                    f"-storageDataPath={data}",
                    "-retentionPeriod=100y",
                    # Both as for a store that was just backfilled: no answer held back for
                    # recent data (30 s by default, irrelevant for the test's past day), and no
                    # rollup result cached while the import was still arriving (the count in
                    # ``_wait_until_stored`` is asked again and again).
                    "-search.latencyOffset=0s",
                    "-search.disableCache",
                    "-loggerLevel=ERROR",
                ],
                stdout=handle,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        return VictoriaServer(url, data, log, process)
            except OSError:
                pass
            time.sleep(0.1)
        stop_victoria(VictoriaServer(url, data, log, process))
    raise RuntimeError(f"victoria-metrics did not become ready: {log.read_text()[-2000:]}")


def stop_victoria(server: VictoriaServer) -> None:
    """Stop the server we started (by its own process handle)."""
    stop_process(server.process)


def _millisecond_line(line: str) -> str:
    """``name{labels} value 1730419200.5`` → ``name{labels} value 1730419200500``."""
    head, _, stamp = line.rpartition(" ")
    return f"{head} {round(float(stamp) * 1000)}\n"


def _stored_samples(server: VictoriaServer, first_ms: int, last_ms: int) -> int:
    """How many samples the server holds between two times (both included)."""
    # Evaluated 1 s past the last sample: a range ending on a UTC midnight misses that day's
    # newly registered series (see the module docstring).
    at_ms = last_ms + 1000
    span_s = (at_ms - first_ms) // 1000 + 1
    query = f'sum(count_over_time({{__name__!=""}}[{span_s}s]))'
    params = urllib.parse.urlencode({"query": query, "time": f"{at_ms / 1000:.3f}"})
    with urllib.request.urlopen(f"{server.url}/api/v1/query?{params}", timeout=60) as response:
        result = json.loads(response.read())["data"]["result"]
    return int(float(result[0]["value"][1])) if result else 0


def _wait_until_stored(server: VictoriaServer, sent: int, first_ms: int, last_ms: int) -> None:
    deadline = time.monotonic() + 60
    stored = -1
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{server.url}/internal/force_flush", timeout=60) as response:
            assert response.status == 200
        stored = _stored_samples(server, first_ms, last_ms)
        if stored == sent:
            return
        time.sleep(0.5)
    raise RuntimeError(f"victoria-metrics holds {stored} of the {sent} samples imported")


def import_openmetrics(server: VictoriaServer, openmetrics: Path) -> int:
    """Import an OpenMetrics file (timestamps in seconds); returns the number of samples sent."""
    sent = 0
    batch: list[str] = []
    size = 0
    first_ms, last_ms = 2**63, 0

    def post() -> None:
        body = "".join(batch).encode()
        request = urllib.request.Request(
            f"{server.url}/api/v1/import/prometheus", data=body, method="POST"
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status in (200, 204), response.status

    with openmetrics.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip() or line.startswith("#"):
                continue
            sample = _millisecond_line(line.rstrip("\n"))
            stamp = int(sample.rsplit(" ", 1)[1])
            first_ms, last_ms = min(first_ms, stamp), max(last_ms, stamp)
            batch.append(sample)
            size += len(line)
            sent += 1
            if size >= CHUNK_BYTES:
                post()
                batch, size = [], 0
    if batch:
        post()
    _wait_until_stored(server, sent, first_ms, last_ms)
    return sent
