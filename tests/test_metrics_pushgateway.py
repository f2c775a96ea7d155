"""``--pushgateway``: a real Pushgateway on 127.0.0.1, scraped by a real Prometheus, queried back.

The round trip an alert sees: analyzer pushes, Prometheus scrapes the Pushgateway (honor_labels),
and the values read through Prometheus' HTTP API equal the run's report.json. A failed run
after a success must leave the last success's time and numbers in place (POST of the status
families only), and a Pushgateway that cannot be reached must end in exit 5 with the report
written.
"""

from __future__ import annotations

import json
import socket
import urllib.request
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from http_stub import Recorded, Reply, serve
from monthly_history import PoolTruth, write_history
from processes import stop_process
from pushgateway_server import (
    Server,
    query,
    require_binaries,
    start_pushgateway,
    start_scraping_prometheus,
    wait_for,
)
from reliability_doc import documented_exit
from report_snapshots import tiny_cluster

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server]]:
    """(pushgateway, prometheus scraping it), stopped after the module."""
    require_binaries()
    gateway = start_pushgateway(tmp_path_factory.mktemp("pushgateway"))
    try:
        target = gateway.url.removeprefix("http://")
        prometheus = start_scraping_prometheus(tmp_path_factory.mktemp("prom"), target)
        try:
            yield gateway, prometheus
        finally:
            stop_process(prometheus.process)
    finally:
        stop_process(gateway.process)


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("snap") / "snap"
    write_snapshot(tiny_cluster(), path)
    return path


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _value(result: list[dict[str, object]]) -> float:
    assert len(result) == 1, result
    return float(result[0]["value"][1])  # type: ignore[index]


def _gateway_text(gateway: Server) -> str:
    with urllib.request.urlopen(f"{gateway.url}/metrics", timeout=10) as response:
        text: str = response.read().decode()
    return text


def test_nightly_push_round_trip_then_a_failure_keeps_the_last_success(
    servers: tuple[Server, Server], snapshot: Path, tmp_path: Path
) -> None:
    gateway, prometheus = servers
    out = tmp_path / "out"
    result = _run("report", "nightly", str(snapshot), "--out", str(out),
                  "--pushgateway", gateway.url)  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "2026-11-01" / "report.json").read_text())
    cards = {k: v["value"] for k, v in report["summary"].items()}
    # Seen through Prometheus, with the group's labels (honor_labels keeps job="analyzer").
    sel = '{job="analyzer",command="nightly"}'
    assert _value(wait_for(prometheus.url, f"analyzer_run_success{sel}")) == 1
    last = _value(wait_for(prometheus.url, f"analyzer_run_last_success_timestamp_seconds{sel}"))
    got = _value(wait_for(prometheus.url, f"analyzer_nightly_nodes_over_threshold{sel}"))
    assert got == cards["nodes_with_breaches"] == 1  # the tiny cluster's one hot node
    got = _value(wait_for(prometheus.url, f"analyzer_nightly_breach_node_seconds{sel}"))
    assert got == cards["breach_node_seconds"] == 21600  # 360 minutes over 65 %
    got = _value(wait_for(prometheus.url, f"analyzer_nightly_coverage_ratio{sel}"))
    assert got == pytest.approx(cards["coverage_pct"] / 100)
    got = _value(
        wait_for(
            prometheus.url, 'analyzer_nightly_fragmentation_ratio{resource="cpu",command="nightly"}'
        )
    )
    assert got == pytest.approx(cards["fragmentation_pct"] / 100)

    # A failed run (a day without data: exit 2) after it.
    failed = _run("report", "nightly", str(snapshot), "--out", str(out),
                  "--pushgateway", gateway.url, "--date", "2020-01-01")  # fmt: skip
    assert failed.exit_code == 2
    assert _value(wait_for(prometheus.url, f"analyzer_run_success{sel} == 0")) == 0
    assert _value(query(prometheus.url, f"analyzer_run_exit_code{sel}")) == 2
    # The last success and the report's numbers are the earlier run's, in the Pushgateway
    # itself and in what Prometheus scraped after the failure.
    text = _gateway_text(gateway)
    assert 'analyzer_run_success{command="nightly",instance="",job="analyzer"} 0' in text
    assert (
        _value(query(prometheus.url, f"analyzer_run_last_success_timestamp_seconds{sel}")) == last
    )
    assert _value(query(prometheus.url, f"analyzer_nightly_breach_node_seconds{sel}")) == 21600


def test_monthly_push_keeps_an_odd_pool_name_whole(
    servers: tuple[Server, Server], tmp_path: Path
) -> None:
    gateway, prometheus = servers
    name = 'team "a"\\gpu\nline two\u2028three'  # U+2028: a line break the format leaves as is
    write_history(tmp_path / "h", date(2026, 9, 1), 30, [PoolTruth(name)])
    result = _run("report", "monthly", str(tmp_path / "h"), "--out", str(tmp_path / "r"),
                  "--month", "2026-09", "--pushgateway", gateway.url)  # fmt: skip
    assert result.exit_code == 0, result.output
    found = wait_for(prometheus.url, 'analyzer_monthly_nodes_to_add{command="monthly"}')
    assert [r["metric"]["pool"] for r in found] == [name]  # type: ignore[index]
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    decision = report["pools"][0]["decision"]
    assert _value(found) == (decision["nodes"] if decision["action"] == "add" else 0)
    # Both commands' groups live side by side: the monthly push did not replace the nightly's.
    assert 'command="monthly"' in _gateway_text(gateway)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_pushgateway_exits_5_with_the_report_written(
    snapshot: Path, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    prom = tmp_path / "analyzer-nightly.prom"
    result = _run("report", "nightly", str(snapshot), "--out", str(tmp_path / "out"),
                  "--pushgateway", url, "--metrics-textfile", str(prom))  # fmt: skip
    assert result.exit_code == documented_exit("metrics-push-failed") == 5
    error = [line for line in result.output.splitlines() if line.startswith("analyzer: error:")]
    assert len(error) == 1 and url in error[0] and "the output is written" in error[0]
    assert "exit code: 0" in error[0] and "--pushgateway" in error[0]
    assert (tmp_path / "out" / "2026-11-01" / "report.json").is_file()
    assert "analyzer_run_success" in prom.read_text()  # the other channel was still written


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (("--pushgateway", "ftp://gw:9091"), "not an http(s) URL"),
        (("--pushgateway", "http://user:s3cr3t@gw:9091"), "user name/password"),
        (("--pushgateway-token-env", "TOKEN"), "only with --pushgateway"),
        (("--pushgateway", "http://gw:9091", "--pushgateway-token-env", "s3cr3t-value!"), "not a valid environment variable name"),
    ],
)  # fmt: skip
def test_bad_pushgateway_options_are_refused_before_any_work(
    snapshot: Path, tmp_path: Path, args: tuple[str, ...], text: str
) -> None:
    result = _run("report", "nightly", str(snapshot), "--out", str(tmp_path / "out"), *args)
    assert result.exit_code == documented_exit("metrics-push-bad-option")
    assert text in result.output and "s3cr3t" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_the_token_is_sent_never_printed_and_a_refusal_is_not_retried(
    snapshot: Path, tmp_path: Path
) -> None:
    token = "tok-3f9a"

    def gateway(request: Recorded) -> Reply:
        ok = request.headers.get("Authorization") == f"Bearer {token}"
        return Reply(200 if ok else 401, b"" if ok else b"unauthorized\n", "text/plain")

    with serve(gateway) as stub:
        env = {"PGTOKEN": token}
        result = CliRunner(env=env).invoke(main, [
            "report", "nightly", str(snapshot), "--out", str(tmp_path / "out"),
            "--pushgateway", stub.url, "--pushgateway-token-env", "PGTOKEN"])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert [(r.method, r.path) for r in stub.requests] == [
            ("PUT", "/metrics/job/analyzer/command/nightly")
        ]
        stub.requests.clear()
        result = CliRunner(env={"PGTOKEN": "wrong-token"}).invoke(main, [
            "report", "nightly", str(snapshot), "--out", str(tmp_path / "out"),
            "--pushgateway", stub.url, "--pushgateway-token-env", "PGTOKEN"])  # fmt: skip
        assert result.exit_code == documented_exit("metrics-push-failed")
        assert "HTTP 401" in result.output and "1 try" in result.output
        assert "wrong-token" not in result.output and token not in result.output
        assert len(stub.requests) == 1  # a refusal is not retried


def test_a_failing_pushgateway_is_tried_twice(snapshot: Path, tmp_path: Path) -> None:
    with serve(lambda _r: Reply(503, b"overloaded\n", "text/plain")) as stub:
        result = _run("report", "nightly", str(snapshot), "--out", str(tmp_path / "out"),
                      "--pushgateway", stub.url)  # fmt: skip
        assert result.exit_code == documented_exit("metrics-push-failed")
        assert "HTTP 503: overloaded" in result.output and "2 tries" in result.output
        assert len(stub.requests) == 2


def test_the_config_file_sets_the_pushgateway_for_every_command(
    snapshot: Path, tmp_path: Path
) -> None:
    with serve(lambda _r: Reply(200, b"", "text/plain")) as stub:
        config = tmp_path / "analyzer.yaml"
        config.write_text(
            f"pushgateway: {stub.url}\n"
            f"report-nightly:\n  metrics_textfile: {tmp_path / 'nightly.prom'}\n"
        )
        result = _run("--config", str(config), "report", "nightly", str(snapshot),
                      "--out", str(tmp_path / "out"))  # fmt: skip
        assert result.exit_code == 0, result.output
        assert [r.path for r in stub.requests] == ["/metrics/job/analyzer/command/nightly"]
        assert "analyzer_nightly_nodes 4" in (tmp_path / "nightly.prom").read_text()
