"""Two clusters behind one Prometheus, told apart by a ``cluster`` label (issue 27 item 1).

Both clusters have the same namespaces, workloads, pods and nodes (tests/small_cluster.py twice);
"west" has twice the allocatable and three times the pod CPU of "east", so a run that mixed them,
or read the wrong one, would show it. One real Prometheus holds both (OpenMetrics with the label
added, promtool-backfilled); two more hold each cluster alone, unlabelled. Each cluster's snapshot
collected through ``--cluster-label cluster`` must equal the single-cluster collect of its own data,
table for table.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import small_cluster as sc
from click.testing import CliRunner, Result
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.core.snapshot import read_snapshot

pytestmark = pytest.mark.prometheus

RANGE = ["--start", str(sc.T0), "--end", str(sc.END), "--step", "1m"]
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+) (\d+)$")


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line and line != "# EOF"]


def _rewrite(lines: list[str], cluster: str | None, scale: dict[str, float]) -> list[str]:
    """Each sample line with ``cluster="…"`` added (None: unlabelled) and the values of the
    metrics in ``scale`` multiplied (a counter times a constant is still a counter)."""
    out = []
    for line in lines:
        match = _SAMPLE.match(line)
        assert match, line
        name, labels, value, ts = match.groups()
        number = float(value) * scale.get(name, 1.0)
        labelled = f'cluster="{cluster}",{labels}' if cluster else labels
        out.append(f"{name}{{{labelled}}} {number!r} {ts}")
    return out


@pytest.fixture(scope="module")
def servers(
    tmp_path_factory: pytest.TempPathFactory, prometheus_from_openmetrics: Callable[..., object]
) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("two-clusters")
    base = sc.write_small_cluster(folder / "base.om")
    lines = _lines(base)
    west_scale = {"kube_node_status_allocatable": 2.0, "container_cpu_usage_seconds_total": 3.0}
    files = {
        "east": _rewrite(lines, None, {}),
        "west": _rewrite(lines, None, west_scale),
        "both": _rewrite(lines, "east", {}) + _rewrite(lines, "west", west_scale),
    }
    urls = {}
    for name, text in files.items():
        path = folder / f"{name}.om"
        path.write_text("\n".join(text) + "\n# EOF\n")
        urls[name] = prometheus_from_openmetrics(path).url  # type: ignore[attr-defined]
    return urls


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def collected(servers: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fleet-collect")
    for name in ("east", "west"):  # each cluster alone: the reference
        result = _run("collect", "--prometheus", servers[name], *RANGE, "--out", str(out / name))
        assert result.exit_code == 0, result.output
    result = _run(
        "collect", "--prometheus", servers["both"], "--cluster-label", "cluster",
        "--all-clusters", *RANGE, "--out", str(out / "fleet"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


TABLES = ("nodes", "pods", "node_usage", "pod_usage")


def _table(folder: Path, name: str) -> pd.DataFrame:
    frame = getattr(read_snapshot(folder), name)
    key = [c for c in ("node", "uid", "time") if c in frame.columns]
    return frame.sort_values(key).reset_index(drop=True)


@pytest.mark.parametrize("cluster", ["east", "west"])
def test_each_cluster_equals_a_single_cluster_run_of_its_data(
    collected: Path, cluster: str
) -> None:
    selected = collected / "fleet" / f"cluster={cluster}"
    for name in TABLES:
        pd.testing.assert_frame_equal(
            _table(selected, name), _table(collected / cluster, name), obj=f"{cluster} {name}"
        )


def test_the_two_clusters_share_names_but_not_figures(collected: Path) -> None:
    east, west = (collected / "fleet" / f"cluster={c}" for c in ("east", "west"))
    east_nodes, west_nodes = _table(east, "nodes"), _table(west, "nodes")
    assert list(east_nodes["node"]) == list(west_nodes["node"]) == ["node-a", "node-b"]
    assert sorted(_table(east, "pods")["name"]) == sorted(_table(west, "pods")["name"])
    # the same two nodes, each with twice the allocatable CPU in west: never summed (3x) or swapped
    assert list(west_nodes["allocatable:cpu"]) == [2 * v for v in east_nodes["allocatable:cpu"]]
    assert list(east_nodes["allocatable:cpu"]) == [
        sc.EXPECTED_NODES[n]["cpu"] for n in ("node-a", "node-b")
    ]


def test_one_cluster_selected_by_value(
    servers: dict[str, str], collected: Path, tmp_path: Path
) -> None:
    result = _run(
        "collect", "--prometheus", servers["both"], "--cluster-label", "cluster", "--cluster",
        "west", *RANGE, "--out", str(tmp_path),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [p.name for p in tmp_path.iterdir()] == ["cluster=west"]
    pd.testing.assert_frame_equal(
        _table(tmp_path / "cluster=west", "pod_usage"), _table(collected / "west", "pod_usage")
    )


def test_an_unknown_cluster_is_one_line_naming_the_known_ones(
    servers: dict[str, str], tmp_path: Path
) -> None:
    result = _run(
        "collect", "--prometheus", servers["both"], "--cluster-label", "cluster", "--cluster",
        "north", *RANGE, "--out", str(tmp_path / "x"),
    )  # fmt: skip
    assert result.exit_code == documented_exit("fleet-unknown-cluster")
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "'north'" in lines[0] and "east, west" in lines[0], lines
    assert not (tmp_path / "x").exists()


def test_a_label_no_series_carries_is_refused(servers: dict[str, str], tmp_path: Path) -> None:
    result = _run(
        "collect", "--prometheus", servers["both"], "--cluster-label", "k8s_cluster",
        "--all-clusters", *RANGE, "--out", str(tmp_path / "x"),
    )  # fmt: skip
    assert result.exit_code == documented_exit("fleet-unknown-label")
    assert "--cluster-label k8s_cluster: no kube_node_info series" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


@pytest.fixture(scope="module")
def nightly(servers: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fleet-nightly")
    day = ["--date", "2026-11-01", "--step", "1m", "--min-coverage", "0.01"]
    for name in ("east", "west"):
        result = _run("report", "nightly", "--prometheus", servers[name], "--cluster", name,
                      *day, "--out", str(out / name),
                      "--metrics-textfile", str(out / f"{name}.prom"))  # fmt: skip
        assert result.exit_code == 0, result.output
    result = _run(
        "report", "nightly", "--prometheus", servers["both"], "--cluster-label", "cluster",
        "--all-clusters", *day, "--out", str(out / "fleet"),
        "--metrics-textfile", str(out / "fleet.prom"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


def _samples(path: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], str]:
    """``(name, labels) -> value`` of a textfile's report series (the run's status, analyzer_run_*, left
    out: one per run, unlabelled, and its time and duration differ from run to run)."""
    out = {}
    for line in path.read_text().splitlines():
        series, _, value = line.rpartition(" ")
        name, _, labels = series.partition("{")
        if line.startswith("#") or name.startswith("analyzer_run_"):
            continue
        out[(name, tuple(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels)))] = value
    return out


@pytest.mark.parametrize("cluster", ["east", "west"])
def test_all_clusters_metrics_hold_each_cluster_labelled(nightly: Path, cluster: str) -> None:
    text = (nightly / "fleet.prom").read_text()
    helps = [line.split()[2] for line in text.splitlines() if line.startswith("# HELP")]
    assert len(helps) == len(set(helps)), "a family's HELP twice: not valid text format"
    every = _samples(nightly / "fleet.prom")
    assert all(labels[0][0] == "cluster" for _, labels in every), "a report series unlabelled"
    mine = {
        (n, labels[1:]): v for (n, labels), v in every.items() if labels[0] == ("cluster", cluster)
    }
    alone = _samples(nightly / f"{cluster}.prom")
    assert alone, "the single cluster's run published no report series"
    assert mine == alone


@pytest.mark.parametrize("cluster", ["east", "west"])
def test_each_clusters_nightly_history_equals_its_own_run(nightly: Path, cluster: str) -> None:
    mine = nightly / "fleet" / f"cluster={cluster}" / "history"
    alone = nightly / cluster / "history"
    for table in ("pools", "workloads", "rollups"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(mine / table / "2026-11-01.parquet"),
            pd.read_parquet(alone / table / "2026-11-01.parquet"),
            obj=f"{cluster} {table}",
        )
    assert json.loads((mine / "cluster.json").read_text())["cluster"] == cluster


def test_the_fleet_page_of_the_two_clusters_keeps_them_apart(nightly: Path, tmp_path: Path) -> None:
    result = _run("report", "fleet", str(nightly / "fleet"), "--out", str(tmp_path / "page"))
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / "page" / "report.json").read_text())
    totals = {row["cluster"]: row for row in data["totals"]}
    assert sorted(totals) == ["(fleet)", "east", "west"]
    for name in ("east", "west"):  # each cluster's row: its own history's pools, not the sum
        pools = pd.read_parquet(nightly / name / "history" / "pools" / "2026-11-01.parquet")
        cores = float(pools["cpu_allocatable_mean_millicores"].sum()) / 1000
        assert totals[name]["allocatable_cpu_cores"] == pytest.approx(cores, rel=1e-12)
    assert totals["west"]["allocatable_cpu_cores"] == pytest.approx(
        2 * totals["east"]["allocatable_cpu_cores"], rel=1e-12
    )


def test_check_names_the_cluster_label_and_its_values(servers: dict[str, str]) -> None:
    both = _run(
        "check", "--prometheus", servers["both"], "--start", str(sc.T0), "--end", str(sc.END)
    )
    line = next(x for x in both.output.splitlines() if x.strip().startswith("cluster label:"))
    assert "cluster (2 values: east, west); pass --cluster-label cluster" in line, line
    one = _run(
        "check", "--prometheus", servers["east"], "--start", str(sc.T0), "--end", str(sc.END)
    )
    line = next(x for x in one.output.splitlines() if x.strip().startswith("cluster label:"))
    assert line.split(":", 1)[1].strip() == "none (one cluster)"
    assert one.exit_code == both.exit_code == 0, (one.output, both.output)


def test_a_prometheus_per_cluster_from_the_config_file(
    servers: dict[str, str], collected: Path, tmp_path: Path
) -> None:
    token = tmp_path / "west-token"
    token.write_text("s3cr3t-west-token\n")
    config = tmp_path / "analyzer.yaml"
    config.write_text(
        "clusters:\n"
        f"  - {{name: east, prometheus: '{servers['east']}'}}\n"
        f"  - {{name: west, prometheus: '{servers['west']}', token_file: '{token}'}}\n"
    )
    result = _run("--config", str(config), "collect", "--all-clusters", *RANGE,
                  "--out", str(tmp_path / "out"))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "s3cr3t" not in result.output
    for name in ("east", "west"):  # each entry read with its own connection
        for table in TABLES:
            pd.testing.assert_frame_equal(
                _table(tmp_path / "out" / f"cluster={name}", table),
                _table(collected / name, table),
                obj=f"{name} {table}",
            )
    unknown = _run("--config", str(config), "collect", "--cluster", "north", *RANGE,
                   "--out", str(tmp_path / "x"))  # fmt: skip
    assert unknown.exit_code == documented_exit("fleet-unknown-cluster")
    assert "no such entry in the config file's clusters: (known: east, west)" in unknown.output


def test_backfill_per_cluster_equals_the_nightly_days(
    servers: dict[str, str], nightly: Path, tmp_path: Path
) -> None:
    result = _run(
        "history", "backfill", "--prometheus", servers["both"], "--cluster-label", "cluster",
        "--all-clusters", "--since", "1d", "--until", "2026-11-01", "--step", "1m",
        "--min-coverage", "0.01", "--out", str(tmp_path),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    for name in ("east", "west"):  # a backfilled day equals the nightly day, cluster by cluster
        for table in ("pools", "workloads"):
            pd.testing.assert_frame_equal(
                pd.read_parquet(
                    tmp_path / f"cluster={name}" / "history" / table / "2026-11-01.parquet"
                ),
                pd.read_parquet(nightly / name / "history" / table / "2026-11-01.parquet"),
                obj=f"{name} {table}",
            )


def test_the_portal_above_the_clusters_links_each_clusters_portal(
    nightly: Path, tmp_path: Path
) -> None:
    from cdp_client import Chromium, require_chromium

    root = nightly / "fleet"
    page = (root / "index.html").read_text()
    rows = re.findall(r"<tr data-cluster><td[^>]*>(.*?)</td>\s*<td[^>]*>(\d+)</td>", page, re.S)
    assert [(re.sub("<[^>]+>", "", name), int(n)) for name, n in rows] == [("east", 1), ("west", 1)]
    for name in ("east", "west"):  # each link is the cluster's own portal, which exists
        assert f'href="cluster={name}/index.html"' in page
        assert (root / f"cluster={name}" / "index.html").is_file()
    require_chromium()
    browser = Chromium(tmp_path / "profile")
    try:
        browser.open(root / "index.html")
        links = browser.evaluate(
            "[...document.querySelectorAll('#clusters a')].map(a => a.href).join(' ')"
        )
        shot = base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"])
        errors = browser.console_errors()
    finally:
        browser.close()
    assert links.count("/index.html") == 2 and "cluster=west/index.html" in links, links
    assert not errors, errors
    (Path(os.environ.get("ANALYZER_SHOTS", tmp_path)) / "clusters-portal.png").write_bytes(shot)
