"""The OpenMetrics writer: promtool's input rules, exporter label shapes, and counters that give
back the generator's ground truth (parsed from the text, then from a real Prometheus)."""

from __future__ import annotations

import atexit
import json
import re
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analyzer.core.errors import InputError
from analyzer.sources import SyntheticCluster, SyntheticSpec, generate, write_openmetrics
from analyzer.sources.usage import SANDBOX_CPU, SANDBOX_MEMORY

SPEC = SyntheticSpec(seed=11, nodes=5, days=0.25, step=300, churn=3.0, pending_fraction=0.1)
_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+) (\d+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
PAUSE = "registry.k8s.io/pause:3.9"


@dataclass
class Parsed:
    """Series of an OpenMetrics file: key -> (timestamps, values), labels per key."""

    samples: dict[str, tuple[list[int], list[float]]] = field(default_factory=dict)
    labels: dict[str, dict[str, str]] = field(default_factory=dict)

    def select(self, name: str, **match: str) -> list[str]:
        return [
            k
            for k, lab in self.labels.items()
            if lab["__name__"] == name and all(lab.get(a) == b for a, b in match.items())
        ]

    def series(self, key: str) -> pd.Series:
        times, values = self.samples[key]
        return pd.Series(values, index=pd.to_datetime(times, unit="s", utc=True))


def parse(path: Path) -> Parsed:
    """A strict reader of the subset promtool needs; asserts each rule on the way."""
    out = Parsed()
    finished: set[str] = set()
    current = None
    lines = path.read_text().split("\n")
    assert lines[-2:] == ["# EOF", ""], "the file must end with '# EOF\\n'"
    for line in lines[:-2]:
        match = _LINE.match(line)
        assert match, f"not a sample line: {line[:120]!r}"
        name, body, value, ts = match.groups()
        key = f"{name}{{{body or ''}}}"
        if key != current:
            assert key not in finished, f"series {key[:100]} is not contiguous"
            if current is not None:
                finished.add(current)
            current = key
            labels = dict(_LABEL.findall(body or ""))
            assert "" not in labels.values()
            out.labels[key] = {"__name__": name, **labels}
            out.samples[key] = ([], [])
        times, values = out.samples[key]
        assert not times or int(ts) > times[-1], f"{key[:100]} not ascending"
        times.append(int(ts))
        values.append(float(value))
    return out


@cache
def cluster() -> SyntheticCluster:
    return generate(SPEC)


@cache
def written(convention: str, cpus: int | None = 2) -> tuple[Path, Parsed, int, int]:
    folder = tempfile.mkdtemp(prefix="om-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # cached across tests
    path = Path(folder) / f"{convention}.om"
    stats = write_openmetrics(
        cluster(), path, instance_convention=convention, node_exporter_cpus=cpus
    )
    assert stats.bytes == path.stat().st_size
    return path, parse(path), stats.series, stats.samples


def rate(series: pd.Series, step: int) -> pd.Series:
    """Per-interval rate of a counter (what irate over two adjacent samples gives)."""
    return series.diff().dropna() / step


@pytest.mark.parametrize("convention", ["node-name", "host-ip"])
def test_file_follows_promtool_rules_and_stats_count_it(convention: str) -> None:
    _, parsed, series, samples = written(convention)
    assert len(parsed.samples) == series
    assert sum(len(t) for t, _ in parsed.samples.values()) == samples
    grid = set(cluster().grid.times.tolist())
    assert all(set(t) <= grid for t, _ in parsed.samples.values())


def test_same_cluster_same_bytes(tmp_path: Path) -> None:
    first, second = tmp_path / "a.om", tmp_path / "b.om"
    write_openmetrics(generate(SPEC), first, node_exporter_cpus=1)
    write_openmetrics(generate(SPEC), second, node_exporter_cpus=1)
    assert first.read_bytes() == second.read_bytes()


def test_ksm_resource_labels_units_and_values() -> None:
    _, parsed, _, _ = written("node-name")
    pods = cluster().snapshot.pods
    search = pods[pods["workload_name"] == "search"].iloc[0]
    init = parsed.select(
        "kube_pod_init_container_resource_requests", uid=search["uid"], resource="cpu"
    )
    assert init and all(parsed.labels[k]["unit"] == "core" for k in init)
    assert {parsed.samples[k][1][0] for k in init} == {4.0}  # 4000m -> 4 cores
    gpu = parsed.select("kube_pod_container_resource_requests", resource="nvidia_com_gpu")
    assert gpu and all(parsed.labels[k]["unit"] == "integer" for k in gpu)
    storage = parsed.select("kube_pod_container_resource_requests", resource="ephemeral_storage")
    assert storage and {parsed.samples[k][1][0] for k in storage} == {float(2**30)}
    alloc = parsed.select("kube_node_status_allocatable", node="general-0000", resource="cpu")
    assert [parsed.samples[k][1][0] for k in alloc] == [15.89]
    assert all(parsed.labels[k]["job"] == "kube-state-metrics" for k in alloc)
    assert not parsed.select("kube_node_labels")  # off by default since KSM 2.10
    overhead = parsed.select("kube_pod_overhead_cpu_cores")
    assert overhead and {parsed.samples[k][1][0] for k in overhead} == {0.25}


def test_containers_without_requests_still_have_container_info() -> None:
    _, parsed, _, _ = written("node-name")
    pods = cluster().snapshot.pods
    besteffort = pods[(pods["qos_class"] == "BestEffort") & pods["started"].notna()]
    assert len(besteffort) > 0
    for uid in besteffort["uid"]:
        assert not parsed.select("kube_pod_container_resource_requests", uid=uid)
        info = parsed.select("kube_pod_container_info", uid=uid)
        assert len(info) == len(cluster().containers[uid].containers)
    search = pods[(pods["workload_name"] == "search") & pods["started"].notna()].iloc[0]
    init = parsed.select("kube_pod_init_container_info", uid=search["uid"])
    assert [parsed.labels[k]["container"] for k in init] == ["warm-index"]


def test_pending_pods_lack_the_node_label_until_scheduled() -> None:
    _, parsed, _, _ = written("node-name")
    pods = cluster().snapshot.pods
    step = pd.Timedelta(seconds=SPEC.step)
    waited = pods[
        (pods["scheduled"] - pods["created"] > 2 * step)
        & (pods["created"] > cluster().snapshot.start)
    ]
    assert len(waited) > 0
    for _, pod in waited.iterrows():
        infos = parsed.select("kube_pod_info", uid=pod["uid"])
        by_node = {parsed.labels[k].get("node"): k for k in infos}
        assert set(by_node) == {None, pod["node"]}
        pending_end = max(parsed.samples[by_node[None]][0])
        placed_start = min(parsed.samples[by_node[pod["node"]]][0])
        assert pending_end < pod["scheduled"].timestamp() <= placed_start
        phases = parsed.select("kube_pod_status_phase", uid=pod["uid"])
        assert sorted(parsed.labels[k]["phase"] for k in phases) == sorted(
            ["Pending", "Running", "Succeeded", "Failed", "Unknown"]
        )


def test_node_exporter_counters_give_back_node_usage() -> None:
    _, parsed, _, _ = written("node-name")
    snap = cluster().snapshot
    for node in snap.nodes["node"]:
        keys = parsed.select("node_cpu_seconds_total", instance=node)
        assert {parsed.labels[k]["cpu"] for k in keys} == {"0", "1"}
        busy = [k for k in keys if parsed.labels[k]["mode"] not in ("idle", "iowait", "steal")]
        cores = sum(rate(parsed.series(k), SPEC.step) for k in busy)
        truth = snap.node_usage[snap.node_usage["node"] == node].set_index("timestamp")
        assert np.allclose(cores * 1000, truth["cpu"], rtol=1e-9, atol=1e-6)
        total = parsed.series(parsed.select("node_memory_MemTotal_bytes", instance=node)[0])
        avail = parsed.series(parsed.select("node_memory_MemAvailable_bytes", instance=node)[0])
        used = (total - avail).loc[truth.index]
        assert (used == truth["memory"]).all()
        everything = sum(rate(parsed.series(k), SPEC.step) for k in keys)
        capacity = snap.nodes.set_index("node").loc[node, "capacity:cpu"] / 1000
        assert np.allclose(everything, capacity)  # all modes of all cpus = the node's cores


def test_every_core_is_emitted_by_default(tmp_path: Path) -> None:
    small = generate(SyntheticSpec(seed=2, nodes=1, days=0.02, step=60))
    path = tmp_path / "cpus.om"
    write_openmetrics(small, path)
    parsed = parse(path)
    keys = parsed.select("node_cpu_seconds_total")
    assert len({parsed.labels[k]["cpu"] for k in keys}) == 16
    assert {parsed.labels[k]["mode"] for k in keys} == {
        "user",
        "nice",
        "system",
        "idle",
        "iowait",
        "irq",
        "softirq",
        "steal",
    }


def test_cadvisor_containers_pod_cgroup_pause_and_root() -> None:
    _, parsed, _, _ = written("host-ip")
    snap = cluster().snapshot
    usage = snap.pod_usage.set_index(["uid", "timestamp"])
    checked = 0
    for uid in snap.pod_usage["uid"].unique()[:40]:
        truth = usage.loc[uid]
        cpu_keys = parsed.select("container_cpu_usage_seconds_total", uid=uid)
        assert not cpu_keys  # cAdvisor has no uid label
        pod = snap.pods.set_index("uid").loc[uid]
        keys = parsed.select(
            "container_cpu_usage_seconds_total",
            pod=pod["name"],
            namespace=pod["namespace"],
            node=pod["node"],
        )
        apps = [
            k for k in keys if parsed.labels[k].get("container") and parsed.labels[k].get("image")
        ]
        pause = [k for k in keys if parsed.labels[k].get("image") == PAUSE]
        cgroup = [k for k in keys if "image" not in parsed.labels[k]]
        if len(cgroup) != 1:  # a reused StatefulSet name: several lifetimes on one node
            continue
        app_cpu = sum(rate(parsed.series(k), SPEC.step) for k in apps) * 1000
        assert np.allclose(app_cpu.loc[truth.index], truth["cpu"])
        pod_cpu = rate(parsed.series(cgroup[0]), SPEC.step) * 1000
        assert np.allclose(pod_cpu.loc[truth.index], truth["cpu"] + SANDBOX_CPU)
        assert len(pause) == 1 and "container" not in parsed.labels[pause[0]]
        mem = parsed.select("container_memory_working_set_bytes", pod=pod["name"], node=pod["node"])
        app_mem = sum(parsed.series(k) for k in mem if parsed.labels[k].get("container"))
        assert (app_mem.loc[truth.index] == truth["memory"]).all()
        pod_mem = next(parsed.series(k) for k in mem if "image" not in parsed.labels[k])
        assert (pod_mem.loc[truth.index] == truth["memory"] + SANDBOX_MEMORY).all()
        checked += 1
    assert checked >= 20
    for node in snap.nodes["node"]:
        root = parsed.select("container_cpu_usage_seconds_total", id="/", node=node)
        truth = snap.node_usage[snap.node_usage["node"] == node].set_index("timestamp")["cpu"]
        assert np.allclose(rate(parsed.series(root[0]), SPEC.step) * 1000, truth)


def test_instance_conventions() -> None:
    _, by_name, _, _ = written("node-name")
    _, by_ip, _, _ = written("host-ip")
    nodes = cluster().snapshot.nodes
    for _, node in nodes.iterrows():
        assert by_name.select("node_uname_info", instance=node["node"], nodename=node["node"])
        keys = by_ip.select("node_uname_info", instance=f"{node['host_ip']}:9100")
        assert len(keys) == 1 and by_ip.labels[keys[0]]["nodename"] == node["node"]
        exporter = by_ip.labels[keys[0]]["pod"]
        assert (
            exporter.startswith("node-exporter-")
            and by_ip.labels[keys[0]]["namespace"] == "monitoring"
        )
        internal = by_ip.select("kube_node_info", node=node["node"], internal_ip=node["host_ip"])
        assert len(internal) == 1


def test_bad_options_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        write_openmetrics(cluster(), tmp_path / "x.om", instance_convention="pod-ip")
    with pytest.raises(InputError):
        write_openmetrics(cluster(), tmp_path / "x.om", node_exporter_cpus=0)
    assert not list(tmp_path.iterdir())


@pytest.mark.prometheus
@pytest.mark.parametrize("convention", ["node-name", "host-ip"])
def test_promtool_accepts_the_file_with_every_sample(convention: str, tmp_path: Path) -> None:
    from tests.conftest import PROMTOOL, backfill, require_prometheus

    require_prometheus()
    path, _, series, samples = written(convention)
    backfill(path, tmp_path / "blocks")
    listing = subprocess.run(
        [PROMTOOL, "tsdb", "list", str(tmp_path / "blocks")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()[1:]
    assert sum(int(line.split()[4]) for line in listing) == samples
    assert sum(int(line.split()[6]) for line in listing) == series


def _query(url: str, expr: str, at: float) -> list[dict[str, object]]:
    params = urllib.parse.urlencode({"query": expr, "time": at})
    with urllib.request.urlopen(f"{url}/api/v1/query?{params}", timeout=30) as response:
        body = json.load(response)
    assert body["status"] == "success"
    result: list[dict[str, object]] = body["data"]["result"]
    return result


@pytest.mark.prometheus
def test_real_prometheus_irate_gives_back_node_cpu(
    prometheus_from_openmetrics: Callable[..., object],
) -> None:
    path, _, _, _ = written("node-name")
    server = prometheus_from_openmetrics(path)
    url = server.url  # type: ignore[attr-defined]
    snap = cluster().snapshot
    at = snap.start + pd.Timedelta(hours=3)
    expr = (
        'sum by (instance) (irate(node_cpu_seconds_total{job="node-exporter",'
        'mode!~"idle|iowait|steal"}[10m])) * 1000'
    )
    got = {r["metric"]["instance"]: float(r["value"][1]) for r in _query(url, expr, at.timestamp())}  # type: ignore[index]
    truth = snap.node_usage[snap.node_usage["timestamp"] == at].set_index("node")["cpu"]
    assert set(got) == set(truth.index)
    for node, cpu in truth.items():
        assert got[str(node)] == pytest.approx(cpu, rel=1e-9)
    placed = _query(url, 'count(kube_pod_info{node!=""})', at.timestamp())
    assert placed and int(placed[0]["value"][1]) > 0  # type: ignore[index]


def test_excluded_families_are_left_out(tmp_path: Path) -> None:
    path = tmp_path / "lean.om"
    excluded = {"kube_pod_status_qos_class", "container_memory_working_set_bytes"}
    stats = write_openmetrics(cluster(), path, node_exporter_cpus=2, exclude_metrics=excluded)
    parsed = parse(path)
    names = {labels["__name__"] for labels in parsed.labels.values()}
    assert names.isdisjoint(excluded) and "container_cpu_usage_seconds_total" in names
    _, full, series, _ = written("node-name")
    full_names = {labels["__name__"] for labels in full.labels.values()}
    assert full_names - names == excluded
    kept = sum(1 for labels in full.labels.values() if labels["__name__"] not in excluded)
    assert stats.series == kept == len(parsed.labels) < series


def test_constant_step_thins_constant_series_but_keeps_their_ends(tmp_path: Path) -> None:
    fine = generate(SyntheticSpec(seed=4, nodes=3, days=0.1, step=60, churn=4.0))
    full_path, thin_path = tmp_path / "full.om", tmp_path / "thin.om"
    full_stats = write_openmetrics(fine, full_path, node_exporter_cpus=1)
    thin_stats = write_openmetrics(fine, thin_path, node_exporter_cpus=1, constant_step=300)
    full, thin = parse(full_path), parse(thin_path)
    assert set(full.samples) == set(thin.samples) and thin_stats.series == full_stats.series
    assert thin_stats.samples < full_stats.samples / 2
    for key, (times, values) in full.samples.items():
        thin_times, thin_values = thin.samples[key]
        assert (thin_times[0], thin_times[-1]) == (times[0], times[-1])
        assert max(np.diff(thin_times), default=0) <= 300  # always inside the 5m lookback
        kept = dict(zip(times, values, strict=True))
        assert all(kept[t] == v for t, v in zip(thin_times, thin_values, strict=True))
        if "_seconds_total" in key or "working_set" in key or "MemAvailable" in key:
            assert thin_times == times  # usage is never thinned
    with pytest.raises(InputError):
        write_openmetrics(fine, tmp_path / "bad.om", constant_step=90)


def test_node_labels_and_annotations_only_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "opt-in.om"
    write_openmetrics(
        cluster(), path, node_exporter_cpus=1, node_labels=True, node_annotations=True
    )
    parsed = parse(path)
    nodes = cluster().snapshot.nodes.set_index("node")
    for node, row in nodes.iterrows():
        labels = parsed.labels[parsed.select("kube_node_labels", node=str(node))[0]]
        assert labels["label_cloud_google_com_gke_nodepool"] == row["pool"]
        annotations = parsed.labels[parsed.select("kube_node_annotations", node=str(node))[0]]
        expected = json.loads(row["annotations"])
        got = {k: v for k, v in annotations.items() if k.startswith("annotation_")}
        assert got == {
            "annotation_" + re.sub("[^a-zA-Z0-9_]", "_", k): v.replace('"', '\\"')
            for k, v in expected.items()
        }
    compute = nodes[nodes["pool"] == "compute"].index[0]
    key = parsed.select("kube_node_annotations", node=str(compute))[0]
    assert (
        "usageThresholds"
        in parsed.labels[key]["annotation_scheduling_koordinator_sh_usage_thresholds"]
    )


def test_completion_time_only_for_terminated_pods() -> None:
    _, parsed, _, _ = written("node-name")
    pods = cluster().snapshot.pods.set_index("uid")
    completed = {parsed.labels[k]["uid"] for k in parsed.select("kube_pod_completion_time")}
    terminal = pods[pods["phase"].isin(["Succeeded", "Failed"])]
    assert completed == set(terminal.index) and completed
    for key in parsed.select("kube_pod_completion_time"):
        uid = parsed.labels[key]["uid"]
        assert set(parsed.samples[key][1]) == {pods.loc[uid, "finished"].timestamp()}
    # a Deployment pod deleted while running ends its series without a completion time
    replaced = pods[(pods["workload_kind"] == "Deployment") & pods["finished"].notna()]
    assert len(replaced) > 0 and completed.isdisjoint(replaced.index)
    for uid, pod in replaced.iterrows():
        info = parsed.select("kube_pod_info", uid=str(uid), node=pod["node"])
        assert max(parsed.samples[info[0]][0]) <= pod["finished"].timestamp()
        assert max(parsed.samples[info[0]][0]) == pod["last_seen"].timestamp()


def test_without_honor_labels_ksm_labels_become_exported(tmp_path: Path) -> None:
    path = tmp_path / "exported.om"
    write_openmetrics(
        cluster(), path, instance_convention="host-ip", node_exporter_cpus=1, ksm_honor_labels=False
    )
    parsed = parse(path)
    pods = cluster().snapshot.pods
    ksm = pods[pods["workload_name"] == "kube-state-metrics"].iloc[0]
    placed = pods[pods["node"].notna()].iloc[0]
    info = parsed.select("kube_pod_info", exported_pod=placed["name"], uid=placed["uid"])
    assert info
    for key in info:
        labels = parsed.labels[key]
        assert labels["exported_namespace"] == placed["namespace"]
        assert (labels["namespace"], labels["pod"]) == ("monitoring", ksm["name"])
        assert labels["node"] == ksm["node"]  # the target's node, not the pod's
        assert labels.get("exported_node", placed["node"]) == placed["node"]
    requests = parsed.select("kube_pod_container_resource_requests", uid=placed["uid"])
    assert requests and all("exported_container" in parsed.labels[k] for k in requests)
    alloc = parsed.select("kube_node_status_allocatable", resource="cpu")
    assert alloc and all("exported_node" in parsed.labels[k] for k in alloc)


def test_ha_replicas_duplicate_every_series(tmp_path: Path) -> None:
    path = tmp_path / "ha.om"
    stats = write_openmetrics(cluster(), path, node_exporter_cpus=2, ha_replicas=2)
    parsed = parse(path)
    _, single, series, samples = written("node-name")
    assert (stats.series, stats.samples) == (2 * series, 2 * samples)
    replicas = {labels["prometheus_replica"] for labels in parsed.labels.values()}
    assert replicas == {"prometheus-k8s-0", "prometheus-k8s-1"}
    for key, (times, values) in list(single.samples.items())[:200]:
        twin = key[:-1] + ',prometheus_replica="prometheus-k8s-1"}'
        assert parsed.samples[twin] == (times, values)
