"""``analyzer check`` against real Prometheus servers holding the small hand-specified cluster."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest
import small_cluster as sc
from click.testing import CliRunner
from conftest import PROMETHEUS

from analyzer.cli import main

pytestmark = pytest.mark.prometheus


def _check(url: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["check", "--prometheus", url, "--end", str(sc.END), *args])
    return result.exit_code, result.stdout, result.stderr


def test_usable_server_reports_version_metrics_and_conventions(
    small_prometheus: Callable[..., object],
) -> None:
    server = small_prometheus(convention="node-name")
    code, out, err = _check(server.url, "--since", "1h", "--format", "json")  # type: ignore[attr-defined]
    assert code == 0, err
    report = json.loads(out)
    # The server's own `prometheus --version` line: "prometheus, version 2.42.0+ds (branch: ...".
    banner = subprocess.run([PROMETHEUS, "--version"], capture_output=True, text=True, check=True)
    assert f"version {report['version']} " in banner.stdout + banner.stderr
    assert report["server"] == "Prometheus" and report["verdict"] == "usable"
    assert report["usable"] is True and report["problems"] == []
    metrics = {m["metric"]: m for m in report["metrics"]}
    assert metrics["kube_pod_info"]["present"] and metrics["kube_pod_info"]["coverage"] == 1.0
    assert metrics["node_cpu_seconds_total"]["series"] == 2 * 2 * 5  # nodes × cpus × modes
    assert metrics["kube_node_labels"]["present"] is False  # optional, not exported by the fixture
    assert report["conventions"]["instance_convention"] == "node-name"
    assert report["conventions"]["exported_labels"] == []
    assert report["conventions"]["nodes_with_node_exporter"] == 2


def test_table_names_host_ip_and_exported_label_conventions(
    small_prometheus: Callable[..., object],
) -> None:
    server = small_prometheus(convention="host-ip", honor_labels=False)
    code, out, _ = _check(server.url, "--since", "1h")  # type: ignore[attr-defined]
    assert code == 0
    assert "instance = hostIP:port, mapped via kube_node_info internal_ip" in out
    assert "exported_* (scraped without honor_labels)" in out
    assert "Result: usable (exit 0)" in out


def test_missing_source_is_not_usable_and_partial_coverage_partially_usable(
    small_prometheus: Callable[..., object],
) -> None:
    server = small_prometheus(node_exporter=False)
    code, out, _ = _check(server.url, "--since", "1h", "--format", "json")  # type: ignore[attr-defined]
    assert code == 3
    report = json.loads(out)
    assert report["verdict"] == "not usable" and report["missing_sources"] == ["node-exporter"]
    # one line for the source, with its fix, instead of one per metric
    assert len(report["problems"]) == 1
    assert report["problems"][0].startswith("node-exporter: no series in the range")
    assert "deploy node-exporter (" in report["problems"][0]
    assert report["conventions"]["node_exporter_instance"] == "unknown, no node-exporter series"
    # A range twice as long as the data: present, but covering about half of it.
    full = small_prometheus(convention="node-name")
    code, out, _ = _check(full.url, "--since", "2h", "--format", "json")  # type: ignore[attr-defined]
    assert code == 3
    report = json.loads(out)
    assert report["verdict"] == "partially usable" and report["missing_sources"] == []
    coverage = {m["metric"]: m["coverage"] for m in report["metrics"]}
    assert 0.45 <= coverage["kube_node_info"] <= 0.6
    code, out, _ = _check(full.url, "--since", "2h")  # type: ignore[attr-defined]
    assert "Result: partially usable (exit 3): collect writes a snapshot with gaps:" in out
