"""Bad input (issue item 7): one clear line, the documented exit code, no snapshot left behind."""

from __future__ import annotations

import json
import shutil
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
import small_cluster as sc
from click.testing import CliRunner, Result
from http_stub import Reply, serve

from analyzer.cli import main
from analyzer.core.paths import queries_dir


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _assert_one_line(result: Result, code: int, text: str, out: Path | None = None) -> None:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr  # one line, no traceback
    assert lines[0].startswith("analyzer: error: ") and text in lines[0], lines[0]
    if out is not None:
        assert not out.exists()
        assert not [
            p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}")
        ]  # no temp dirs


def _collect(url: str, out: Path, *extra: str) -> Result:
    return _run(
        "collect",
        "--prometheus",
        url,
        "--since",
        "1h",
        "--end",
        str(sc.END),
        "--out",
        str(out),
        *extra,
    )


def test_unreachable_server(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "snap"
    _assert_one_line(_collect(f"http://127.0.0.1:{port}", out), 1, "cannot reach", out)


@pytest.mark.parametrize(
    ("reply", "text"),
    [
        (Reply(401, b"Unauthorized", "text/plain"), "401 Unauthorized"),
        (Reply(403, b"Forbidden", "text/plain"), "403 Forbidden"),
        (Reply(404, b"404 page not found", "text/plain"), "wrong URL path"),
        (
            Reply(200, b"<html><title>Grafana</title></html>", "text/html"),
            "is not a Prometheus API",
        ),
    ],
)
def test_server_refusals(reply: Reply, text: str, tmp_path: Path) -> None:
    out = tmp_path / "snap"
    with serve(lambda r: reply) as stub:
        _assert_one_line(_collect(stub.url, out), 1, text, out)


def test_rejected_query(small_prometheus: Callable[..., object], tmp_path: Path) -> None:
    server = small_prometheus(convention="node-name")
    profile = tmp_path / "queries"
    shutil.copytree(queries_dir(), profile)
    (profile / "pod_info.promql").write_text("# broken on purpose\nmax by (uid) (kube_pod_info[\n")
    out = tmp_path / "snap"
    result = _collect(server.url, out, "--queries-dir", str(profile))  # type: ignore[attr-defined]
    _assert_one_line(result, 1, "rejected query pod_info (HTTP 400, bad_data)", out)


def test_no_kube_state_metrics_data_in_range(
    small_prometheus: Callable[..., object], tmp_path: Path
) -> None:
    server = small_prometheus(convention="node-name")
    out = tmp_path / "snap"
    result = _run(
        "collect",
        "--prometheus",
        server.url,  # type: ignore[attr-defined]
        "--start",
        "2020-01-01T00:00:00Z",
        "--end",
        "2020-01-01T01:00:00Z",
        "--out",
        str(out),
    )
    _assert_one_line(result, 3, "no kube-state-metrics data between 2020-01-01T00:00:00Z", out)


def test_empty_range(tmp_path: Path) -> None:
    out = tmp_path / "snap"
    result = _run(
        "collect",
        "--prometheus",
        "http://127.0.0.1:1",
        "--start",
        "1000",
        "--end",
        "1000",
        "--out",
        str(out),
    )
    _assert_one_line(result, 2, "range is empty", out)
    result = _run(
        "collect",
        "--prometheus",
        "http://127.0.0.1:1",
        "--start",
        "1000",
        "--end",
        "1030",
        "--out",
        str(out),
    )
    # shorter than one step: the step's fault, named with the options that gave the range
    _assert_one_line(result, 2, "--step: 1m leaves no whole step inside --start/--end (30s)", out)


def test_unknown_config_option(tmp_path: Path) -> None:
    config = tmp_path / "analyzer.yaml"
    config.write_text("prometheus: http://127.0.0.1:1\ncollect:\n  stepp: 1m\n")
    out = tmp_path / "snap"
    result = _run("--config", str(config), "collect", "--since", "1h", "--out", str(out))
    _assert_one_line(result, 2, "unknown option collect.stepp", out)


def test_missing_url_and_bad_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANALYZER_PROMETHEUS_URL", raising=False)
    out = tmp_path / "snap"
    _assert_one_line(
        _run("collect", "--since", "1h", "--out", str(out)), 2, "--prometheus: no URL given", out
    )
    result = _run(
        "collect", "--prometheus", "http://127.0.0.1:1", "--step", "1.5s", "--out", str(out)
    )
    _assert_one_line(result, 2, "--step", out)


def test_collect_cli_writes_snapshot_and_config_gives_the_url(
    small_prometheus: Callable[..., object], tmp_path: Path
) -> None:
    server = small_prometheus(convention="node-name")
    config = tmp_path / "analyzer.toml"
    config.write_text(f'prometheus = "{server.url}"\n[collect]\nstep = "1m"\n')  # type: ignore[attr-defined]
    out = tmp_path / "snap"
    result = _run(
        "--config",
        str(config),
        "collect",
        "--start",
        str(sc.T0),
        "--end",
        str(sc.END),
        "--out",
        str(out),
        "--priority-class",
        "high=10000",
    )
    assert result.exit_code == 0, result.stderr
    assert "2 nodes, 4 pods" in result.stdout
    inspected = _run("inspect", str(out), "--table", "pods", "--format", "json")
    assert inspected.exit_code == 0
    web = next(p for p in json.loads(inspected.stdout) if p["uid"] == sc.UID_WEB)
    # The inspect contract: uid, namespace, name, node, requests/limits maps, created, finished.
    assert web["requests"]["cpu"] == 1100 and web["limits"]["memory"] == 544 * sc.MI
    assert (web["namespace"], web["name"], web["node"]) == (
        "default",
        "web-7d4b9c8f5-x2x9q",
        "node-a",
    )
    assert web["created"] == "2026-10-31T23:50:00Z" and web["finished"] is None
    assert (web["priority_class"], web["priority"]) == ("high", 10000)
    nodes = json.loads(_run("inspect", str(out), "--table", "nodes", "--format", "json").stdout)
    assert {n["node"]: n["allocatable"]["cpu"] for n in nodes} == {"node-a": 3500, "node-b": 7500}
