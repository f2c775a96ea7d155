"""The synthetic cluster generator: a seeded model cluster and its ground-truth snapshot.

``generate(SyntheticSpec(...))`` builds nodes (``catalog.POOLS``), creates every workload's pods
(``lifecycle``), places and runs them in time order with a pluggable ``Placer``
(``placement``), generates usage (``usage``) and returns a ``SyntheticCluster`` whose
``snapshot`` is the ground truth a collector must reproduce from the OpenMetrics the cluster also
renders (``openmetrics.write_openmetrics``). The same spec gives the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from analyzer import __version__
from analyzer.core.kube_objects import kept_objects
from analyzer.core.resources import PodSpecResources, qos_class
from analyzer.core.snapshot import Snapshot, SnapshotMeta, make_snapshot
from analyzer.core.snapshot_schema import (
    ALLOCATABLE,
    CAPACITY,
    END_PREEMPTED,
    LIMITS,
    NONZERO_REQUESTS,
    REQUESTS,
    resource_column,
)
from analyzer.scheduling.versions import parse_version
from analyzer.sources.autoscaled_nodes import SYSTEM_TIMEOUT, NodeAutoscaler
from analyzer.sources.catalog import (
    GPU,
    POOLS,
    PRIORITY_CLASSES,
    RESOURCES,
    NodePool,
    node_allocatable,
    node_capacity,
    pool_taints,
    template_constraints,
)
from analyzer.sources.kube_placement import kube_placer
from analyzer.sources.lifecycle import Pod, SpecResources, build_pods
from analyzer.sources.lifecycle_loop import run_lifecycles
from analyzer.sources.node_events import event_table, node_events
from analyzer.sources.placement import ClusterState, Placer, least_allocated_place
from analyzer.sources.pod_constraints import (
    constraint_columns,
    pdb_objects,
    zone_labels,
    zone_of,
)
from analyzer.sources.spec import OPTIONAL_FIELDS, Grid, SyntheticSpec
from analyzer.sources.synthetic_objects import budget_workloads, snapshot_objects
from analyzer.sources.synthetic_objects import selector_objects as selector_objects
from analyzer.sources.usage import NodeShape, Usage, generate_usage

POD_RESOURCES = ("cpu", "memory", "ephemeral-storage", GPU)


@dataclass(frozen=True)
class SyntheticNode:
    """One node of the model."""

    name: str
    pool: NodePool
    host_ip: str
    capacity: dict[str, int]
    allocatable: dict[str, int]
    hot: bool
    zone: str = ""  # topology.kubernetes.io/zone (SyntheticSpec.zones; "" = not labelled)


@dataclass
class SyntheticCluster:
    """A generated cluster.

    - ``snapshot``: the ground truth (``analyzer.core.snapshot.Snapshot``);
    - ``containers``: pod uid → its containers, init containers and overhead (explicit requests
      and limits in analyzer units; a key absent = not set), from which the snapshot's requests,
      limits and non-zero requests were computed with ``analyzer.core.resources``;
    - ``pods``/``nodes``/``usage``: the model's detail the OpenMetrics writer renders.
    """

    spec: SyntheticSpec
    snapshot: Snapshot
    containers: dict[str, PodSpecResources]
    nodes: list[SyntheticNode]
    pods: list[Pod]
    usage: Usage

    @property
    def grid(self) -> Grid:
        """The sample grid (one point before ``spec.start`` up to ``spec.end``)."""
        return self.usage.grid

    @property
    def hot_nodes(self) -> list[str]:
        """Names of the nodes made to run hot."""
        return [n.name for n in self.nodes if n.hot]


def _pool_counts(spec: SyntheticSpec) -> list[tuple[NodePool, int]]:
    """Nodes per pool by largest remainder; the GPU pool gets one node from 4 nodes up."""
    pools = [p for p in POOLS if spec.gpu_pool or not p.gpus]
    if spec.nodes < 4:
        pools = [p for p in pools if not p.gpus]
    shares = np.array([p.share for p in pools]) / sum(p.share for p in pools)
    raw = shares * spec.nodes
    counts = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - counts), kind="stable")[: spec.nodes - counts.sum()]:
        counts[i] += 1
    gpu = [i for i, p in enumerate(pools) if p.gpus]
    if gpu and counts[gpu[0]] == 0:
        counts[gpu[0]] += 1
        counts[int(np.argmax(counts))] -= 1
    return [(p, int(c)) for p, c in zip(pools, counts, strict=True) if c > 0]


def build_nodes(spec: SyntheticSpec, rng: np.random.Generator) -> list[SyntheticNode]:
    """The cluster's nodes, pool by pool; a few non-GPU nodes are marked hot."""
    plan: list[tuple[str, NodePool]] = []
    for pool, count in _pool_counts(spec):
        if pool.name in spec.dedicated_pools:
            pool = replace(pool, dedicated=True)
        plan += [(f"{pool.name}-{k:04d}", pool) for k in range(count)]
    in_pool = [int(name.rsplit("-", 1)[1]) for name, _ in plan]
    candidates = [i for i, (_, pool) in enumerate(plan) if not pool.gpus]
    n_hot = round(spec.hot_nodes * len(candidates))
    if spec.hot_nodes > 0 and spec.nodes >= 4:
        n_hot = max(1, n_hot)
    hot = set(rng.choice(candidates, size=min(n_hot, len(candidates)), replace=False).tolist())
    nodes = []
    for i, (name, pool) in enumerate(plan):
        capacity = node_capacity(pool)
        nodes.append(
            SyntheticNode(
                name=name,
                pool=pool,
                host_ip=f"10.128.{i // 250}.{i % 250 + 2}",
                capacity=capacity,
                allocatable=node_allocatable(capacity),
                hot=i in hot,
                zone=zone_of(in_pool[i], spec.zones),
            )
        )
    return nodes


def open_nodes(nodes: list[SyntheticNode]) -> list[int]:
    """Indices of the nodes of open pools (no GPU, not dedicated): the node events' candidates."""
    return [i for i, n in enumerate(nodes) if not n.pool.gpus and not n.pool.dedicated]


def _times(values: Sequence[int | None]) -> pd.Series:
    return pd.to_datetime(pd.Series(values, dtype="Float64"), unit="s", utc=True)


def _node_table(
    nodes: list[SyntheticNode],
    spec: SyntheticSpec,
    seen: tuple[Sequence[int | None], Sequence[int | None]] | None = None,
) -> pd.DataFrame:
    first, last = seen or ([spec.start_s] * len(nodes), [spec.end_s] * len(nodes))
    table: dict[str, object] = {
        "node": [n.name for n in nodes],
        "pool": [n.pool.name for n in nodes],
        "host_ip": [n.host_ip for n in nodes],
        "labels": [json.dumps(node_labels(n), sort_keys=True) for n in nodes],
        "annotations": [json.dumps(dict(n.pool.annotations), sort_keys=True) for n in nodes],
        "first_seen": _times(first),
        "last_seen": _times(last),
        "taints": [json.dumps(pool_taints(n.pool)) for n in nodes],
        "kubelet_version": [spec.kubelet_version] * len(nodes),
    }
    for kind, attr in ((ALLOCATABLE, "allocatable"), (CAPACITY, "capacity")):
        for resource in RESOURCES:
            table[resource_column(kind, resource)] = [
                getattr(n, attr).get(resource, 0) for n in nodes
            ]
    return pd.DataFrame(table)


def node_labels(node: SyntheticNode) -> dict[str, str]:
    """The Kubernetes labels of a node (pool, instance type, hostname, GPU presence)."""
    labels = {
        "cloud.google.com/gke-nodepool": node.pool.name,
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": node.pool.instance_type,
    }
    if node.pool.gpus:
        labels["nvidia.com/gpu.present"] = "true"
    labels.update(zone_labels(node.zone))
    return labels


def _seen(pods: list[Pod], grid: Grid, spec: SyntheticSpec) -> tuple[list[int], list[int]]:
    """First/last observed grid time of each pod object inside the range."""
    first, last = [], []
    for pod in pods:
        lo = max(grid.first_at_or_after(pod.created), 1)
        hi = grid.last_at_or_before(pod.deleted if pod.deleted is not None else spec.end_s)
        first.append(grid.origin + grid.step * lo)
        last.append(grid.origin + grid.step * max(hi, lo))
    return first, last


def _pod_table(
    pods: list[Pod], nodes: list[SyntheticNode], grid: Grid, spec: SyntheticSpec
) -> pd.DataFrame:
    first, last = _seen(pods, grid, spec)
    table: dict[str, object] = {
        "uid": [p.uid for p in pods],
        "namespace": [p.template.namespace for p in pods],
        "name": [p.name for p in pods],
        "node": pd.Series(
            [nodes[p.node].name if p.node >= 0 else None for p in pods], dtype="string"
        ),
        "owner_kind": [p.owner_kind for p in pods],
        "owner_name": [p.owner_name for p in pods],
        "workload_kind": [p.workload_kind for p in pods],
        "workload_name": [p.workload_name for p in pods],
        "priority_class": [p.template.priority_class for p in pods],
        "priority": [PRIORITY_CLASSES[p.template.priority_class] for p in pods],
        "qos_class": [qos_class(p.spec.containers + p.spec.init_containers) for p in pods],
        "phase": [p.phase for p in pods],
        "labels": [pod_labels(p) for p in pods],
        "created": _times([p.created for p in pods]),
        "scheduled": _times([p.scheduled for p in pods]),
        "started": _times([p.started for p in pods]),
        "finished": _times([p.finished for p in pods]),
        "first_seen": _times(first),
        "last_seen": _times(last),
        # a victim deleted by preemption inside the range (``lifecycle_loop``)
        "end_reason": [END_PREEMPTED if p.preempted is not None else "" for p in pods],
        # a preemptor's nominations: node, start, end (``lifecycle_loop``: its room held there)
        "nominated": [
            json.dumps([[nodes[n].name, t, end] for t, n, _, end in p.preemptions])
            if p.preemptions
            else "[]"
            for p in pods
        ],
    }
    describe = _describer(spec)
    cells = [describe(p) for p in pods]
    columns = ["tolerations", "node_selector"]
    if spec.pod_constraints:  # opt-in: default snapshots keep the columns' defaults
        columns += ["affinity", "topology_spread"]
    for column in columns:
        table[column] = [c[column] for c in cells]
    specs = SpecResources()
    requests = [specs.requests(p.spec) for p in pods]
    limits = [specs.limits(p.spec) for p in pods]
    non_zero = [specs.non_zero(p.spec) for p in pods]
    for resource in POD_RESOURCES:
        table[resource_column(REQUESTS, resource)] = [r.get(resource, 0) for r in requests]
        table[resource_column(LIMITS, resource)] = [r.get(resource, 0) for r in limits]
    for resource in ("cpu", "memory"):
        table[resource_column(NONZERO_REQUESTS, resource)] = [r[resource] for r in non_zero]
    return pd.DataFrame(table)


def pod_labels(pod: Pod) -> str:
    """The snapshot's ``labels`` cell of a pod (JSON text)."""
    return json.dumps({"app": pod.workload_name})


def _describer(spec: SyntheticSpec) -> Callable[[Pod], dict[str, str]]:
    """A pod's snapshot cells — ``labels``, ``tolerations``, ``node_selector`` and (with
    ``pod_constraints``) ``affinity``, ``topology_spread`` — as JSON text, for the pod table and
    for the placement requests (an exact placer sees what a replay of the snapshot sees)."""
    # The cells depend on the pod's template and workload name only, and every pod of a
    # workload asks (twice: placement request and pod table): JSON-encoded once per workload.
    # The template is kept in the value so that its id cannot be reused by another one.
    by_workload: dict[tuple[int, str], tuple[object, dict[str, str]]] = {}

    def describe(pod: Pod) -> dict[str, str]:
        key = (id(pod.template), pod.workload_name)
        found = by_workload.get(key)
        if found is None:
            tolerations, selector = template_constraints(pod.template, spec.dedicated_pools)
            cells = {
                "labels": pod_labels(pod),
                "tolerations": json.dumps(tolerations),
                "node_selector": json.dumps(selector, sort_keys=True),
            }
            if spec.pod_constraints:
                cells["affinity"], cells["topology_spread"] = constraint_columns(
                    pod.template, pod.workload_name, spec.zones
                )
            found = by_workload[key] = (pod.template, cells)
        return dict(found[1])  # a copy: callers own their cells

    return describe


def _usage_tables(
    pods: list[Pod], nodes: list[SyntheticNode], usage: Usage
) -> tuple[pd.DataFrame, pd.DataFrame]:
    grid = usage.grid
    stamps = pd.to_datetime(grid.times, unit="s", utc=True)
    row_pod = np.repeat(np.arange(len(pods), dtype=np.int32), np.diff(usage.offsets))[usage.valid]
    uids = pd.Categorical.from_codes(row_pod, categories=[p.uid for p in pods])
    pod_usage = pd.DataFrame(
        {
            "uid": uids,
            "timestamp": stamps[usage.j[usage.valid]],
            "cpu": usage.cpu[usage.valid].astype(np.float64),
            "memory": usage.memory[usage.valid].astype(np.float64),
        }
    )
    n, size = usage.node_cpu.shape
    node_usage = pd.DataFrame(
        {
            "node": pd.Categorical.from_codes(
                np.repeat(np.arange(n), size - 1), categories=[x.name for x in nodes]
            ),
            "timestamp": np.tile(stamps[1:], n),
            "cpu": usage.node_cpu[:, 1:].ravel().astype(np.float64),
            "memory": usage.node_memory[:, 1:].ravel().astype(np.float64),
        }
    )
    return node_usage, pod_usage


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


DAY_NOISE_STREAM = 1  # the per-day usage level: seeded by (seed, this, day number)


def usage_time_factor(spec: SyntheticSpec, grid: Grid) -> np.ndarray | None:
    """Per grid index: the factor on app pods' cpu from ``weekend_dip`` and ``day_noise`` (None
    when both are off). A sample at t stands for the step before it, so it takes the day of
    ``t − 1 s``; each day's noise comes from the seed and the day alone."""
    if spec.weekend_dip == 0 and spec.day_noise == 0:
        return None
    day = (grid.times - 1) // 86400
    weekday = (day + 3) % 7  # 1970-01-01 was a Thursday; Monday = 0
    factor = np.where(weekday >= 5, 1.0 - spec.weekend_dip, 1.0)
    if spec.day_noise > 0:
        days, inverse = np.unique(day, return_inverse=True)
        level = np.array(
            [
                np.exp(
                    spec.day_noise
                    * np.random.default_rng([spec.seed, DAY_NOISE_STREAM, int(d)]).standard_normal()
                )
                for d in days
            ]
        )
        factor = factor * level[inverse]
    return np.asarray(factor, dtype=np.float64)


def team_factor(spec: SyntheticSpec, pods: list[Pod]) -> np.ndarray | None:
    """Per pod: ``team_usage`` of its namespace (1 for DaemonSet pods and other teams)."""
    if not spec.team_usage:
        return None
    teams = dict(spec.team_usage)
    return np.array(
        [teams.get(p.template.namespace, 1.0) if p.pin < 0 else 1.0 for p in pods],
        dtype=np.float64,
    )


def without_pinned(pods: list[Pod]) -> list[Pod]:
    """``pods`` without the DaemonSet pods (``pin`` set), each ``replaces`` index (a position in
    the list) moved to the kept pod's new position. (Kept as it was, a rollout's new pod deleted
    whichever pod had come to that position: often one not created yet, which the snapshot then
    showed pending from its creation until the next scrape.)"""
    kept = [i for i, pod in enumerate(pods) if pod.pin < 0]
    position = {old: new for new, old in enumerate(kept)}
    out = [pods[i] for i in kept]
    for pod in out:
        if pod.replaces is not None:
            pod.replaces = position.get(pod.replaces)  # (a DaemonSet pod is never replaced)
    return out


def generate(spec: SyntheticSpec, *, place: Placer | None = None) -> SyntheticCluster:
    """Generate the cluster of ``spec``; ``place`` replaces the default least-allocated choice."""
    rng = np.random.default_rng(spec.seed)
    grid = Grid.of(spec)
    nodes = build_nodes(spec, rng)
    autoscaler = None
    if spec.autoscaled:  # one pool of general nodes; four times the nodes as slots, used once
        general = next(p for p in POOLS if p.name == "general")
        capacity = node_capacity(general)
        nodes = [
            SyntheticNode(f"general-{k:04d}", general, f"10.128.{k // 250}.{k % 250 + 2}",
                          capacity, node_allocatable(capacity), hot=False)
            for k in range(4 * spec.nodes)
        ]  # fmt: skip
        # the CA of the data's version (CA's minor follows Kubernetes')
        version = parse_version(spec.kubelet_version)
        timeout = SYSTEM_TIMEOUT if version.ca_system_pod_timeout else None
        autoscaler = NodeAutoscaler(
            spec.nodes, len(nodes), 1, 2 * spec.nodes, spec.start_s, system_timeout=timeout,
            frequent=version.ca_frequent_loops_default,
        )  # fmt: skip
    structure = rng
    if spec.grows:
        # The structure goes on from the seed alone; the events depend on the range's start.
        rng = np.random.default_rng([spec.seed, spec.start_s])
    state = ClusterState.empty(
        tuple(n.name for n in nodes),
        tuple(n.pool.name for n in nodes),
        np.array([[n.allocatable.get(r, 0) for r in RESOURCES] for n in nodes], dtype=np.int64),
    )
    state.node_labels = tuple(json.dumps(node_labels(n), sort_keys=True) for n in nodes)
    state.node_taints = tuple(json.dumps(pool_taints(n.pool)) for n in nodes)
    pods = build_pods(spec, state.pools[: spec.nodes], rng, structure)
    if autoscaler is not None:  # its own CA puts no DaemonSet pods on the nodes it adds: none
        pods = without_pinned(pods)
    closed = ("gpu", *spec.dedicated_pools)  # tainted pools: only their own workloads go there
    window = (spec.start_s, spec.end_s)
    if place is None:
        # with pod constraints, the ground truth is placed as the v1 default profile would
        # (spread, pod anti-affinity); else the simple least-allocated heuristic
        # (and an autoscaled cluster's, so that a replay under kube-default is comparable)
        exact = spec.pod_constraints or spec.autoscaled
        place = kube_placer(seed=spec.seed) if exact else least_allocated_place
    describe = _describer(spec)
    budgets: list[dict[str, Any]] = []
    if spec.pod_constraints:  # what an exact placer reads for default spreading and for
        # preemption (PodDisruptionBudgets), as the replay
        budgets = pdb_objects(budget_workloads(pods))
        state.objects = kept_objects([*budgets, *selector_objects(pods)])
    run_lifecycles(
        pods, state, place, rng, window, closed=closed, describe=describe, autoscaler=autoscaler
    )
    seen = None
    if autoscaler is not None:  # the nodes that existed, and when (the others are left out)
        kept = [i for i, at in enumerate(autoscaler.joined) if at is not None]
        moved = {old: new for new, old in enumerate(kept)}
        for pod in pods:
            pod.node = moved[pod.node] if pod.node >= 0 else pod.node
        nodes = [nodes[i] for i in kept]
        seen = ([autoscaler.joined[i] for i in kept],
                [autoscaler.left[i] or spec.end_s for i in kept])  # fmt: skip
    shape = NodeShape(
        allocatable_cpu=np.array([n.allocatable["cpu"] for n in nodes], dtype=np.float64),
        capacity_cpu=np.array([n.capacity["cpu"] for n in nodes], dtype=np.float64),
        capacity_memory=np.array([n.capacity["memory"] for n in nodes], dtype=np.float64),
        hot=np.array([n.hot for n in nodes]),
    )
    usage = generate_usage(
        pods,
        shape,
        grid,
        rng,
        cpu_scale=spec.usage_scale,
        hot_by_node=spec.hot_by_node,
        pod_factor=team_factor(spec, pods),
        time_factor=usage_time_factor(spec, grid),
    )
    node_usage, pod_usage = _usage_tables(pods, nodes, usage)
    meta = SnapshotMeta(
        source=f"synthetic:seed={spec.seed},nodes={spec.nodes},days={spec.days},step={spec.step}s",
        start=_iso(spec.start_s),
        end=_iso(spec.end_s),
        step_seconds=spec.step,
        collected_at=_iso(spec.end_s),  # fixed, so the same spec writes the same bytes
        analyzer_version=__version__,
        extra={
            "generator": {
                k: str(v)
                for k, v in asdict(spec).items()
                if k not in OPTIONAL_FIELDS or v != OPTIONAL_FIELDS[k]
            },
            "hot_nodes": [n.name for n in nodes if n.hot],
            "priority_classes": dict(PRIORITY_CLASSES),
        },
    )
    events = node_events(spec, open_nodes(nodes), grid)
    snapshot = make_snapshot(
        meta,
        _node_table(nodes, spec, seen),
        _pod_table(pods, nodes, grid, spec),
        node_usage,
        pod_usage,
        objects=snapshot_objects(pods, budgets) if spec.pod_constraints else None,
        node_state=event_table(events, [n.name for n in nodes], grid) if spec.node_events else None,
    )
    return SyntheticCluster(
        spec=spec,
        snapshot=snapshot,
        containers={p.uid: p.spec for p in pods},
        nodes=nodes,
        pods=pods,
        usage=usage,
    )


__all__ = ["SyntheticCluster", "SyntheticNode", "build_nodes", "generate", "node_labels"]
