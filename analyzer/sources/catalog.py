"""What the synthetic cluster is made of: node pools, priority classes and workload templates.

The shapes follow what managed clusters run: several pools of different shapes, a tainted GPU
pool, kube-reserved carved out of capacity (GKE's published reservation tables), DaemonSets on
every node, Deployments of every QoS class, StatefulSets, CronJobs and Jobs, init containers that
dominate the request, and a RuntimeClass with pod overhead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from analyzer.core.resources import Container

GIB = 2**30
MIB = 2**20

# Resources the generator models, in the snapshot's column order.
RESOURCES = ("cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "pods")
GPU = "nvidia.com/gpu"

# PriorityClass name -> value. KSM exports only the class name (kube_pod_info priority_class), so
# a collector maps names to values with a table like this one.
PRIORITY_CLASSES: Mapping[str, int] = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
    "high": 10000,
    "": 0,
    "batch-low": -10,
}

# RuntimeClass overhead (Kata Containers' documented example values).
KATA_OVERHEAD: Mapping[str, int] = {"cpu": 250, "memory": 160 * MIB}

PAUSE_IMAGE = "registry.k8s.io/pause:3.9"
# The synthetic cluster's kubelets (kube_node_info{kubelet_version}, nodes.kubelet_version): by
# default the version whose scheduler arithmetic is the default (scheduling/versions.py), so a
# replay of generated data reads it and keeps the default formulas; SyntheticSpec.kubelet_version
# sets another.
KUBELET_VERSION = "v1.36.2"
KERNEL_VERSION = "6.1.0-28-cloud-amd64"
OS_IMAGE = "Debian GNU/Linux 12 (bookworm)"
CONTAINER_RUNTIME = "containerd://1.7.24"

# Nodes annotated with a Koordinator threshold override (read via kube_node_annotations, opt-in).
KOORD_THRESHOLD_ANNOTATION = "scheduling.koordinator.sh/usage-thresholds"


@dataclass(frozen=True)
class NodePool:
    """One node pool: a machine shape and its share of the cluster's nodes."""

    name: str
    share: float
    cpu_cores: int
    memory_gib: int
    instance_type: str
    gpus: int = 0
    annotations: Mapping[str, str] = field(default_factory=dict)
    dedicated: bool = False  # tainted dedicated=<name>:NoSchedule (SyntheticSpec.dedicated_pools)


POOLS: tuple[NodePool, ...] = (
    NodePool("general", 0.5, 16, 64, "n2-standard-16"),
    NodePool("memory", 0.2, 8, 64, "n2-highmem-8"),
    NodePool(
        "compute",
        0.2,
        32,
        64,
        "n2-highcpu-32",
        annotations={KOORD_THRESHOLD_ANNOTATION: '{"usageThresholds":{"cpu":75,"memory":90}}'},
    ),
    NodePool("gpu", 0.1, 32, 128, "a2-highgpu-4g", gpus=4),
)


def _tiered(total: int, tiers: tuple[tuple[int, int, int], ...]) -> int:
    """Σ over tiers of (the part of ``total`` inside the tier) × num / den, in integer units."""
    reserved = 0
    lower = 0
    for upper, num, den in tiers:
        part = max(0, min(total, upper) - lower)
        reserved += part * num // den
        lower = upper
    return reserved


def node_capacity(pool: NodePool) -> dict[str, int]:
    """Capacity of one node of ``pool`` in analyzer units."""
    capacity = {
        "cpu": pool.cpu_cores * 1000,
        "memory": pool.memory_gib * GIB,
        "ephemeral-storage": 100 * GIB,
        "pods": 110,
    }
    if pool.gpus:
        capacity[GPU] = pool.gpus
    return capacity


def node_allocatable(capacity: Mapping[str, int]) -> dict[str, int]:
    """Allocatable = capacity − kube-reserved − eviction threshold (GKE's reservation tables)."""
    big = 1 << 62
    cpu_reserved = _tiered(
        capacity["cpu"], ((1000, 6, 100), (2000, 1, 100), (4000, 5, 1000), (big, 25, 10000))
    )
    memory_reserved = _tiered(
        capacity["memory"],
        (
            (4 * GIB, 25, 100),
            (8 * GIB, 20, 100),
            (16 * GIB, 10, 100),
            (128 * GIB, 6, 100),
            (big, 2, 100),
        ),
    )
    allocatable = dict(capacity)
    allocatable["cpu"] = capacity["cpu"] - cpu_reserved
    allocatable["memory"] = capacity["memory"] - memory_reserved - 100 * MIB
    allocatable["ephemeral-storage"] = capacity["ephemeral-storage"] * 9 // 10
    return allocatable


@dataclass(frozen=True)
class Template:
    """A workload's pod template plus how it behaves (usage, lifetime, where it may run).

    ``cpu_use``/``mem_use`` are the mean usage of one pod (millicores, bytes); ``daily`` the
    amplitude of its daily cycle (0..1); ``pool`` restricts placement (a nodeSelector, or the GPU
    taint's toleration); ``duration`` is the mean run time of a Job pod in seconds.
    """

    name: str
    kind: str  # Deployment | StatefulSet | DaemonSet | Job | CronJob
    namespace: str
    containers: tuple[Container, ...]
    cpu_use: float
    mem_use: float
    init_containers: tuple[Container, ...] = ()
    overhead: Mapping[str, int] = field(default_factory=dict)
    priority_class: str = ""
    daily: float = 0.3
    noise: float = 0.08
    pool: str | None = None
    duration: float = 0.0
    weight: float = 1.0  # share of long-running replicas
    host_network: bool = False
    images: tuple[str, ...] = ()


def _c(
    name: str, requests: Mapping[str, int], limits: Mapping[str, int] | None = None
) -> Container:
    return Container(name=name, requests=dict(requests), limits=dict(limits or {}))


DAEMONSETS: tuple[Template, ...] = (
    Template(
        "node-exporter",
        "DaemonSet",
        "monitoring",
        (_c("node-exporter", {"cpu": 100, "memory": 180 * MIB}, {"memory": 180 * MIB}),),
        cpu_use=25,
        mem_use=40 * MIB,
        priority_class="system-node-critical",
        daily=0.05,
        host_network=True,
        images=("quay.io/prometheus/node-exporter:v1.8.2",),
    ),
    Template(
        "nvidia-device-plugin",
        "DaemonSet",
        "kube-system",
        (_c("nvidia-device-plugin", {"cpu": 10, "memory": 20 * MIB}),),
        cpu_use=3,
        mem_use=15 * MIB,
        priority_class="system-node-critical",
        daily=0.0,
        pool="gpu",
        images=("nvcr.io/nvidia/k8s-device-plugin:v0.16.2",),
    ),
)

KSM_TEMPLATE = Template(
    "kube-state-metrics",
    "Deployment",
    "monitoring",
    (
        _c(
            "kube-state-metrics",
            {"cpu": 100, "memory": 190 * MIB},
            {"cpu": 200, "memory": 250 * MIB},
        ),
    ),
    cpu_use=40,
    mem_use=120 * MIB,
    priority_class="system-cluster-critical",
    daily=0.1,
    images=("registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.13.0",),
)

# Long-running workloads, drawn by weight until the target density is reached.
APPS: tuple[Template, ...] = (
    Template(
        "web-frontend",
        "Deployment",
        "shop",
        (
            _c(
                "app",
                {"cpu": 250, "memory": 256 * MIB, "ephemeral-storage": 1 * GIB},
                {"memory": 512 * MIB},
            ),
            _c("log-shipper", {"cpu": 50, "memory": 64 * MIB}, {"cpu": 100, "memory": 128 * MIB}),
        ),
        cpu_use=220,
        mem_use=280 * MIB,
        daily=0.5,
        weight=3.0,
        images=("registry.example.com/shop/web:4.2.1", "fluent/fluent-bit:3.1"),
    ),
    Template(
        "checkout-api",
        "Deployment",
        "shop",
        (_c("app", {"cpu": 1000, "memory": 2 * GIB}, {"cpu": 1000, "memory": 2 * GIB}),),
        cpu_use=550,
        mem_use=1300 * MIB,
        priority_class="high",
        daily=0.45,
        weight=2.0,
        images=("registry.example.com/shop/checkout:2.8.0",),
    ),
    Template(
        "search",
        "Deployment",
        "shop",
        (_c("app", {"cpu": 2000, "memory": 4 * GIB}, {"memory": 6 * GIB}),),
        # The index warm-up needs more cpu than the server: the init phase dominates cpu.
        init_containers=(_c("warm-index", {"cpu": 4000, "memory": 1 * GIB}),),
        cpu_use=1400,
        mem_use=3 * GIB,
        daily=0.35,
        weight=1.0,
        images=(
            "registry.example.com/shop/search:7.1.0",
            "registry.example.com/shop/indexer:7.1.0",
        ),
    ),
    Template(
        "session-cache",
        "StatefulSet",
        "shop",
        (_c("redis", {"cpu": 500, "memory": 12 * GIB}, {"memory": 12 * GIB}),),
        cpu_use=300,
        mem_use=9 * GIB,
        daily=0.2,
        pool="memory",
        weight=1.0,
        images=("redis:7.4",),
    ),
    Template(
        "debug-toolbox",
        "Deployment",
        "ops",
        (_c("shell", {}),),  # no requests, no limits: BestEffort
        cpu_use=8,
        mem_use=30 * MIB,
        daily=0.0,
        noise=0.3,
        weight=0.5,
        images=("nicolaka/netshoot:v0.13",),
    ),
    Template(
        "renderer",
        "Deployment",
        "media",
        (_c("render", {"cpu": 500, "memory": 1 * GIB}, {"cpu": 1000, "memory": 1 * GIB}),),
        overhead=KATA_OVERHEAD,  # runtimeClassName: kata
        cpu_use=420,
        mem_use=700 * MIB,
        daily=0.4,
        weight=1.0,
        images=("registry.example.com/media/render:1.9.3",),
    ),
    Template(
        "coredns",
        "Deployment",
        "kube-system",
        (_c("coredns", {"cpu": 100, "memory": 70 * MIB}, {"memory": 170 * MIB}),),
        cpu_use=30,
        mem_use=40 * MIB,
        priority_class="system-cluster-critical",
        daily=0.3,
        weight=0.3,
        images=("registry.k8s.io/coredns/coredns:v1.11.3",),
    ),
    Template(
        "inference",
        "Deployment",
        "ml",
        (
            _c(
                "server",
                {"cpu": 2000, "memory": 8 * GIB, GPU: 1},
                {"cpu": 4000, "memory": 8 * GIB, GPU: 1},
            ),
        ),
        cpu_use=1200,
        mem_use=5 * GIB,
        priority_class="high",
        daily=0.5,
        pool="gpu",
        weight=0.25,
        images=("nvcr.io/nvidia/tritonserver:24.08-py3",),
    ),
)

# Batch work: a CronJob every hour and Jobs arriving at a rate scaled by churn.
REPORTS = Template(
    "reports",
    "CronJob",
    "analytics",
    (_c("report", {"cpu": 500, "memory": 2 * GIB}, {"cpu": 1000, "memory": 3 * GIB}),),
    # The fetch step holds more memory than the report itself: the init phase dominates memory.
    init_containers=(_c("fetch", {"cpu": 1000, "memory": 3 * GIB}, {"memory": 3 * GIB}),),
    cpu_use=600,
    mem_use=1500 * MIB,
    priority_class="batch-low",
    daily=0.0,
    duration=20 * 60,
    images=(
        "registry.example.com/analytics/report:3.0",
        "registry.example.com/analytics/fetch:3.0",
    ),
)
ETL = Template(
    "etl",
    "Job",
    "analytics",
    (_c("etl", {"cpu": 3000, "memory": 6 * GIB}),),
    cpu_use=2500,
    mem_use=4 * GIB,
    priority_class="batch-low",
    daily=0.0,
    noise=0.15,
    duration=90 * 60,
    images=("registry.example.com/analytics/etl:5.4",),
)
TRAIN = Template(
    "train",
    "Job",
    "ml",
    (
        _c(
            "trainer",
            {"cpu": 6000, "memory": 24 * GIB, GPU: 2},
            {"cpu": 8000, "memory": 24 * GIB, GPU: 2},
        ),
    ),
    cpu_use=5000,
    mem_use=18 * GIB,
    daily=0.0,
    pool="gpu",
    duration=3 * 3600,
    images=("registry.example.com/ml/trainer:0.9",),
)


# ---- scheduling constraints (what the generator's placement masks stand for) ----------------
POOL_LABEL = "cloud.google.com/gke-nodepool"
GPU_TAINT: Mapping[str, str] = {"key": GPU, "value": "present", "effect": "NoSchedule"}
DEDICATED_KEY = "dedicated"


def pool_taints(pool: NodePool) -> list[dict[str, str]]:
    """Taints of a node of ``pool``: GPU nodes carry ``nvidia.com/gpu=present:NoSchedule``,
    dedicated pools ``dedicated=<pool>:NoSchedule``."""
    taints = [dict(GPU_TAINT)] if pool.gpus else []
    if pool.dedicated:
        taints.append({"key": DEDICATED_KEY, "value": pool.name, "effect": "NoSchedule"})
    return taints


def template_constraints(
    template: Template, dedicated: tuple[str, ...] = ()
) -> tuple[list[dict[str, str]], dict[str, str]]:
    """A workload's (tolerations, nodeSelector), matching the placement mask the generator uses.

    DaemonSets tolerate every taint (operator Exists, as node agents do) so they run on every
    node; a ``pool`` restriction is a nodeSelector on the pool label, and the GPU pool's workloads
    also tolerate the GPU taint; the workloads of a pool in ``dedicated`` tolerate its taint.
    """
    tolerations: list[dict[str, str]] = []
    if template.kind == "DaemonSet":
        tolerations.append({"operator": "Exists"})
    elif template.pool == "gpu":
        tolerations.append({"key": GPU, "operator": "Exists", "effect": "NoSchedule"})
    if template.kind != "DaemonSet" and template.pool is not None and template.pool in dedicated:
        tolerations.append(
            {
                "key": DEDICATED_KEY,
                "operator": "Equal",
                "value": template.pool,
                "effect": "NoSchedule",
            }
        )
    selector = {POOL_LABEL: template.pool} if template.pool is not None else {}
    return tolerations, selector
