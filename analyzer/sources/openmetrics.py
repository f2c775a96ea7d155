"""Render a synthetic cluster as OpenMetrics text for ``promtool tsdb create-blocks-from``.

Three sources, in the exact metric and label shape a Prometheus of kube-prometheus or
kube-prometheus-stack would hold (research/prometheus.md §1–§2):

- kube-state-metrics v2 (``ksm.py``), ``job="kube-state-metrics"``;
- node-exporter: ``node_cpu_seconds_total{cpu,mode}`` counters, ``node_memory_MemTotal_bytes``,
  ``node_memory_MemAvailable_bytes`` (MemTotal − MemAvailable = the ground-truth memory),
  ``node_uname_info``; ``job="node-exporter"``;
- cAdvisor (``job="kubelet"``, ``metrics_path="/metrics/cadvisor"``): per app container
  ``container_cpu_usage_seconds_total`` and ``container_memory_working_set_bytes``, plus the
  series that double count if summed without filters: the pod cgroup (no container, no image;
  = containers + sandbox), the containerd pause container (no container, pause image) and the
  root cgroup ``id="/"`` (the whole node).

``instance_convention``: ``"node-name"`` (kube-prometheus: node-exporter ``instance`` = node
name) or ``"host-ip"`` (kube-prometheus-stack: ``instance`` = ``hostIP:9100``). Counters
integrate the step-average usage exactly, so ``irate`` over two adjacent samples gives back the
ground truth. ``node_exporter_cpus=k`` emits k ``cpu`` label values per node (a size knob for
benchmarks) whose busy time still sums to the node's busy cores; the default is every core.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.sources.catalog import KERNEL_VERSION, PAUSE_IMAGE
from analyzer.sources.ksm import (
    KsmTarget,
    container_id,
    container_image,
    pod_ip,
    write_nodes,
    write_pod,
)
from analyzer.sources.omtext import SeriesWriter, SizeEstimate, series_head
from analyzer.sources.synthetic import SyntheticCluster
from analyzer.sources.usage import SANDBOX_CPU, SANDBOX_MEMORY

CONVENTIONS = ("node-name", "host-ip")
MODES = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
_BUSY_SHARES = {"nice": 3, "system": 22, "irq": 1, "softirq": 4}  # percent of busy; user = rest


@dataclass(frozen=True)
class OpenMetricsStats:
    """What was written: series, samples and bytes."""

    series: int
    samples: int
    bytes: int


def _split(amounts: np.ndarray, weights: list[int]) -> list[np.ndarray]:
    """Split integer ``amounts`` by integer ``weights`` exactly (the last part takes the rest)."""
    total = sum(weights)
    parts = [amounts * w // total for w in weights[:-1]]
    parts.append(amounts - sum(parts, np.zeros_like(amounts)))
    return parts


def _node_targets(cluster: SyntheticCluster, convention: str) -> list[dict[str, str]]:
    """Target labels of each node's node-exporter series."""
    exporters = {p.node: p.name for p in cluster.pods if p.template.name == "node-exporter"}
    out = []
    for i, node in enumerate(cluster.nodes):
        common = {"job": "node-exporter", "namespace": "monitoring", "pod": exporters.get(i, "")}
        if convention == "node-name":
            labels = {"container": "kube-rbac-proxy", "endpoint": "https", "instance": node.name}
            labels |= {"service": "node-exporter"}
        else:
            labels = {"container": "node-exporter", "endpoint": "http-metrics"}
            labels |= {
                "instance": f"{node.host_ip}:9100",
                "service": "kube-prometheus-stack-prometheus-node-exporter",
            }
        out.append(common | labels)
    return out


def _node_exporter(
    out: SeriesWriter, cluster: SyntheticCluster, convention: str, cpus: int | None
) -> None:
    usage = cluster.usage
    step = cluster.grid.step
    for i, (node, target) in enumerate(
        zip(cluster.nodes, _node_targets(cluster, convention), strict=True)
    ):
        n_cores = node.capacity["cpu"] // 1000
        k = n_cores if cpus is None else max(1, min(cpus, n_cores))
        busy = usage.node_cpu[i] * step  # millicore-seconds per interval
        per_mode = {m: busy * share // 100 for m, share in _BUSY_SHARES.items()}
        per_mode["user"] = busy - sum(per_mode.values())
        per_mode["iowait"] = busy // 200
        per_mode["steal"] = np.zeros_like(busy)
        per_mode["idle"] = np.maximum(n_cores * 1000 * step - busy - per_mode["iowait"], 0)
        for mode in MODES:
            amounts = per_mode[mode].copy()
            amounts[0] = 0  # the counter's first sample is its starting point
            for cpu, part in enumerate(_split(amounts, [1] * k)):
                head = series_head(
                    "node_cpu_seconds_total", target | {"cpu": str(cpu), "mode": mode}
                )
                out.counter(head, np.cumsum(part), 0)
        total = node.capacity["memory"]
        last = cluster.grid.size - 1
        out.const(series_head("node_memory_MemTotal_bytes", target), str(total), 0, last)
        available = total - usage.node_memory[i]
        out.gauge(series_head("node_memory_MemAvailable_bytes", target), available, 0)
        uname = target | {
            "domainname": "(none)",
            "machine": "x86_64",
            "nodename": node.name,
            "release": KERNEL_VERSION,
            "sysname": "Linux",
            "version": "#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)",
        }
        out.const(series_head("node_uname_info", uname), "1", 0, last)


def _kubelet_target(cluster: SyntheticCluster, node: int) -> dict[str, str]:
    host = cluster.nodes[node]
    return {
        "endpoint": "https-metrics",
        "instance": f"{host.host_ip}:10250",
        "job": "kubelet",
        "metrics_path": "/metrics/cadvisor",
        "node": host.name,
        "service": "kubelet",
    }


def _cgroup(uid: str, qos: str) -> str:
    """The pod's cgroup path under the systemd driver."""
    u = uid.replace("-", "_")
    if qos == "Guaranteed":
        return f"/kubepods.slice/kubepods-pod{u}.slice"
    q = qos.lower()
    return f"/kubepods.slice/kubepods-{q}.slice/kubepods-{q}-pod{u}.slice"


def _cadvisor_pod(out: SeriesWriter, cluster: SyntheticCluster, index: int, qos: str) -> None:
    usage = cluster.usage
    lo, hi = int(usage.offsets[index]), int(usage.offsets[index + 1])
    if hi <= lo:
        return
    pod = cluster.pods[index]
    first = int(usage.j[lo])
    step = cluster.grid.step
    cpu = usage.cpu[lo:hi] * step  # millicore-seconds per interval (0 at the first sample)
    memory = usage.memory[lo:hi]
    sandbox = np.full(hi - lo, SANDBOX_CPU * step, dtype=np.int64)
    sandbox[0] = 0
    target = _kubelet_target(cluster, pod.node)
    base = target | {"namespace": pod.template.namespace, "pod": pod.name}
    slice_ = _cgroup(pod.uid, qos)
    containers = pod.spec.containers
    cpu_parts = _split(cpu, [max(c.requests.get("cpu", 0), 10) for c in containers])
    mem_weights = [max(c.requests.get("memory", 0), 2**20) >> 20 for c in containers]
    mem_parts = _split(memory, mem_weights)
    for k, container in enumerate(containers):
        cid = container_id(pod.uid, container.name)
        labels = base | {
            "container": container.name,
            "id": f"{slice_}/cri-containerd-{cid}.scope",
            "image": container_image(pod, k, init=False),
            "name": cid,
        }
        cpu_head = series_head("container_cpu_usage_seconds_total", labels | {"cpu": "total"})
        out.counter(cpu_head, np.cumsum(cpu_parts[k]), first)
        out.gauge(series_head("container_memory_working_set_bytes", labels), mem_parts[k], first)
    sid = container_id(pod.uid, "sandbox")
    pause = base | {"id": f"{slice_}/cri-containerd-{sid}.scope", "image": PAUSE_IMAGE, "name": sid}
    out.counter(
        series_head("container_cpu_usage_seconds_total", pause | {"cpu": "total"}),
        np.cumsum(sandbox),
        first,
    )
    pause_memory = np.full(hi - lo, SANDBOX_MEMORY, dtype=np.int64)
    out.gauge(series_head("container_memory_working_set_bytes", pause), pause_memory, first)
    cgroup = base | {"id": slice_}
    out.counter(
        series_head("container_cpu_usage_seconds_total", cgroup | {"cpu": "total"}),
        np.cumsum(cpu + sandbox),
        first,
    )
    out.gauge(
        series_head("container_memory_working_set_bytes", cgroup), memory + SANDBOX_MEMORY, first
    )


def _cadvisor_roots(out: SeriesWriter, cluster: SyntheticCluster) -> None:
    step = cluster.grid.step
    for i in range(len(cluster.nodes)):
        labels = _kubelet_target(cluster, i) | {"id": "/"}
        busy = cluster.usage.node_cpu[i] * step
        busy[0] = 0
        head = series_head("container_cpu_usage_seconds_total", labels | {"cpu": "total"})
        out.counter(head, np.cumsum(busy), 0)
        out.gauge(
            series_head("container_memory_working_set_bytes", labels),
            cluster.usage.node_memory[i],
            0,
        )


@dataclass(frozen=True)
class OpenMetricsOptions:
    """How to render the cluster (see the module docstring).

    - ``instance_convention``: ``"node-name"`` or ``"host-ip"``;
    - ``node_exporter_cpus``: emit this many ``cpu`` label values per node (default: every core);
    - ``node_labels``/``node_annotations``: add ``kube_node_labels``/``kube_node_annotations`` (off
      by default in KSM ≥ 2.10, as in a stock install);
    - ``exclude_metrics``: metric families left out (a size knob);
    - ``constant_step`` (seconds, a multiple of the step, ≤ 300): series whose value is constant
      over a run (KSM info, lifecycle, requests, allocatable, phase runs, MemTotal, uname) are
      sampled only that often plus each run's first and last sample — Prometheus' 5-minute
      lookback still sees them at every step and first/last-seen times stay exact; counters and
      usage gauges are always written at every step;
    - ``ksm_honor_labels=False``: a scrape config without ``honor_labels``: KSM's own
      ``namespace``/``pod``/``container``/``node`` become ``exported_*`` where the target has
      them (the target then also carries ``node`` of the KSM pod, as the
      ``kubernetes-service-endpoints`` job adds);
    - ``start_s``/``end_s`` (unix seconds, inclusive): only samples in this time slice are written
      (series stay whole and ascending within the slice; counters keep their cumulative values),
      so a long range can be written and backfilled a slice at a time — ``bench/collect.py
      --stream-days``; the whole grid by default;
    - ``ha_replicas=n``: every series n times with ``prometheus_replica="prometheus-k8s-<i>"``,
      as an HA pair looks through Thanos/Mimir without deduplication.
    """

    instance_convention: str = "node-name"
    node_exporter_cpus: int | None = None
    node_labels: bool = False
    node_annotations: bool = False
    exclude_metrics: frozenset[str] = frozenset()
    constant_step: int | None = None
    ksm_honor_labels: bool = True
    ha_replicas: int = 1
    start_s: int | None = None
    end_s: int | None = None

    def stride(self, step: int) -> int:
        """Grid points between samples of constant series; ``InputError`` on bad options."""
        if self.instance_convention not in CONVENTIONS:
            raise InputError(
                f"--instance-convention: {self.instance_convention!r} is not one of "
                f"{', '.join(CONVENTIONS)}"
            )
        if self.node_exporter_cpus is not None and self.node_exporter_cpus < 1:
            raise InputError(f"--node-exporter-cpus: {self.node_exporter_cpus} must be at least 1")
        if self.ha_replicas < 1:
            raise InputError(f"--ha-replicas: {self.ha_replicas} must be at least 1")
        if self.constant_step is None:
            return 1
        if self.constant_step % step or not step <= self.constant_step <= 300:
            raise InputError(
                f"--constant-step: {self.constant_step}s must be a multiple of the step "
                f"({step}s) and at most 300s (Prometheus' lookback)"
            )
        return self.constant_step // step


def _ksm_target(cluster: SyntheticCluster, options: OpenMetricsOptions) -> KsmTarget:
    index = next(i for i, p in enumerate(cluster.pods) if p.template.name == "kube-state-metrics")
    ksm = cluster.pods[index]
    ip = pod_ip(cluster, index) or "10.64.0.2"
    honor = options.ksm_honor_labels
    if options.instance_convention == "node-name":
        # kube-prometheus: kube-rbac-proxy in front, pod/service/endpoint/namespace dropped
        labels = {"container": "kube-rbac-proxy-main", "instance": f"{ip}:8443"}
    else:
        labels = {
            "container": "kube-state-metrics",
            "endpoint": "http",
            "instance": f"{ip}:8080",
            "namespace": "monitoring",
            "pod": ksm.name,
            "service": "kube-prometheus-stack-kube-state-metrics",
        }
    labels["job"] = "kube-state-metrics"
    if not honor and ksm.node >= 0:
        labels["node"] = cluster.nodes[ksm.node].name
    return KsmTarget(labels, honor=honor)


def _write_all(out: SeriesWriter, cluster: SyntheticCluster, options: OpenMetricsOptions) -> None:
    from analyzer.core.resources import qos_class

    target = _ksm_target(cluster, options)
    write_nodes(out, cluster, target, (options.node_labels, options.node_annotations))
    for index, pod in enumerate(cluster.pods):
        write_pod(out, cluster, index, target)
        qos = qos_class(pod.spec.containers + pod.spec.init_containers)
        _cadvisor_pod(out, cluster, index, qos)
    _node_exporter(out, cluster, options.instance_convention, options.node_exporter_cpus)
    _cadvisor_roots(out, cluster)


def _window(times: np.ndarray, start_s: int | None, end_s: int | None) -> tuple[int, int]:
    """Grid indices (inclusive) of the samples within ``start_s..end_s``."""
    lo = 0 if start_s is None else int(np.searchsorted(times, start_s, side="left"))
    hi = len(times) - 1 if end_s is None else int(np.searchsorted(times, end_s, side="right")) - 1
    return lo, hi


def _render(out: SeriesWriter, cluster: SyntheticCluster, options: OpenMetricsOptions) -> None:
    """Every series of ``cluster`` (once per HA replica) into ``out``, then ``# EOF``."""
    out.window = _window(cluster.grid.times, options.start_s, options.end_s)
    for replica in range(options.ha_replicas):
        if options.ha_replicas > 1:
            out.extra_label = f'prometheus_replica="prometheus-k8s-{replica}"'
        _write_all(out, cluster, options)
    out.close()


def estimate_openmetrics(
    cluster: SyntheticCluster, options: OpenMetricsOptions | None = None
) -> OpenMetricsStats:
    """What ``write_openmetrics`` would write, without writing: series and samples exactly,
    bytes estimated (``omtext.SizeEstimate``; within a few percent in tests/test_cli_details.py).
    """
    options = options or OpenMetricsOptions()
    out = SizeEstimate(
        cluster.grid.times, options.exclude_metrics, options.stride(cluster.grid.step)
    )
    _render(out, cluster, options)
    return OpenMetricsStats(series=out.series, samples=out.samples, bytes=out.bytes)


def write_openmetrics(
    cluster: SyntheticCluster,
    path: Path,
    options: OpenMetricsOptions | None = None,
    **overrides: Any,
) -> OpenMetricsStats:
    """Write ``cluster`` as OpenMetrics text to ``path`` atomically; returns what was written.

    Options come from ``options`` and/or keyword overrides of its fields
    (``write_openmetrics(c, p, instance_convention="host-ip", node_exporter_cpus=1)``).
    """
    if "exclude_metrics" in overrides:
        overrides["exclude_metrics"] = frozenset(overrides["exclude_metrics"])
    options = replace(options or OpenMetricsOptions(), **overrides)
    stride = options.stride(cluster.grid.step)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", buffering=1 << 20) as handle:
            out = SeriesWriter(handle, cluster.grid.times, options.exclude_metrics, stride)
            _render(out, cluster, options)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            Path(tmp).unlink()
        raise
    return OpenMetricsStats(series=out.series, samples=out.samples, bytes=path.stat().st_size)
