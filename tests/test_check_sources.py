"""``analyzer check`` on servers that lack a source or are not Prometheus (issue 15, item 17).

Real servers throughout: Prometheus backfilled from the synthetic generator's OpenMetrics with the
kube-state-metrics and/or cAdvisor families left out, a real VictoriaMetrics (Debian's
``victoria-metrics``; skipped without it, failed under ``CI=true``), and, for what an upstream
VictoriaMetrics build or Grafana Mimir says about itself, loopback stubs answering as they do.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from http_stub import Recorded, Reply, serve
from reliability_doc import documented_exit
from victoria import require_victoria, start_victoria, stop_victoria

from analyzer.cli import main
from analyzer.core.snapshot import read_snapshot
from analyzer.sources import SyntheticSpec, generate, write_openmetrics

KSM_FIX = "deploy kube-state-metrics ("
CADVISOR_FIX = "scrape the kubelet's /metrics/cadvisor endpoint ("
NODE_EXPORTER_FIX = "deploy node-exporter ("


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout


def _stderr(*args: str) -> str:
    return CliRunner().invoke(main, list(args)).stderr


def _families(path: Path) -> set[str]:
    """The metric names an OpenMetrics file holds."""
    names = set()
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line and not line.startswith("#"):
                names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names


@pytest.fixture(scope="module")
def cluster() -> object:
    return generate(SyntheticSpec(seed=5, nodes=3, days=1, step=300))


@pytest.fixture(scope="module")
def families(cluster: object, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    path = tmp_path_factory.mktemp("full") / "full.om"
    write_openmetrics(cluster, path)  # type: ignore[arg-type]
    found = _families(path)
    assert {"kube_pod_info", "node_cpu_seconds_total", "container_cpu_usage_seconds_total"} <= found
    return found


def _without(
    prefixes: tuple[str, ...],
    cluster: object,
    families: set[str],
    prometheus_from_openmetrics: Callable[..., object],
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[str, list[str]]:
    """A real Prometheus holding the cluster minus the families starting with ``prefixes``;
    its URL and the range arguments covering the data."""
    path = tmp_path_factory.mktemp("partial") / f"without-{'-'.join(prefixes)}.om"
    left_out = {name for name in families if name.startswith(prefixes)}
    write_openmetrics(cluster, path, exclude_metrics=left_out)  # type: ignore[arg-type]
    assert not _families(path) & left_out
    server = prometheus_from_openmetrics(path)
    truth = cluster.snapshot  # type: ignore[attr-defined]
    span = ["--start", str(int(truth.start.timestamp())), "--end", str(int(truth.end.timestamp()))]
    return server.url, span  # type: ignore[attr-defined]


@pytest.mark.prometheus
def test_node_exporter_only_is_not_usable_names_both_fixes_like_collect(
    cluster: object,
    families: set[str],
    prometheus_from_openmetrics: Callable[..., object],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    url, span = _without(
        ("kube_", "container_"), cluster, families, prometheus_from_openmetrics, tmp_path_factory
    )
    code, out = _run("check", "--prometheus", url, *span, "--step", "5m")
    assert code == documented_exit("net-check-no-ksm") == 3
    assert "Result: not usable (exit 3)" in out
    assert "partially usable" not in out
    # one line per missing source, each with its fix; node-exporter is there, so no fix for it
    assert out.count(KSM_FIX) == 1 and out.count(CADVISOR_FIX) == 1
    assert NODE_EXPORTER_FIX not in out
    # no claim about a label convention of a source without data
    assert re.search(
        r"^  KSM label convention:\s+unknown, no kube-state-metrics series$", out, re.M
    )
    assert "honor_labels)" not in out
    # node-exporter targets map to kube_node_info's nodes: without them no mapping is claimed
    assert re.search(
        r"^  node-exporter instance:\s+unknown, no kube_node_info to map targets to$", out, re.M
    )
    assert "match no node" not in out
    code, out = _run("check", "--prometheus", url, *span, "--step", "5m", "--format", "json")
    report = json.loads(out)
    assert code == 3 and report["verdict"] == "not usable" and report["usable"] is False
    assert report["missing_sources"] == ["kube-state-metrics", "cadvisor"]
    present = {m["metric"] for m in report["metrics"] if m["present"]}
    assert {"node_cpu_seconds_total", "node_memory_MemTotal_bytes"} <= present
    assert report["conventions"]["instance_convention"] == ""  # nothing to map targets to
    assert _stderr("check", "--prometheus", url, *span, "--step", "5m").splitlines() == [
        "analyzer: not usable (exit 3): no kube-state-metrics, cadvisor data in the range; "
        "the report names the fixes"
    ]
    # "not usable" is what collect does there: exit 3, nothing written
    out = tmp_path_factory.mktemp("collect") / "snap"
    result = CliRunner().invoke(
        main, ["collect", "--prometheus", url, *span, "--step", "5m", "--out", str(out)]
    )
    assert result.exit_code == 3, result.stderr
    assert "no kube-state-metrics data" in result.stderr
    assert not out.exists()


@pytest.mark.prometheus
def test_no_cadvisor_is_not_usable_with_only_the_kubelet_fix(
    cluster: object,
    families: set[str],
    prometheus_from_openmetrics: Callable[..., object],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    url, span = _without(
        ("container_",), cluster, families, prometheus_from_openmetrics, tmp_path_factory
    )
    code, out = _run("check", "--prometheus", url, *span, "--step", "5m", "--format", "json")
    report = json.loads(out)
    assert code == 3 and report["verdict"] == "not usable"
    assert report["missing_sources"] == ["cadvisor"]
    assert [p for p in report["problems"] if "fix:" in p] == [
        p for p in report["problems"] if CADVISOR_FIX in p
    ]
    assert len(report["problems"]) == 1
    # kube-state-metrics is there: its convention is stated
    assert report["conventions"]["kube_state_metrics_labels"] == "plain (honor_labels)"
    # collect agrees: the snapshot is written (nodes, pods, node usage) but partial, exit 3,
    # with the fix; before, it was written with an empty pod_usage and exit 0
    out = tmp_path_factory.mktemp("collect-no-cadvisor") / "snap"
    result = CliRunner().invoke(
        main, ["collect", "--prometheus", url, *span, "--step", "5m", "--out", str(out)]
    )
    assert result.exit_code == 3, result.stderr
    assert "no cAdvisor pod usage" in result.stderr and "/metrics/cadvisor" in result.stderr
    assert read_snapshot(out).pod_usage.empty and len(read_snapshot(out).pods) > 0


# -- server identification ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def victoria_metrics(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real, empty single-node VictoriaMetrics on a loopback port (tests/victoria.py); its URL."""
    require_victoria()
    server = start_victoria(tmp_path_factory.mktemp("victoria"))
    try:
        yield server.url
    finally:
        stop_victoria(server)


def test_real_victoria_metrics_is_named_not_version_unknown(victoria_metrics: str) -> None:
    code, out = _run("check", "--prometheus", victoria_metrics, "--since", "1h")
    first = out.splitlines()[0]
    assert first.startswith(f"Server      {victoria_metrics}  VictoriaMetrics")
    assert "unknown" not in first and "Prometheus" not in first
    # The version is what the server says of itself in its own metrics (Debian's build: nothing).
    with urllib.request.urlopen(f"{victoria_metrics}/metrics", timeout=5) as response:
        own = response.read().decode()
    short = re.search(r'^vm_app_version\{.*short_version="([^"]*)"', own, re.M)
    assert short is not None
    code, out = _run("check", "--prometheus", victoria_metrics, "--since", "1h", "--format", "json")
    report = json.loads(out)
    assert report["server"] == "VictoriaMetrics" and report["version"] == short.group(1)
    # an empty store: every source missing, each with its fix
    assert code == 3 and report["verdict"] == "not usable"
    assert report["missing_sources"] == ["kube-state-metrics", "cadvisor", "node-exporter"]
    text = "\n".join(report["problems"])
    assert all(fix in text for fix in (KSM_FIX, CADVISOR_FIX, NODE_EXPORTER_FIX))


def _api_stub(buildinfo: object, pages: dict[str, Reply]) -> Callable[[Recorded], Reply]:
    """A server answering the Prometheus API with no data, and ``pages`` at other paths."""

    def handler(request: Recorded) -> Reply:
        if request.path == "/api/v1/status/buildinfo":
            return Reply.json({"status": "success", "data": buildinfo})
        if request.path == "/api/v1/query_range":
            return Reply.json({"status": "success", "data": {"resultType": "matrix", "result": []}})
        if request.path == "/api/v1/query":
            return Reply.json({"status": "success", "data": {"resultType": "vector", "result": []}})
        if request.path == "/api/v1/labels":
            return Reply.json({"status": "success", "data": []})
        return pages.get(request.path, Reply(400, b"unsupported path", "text/plain"))

    return handler


def test_upstream_victoria_metrics_build_prints_its_version() -> None:
    # What an upstream v1.79.5 binary answers: empty build info, its name in /-/healthy, the
    # version in the vm_app_version line of /metrics.
    metrics = (
        b'vm_app_version{version="victoria-metrics-20221110-124510-tags-v1.79.5-0-g8d7f3a1", '
        b'short_version="v1.79.5"} 1\nvm_app_uptime_seconds 12.5\n'
    )
    pages = {
        "/-/healthy": Reply(200, b"VictoriaMetrics is Healthy.\n", "text/plain"),
        "/metrics": Reply(200, metrics, "text/plain"),
    }
    with serve(_api_stub({}, pages)) as stub:
        code, out = _run("check", "--prometheus", stub.url, "--since", "1h")
    assert out.splitlines()[0] == f"Server      {stub.url}  VictoriaMetrics v1.79.5"
    assert code == 3


def test_mimir_is_named_from_its_build_info() -> None:
    info = {"application": "Grafana Mimir", "version": "2.10.0", "revision": "b7f1e2c"}
    with serve(_api_stub(info, {})) as stub:
        _, out = _run("check", "--prometheus", stub.url, "--since", "1h")
        probes = [r.path for r in stub.requests if not r.path.startswith("/api/")]
    assert out.splitlines()[0] == f"Server      {stub.url}  Grafana Mimir 2.10.0"
    assert probes == []  # build info said it all: no further probe


def test_a_server_that_names_itself_nowhere_is_said_to_be_unknown() -> None:
    with serve(_api_stub({}, {})) as stub:
        _, out = _run("check", "--prometheus", stub.url, "--since", "1h")
    first = out.splitlines()[0]
    assert "server unknown" in first and "VictoriaMetrics" not in first


def test_a_server_without_build_info_is_named_by_its_health_check() -> None:
    # Prometheus before 2.14 had no build info endpoint (404) but the same /-/healthy text.
    def handler(request: Recorded) -> Reply:
        if request.path == "/api/v1/status/buildinfo":
            return Reply(404, b"404 page not found\n", "text/plain")
        if request.path == "/-/healthy":
            return Reply(200, b"Prometheus Server is Healthy.\n", "text/plain")
        return _api_stub({}, {})(request)

    with serve(handler) as stub:
        _, out = _run("check", "--prometheus", stub.url, "--since", "1h")
    expected = f"Server      {stub.url}  Prometheus (version not reported by the server)"
    assert out.splitlines()[0] == expected
