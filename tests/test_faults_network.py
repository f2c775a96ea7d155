"""Every network fault a nightly job meets ends in one line, with its documented exit code, in
bounded time (docs/reliability.md, "Prometheus and the network").

Each test drives the real CLI (``python -m analyzer`` in a subprocess) against a misbehaving
server on 127.0.0.1 (tests/fault_servers.py, tests/http_stub.py) or a proxy in front of the real
Prometheus fixture, with small ``--timeout``/``--deadline`` values. It checks the exit code
docs/reliability.md gives, that stderr ends in one ``analyzer: error:`` line naming the server or
query and the fix, that no traceback and no credential (given by ``--token-env``) is printed, and
that no output directory is left behind. A run that hangs fails on the subprocess timeout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pandas as pd
import pytest
import small_cluster as sc
from fault_servers import (
    Answer,
    hang,
    passthrough,
    proxy,
    refused_url,
    socket_server,
    trickle,
    with_warning,
)
from http_stub import Recorded, Reply, matrix, serve
from reliability_doc import documented_exit

from analyzer.core.durations import parse_duration
from analyzer.core.snapshot import read_snapshot

ROOT = Path(__file__).resolve().parents[1]
TOKEN_ENV = "ANALYZER_FAULT_TEST_TOKEN"
TOKEN = "fault-token-7f3a9c-never-printed"
RUN_LIMIT_SECONDS = 120  # a run still going after this has hung: the test fails
# Quick flags: a fault must end within a few seconds here.
FAST = ("--timeout", "1", "--deadline", "30s", "--parallelism", "2")


@pytest.fixture
def servers() -> Iterator[ExitStack]:
    """Where a test starts its servers: all of them, and their threads, stop at teardown."""
    with ExitStack() as stack:
        yield stack


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m analyzer ARGS`` with the token in the environment; fails the test on a hang."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANALYZER_")}
    env.update({"PYTHONPATH": str(ROOT), TOKEN_ENV: TOKEN})
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        capture_output=True,
        text=True,
        timeout=RUN_LIMIT_SECONDS,
        env=env,
        cwd=ROOT,
        check=False,
    )


def collect_args(url: str, out: Path, *extra: str) -> list[str]:
    return ["collect", "--prometheus", url, "--token-env", TOKEN_ENV, "--out", str(out), *extra]


def assert_one_line_failure(
    proc: subprocess.CompletedProcess[str], code: int, *needles: str, out: Path | None = None
) -> str:
    """Exit ``code``, one last ``analyzer: error:`` line holding ``needles``, no traceback, no
    token, nothing left at ``out``; returns that line."""
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert lines, "no message on stderr"
    last = lines[-1]
    assert last.startswith("analyzer: error: "), proc.stderr[-2000:]
    for needle in needles:
        assert needle in last, (needle, last)
    assert "Traceback" not in proc.stderr
    assert TOKEN not in proc.stderr and TOKEN not in proc.stdout
    if out is not None:
        assert not out.exists(), f"{out} was left behind"
        assert not list(out.parent.glob(f".{out.name}*")), "a temporary folder was left behind"
    return last


# -- servers that fail at the transport ----------------------------------------------------------


def test_net_refused(tmp_path: Path) -> None:
    url = refused_url()
    out = tmp_path / "snap"
    proc = run_cli(*collect_args(url, out, *FAST))
    assert_one_line_failure(
        proc, documented_exit("net-refused"), f"cannot reach {url}", "--prometheus", out=out
    )


def test_net_hang_stops_after_the_tries_of_one_request(tmp_path: Path, servers: ExitStack) -> None:
    # Accepts and never answers. Before: every request used its tries, then the run went on
    # opening connections for the next ones (11 min at default settings).
    out = tmp_path / "snap"
    server = servers.enter_context(socket_server(hang))
    proc = run_cli(*collect_args(server.url, out, *FAST))
    connections = server.connections
    last = assert_one_line_failure(
        proc,
        documented_exit("net-hang"),
        f"{server.url} did not answer query ",
        "within 1s",
        "--timeout",
        out=out,
    )
    assert "(2 tries)" in last
    # 2 requests in flight (--parallelism 2), each tried twice; nothing new once one gave up.
    assert 1 <= connections <= 4, connections


def test_net_deadline_names_what_was_in_flight(tmp_path: Path, servers: ExitStack) -> None:
    # A per-request timeout longer than the whole run's deadline: the deadline ends it.
    out = tmp_path / "snap"
    server = servers.enter_context(socket_server(hang))
    proc = run_cli(*collect_args(server.url, out, "--timeout", "60", "--deadline", "2s"))
    last = assert_one_line_failure(
        proc,
        documented_exit("net-deadline"),
        "--deadline of 2s passed while waiting for query ",
        out=out,
    )
    assert server.url in last and "raise --deadline" in last


def test_net_slow_body_is_cut_at_the_deadline(tmp_path: Path, servers: ExitStack) -> None:
    # Headers at once, then a byte every 0.2 s: no single read ever waits --timeout.
    out = tmp_path / "snap"
    server = servers.enter_context(socket_server(trickle))
    proc = run_cli(*collect_args(server.url, out, "--timeout", "5", "--deadline", "2s"))
    assert_one_line_failure(
        proc, documented_exit("net-slow"), "--deadline of 2s passed", "query ", out=out
    )


def test_net_slow_answers_within_the_timeout_are_collected(
    tmp_path: Path, servers: ExitStack, small_prometheus: Callable[..., object]
) -> None:
    # Every answer 0.3 s late, below --timeout 2: nothing is retried and the snapshot is the one
    # collected directly.
    import time

    target = small_prometheus().url  # type: ignore[attr-defined]

    def late(request: Recorded, answer: Answer) -> Reply:
        time.sleep(0.3)
        return passthrough(answer)

    url = servers.enter_context(proxy(target, late))
    slow = run_cli(*collect_args(url, tmp_path / "slow", *_small_range(), "--timeout", "2"))
    direct = run_cli(*collect_args(target, tmp_path / "direct", *_small_range()))
    assert slow.returncode == direct.returncode == 0, slow.stderr[-2000:]
    a, b = read_snapshot(tmp_path / "direct"), read_snapshot(tmp_path / "slow")
    for table in ("nodes", "pods", "node_usage", "pod_usage"):
        pd.testing.assert_frame_equal(getattr(a, table), getattr(b, table))


def test_net_zero_timeout_or_parallelism_is_bad_input(tmp_path: Path, servers: ExitStack) -> None:
    # Before: 0 silently became the default (120 s, 4 workers). No request may be sent.
    out = tmp_path / "snap"
    server = servers.enter_context(socket_server(hang))
    for flag, value in (("--timeout", "0"), ("--parallelism", "0"), ("--deadline", "0s")):
        proc = run_cli(*collect_args(server.url, out, flag, value))
        assert_one_line_failure(proc, documented_exit("net-zero-limit"), flag, out=out)
    assert server.connections == 0


# -- servers that answer badly -------------------------------------------------------------------


def test_net_5xx_is_retried_then_succeeds(
    servers: ExitStack, tmp_path: Path, small_prometheus: Callable[..., object]
) -> None:
    # Every request's first try gets a bare HTTP 500 (a proxy hiccup); the second goes through.
    # Before: 500 was not retried and the run ended "is not a Prometheus API".
    target = small_prometheus().url  # type: ignore[attr-defined]
    seen: set[str] = set()
    failed: list[str] = []

    def first_try_fails(request: Recorded, answer: Answer) -> Reply:
        key = request.path + json.dumps(request.params, sort_keys=True)
        if key not in seen:
            seen.add(key)
            failed.append(key)
            return Reply(500, b"Internal Server Error", "text/plain")
        return passthrough(answer)

    out = tmp_path / "snap"
    url = servers.enter_context(proxy(target, first_try_fails))
    proc = run_cli(*collect_args(url, out, *_small_range(), "--timeout", "10"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and TOKEN not in proc.stderr + proc.stdout
    assert failed, "the proxy failed no request"
    snapshot = read_snapshot(out)
    assert set(snapshot.nodes["node"]) == set(sc.NODES)


@pytest.mark.parametrize(
    ("status", "body", "content_type", "needles"),
    [
        (503, b"<html>Service Unavailable</html>", "text/html", ("server error HTTP 503 from",)),
        (500, b"oops", "text/plain", ("server error HTTP 500 from",)),
    ],
)
def test_net_5xx_always_reports_the_status(
    servers: ExitStack,
    tmp_path: Path,
    status: int,
    body: bytes,
    content_type: str,
    needles: tuple[str, ...],
) -> None:
    out = tmp_path / "snap"
    stub = servers.enter_context(serve(lambda r: Reply(status, body, content_type)))
    proc = run_cli(*collect_args(stub.url, out, *FAST))
    tries = len(stub.requests)
    last = assert_one_line_failure(
        proc, documented_exit("net-5xx"), *needles, "after 4 tries", out=out
    )
    assert "/api/v1/query" in last and "not a Prometheus API" not in last
    # one failing request's 4 tries, plus what the other worker had in flight: bounded
    assert 4 <= tries <= 8, tries


@pytest.mark.parametrize("command", ["check", "aggregate", "report nightly"])
def test_net_5xx_ends_every_network_command_in_one_line(
    tmp_path: Path, servers: ExitStack, command: str
) -> None:
    # The same fault through the other commands that read Prometheus: the same one line.
    out = tmp_path / "out"
    stub = servers.enter_context(serve(lambda r: Reply(503, b"busy", "text/plain")))
    common = ("--prometheus", stub.url, "--token-env", TOKEN_ENV, *FAST)
    args = {
        "check": ("check", *common, "--since", "1h"),
        "aggregate": ("aggregate", *common, "--durations", "1h"),
        "report nightly": ("report", "nightly", *common, "--out", str(out)),
    }[command]
    last = assert_one_line_failure(
        run_cli(*args), documented_exit("net-5xx"), "server error HTTP 503 from", out=out
    )
    assert "after 4 tries" in last


@pytest.mark.parametrize(
    ("code", "status", "needle"),
    [
        (documented_exit("net-401"), 401, "401 Unauthorized; check --token-file/--token-env"),
        (documented_exit("net-403"), 403, "403 Forbidden"),
    ],
)
def test_net_auth_refusals(
    tmp_path: Path, servers: ExitStack, code: int, status: int, needle: str
) -> None:
    out = tmp_path / "snap"
    stub = servers.enter_context(serve(lambda r: Reply(status, b"denied", "text/plain")))
    proc = run_cli(*collect_args(stub.url, out, *FAST))
    assert stub.requests[0].headers.get("Authorization") == f"Bearer {TOKEN}"  # it was sent
    assert_one_line_failure(proc, code, needle, out=out)


def test_net_truncated_json(tmp_path: Path, servers: ExitStack) -> None:
    # A complete HTTP response whose JSON stops half-way (a proxy's buffer limit).
    # Before: "is not a Prometheus API".
    full = matrix([({"a": "b"}, [(1, "1"), (2, "2")])]).body
    out = tmp_path / "snap"
    stub = servers.enter_context(serve(lambda r: Reply(200, full[: len(full) // 2])))
    proc = run_cli(*collect_args(stub.url, out, *FAST))
    last = assert_one_line_failure(
        proc, documented_exit("net-truncated"), "cut-off or malformed response to query ", out=out
    )
    assert "not a Prometheus API" not in last


def test_net_data_null(tmp_path: Path, servers: ExitStack) -> None:
    out = tmp_path / "snap"
    stub = servers.enter_context(serve(lambda r: Reply.json({"status": "success", "data": None})))
    proc = run_cli(*collect_args(stub.url, out, *FAST))
    assert_one_line_failure(
        proc, documented_exit("net-data-null"), "sent no data for query ", '"data": null', out=out
    )


def _vector(value: object) -> dict[str, object]:
    return {"resultType": "vector", "result": [{"metric": {"pod": "p"}, "value": value}]}


@pytest.mark.parametrize(
    "data",
    [
        _vector([1.0]),
        _vector("7"),
        _vector(None),
        _vector([1.0, "2", "3"]),
        _vector([1.0, "not a number"]),
        {"resultType": "vector", "result": "x"},
        [1, 2],
    ],
    ids=["one-element", "string", "null", "three-elements", "not-a-number", "result-str", "list"],
)
def test_net_odd_shapes(tmp_path: Path, servers: ExitStack, data: object) -> None:
    # Instant queries answer a vector whose value is not a [time, "value"] pair, or data that
    # is no result at all. Before: a 50-line traceback.
    def handler(request: Recorded) -> Reply:
        if request.path.endswith("/query"):
            return Reply.json({"status": "success", "data": data})
        return matrix([])

    out = tmp_path / "snap"
    stub = servers.enter_context(serve(handler))
    proc = run_cli(*collect_args(stub.url, out, *FAST))
    assert_one_line_failure(
        proc,
        documented_exit("net-odd-shape"),
        "sent query ",
        "in a shape analyzer cannot read",
        out=out,
    )


def test_net_422_too_many_points_suggests_chunk_points(tmp_path: Path, servers: ExitStack) -> None:
    # VictoriaMetrics' answer (errorType is the status code, as a string).
    error = (
        'error when executing query="up" on the time range (start=1, end=2, step=60000): '
        "too many points for the given step=60000, start=1 and end=2: 30204; cannot exceed "
        "-search.maxPointsPerTimeseries=30000"
    )
    out = tmp_path / "snap"
    reply = Reply.json({"status": "error", "errorType": "422", "error": error}, 422)
    stub = servers.enter_context(serve(lambda r: reply))
    proc = run_cli(*collect_args(stub.url, out, *FAST))
    last = assert_one_line_failure(
        proc, documented_exit("net-422-points"), "(HTTP 422):", "--max-points-per-request", out=out
    )
    assert "422, 422" not in last


# -- ranges ----------------------------------------------------------------------------------------


def test_net_huge_range_is_refused_before_any_request(tmp_path: Path, servers: ExitStack) -> None:
    # Before: --since 9999d sent ≈ 120,000 requests and grew to 5 GB.
    out = tmp_path / "snap"
    server = servers.enter_context(socket_server(hang))
    proc = run_cli(*collect_args(server.url, out, "--since", "9999d", *FAST))
    assert server.connections == 0
    assert_one_line_failure(
        proc, documented_exit("net-huge-range"), "--max-requests", "shorten the range", out=out
    )


def test_net_range_overflow(tmp_path: Path, servers: ExitStack) -> None:
    # Before: an OverflowError traceback.
    out = tmp_path / "snap"
    server = servers.enter_context(socket_server(hang))
    proc = run_cli(*collect_args(server.url, out, "--since", "99999999d", *FAST))
    assert server.connections == 0
    assert_one_line_failure(proc, documented_exit("net-range-overflow"), "--since", out=out)


# -- answers that are right but easy to mishandle -----------------------------------------------

WARNING = "partial response: store gateway 10.0.0.9:10901 unavailable"


def _small_range(start: int = sc.T0) -> tuple[str, ...]:
    return ("--start", str(start), "--end", str(sc.END), "--step", f"{sc.STEP}s")


def test_net_thanos_warnings_are_shown_by_every_command(
    servers: ExitStack, tmp_path: Path, small_prometheus: Callable[..., object]
) -> None:
    # Before: aggregate --prometheus dropped them (collect and check printed them).
    target = small_prometheus().url  # type: ignore[attr-defined]
    url = servers.enter_context(
        proxy(target, lambda request, answer: with_warning(answer, WARNING))
    )
    runs = {
        "collect": run_cli(*collect_args(url, tmp_path / "snap", *_small_range())),
        "check": run_cli("check", "--prometheus", url, *_small_range()),
        "aggregate": run_cli(
            "aggregate",
            "--prometheus",
            url,
            "--at",
            str(sc.END),
            "--durations",
            "30m",
            "--step",
            f"{sc.STEP}s",
            "--format",
            "json",
        ),
    }
    for command, proc in runs.items():
        assert proc.returncode == 0, (command, proc.stderr)
        assert WARNING in proc.stderr + proc.stdout, command
        assert "Traceback" not in proc.stderr
    assert WARNING in json.dumps(read_snapshot(tmp_path / "snap").meta.warnings)


def _left_open(request: Recorded, answer: Answer) -> Reply:
    """Prometheus ≥ 3.0 / VictoriaMetrics: ``selector[d]`` at ``t`` holds the samples in
    (t - d, t]; Prometheus 2.42 returns [t - d, t]. Drop the samples on the left edge."""
    if not request.path.endswith("/api/v1/query") or answer.status != 200:
        return passthrough(answer)
    body = json.loads(answer.body)
    if body["data"]["resultType"] != "matrix":
        return passthrough(answer)
    span = re.findall(r"\[([0-9a-z]+)\]", request.params["query"][0])[-1]
    edge = round(float(request.params["time"][0]) - parse_duration(span).total_seconds(), 3)
    for series in body["data"]["result"]:
        series["values"] = [p for p in series["values"] if round(float(p[0]), 3) > edge]
    return Reply(200, json.dumps(body, separators=(",", ":")).encode())


def test_net_left_open_windows_give_the_same_samples(
    servers: ExitStack, tmp_path: Path, small_prometheus: Callable[..., object]
) -> None:
    # The range starts 10 min into the data, so the first raw request's left edge (start minus
    # the 5 min lookback) falls on a sample; --chunk-points 10 puts more edges on samples.
    target = small_prometheus().url  # type: ignore[attr-defined]
    args = (*_small_range(sc.T0 + 600), "--chunk-points", "10")
    closed = run_cli(*collect_args(target, tmp_path / "closed", *args))
    url = servers.enter_context(proxy(target, _left_open))
    opened = run_cli(*collect_args(url, tmp_path / "open", *args))
    for proc in (closed, opened):
        assert proc.returncode == 0, proc.stderr[-2000:]
    a, b = read_snapshot(tmp_path / "closed"), read_snapshot(tmp_path / "open")
    for table in ("nodes", "pods", "node_usage", "pod_usage"):
        pd.testing.assert_frame_equal(getattr(a, table), getattr(b, table), check_like=True)
    # the pods seen before the range are first seen at the earliest sample collect reads
    first_seen = a.pods["first_seen"].dropna().min()
    assert first_seen == pd.Timestamp(sc.T0 + 600 - 300, unit="s", tz="UTC")


def test_net_5xx_on_buildinfo_is_not_taken_for_a_404_by_the_url(
    tmp_path: Path, servers: ExitStack
) -> None:
    # buildinfo takes a 404 or a non-API answer as "no build info here" (VictoriaMetrics,
    # some proxies). It once decided on the error's text, which holds the URL: a server at a
    # port such as 40441 (or a path with 404 in it, as here) answering 503 had its failure
    # swallowed after the run had stopped, and `check` said only that "another request
    # failed". The 503 must be the message whatever the URL holds.
    stub = servers.enter_context(serve(lambda r: Reply(503, b"busy", "text/plain")))
    args = ("check", "--prometheus", f"{stub.url}/p404", "--token-env", TOKEN_ENV, *FAST)
    last = assert_one_line_failure(
        run_cli(*args, "--since", "1h"), documented_exit("net-5xx"), "server error HTTP 503 from"
    )
    assert "buildinfo" in last and "after 4 tries" in last
