"""Replays use the cluster's own Kubernetes version, read from the data (issue 24, item 1).

The rule (``analyzer/scheduling/cluster_version.py``): ``--kubernetes-version`` when given; else
the newest kubelet minor of the snapshot's nodes (a kubelet is never newer than the control plane
that runs kube-scheduler); else the default, said in a note. The acceptance case: a real
Prometheus holding a cluster whose kubelets report ``v1.33.4`` → ``collect`` reads the version
and ``whatif`` says it replayed 1.33 and replays exactly as ``--kubernetes-version 1.33`` does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.collect.run import CollectRequest, collect
from analyzer.core.snapshot import Snapshot, write_snapshot
from analyzer.prom.settings import PromSettings
from analyzer.scheduling.cluster_version import (
    FROM_DATA,
    FROM_DEFAULT,
    FROM_OPTION,
    cluster_version,
    newer_version,
    snapshot_version,
)
from analyzer.scheduling.versions import DEFAULT_VERSION
from analyzer.sources import SyntheticSpec, generate, write_openmetrics
from analyzer.whatif.compare import WhatIfSettings, run_whatif


def test_one_version_on_every_node_is_the_clusters() -> None:
    chosen = cluster_version(["v1.33.4"] * 3)
    assert (chosen.version, chosen.source) == ("1.33", FROM_DATA)
    assert "3 nodes" in chosen.detail


def test_nodes_that_differ_give_the_newest_minor_and_say_how_many_run_which() -> None:
    # 3 nodes still on 1.32, 1 upgraded: the control plane already runs 1.33 (skew policy)
    chosen = cluster_version(["v1.32.9", "v1.32.9", "v1.32.1", "v1.33.4-gke.1200"])
    assert (chosen.version, chosen.source) == ("1.33", FROM_DATA)
    assert "1 node on 1.33" in chosen.detail and "3 nodes on 1.32" in chosen.detail


def test_unknown_and_unsupported_versions_do_not_vote() -> None:
    chosen = cluster_version(["", "not-a-version", "v1.9.0", "v1.30.0"])
    assert chosen.version == "1.30"
    assert "1 node" in chosen.detail


def test_no_version_in_the_data_falls_back_to_the_default_and_says_so() -> None:
    chosen = cluster_version(["", ""])
    assert (chosen.version, chosen.source) == (DEFAULT_VERSION, FROM_DEFAULT)
    assert "--kubernetes-version" in chosen.sentence


def test_the_option_wins_over_the_data() -> None:
    chosen = cluster_version(["v1.33.4"], override="1.30")
    assert (chosen.version, chosen.source) == ("1.30", FROM_OPTION)


def test_newer_version_keeps_an_upgraded_nodes_latest_kubelet() -> None:
    assert newer_version("v1.32.9", "v1.33.0") == "v1.33.0"
    assert newer_version("v1.33.10", "v1.33.9") == "v1.33.10"  # numeric, not text order
    assert newer_version("v1.33.1", "") == "v1.33.1"
    assert newer_version("", "v1.31.0") == "v1.31.0"


@pytest.fixture(scope="module")
def old_cluster() -> Snapshot:
    """40 nodes whose kubelets run 1.33: BalancedAllocation's std formula, not 1.36's delta."""
    spec = SyntheticSpec(seed=7, nodes=40, days=0.5, step=300, kubelet_version="v1.33.4")
    return generate(spec).snapshot


def _placements(snapshot: Snapshot, version: str | None) -> tuple[str | None, list[object]]:
    settings = WhatIfSettings(strategies=("kube-default",), workers=1, kubernetes_version=version)
    result = run_whatif(snapshot, settings)
    strategy = next(c for c in result.strategies if c.name == "kube-default")
    return result.kubernetes_version, [strategy.outcomes[0].summary()]


def test_the_replay_uses_the_datas_version_exactly_as_the_option_would(
    old_cluster: Snapshot,
) -> None:
    from_data = _placements(old_cluster, None)
    assert from_data[0] == "1.33"
    assert from_data == _placements(old_cluster, "1.33")
    # and the version matters on this cluster: 1.36's BalancedAllocation places differently
    assert from_data[1] != _placements(old_cluster, "1.36")[1]


def test_an_old_snapshot_without_versions_replays_the_default_and_says_so(
    old_cluster: Snapshot,
) -> None:
    nodes = old_cluster.nodes.drop(columns=["kubelet_version"])
    old = replace(old_cluster, nodes=nodes)
    assert snapshot_version(old).source == FROM_DEFAULT
    result = run_whatif(old, WhatIfSettings(strategies=("most-allocated",), workers=1))
    assert result.kubernetes_version == DEFAULT_VERSION
    assert result.version is not None and result.version.source == FROM_DEFAULT
    assert "the data names no kubelet version" in result.to_dict()["kubernetes_version"]["sentence"]


def test_whatif_json_and_page_state_the_version_and_its_source(
    old_cluster: Snapshot, tmp_path: Path
) -> None:
    snap = tmp_path / "snap"
    write_snapshot(old_cluster, snap)
    runner = CliRunner()
    out = runner.invoke(main, ["whatif", str(snap), "--strategy", "most-allocated",
                               "--workers", "1", "--format", "json"])  # fmt: skip
    assert out.exit_code == 0, out.output
    version = json.loads(out.output)["kubernetes_version"]
    assert (version["version"], version["source"]) == ("1.33", FROM_DATA)
    report = tmp_path / "whatif"
    out = runner.invoke(main, ["report", "whatif", str(snap), "--strategy", "most-allocated",
                               "--workers", "1", "--out", str(report)])  # fmt: skip
    assert out.exit_code == 0, out.output
    page = (report / "report.html").read_text()
    assert "data-kubernetes-version>Replayed as Kubernetes 1.33 (from the data" in page
    saved = json.loads((report / "report.json").read_text())
    assert saved["comparison"]["kubernetes_version"]["version"] == "1.33"


@pytest.mark.prometheus
def test_collect_reads_the_kubelet_version_from_a_real_prometheus(
    prometheus_from_openmetrics: Callable[..., object], tmp_path: Path
) -> None:
    cluster = generate(SyntheticSpec(seed=3, nodes=4, days=1, step=300, kubelet_version="v1.33.4"))
    path = tmp_path / "cluster.om"
    write_openmetrics(cluster, path)
    server = prometheus_from_openmetrics(path)
    truth = cluster.snapshot
    result = collect(
        CollectRequest(
            PromSettings(server.url),  # type: ignore[attr-defined]
            truth.start.to_pydatetime(),
            truth.end.to_pydatetime(),
            step_seconds=truth.meta.step_seconds,
        )
    )
    assert set(result.snapshot.nodes["kubelet_version"]) == {"v1.33.4"}
    chosen = snapshot_version(result.snapshot)
    assert (chosen.version, chosen.source) == ("1.33", FROM_DATA)


def test_generate_writes_the_kubelet_version_it_is_given(tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(main, ["generate", "--out", str(tmp_path / "bad"), "--nodes", "2",
                               "--days", "0.1", "--kubelet-version", "1.33 or so"])  # fmt: skip
    assert bad.exit_code == 2 and "--kubelet-version" in bad.output
    assert not (tmp_path / "bad").exists()
    snap = tmp_path / "snap"
    out = runner.invoke(main, ["generate", "--out", str(snap), "--nodes", "2", "--days", "0.1",
                               "--step", "5m", "--kubelet-version", "v1.31.4"])  # fmt: skip
    assert out.exit_code == 0, out.output
    from analyzer.core.snapshot import read_snapshot

    assert snapshot_version(read_snapshot(snap)).version == "1.31"


def test_inspect_says_which_version_a_replay_would_use(
    old_cluster: Snapshot, tmp_path: Path
) -> None:
    snap = tmp_path / "snap"
    write_snapshot(old_cluster, snap)
    text = CliRunner().invoke(main, ["inspect", str(snap)])
    assert "kubernetes:  1.33 (from the data: the kubelet version of 40 nodes)" in text.output
    data = json.loads(CliRunner().invoke(main, ["inspect", str(snap), "--format", "json"]).output)
    assert data["kubernetes_version"]["version"] == "1.33"


def test_the_kube_scheduler_build_info_wins_over_the_kubelets() -> None:
    # A control plane mid-upgrade: the API server on 1.33, the scheduler still on 1.32 (the skew
    # policy allows it one minor behind), the kubelets on 1.31: the scheduler's formulas apply.
    plane = {"kube-scheduler": "v1.32.5", "kube-apiserver": "v1.33.2"}
    chosen = cluster_version(["v1.31.0"] * 3, control_plane=plane)
    assert (chosen.version, chosen.source) == ("1.32", FROM_DATA)
    assert "kube-scheduler" in chosen.detail and "v1.32.5" in chosen.detail


def test_without_the_scheduler_the_api_servers_version_is_used() -> None:
    chosen = cluster_version(["v1.31.0"], control_plane={"kube-apiserver": "v1.33.2"})
    assert (chosen.version, chosen.source) == ("1.33", FROM_DATA)
    assert "API server" in chosen.detail


def test_an_unknown_control_plane_version_does_not_vote_and_the_option_still_wins() -> None:
    assert (
        cluster_version(["v1.34.1"], control_plane={"kube-apiserver": "v9.0.0"}).version == "1.34"
    )
    plane = {"kube-scheduler": "v1.32.5"}
    assert cluster_version(["v1.34.1"], "1.30", control_plane=plane).version == "1.30"


def _with_build_info(path: Path, series: dict[str, str], times: list[int]) -> None:
    """Append ``kubernetes_build_info`` per scrape job (job → git_version) to an OpenMetrics file."""
    text = path.read_text(encoding="utf-8")
    assert text.endswith("# EOF\n")
    lines = ["# TYPE kubernetes_build_info gauge"]
    for job, version in series.items():
        minor = version.lstrip("v").split(".")[1]
        labels = f'job="{job}",git_version="{version}",major="1",minor="{minor}"'
        lines += [f"kubernetes_build_info{{{labels}}} 1 {t}" for t in times]
    path.write_text(text[: -len("# EOF\n")] + "\n".join(lines) + "\n# EOF\n", encoding="utf-8")


@pytest.mark.prometheus
def test_collect_reads_the_control_planes_build_info_from_a_real_prometheus(
    prometheus_from_openmetrics: Callable[..., object], tmp_path: Path
) -> None:
    cluster = generate(SyntheticSpec(seed=3, nodes=4, days=1, step=300, kubelet_version="v1.31.7"))
    path = tmp_path / "cluster.om"
    write_openmetrics(cluster, path)
    truth = cluster.snapshot
    start, end = int(truth.start.timestamp()), int(truth.end.timestamp())
    times = list(range(start, end + 1, 300))
    # kube-prometheus job names; the kubelet's own build info must not be taken for the plane's
    _with_build_info(
        path,
        {"apiserver": "v1.33.2", "kube-scheduler": "v1.32.5", "kubelet": "v1.31.7"},
        times,
    )
    server = prometheus_from_openmetrics(path)
    result = collect(
        CollectRequest(
            PromSettings(server.url),  # type: ignore[attr-defined]
            truth.start.to_pydatetime(),
            truth.end.to_pydatetime(),
            step_seconds=truth.meta.step_seconds,
        )
    )
    assert result.snapshot.meta.extra["control_plane"] == {
        "kube-apiserver": "v1.33.2",
        "kube-scheduler": "v1.32.5",
    }
    chosen = snapshot_version(result.snapshot)
    assert (chosen.version, chosen.source) == ("1.32", FROM_DATA)
