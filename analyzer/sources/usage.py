"""Usage series of the synthetic cluster, generated with numpy over all pods at once.

Semantics on the grid (``spec.Grid``): the cpu value at index ``j`` is the average busy
millicores over ``(t[j−1], t[j]]``; memory is the working set in bytes at ``t[j]``. Both are
integers, so counters built from them are exact decimals and sums are exact.

A pod has samples at the grid points inside ``[started, finished]``, ``a..b``. Its first sample
is where its cAdvisor counters start (at 0); usage rows (``valid``) are ``a+1..b``, the
intervals the pod ran for in full. Node usage = per-node system overhead (kubelet, OS) + a small
sandbox (pause) usage per running pod + Σ usage of the pods running on it.

Hot nodes: during 09:00–15:00 UTC every day, pods without a cpu limit on a hot node burn more,
raising the node to about 80 % of allocatable cpu (or the node's own overhead does when no such
pod runs there). No node ever exceeds 97 % of its cpu capacity.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analyzer.sources.lifecycle import Pod
from analyzer.sources.spec import Grid

SANDBOX_CPU = 1  # millicores of the pause container per running pod
SANDBOX_MEMORY = 512 * 1024  # bytes
HOT_TARGET = 0.80  # share of allocatable cpu a hot node reaches in its hot hours
HOT_HOURS = (9, 15)  # UTC
CPU_CEILING = 0.97  # share of capacity no node exceeds (idle time must stay >= 0)
_PEAK_HOUR = 14.0  # daily cycles peak mid-afternoon UTC


@dataclass(frozen=True)
class NodeShape:
    """What usage generation needs of the nodes (arrays over nodes)."""

    allocatable_cpu: np.ndarray
    capacity_cpu: np.ndarray
    capacity_memory: np.ndarray
    hot: np.ndarray  # bool


@dataclass
class Usage:
    """Ragged per-pod rows plus dense per-node arrays.

    Rows of pod ``p`` (index into the pod list) are ``offsets[p]:offsets[p + 1]``, one per grid
    index ``j`` in ``a..b``; ``valid`` marks the usage rows (all but each pod's first).
    """

    grid: Grid
    offsets: np.ndarray
    j: np.ndarray
    cpu: np.ndarray  # int64 millicores
    memory: np.ndarray  # int64 bytes
    valid: np.ndarray
    node_cpu: np.ndarray  # int64 [nodes, grid]
    node_memory: np.ndarray  # int64 [nodes, grid]
    node_pods: np.ndarray  # int64 [nodes, grid]: pods with a usage row (sandbox count)


def _cycle(times: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """sin of the time of day, peaking at ``_PEAK_HOUR`` + ``phase`` hours."""
    day = (times % 86400) / 86400.0
    return np.asarray(np.sin(2 * np.pi * (day - (_PEAK_HOUR + phase) / 24.0 + 0.25)))


def _limit(pod: Pod, resource: str) -> float:
    """The pod's effective limit for ``resource`` or inf when any container is unbounded."""
    containers = pod.spec.containers
    if not containers or any(resource not in c.limits for c in containers):
        return np.inf
    return float(sum(c.limits[resource] for c in containers))


def pod_windows(pods: list[Pod], grid: Grid) -> tuple[np.ndarray, np.ndarray]:
    """Grid index ranges ``a..b`` (inclusive) where each pod runs; ``b < a`` = never runs."""
    first = np.zeros(len(pods), dtype=np.int64)
    last = np.full(len(pods), -1, dtype=np.int64)
    for i, pod in enumerate(pods):
        if pod.node < 0 or pod.started is None:
            continue
        first[i] = grid.first_at_or_after(pod.started)
        end = pod.finished if pod.finished is not None else grid.origin + grid.step * grid.size
        last[i] = grid.last_at_or_before(end)
    return first, last


def generate_usage(
    pods: list[Pod],
    nodes: NodeShape,
    grid: Grid,
    rng: np.random.Generator,
    *,
    cpu_scale: float = 1.0,
    hot_by_node: bool = False,
    pod_factor: np.ndarray | None = None,
    time_factor: np.ndarray | None = None,
) -> Usage:
    """Usage rows for every pod and the node totals (see the module docstring).

    ``cpu_scale`` multiplies every pod's mean cpu; ``hot_by_node``: hot nodes burn in their own
    overhead, never in their pods. ``pod_factor`` (per pod) multiplies a pod's mean cpu and
    memory; ``time_factor`` (per grid index) the cpu of every pod that is not a DaemonSet's (the
    weekly cycle, a day's level). Neither draws random numbers.
    """
    n_nodes = len(nodes.allocatable_cpu)
    first, last = pod_windows(pods, grid)
    lengths = np.maximum(last - first + 1, 0)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    total = int(offsets[-1])
    # int32 row indices: these arrays have one entry per pod sample (tens of millions at scale)
    row_pod = np.repeat(np.arange(len(pods), dtype=np.int32), lengths)
    j = (first[row_pod] + (np.arange(total) - offsets[row_pod])).astype(np.int32)
    valid = j > first[row_pod]
    times = grid.times[j]

    templates = [p.template for p in pods]
    base_cpu = np.array([t.cpu_use for t in templates]) * rng.lognormal(0, 0.25, len(pods))
    if cpu_scale != 1.0:  # DaemonSet pods are node agents: their usage is not over-requested
        base_cpu = np.where([p.pin >= 0 for p in pods], base_cpu, base_cpu * cpu_scale)
    base_mem = np.array([t.mem_use for t in templates]) * rng.lognormal(0, 0.15, len(pods))
    if pod_factor is not None:
        base_cpu = base_cpu * pod_factor
        base_mem = base_mem * pod_factor
    amplitude = np.array([t.daily for t in templates])
    noise = np.array([t.noise for t in templates])
    phase = rng.normal(0, 1.0, len(pods))
    cpu_limit = np.array([_limit(p, "cpu") for p in pods])
    mem_limit = np.array([_limit(p, "memory") for p in pods])
    elastic = np.isinf(cpu_limit) & np.array([p.pin < 0 and not hot_by_node for p in pods])
    node_of = np.array([p.node for p in pods], dtype=np.int64)

    wave = _cycle(times, phase[row_pod])
    del times
    cpu = base_cpu[row_pod] * (1 + amplitude[row_pod] * wave)
    if time_factor is not None:
        app = np.array([p.pin < 0 for p in pods], dtype=bool)
        cpu *= np.where(app[row_pod], time_factor[j], 1.0)
    cpu *= 1 + noise[row_pod] * rng.standard_normal(total)
    cpu = np.clip(cpu, 0, cpu_limit[row_pod])
    memory = base_mem[row_pod] * (1 + 0.1 * amplitude[row_pod] * wave)
    memory *= 1 + 0.02 * rng.standard_normal(total)
    memory = np.minimum(memory, 0.97 * mem_limit[row_pod])
    del wave
    cpu[~valid] = 0.0

    # Per-node system overhead (kubelet, container runtime, OS) with its own daily wiggle.
    node_times = grid.times[None, :]
    cores = nodes.capacity_cpu / 1000.0
    o_cpu = (120 + 8 * cores) * rng.lognormal(0, 0.2, n_nodes)
    overhead_cpu = o_cpu[:, None] * (1 + 0.15 * _cycle(node_times, np.zeros((n_nodes, 1))))
    overhead_cpu = overhead_cpu * (1 + 0.05 * rng.standard_normal((n_nodes, grid.size)))
    o_mem = (700 * 2**20 + 0.015 * nodes.capacity_memory) * rng.lognormal(0, 0.1, n_nodes)
    overhead_mem = o_mem[:, None] * (1 + 0.01 * rng.standard_normal((n_nodes, grid.size)))

    key = node_of[row_pod] * grid.size + j  # int64: nodes × grid may pass 2**31
    cells = n_nodes * grid.size
    node_pods = np.bincount(key[valid], minlength=cells).reshape(n_nodes, grid.size)
    fixed = overhead_cpu + SANDBOX_CPU * node_pods
    flex_rows = valid & elastic[row_pod]
    rigid = np.bincount(key[valid & ~flex_rows], cpu[valid & ~flex_rows], minlength=cells)
    flex = np.bincount(key[flex_rows], cpu[flex_rows], minlength=cells)
    fixed = fixed + rigid.reshape(n_nodes, grid.size)
    flex = flex.reshape(n_nodes, grid.size)

    hours = (grid.times % 86400) / 3600.0
    hot_time = (hours >= HOT_HOURS[0]) & (hours < HOT_HOURS[1])
    target = np.where(
        nodes.hot[:, None] & hot_time[None, :], HOT_TARGET * nodes.allocatable_cpu[:, None], 0.0
    )
    ceiling = CPU_CEILING * nodes.capacity_cpu[:, None].astype(np.float64)
    want = np.minimum(np.maximum(fixed + flex, target), ceiling)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(flex > 0, np.maximum(want - fixed, 0) / flex, 1.0)
    # Where no elastic pod runs, the node's own processes make up the difference.
    overhead_cpu = overhead_cpu + np.where(flex > 0, 0.0, np.maximum(want - fixed, 0))
    cpu[flex_rows] *= factor.ravel()[key[flex_rows]]

    cpu_int = np.floor(cpu).astype(np.int64)
    mem_int = np.floor(memory).astype(np.int64)
    del cpu, memory
    overhead_cpu_int = np.floor(np.minimum(overhead_cpu, ceiling)).astype(np.int64)
    overhead_mem_int = np.floor(overhead_mem).astype(np.int64)
    pod_cpu = np.bincount(key[valid], cpu_int[valid], minlength=cells)
    pod_mem = np.bincount(key[valid], mem_int[valid], minlength=cells)
    node_cpu = overhead_cpu_int + SANDBOX_CPU * node_pods
    node_cpu += np.rint(pod_cpu.reshape(n_nodes, grid.size)).astype(np.int64)
    node_mem = overhead_mem_int + SANDBOX_MEMORY * node_pods
    node_mem += np.rint(pod_mem.reshape(n_nodes, grid.size)).astype(np.int64)
    return Usage(
        grid=grid,
        offsets=offsets,
        j=j,
        cpu=cpu_int,
        memory=mem_int,
        valid=valid,
        node_cpu=node_cpu,
        node_memory=node_mem,
        node_pods=node_pods,
    )
