"""``analyzer check``: what a user needs to know before the first collect.

Reachability, which server it is and its version (``analyzer.prom.identify``), which metrics each
source exports (kube-state-metrics, node-exporter, cAdvisor) and how much of the range they cover,
and the label conventions in use: node-exporter ``instance`` as node name or ``hostIP:port``, a
``node`` label, ``exported_*`` labels from scraping kube-state-metrics without honor_labels.

The verdict follows what ``collect`` can produce. A source none of whose required metrics has data
leaves a snapshot table empty (``SOURCES``): "not usable", one line per missing source with its
fix. Gaps that still give every table (a required metric missing or partly covered, unmapped
node-exporter targets): "partially usable". Both exit 3, like collect on such a server.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from analyzer.collect.cluster_label import detect
from analyzer.collect.usage import NodeMapper
from analyzer.core.durations import format_duration
from analyzer.core.quantity import sanitize_resource_name
from analyzer.prom.client import PromClient
from analyzer.prom.identify import identify_server
from analyzer.prom.scrape_interval import detect_intervals, rate_window
from analyzer.prom.settings import PromSettings
from analyzer.prom.time_grid import TimeGrid

# (source, metric, required by the collector)
METRICS: tuple[tuple[str, str, bool], ...] = (
    ("kube-state-metrics", "kube_pod_info", True),
    ("kube-state-metrics", "kube_pod_created", True),
    ("kube-state-metrics", "kube_pod_container_resource_requests", True),
    ("kube-state-metrics", "kube_pod_container_resource_limits", True),
    ("kube-state-metrics", "kube_node_info", True),
    ("kube-state-metrics", "kube_node_status_allocatable", True),
    ("kube-state-metrics", "kube_node_status_capacity", False),
    ("kube-state-metrics", "kube_pod_owner", False),
    ("kube-state-metrics", "kube_pod_status_phase", False),
    ("kube-state-metrics", "kube_pod_status_scheduled_time", False),
    ("kube-state-metrics", "kube_pod_start_time", False),
    ("kube-state-metrics", "kube_pod_completion_time", False),
    ("kube-state-metrics", "kube_pod_init_container_resource_requests", False),
    ("kube-state-metrics", "kube_pod_container_info", False),
    ("kube-state-metrics", "kube_pod_overhead_cpu_cores", False),
    ("kube-state-metrics", "kube_replicaset_owner", False),
    ("kube-state-metrics", "kube_node_labels", False),
    ("kube-state-metrics", "kube_pod_labels", False),
    ("kube-state-metrics", "kube_node_annotations", False),
    ("kube-state-metrics", "kube_node_spec_taint", False),
    ("kube-state-metrics", "kube_pod_tolerations", False),
    ("kube-state-metrics", "kube_pod_nodeselectors", False),
    ("node-exporter", "node_cpu_seconds_total", True),
    ("node-exporter", "node_memory_MemTotal_bytes", True),
    ("node-exporter", "node_memory_MemAvailable_bytes", True),
    ("node-exporter", "node_uname_info", False),
    ("cadvisor", "container_cpu_usage_seconds_total", True),
    ("cadvisor", "container_memory_working_set_bytes", True),
)

# source → (what the snapshot lacks without it, the fix)
SOURCES: dict[str, tuple[str, str]] = {
    "kube-state-metrics": (
        "no pods or nodes tables: collect writes nothing",
        "deploy kube-state-metrics (the prometheus-community kube-state-metrics chart, or "
        "kube-prometheus-stack) and scrape it with honor_labels: true",
    ),
    "cadvisor": (
        "no pod usage (pod_usage table empty)",
        "scrape the kubelet's /metrics/cadvisor endpoint (kube-prometheus-stack's kubelet "
        "ServiceMonitor does; a plain scrape job: kubernetes_sd_configs role node, "
        "metrics_path /metrics/cadvisor, scheme https with the service account token)",
    ),
    "node-exporter": (
        "no node usage (node_usage table empty)",
        "deploy node-exporter (a DaemonSet on every node: the prometheus-community "
        "prometheus-node-exporter chart, or kube-prometheus-stack) and scrape it",
    ),
}
NO_KSM = "unknown, no kube-state-metrics series"
COVERAGE_POINTS = 120  # evaluation points over the range for the coverage estimate
FULL_COVERAGE = 0.99


@dataclass
class MetricStatus:
    """One metric: whether it exists in the range, its peak series count, coverage 0..1."""

    source: str
    metric: str
    required: bool
    series: int = 0
    coverage: float = 0.0

    @property
    def present(self) -> bool:
        return self.series > 0


@dataclass
class CheckReport:
    """Everything ``analyzer check`` prints; ``exit_code`` 0 usable, 3 partially or not usable.

    ``server`` is the kind of server (``analyzer.prom.identify``), ``version`` what it reports
    (``""`` when nothing), ``missing_sources`` the sources without any required metric in the
    range, whose lines (with the fix) lead ``problems``.
    """

    url: str
    start: str
    end: str
    server: str = "unknown"
    version: str = ""
    server_line: str = ""
    metrics: list[MetricStatus] = field(default_factory=list)
    conventions: dict[str, Any] = field(default_factory=dict)
    missing_sources: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def usable(self) -> bool:
        return not self.problems

    @property
    def verdict(self) -> str:
        """``usable``, ``partially usable`` (a snapshot with gaps) or ``not usable``."""
        if self.missing_sources:
            return "not usable"
        return "partially usable" if self.problems else "usable"

    @property
    def exit_code(self) -> int:
        return 0 if self.usable else 3

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the ``--format json`` output)."""
        data = asdict(self)
        data["reachable"] = True
        data["usable"] = self.usable
        data["verdict"] = self.verdict
        data["exit_code"] = self.exit_code
        for item in data["metrics"]:
            item["present"] = item["series"] > 0
        return data


def _iso(seconds: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


def run_check(settings: PromSettings, grid: TimeGrid) -> CheckReport:
    """Probe the server over ``grid``'s range; raises ``SourceError`` when it is unreachable."""
    with PromClient(settings) as client:
        report = CheckReport(url=client.public_url, start=_iso(grid.start), end=_iso(grid.end))
        identity = identify_server(client)
        report.server, report.version = identity.kind, identity.version
        report.server_line = identity.describe()
        _metrics(client, grid, report)
        _conventions(client, grid, report)
        _label_allowlist(client, grid, report)
        if settings.select is None:  # a selected cluster's series carry one value only
            found = detect(client, grid.start, grid.end)
            report.conventions["cluster_label"] = found
            if found is not None:
                report.warnings.append(f"several clusters on this server: {found['line']}")
        intervals = detect_intervals(client, grid.start, grid.end)
        report.conventions["scrape_interval"] = {s: i.seconds for s, i in intervals.items()}
        report.warnings = [*client.warnings, *report.warnings]
    return report


def _metrics(client: PromClient, grid: TimeGrid, report: CheckReport) -> None:
    span = grid.end - grid.start
    step = max(grid.step, math.ceil(span / COVERAGE_POINTS))
    names = "|".join(m for _, m, _ in METRICS)
    series = client.query_range(
        f'count by (__name__) ({{__name__=~"{names}"}})',
        grid.start,
        grid.end,
        step,
        what="metric coverage",
    )
    points = (grid.end - grid.start) // step + 1
    found = {s.labels.get("__name__", ""): s for s in series}
    for source, metric, required in METRICS:
        status = MetricStatus(source, metric, required)
        hit = found.get(metric)
        if hit is not None and len(hit.values):
            status.series = int(np.nanmax(hit.values))
            status.coverage = round(min(1.0, len(hit.values) / points), 4)
        report.metrics.append(status)
    for source, (lacks, fix) in SOURCES.items():
        needed = [m for m in report.metrics if m.source == source and m.required]
        if not any(m.present for m in needed):
            report.missing_sources.append(source)
            report.problems.append(f"{source}: no series in the range, {lacks}; fix: {fix}")
    for status in report.metrics:
        source, metric, required = status.source, status.metric, status.required
        if source in report.missing_sources:
            continue  # said once for the whole source, with its fix
        if required and not status.present:
            report.problems.append(f"{source}: {metric} has no data in the range")
        elif required and status.coverage < FULL_COVERAGE:
            report.problems.append(
                f"{source}: {metric} covers only {status.coverage:.0%} of the range"
            )


def _conventions(client: PromClient, grid: TimeGrid, report: CheckReport) -> None:
    span = f"{grid.end - grid.start}s"
    no_ksm = "kube-state-metrics" in report.missing_sources
    labels = set(client.label_names(["kube_pod_info"], grid.start, grid.end))
    exported = sorted(name for name in labels if name.startswith("exported_"))
    if no_ksm:
        report.conventions["kube_state_metrics_labels"] = NO_KSM
    elif exported:
        report.conventions["kube_state_metrics_labels"] = (
            "exported_* (scraped without honor_labels)"
        )
    else:
        report.conventions["kube_state_metrics_labels"] = "plain (honor_labels)"
    report.conventions["exported_labels"] = exported
    nodes = client.query(
        f"group by (node, exported_node, internal_ip) (last_over_time(kube_node_info[{span}]))",
        grid.end,
        what="node names",
    )
    node_key = "exported_node" if any("exported_node" in s.labels for s in nodes) else "node"
    names = {s.labels.get(node_key, "") for s in nodes} - {""}
    ips = {
        s.labels["internal_ip"]: s.labels.get(node_key, "")
        for s in nodes
        if s.labels.get("internal_ip")
    }
    uname = client.query(
        f"group by (instance, nodename) (last_over_time(node_uname_info[{span}]))",
        grid.end,
        what="node_uname_info",
    )
    mapper = NodeMapper(
        names, ips, {s.labels.get("instance", ""): s.labels.get("nodename", "") for s in uname}
    )
    targets = client.query(
        f"group by (instance, node) (last_over_time(node_memory_MemTotal_bytes[{span}]))",
        grid.end,
        what="node-exporter targets",
    )
    mapped = {mapper.node_of(s.labels) for s in targets} - {None}
    report.conventions["instance_convention"] = mapper.convention
    report.conventions["nodes"] = len(names)
    report.conventions["nodes_with_node_exporter"] = len(mapped)
    if "node-exporter" in report.missing_sources:
        report.conventions["node_exporter_instance"] = "unknown, no node-exporter series"
        report.conventions["instance_convention"] = ""
        return
    if no_ksm:
        report.conventions["instance_convention"] = ""
        # node-exporter targets map to kube_node_info's nodes: without them nothing can be said
        report.conventions["node_exporter_instance"] = (
            "unknown, no kube_node_info to map targets to"
        )
        return
    report.conventions["node_exporter_instance"] = {
        "node-name": "instance = node name (kube-prometheus)",
        "host-ip": "instance = hostIP:port, mapped via kube_node_info internal_ip (kube-prometheus-stack)",
        "node-label": "node label on node-exporter series",
        "uname": "instance mapped via node_uname_info nodename",
        "": "none found",
    }[mapper.convention]
    if mapper.unmapped:
        sample = ", ".join(sorted(mapper.unmapped)[:3])
        report.problems.append(
            f"node-exporter: {len(mapper.unmapped)} target(s) match no node (e.g. {sample})"
        )
    missing = sorted(names - mapped)
    if names and targets and missing:
        report.problems.append(
            f"node-exporter: {len(missing)} node(s) without node-exporter data (e.g. {missing[0]})"
        )


# Node label keys the scheduling plugins read (topology domains, pools, hostname).
TOPOLOGY_NODE_LABELS = (
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "kubernetes.io/hostname",
)
ALLOWLIST_FLAG = (
    "--metric-labels-allowlist=pods=[*],nodes=[topology.kubernetes.io/zone,"
    "topology.kubernetes.io/region,kubernetes.io/hostname,<your pool label, e.g. "
    "cloud.google.com/gke-nodepool>]"
)


def _label_allowlist(client: PromClient, grid: TimeGrid, report: CheckReport) -> None:
    """Whether kube-state-metrics exports the pod and node labels that spread constraints and
    affinity select on; when not, the ``--metric-labels-allowlist`` it needs (a warning: collect
    still works, with ``labels`` empty or partial)."""
    if "kube-state-metrics" in report.missing_sources:
        return
    pod_keys = [
        n
        for n in client.label_names(["kube_pod_labels"], grid.start, grid.end)
        if n.startswith("label_")
    ]
    node_keys = set(client.label_names(["kube_node_labels"], grid.start, grid.end))
    missing_nodes = [
        key
        for key in TOPOLOGY_NODE_LABELS
        if "label_" + sanitize_resource_name(key) not in node_keys
    ]
    report.conventions["pod_labels"] = (
        f"{len(pod_keys)} label key(s) exported" if pod_keys else "not exported"
    )
    report.conventions["node_topology_labels"] = (
        "all exported" if not missing_nodes else "missing " + ", ".join(missing_nodes)
    )
    if not pod_keys or missing_nodes:
        what = []
        if not pod_keys:
            what.append("pod labels (kube_pod_labels)")
        if missing_nodes:
            what.append("node labels " + ", ".join(missing_nodes))
        report.warnings.append(
            f"kube-state-metrics does not export {' and '.join(what)}, which topology spread "
            f"and pod affinity select on; run it with {ALLOWLIST_FLAG} (or pass "
            "'collect --kube-objects' for pod templates and Node objects)"
        )


def _interval_lines(report: CheckReport, step: int) -> list[str]:
    """Per source: the measured scrape interval and the irate window collect would use."""
    lines = []
    for source, seconds in report.conventions.get("scrape_interval", {}).items():
        window = _duration(rate_window(step, seconds))
        found = f"{seconds}s" if seconds else "not measured (no samples)"
        lines.append(
            f"  {'scrape_interval':<26} {source} {found} "
            f"(irate window {window} at --step {_duration(step)})"
        )
    return lines


def _duration(seconds: int) -> str:
    from datetime import timedelta

    return format_duration(timedelta(seconds=seconds))


def format_table(report: CheckReport, grid_step: int = 60) -> str:
    """The human-readable report (``grid_step``: the --step the irate windows are quoted at)."""
    lines = [
        f"Server      {report.url}  {report.server_line}",
        f"Range       {report.start} .. {report.end}",
        "",
        f"{'source':<20} {'metric':<44} {'need':<9} {'series':>7} {'coverage':>9}",
    ]
    for m in report.metrics:
        need = "required" if m.required else "optional"
        cover = f"{m.coverage:.0%}" if m.present else "missing"
        lines.append(f"{m.source:<20} {m.metric:<44} {need:<9} {m.series:>7} {cover:>9}")
    lines.append("")
    lines.append("Label conventions")
    for label, key in (
        ("KSM label convention", "kube_state_metrics_labels"),
        ("node-exporter instance", "node_exporter_instance"),
        ("nodes (kube_node_info)", "nodes"),
        ("nodes with node-exporter", "nodes_with_node_exporter"),
        ("pod labels", "pod_labels"),
        ("node topology labels", "node_topology_labels"),
    ):
        lines.append(f"  {label + ':':<26} {report.conventions.get(key, '')}")
    found = report.conventions.get("cluster_label")
    lines.append(f"  {'cluster label:':<26} {found['line'] if found else 'none (one cluster)'}")
    lines.extend(_interval_lines(report, grid_step))
    for warning in report.warnings:
        lines.append(f"warning: {warning}")
    lines.append("")
    if report.usable:
        lines.append("Result: usable (exit 0)")
    elif report.missing_sources:
        lines.append(
            f"Result: not usable (exit {report.exit_code}): collect cannot fill the snapshot's "
            "tables from this server:"
        )
        lines.extend(f"  - {p}" for p in report.problems)
    else:
        lines.append(
            f"Result: partially usable (exit {report.exit_code}): collect writes a snapshot "
            "with gaps:"
        )
        lines.extend(f"  - {p}" for p in report.problems)
    return "\n".join(lines)
