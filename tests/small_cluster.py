"""A tiny hand-specified cluster written as OpenMetrics, with its expected snapshot values.

Two nodes, four pods, one hour at a 60 s step (61 samples, k = 0..60, t = T0 + 60 k). Every number
below is chosen so the expected collected values can be worked out by hand (see EXPECTED_* and the
comments). Options reproduce real-world label shapes: node-exporter ``instance`` as node name or
``hostIP:9100``; kube-state-metrics scraped without honor_labels (``exported_*`` labels); HA pairs
(every series twice with a ``replica`` label).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

T0 = 1793491200  # 2026-11-01T00:00:00Z
STEP = 60
K = 61  # samples k = 0..60
END = T0 + (K - 1) * STEP
MI = 1024 * 1024
GI = 1024 * MI

NODES = {
    # node: (internal ip, allocatable, capacity) in KSM units (cpu cores, bytes, counts)
    "node-a": (
        "10.0.0.1",
        {"cpu": 3.5, "memory": 7.5 * GI, "pods": 110},
        {"cpu": 4, "memory": 8 * GI, "pods": 110},
    ),
    "node-b": (
        "10.0.0.2",
        {"cpu": 7.5, "memory": 15 * GI, "pods": 110, "nvidia_com_gpu": 2},
        {"cpu": 8, "memory": 16 * GI, "pods": 110, "nvidia_com_gpu": 2},
    ),
}

UID_WEB = "11111111-1111-4111-8111-111111111111"
UID_JOB = "22222222-2222-4222-8222-222222222222"
UID_DB_OLD = "33333333-3333-4333-8333-333333333333"
UID_DB_NEW = "44444444-4444-4444-8444-444444444444"

# Hand-computed expectations (analyzer units: millicores, bytes, counts).
EXPECTED_NODES = {
    "node-a": {"cpu": 3500, "memory": 7.5 * GI, "pods": 110},
    "node-b": {"cpu": 7500, "memory": 15 * GI, "pods": 110, "nvidia.com/gpu": 2},
}
EXPECTED_PODS = {
    # web: app 250m/256Mi, init 1 cpu/64Mi, overhead 100m/32Mi → max(250, 1000) + 100 = 1100 m,
    # max(256Mi, 64Mi) + 32Mi = 288Mi; limits app 500m/512Mi + overhead → 600 m, 544Mi.
    UID_WEB: {
        "namespace": "default",
        "name": "web-7d4b9c8f5-x2x9q",
        "node": "node-a",
        "requests": {"cpu": 1100, "memory": 288 * MI},
        "nonzero": {"cpu": 1100, "memory": 288 * MI},
        "limits": {"cpu": 600, "memory": 544 * MI},
        "owner": ("ReplicaSet", "web-7d4b9c8f5"),
        "workload": ("Deployment", "web"),
        "qos": "Burstable",
        "phase": "Running",
        "created": T0 - 600,
        "scheduled": T0 - 590,
        "started": T0 - 585,
        "finished": None,
    },
    # job: 2 cpu / 1Gi / 1 gpu requested, memory and gpu limited; completes at T0+1800.
    UID_JOB: {
        "namespace": "batch",
        "name": "job-x-8kz2p",
        "node": "node-b",
        "requests": {"cpu": 2000, "memory": GI, "nvidia.com/gpu": 1},
        "nonzero": {"cpu": 2000, "memory": GI},
        "limits": {"cpu": 0, "memory": GI, "nvidia.com/gpu": 1},
        "owner": ("Job", "job-x"),
        "workload": ("Job", "job-x"),
        "qos": "Burstable",
        "phase": "Succeeded",
        "created": T0 - 60,
        "scheduled": T0 - 55,
        "started": T0 - 50,
        "finished": T0 + 1800,
    },
    # db-0 (first uid): BestEffort, pending for 10 minutes, then on node-b until T0+2940, deleted.
    UID_DB_OLD: {
        "namespace": "default",
        "name": "db-0",
        "node": "node-b",
        "requests": {"cpu": 0, "memory": 0},
        "nonzero": {"cpu": 100, "memory": 200 * MI},
        "limits": {"cpu": 0, "memory": 0},
        "owner": ("StatefulSet", "db"),
        "workload": ("StatefulSet", "db"),
        "qos": "BestEffort",
        "phase": "Running",
        "created": T0,
        "scheduled": T0 + 600,
        "started": T0 + 605,
        "finished": T0 + 2940,
    },
    # db-0 again (new uid, same name) on node-a from T0+3060 to the end.
    UID_DB_NEW: {
        "namespace": "default",
        "name": "db-0",
        "node": "node-a",
        "requests": {"cpu": 0, "memory": 0},
        "nonzero": {"cpu": 100, "memory": 200 * MI},
        "limits": {"cpu": 0, "memory": 0},
        "owner": ("StatefulSet", "db"),
        "workload": ("StatefulSet", "db"),
        "qos": "BestEffort",
        "phase": "Running",
        "created": T0 + 3050,
        "scheduled": T0 + 3055,
        "started": T0 + 3058,
        "finished": None,
    },
}


def expected_node_cpu(node: str, k: int) -> float:
    """Busy millicores over step k (k >= 1): 2 cpus × (user + system) seconds / 60 s."""
    if node == "node-a":
        return 2 * (30 + 6 * (k % 3) + 15) / 60 * 1000  # 1500, 1700, 1900 m
    return 2 * (36 + 12) / 60 * 1000  # 1600 m


def expected_node_memory(node: str, k: int) -> int:
    """MemTotal − MemAvailable at sample k."""
    return GI + k * MI if node == "node-a" else 2 * GI + 2 * k * MI


# Pod usage (app containers only): uid → (k range with samples, cpu seconds per step, memory(k)).
POD_USAGE: dict[str, tuple[range, int, Callable[[int], int]]] = {
    UID_WEB: (range(0, 61), 12, lambda k: 100 * MI + 4096 * k),  # 200 m
    UID_JOB: (range(0, 31), 90, lambda k: 512 * MI),  # 1500 m, ends at completion (k = 30)
    UID_DB_OLD: (range(10, 50), 3, lambda k: 50 * MI),  # 50 m
    UID_DB_NEW: (range(51, 61), 6, lambda k: 60 * MI),  # 100 m
}


class _Writer:
    def __init__(self, replicas: tuple[str, ...]) -> None:
        self.lines: list[str] = []
        self.replicas = replicas

    def series(
        self, name: str, labels: dict[str, str], points: Iterable[tuple[int, float]]
    ) -> None:
        points = list(points)
        for replica in self.replicas:
            full = dict(labels)
            if replica:
                full["replica"] = replica
            text = ",".join(f'{k}="{v}"' for k, v in full.items() if v != "")
            for k, value in points:
                self.lines.append(f"{name}{{{text}}} {value!r} {T0 + k * STEP}")


def _ksm_labels(honor_labels: bool, **labels: str) -> dict[str, str]:
    target = {"job": "kube-state-metrics", "instance": "10.1.0.5:8080"}
    if honor_labels:
        return {**labels, **target}
    # Without honor_labels the scraped labels that clash with target labels get exported_.
    target.update(
        namespace="monitoring",
        pod="kube-state-metrics-0",
        container="kube-state-metrics",
        node="node-a",
    )
    renamed = {(f"exported_{k}" if k in target else k): v for k, v in labels.items()}
    return {**renamed, **target}


def write_small_cluster(
    path: Path,
    *,
    convention: str = "node-name",
    honor_labels: bool = True,
    ha: bool = False,
    node_exporter: bool = True,
) -> Path:
    """Write the cluster as OpenMetrics text to ``path`` (ends with ``# EOF``)."""
    w = _Writer(("a", "b") if ha else ("",))
    ksm = lambda **kw: _ksm_labels(honor_labels, **kw)  # noqa: E731
    every = range(K)
    for node, (ip, allocatable, capacity) in NODES.items():
        w.series(
            "kube_node_info",
            ksm(node=node, internal_ip=ip, kubelet_version="v1.34.1"),
            ((k, 1) for k in every),
        )
        for metric, values in (
            ("kube_node_status_allocatable", allocatable),
            ("kube_node_status_capacity", capacity),
        ):
            for resource, value in values.items():
                unit = (
                    "core" if resource == "cpu" else "byte" if resource == "memory" else "integer"
                )
                w.series(
                    metric,
                    ksm(node=node, resource=resource, unit=unit),
                    ((k, value) for k in every),
                )
        if not node_exporter:
            continue
        instance = node if convention == "node-name" else f"{ip}:9100"
        exporter = {"job": "node-exporter", "instance": instance}
        if convention == "host-ip":
            exporter.update(namespace="monitoring", pod=f"node-exporter-{ip[-1]}")
        w.series(
            "node_uname_info",
            {**exporter, "nodename": node, "sysname": "Linux"},
            ((k, 1) for k in every),
        )
        for cpu in ("0", "1"):
            for mode in ("user", "system", "idle", "iowait", "steal"):
                total = 1000.0
                points = []
                for k in every:
                    if k > 0:
                        user = 30 + 6 * (k % 3) if node == "node-a" else 36
                        system = 15 if node == "node-a" else 12
                        iowait = 6
                        per = {"user": user, "system": system, "iowait": iowait, "steal": 0}
                        per["idle"] = 60 - user - system - iowait
                        total += per[mode]
                    points.append((k, total))
                w.series("node_cpu_seconds_total", {**exporter, "cpu": cpu, "mode": mode}, points)
        mem_total = 8 * GI if node == "node-a" else 16 * GI
        w.series("node_memory_MemTotal_bytes", exporter, ((k, mem_total) for k in every))
        w.series(
            "node_memory_MemAvailable_bytes",
            exporter,
            ((k, mem_total - expected_node_memory(node, k)) for k in every),
        )
    _write_pods(w, ksm)
    _write_cadvisor(w)
    text = "\n".join(w.lines) + "\n# EOF\n"
    path.write_text(text)
    return path


def _write_pods(w: _Writer, ksm: Callable[..., dict[str, str]]) -> None:
    phases = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
    pods = [
        # uid, ns, name, node, alive ks, pending until k, owner, priority class, phase(k)
        (
            UID_WEB,
            "default",
            "web-7d4b9c8f5-x2x9q",
            "node-a",
            range(0, 61),
            0,
            ("ReplicaSet", "web-7d4b9c8f5"),
            "high",
            lambda k: "Running",
        ),
        (
            UID_JOB,
            "batch",
            "job-x-8kz2p",
            "node-b",
            range(0, 41),
            0,
            ("Job", "job-x"),
            "batch-low",
            lambda k: "Running" if k < 30 else "Succeeded",
        ),
        (
            UID_DB_OLD,
            "default",
            "db-0",
            "node-b",
            range(0, 50),
            10,
            ("StatefulSet", "db"),
            "",
            lambda k: "Pending" if k < 10 else "Running",
        ),
        (
            UID_DB_NEW,
            "default",
            "db-0",
            "node-a",
            range(51, 61),
            51,
            ("StatefulSet", "db"),
            "",
            lambda k: "Running",
        ),
    ]
    for uid, ns, name, node, alive, pending_until, owner, priority_class, phase in pods:
        expected = EXPECTED_PODS[uid]
        base = {"namespace": ns, "pod": name, "uid": uid}
        pending = [k for k in alive if k < pending_until]
        bound = [k for k in alive if k >= pending_until]
        info = {
            **base,
            "created_by_kind": owner[0],
            "created_by_name": owner[1],
            "priority_class": priority_class,
        }
        if pending:
            w.series("kube_pod_info", ksm(**info), ((k, 1) for k in pending))
        w.series(
            "kube_pod_info", ksm(**info, node=node, host_ip=NODES[node][0]), ((k, 1) for k in bound)
        )
        w.series(
            "kube_pod_owner",
            ksm(**base, owner_kind=owner[0], owner_name=owner[1], owner_is_controller="true"),
            ((k, 1) for k in alive),
        )
        w.series("kube_pod_created", ksm(**base), ((k, expected["created"]) for k in alive))
        w.series(
            "kube_pod_status_scheduled_time",
            ksm(**base),
            ((k, expected["scheduled"]) for k in bound),
        )
        w.series("kube_pod_start_time", ksm(**base), ((k, expected["started"]) for k in bound))
        if uid == UID_JOB:
            w.series(
                "kube_pod_completion_time", ksm(**base), ((k, T0 + 1800) for k in alive if k >= 30)
            )
        for p in phases:
            w.series(
                "kube_pod_status_phase",
                ksm(**base, phase=p),
                ((k, int(phase(k) == p)) for k in alive),
            )
        w.series(
            "kube_pod_status_qos_class",
            ksm(**base, qos_class=expected["qos"]),
            ((k, 1) for k in alive),
        )
    requests = [
        # uid, container, init?, kind, resource, unit, value (KSM units)
        (UID_WEB, "app", False, "requests", "cpu", "core", 0.25),
        (UID_WEB, "app", False, "requests", "memory", "byte", 256 * MI),
        (UID_WEB, "app", False, "limits", "cpu", "core", 0.5),
        (UID_WEB, "app", False, "limits", "memory", "byte", 512 * MI),
        (UID_WEB, "init", True, "requests", "cpu", "core", 1.0),
        (UID_WEB, "init", True, "requests", "memory", "byte", 64 * MI),
        (UID_JOB, "main", False, "requests", "cpu", "core", 2.0),
        (UID_JOB, "main", False, "requests", "memory", "byte", GI),
        (UID_JOB, "main", False, "requests", "nvidia_com_gpu", "integer", 1),
        (UID_JOB, "main", False, "limits", "memory", "byte", GI),
        (UID_JOB, "main", False, "limits", "nvidia_com_gpu", "integer", 1),
    ]
    alive_of = {p[0]: p[4] for p in pods}
    node_of = {p[0]: p[3] for p in pods}
    names = {p[0]: (p[1], p[2]) for p in pods}
    for uid, container, init, kind, resource, unit, value in requests:
        ns, name = names[uid]
        metric = f"kube_pod_{'init_' if init else ''}container_resource_{kind}"
        labels = ksm(
            namespace=ns,
            pod=name,
            uid=uid,
            container=container,
            node=node_of[uid],
            resource=resource,
            unit=unit,
        )
        w.series(metric, labels, ((k, value) for k in alive_of[uid]))
    for uid in (UID_DB_OLD, UID_DB_NEW):
        ns, name = names[uid]
        labels = ksm(namespace=ns, pod=name, uid=uid, container="postgres", image="postgres:16")
        w.series("kube_pod_container_info", labels, ((k, 1) for k in alive_of[uid]))
    ns, name = names[UID_WEB]
    w.series(
        "kube_pod_overhead_cpu_cores",
        ksm(namespace=ns, pod=name, uid=UID_WEB),
        ((k, 0.1) for k in alive_of[UID_WEB]),
    )
    w.series(
        "kube_pod_overhead_memory_bytes",
        ksm(namespace=ns, pod=name, uid=UID_WEB),
        ((k, 32 * MI) for k in alive_of[UID_WEB]),
    )


def _write_cadvisor(w: _Writer) -> None:
    placement = {
        UID_WEB: ("default", "web-7d4b9c8f5-x2x9q", "node-a", "app", "web:1"),
        UID_JOB: ("batch", "job-x-8kz2p", "node-b", "main", "job:1"),
        UID_DB_OLD: ("default", "db-0", "node-b", "postgres", "postgres:16"),
        UID_DB_NEW: ("default", "db-0", "node-a", "postgres", "postgres:16"),
    }
    for uid, (ks, cpu_per_step, memory) in POD_USAGE.items():
        ns, pod, node, container, image = placement[uid]
        cgroup = f"/kubepods/burstable/pod{uid}"
        common = {
            "job": "kubelet",
            "metrics_path": "/metrics/cadvisor",
            "node": node,
            "instance": node,
            "namespace": ns,
            "pod": pod,
        }
        app = {**common, "container": container, "image": image, "id": f"{cgroup}/c1"}
        pod_cgroup = {**common, "container": "", "image": "", "id": cgroup}
        pause = {
            **common,
            "container": "",
            "image": "registry.k8s.io/pause:3.9",
            "id": f"{cgroup}/sandbox",
        }
        for labels, cpu, mem_extra in (
            (app, cpu_per_step, 0),
            (pod_cgroup, cpu_per_step + 1, 3 * MI),
            (pause, 1, MI),
        ):
            w.series(
                "container_cpu_usage_seconds_total",
                {**labels, "cpu": "total"},
                ((k, 500 + cpu * (k - ks[0])) for k in ks),
            )
            w.series(
                "container_memory_working_set_bytes",
                labels,
                ((k, memory(k) + mem_extra if labels is not pause else mem_extra) for k in ks),
            )
