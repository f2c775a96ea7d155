"""Replay protocols for the openb trace: the FGD paper's ``fgd`` protocol and a ``timeline`` replay.

``fgd`` (``research/real-data.md`` §2): GPU nodes only; arrivals only, never departures; pods
sorted by name then shuffled with the run's seed; inflated to ``tune`` × GPU capacity by drawing
random pods with replacement and appending the clones at the end (the artifact's stopping quirk is
kept: the check adds the clone's *per-GPU* milli, the running total its full milli); one scoring
policy; a pod that fits nowhere fails and is not retried; metrics after every pod.

``timeline``: the trace's creation and deletion times on the nodes given (all 1,523 by default);
departures before arrivals at the same instant; a pod that fits nowhere waits in a FIFO pending
queue and is retried whenever capacity frees; it leaves the queue unplaced at its deletion time.

Ties between equal node scores (``RunSpec.tie_break``): ``artifact`` (default) gives every node a
fixed rank from a seeded permutation of the name-sorted nodes and the lowest rank wins, as the
artifact's scheduler fork does (smallest node name among the top scores, names prefixed with
``%04d-`` from ``rand.Perm``); ``random`` draws uniformly among the tied nodes (upstream
kube-scheduler). The kube strategies and core presets always draw uniformly.

Our shuffle and node permutation use numpy's PCG64 seeded with the run's seed, not Go's
math/rand, so the order for seed 42 differs from the artifact's order for seed 42 (a stated
deviation).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from analyzer.core.errors import InputError
from analyzer.scheduling.gpu.cluster import GpuState
from analyzer.scheduling.gpu.fragments import TargetWorkload
from analyzer.scheduling.gpu.model import GpuDemand
from analyzer.sources.alibaba import OpenbNodes, OpenbPods
from analyzer.trace.registry import get_policy

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class RunSpec:
    """One replay: protocol, policy, seed and tune ratio."""

    policy: str
    seed: int
    tune: float = 1.3
    protocol: str = "fgd"
    tie_break: str = "artifact"  # or "random"


@dataclass
class RunRows:
    """Per-row metrics of one replay (one row per pod tried, or per event for ``timeline``)."""

    spec: RunSpec
    arrived_pct: FloatArray
    alloc_pct: FloatArray
    frag_ratio_pct: FloatArray
    frag_amount_pct: FloatArray
    placed: NDArray[np.bool_]
    pods: int
    failed: int
    first_failure_arrived_pct: float | None
    pending_max: int = 0
    mean_wait_seconds: float = 0.0


def fgd_order(pods: OpenbPods, seed: int, tune: float, capacity_milli: int) -> IntArray:
    """Pod indices in replay order: name-sorted, shuffled by ``seed``, then resampled clones."""
    if tune <= 0:
        raise InputError(f"--tune {tune}: must be > 0 (1.3 = 130 % of GPU capacity)")
    rng = np.random.default_rng(seed)
    by_name = np.argsort(np.array(pods.names, dtype=object), kind="stable").astype(np.int64)
    order = by_name[rng.permutation(len(by_name))]
    total_milli = pods.total_gpu_milli()
    arrived = int(total_milli.sum())
    limit = tune * capacity_milli
    if not total_milli.any():
        return order  # nothing to inflate with: CPU-only lists cannot reach a GPU target
    clones: list[IntArray] = []
    while True:
        draw = rng.integers(len(pods), size=1024)
        before = arrived + np.concatenate(([0], np.cumsum(total_milli[draw])[:-1]))
        over = np.flatnonzero(before + pods.gpu_milli[draw] > limit)
        stop = int(over[0]) if len(over) else len(draw)
        clones.append(draw[:stop])
        arrived = int(before[stop - 1] + total_milli[draw[stop - 1]]) if stop else arrived
        if len(over):
            break
    return np.concatenate([order, *clones]).astype(np.int64)


TIE_BREAKS = ("artifact", "random")


def artifact_node_rank(names: list[str], seed: int) -> IntArray:
    """Per-node tie-break rank: the k-th node in name order gets the k-th value of a seeded
    permutation of 0..n−1 (the artifact's ``%04d-`` name prefixes); lowest rank wins ties."""
    rng = np.random.default_rng([seed, 2])
    by_name = np.argsort(np.array(names, dtype=object), kind="stable")
    rank = np.empty(len(names), dtype=np.int64)
    rank[by_name] = rng.permutation(len(names))
    return rank


def _state(nodes: OpenbNodes, workload: TargetWorkload, spec: RunSpec) -> GpuState:
    if spec.tie_break not in TIE_BREAKS:
        raise InputError(f"tie break {spec.tie_break!r}: use one of {', '.join(TIE_BREAKS)}")
    gpu_nodes = nodes.gpu_nodes()
    rank = artifact_node_rank(gpu_nodes.names, spec.seed) if spec.tie_break == "artifact" else None
    return GpuState(gpu_nodes, workload, node_rank=rank)


def _demands(pods: OpenbPods) -> list[GpuDemand]:
    return [pods.demand(i) for i in range(len(pods))]


def run_fgd(nodes: OpenbNodes, pods: OpenbPods, workload: TargetWorkload, spec: RunSpec) -> RunRows:
    """The FGD protocol for one policy and seed."""
    policy = get_policy(spec.policy)
    state = _state(nodes, workload, spec)
    capacity = state.nodes.gpu_capacity_milli()
    if capacity == 0:
        raise InputError(
            "node list has no GPUs; the fgd protocol needs GPU nodes (openb_node_list_gpu_node.csv)"
        )
    order = fgd_order(pods, spec.seed, spec.tune, capacity)
    # A separate stream for tie-breaks, so the order does not depend on the policy.
    rng = np.random.default_rng([spec.seed, 1])
    demands = _demands(pods)
    rows = len(order)
    arrived = np.empty(rows)
    alloc = np.empty(rows)
    ratio = np.empty(rows)
    amount = np.empty(rows)
    placed = np.zeros(rows, dtype=bool)
    arrived_milli = 0
    first_failure: float | None = None
    for row, pod in enumerate(order):
        demand = demands[pod]
        arrived_milli += demand.total_gpu_milli
        feasible = np.flatnonzero(state.nodes.feasible(demand))
        if len(feasible):
            decision = policy(state, demand, feasible, rng)
            state.bind(decision.node, demand, decision.gpus)
            placed[row] = True
        elif first_failure is None:
            first_failure = 100.0 * arrived_milli / capacity
        arrived[row] = 100.0 * arrived_milli / capacity
        alloc[row] = 100.0 * state.used_gpu_milli / capacity
        ratio[row] = state.frag_ratio_pct()
        amount[row] = 100.0 * state.frag_amount_milli() / capacity
    return RunRows(
        spec=spec,
        arrived_pct=arrived,
        alloc_pct=alloc,
        frag_ratio_pct=ratio,
        frag_amount_pct=amount,
        placed=placed,
        pods=rows,
        failed=int((~placed).sum()),
        first_failure_arrived_pct=first_failure,
    )


def run_timeline(
    nodes: OpenbNodes, pods: OpenbPods, workload: TargetWorkload, spec: RunSpec
) -> RunRows:
    """The timeline replay: arrivals and departures at trace times, a retried pending queue."""
    if not pods.has_times:
        raise InputError(
            "this pod list has no creation/deletion times (multigpu lists); use --protocol fgd"
        )
    policy = get_policy(spec.policy)
    state = _state(nodes, workload, spec)
    capacity = max(state.nodes.gpu_capacity_milli(), 1)
    rng = np.random.default_rng([spec.seed, 1])
    demands = _demands(pods)
    created = np.nan_to_num(pods.creation, nan=0.0)
    deleted = np.nan_to_num(pods.deletion, nan=np.inf)
    # Events: (time, kind 0 = departure first, row order); departures of unplaced pods are no-ops.
    times = np.concatenate([deleted, created])
    kinds = np.concatenate([np.zeros(len(pods)), np.ones(len(pods))])
    index = np.concatenate([np.arange(len(pods)), np.arange(len(pods))])
    events = np.lexsort((index, kinds, times))
    where: dict[int, tuple[int, tuple[int, ...]]] = {}
    pending: list[int] = []
    waits: list[float] = []
    arrived_milli = 0
    out: list[tuple[float, float, float, float, bool]] = []
    first_failure: float | None = None
    pending_max = 0

    def try_place(pod: int) -> bool:
        feasible = np.flatnonzero(state.nodes.feasible(demands[pod]))
        if not len(feasible):
            return False
        decision = policy(state, demands[pod], feasible, rng)
        state.bind(decision.node, demands[pod], decision.gpus)
        where[pod] = (decision.node, decision.gpus)
        return True

    for event in events:
        pod, now = int(index[event]), float(times[event])
        if not np.isfinite(now):
            continue
        if kinds[event] == 0:
            if pod in where:
                node, gpus = where.pop(pod)
                state.unbind(node, demands[pod], gpus)
                pending = _retry(pending, now, created, deleted, demands, try_place, waits)
            elif pod in pending:
                pending.remove(pod)
            continue
        arrived_milli += demands[pod].total_gpu_milli
        ok = try_place(pod)
        if ok:
            waits.append(0.0)
        else:
            pending.append(pod)
            if first_failure is None:
                first_failure = 100.0 * arrived_milli / capacity
        pending_max = max(pending_max, len(pending))
        out.append(
            (
                100.0 * arrived_milli / capacity,
                100.0 * state.used_gpu_milli / capacity,
                state.frag_ratio_pct(),
                100.0 * state.frag_amount_milli() / capacity,
                ok,
            )
        )
    table = np.array(out, dtype=float).reshape(-1, 5)
    never = len(pods) - len(waits)
    return RunRows(
        spec=spec,
        arrived_pct=table[:, 0],
        alloc_pct=table[:, 1],
        frag_ratio_pct=table[:, 2],
        frag_amount_pct=table[:, 3],
        placed=table[:, 4].astype(bool),
        pods=len(pods),
        failed=never,
        first_failure_arrived_pct=first_failure,
        pending_max=pending_max,
        mean_wait_seconds=float(np.mean(waits)) if waits else 0.0,
    )


def _retry(
    pending: list[int],
    now: float,
    created: FloatArray,
    deleted: FloatArray,
    demands: list[GpuDemand],
    try_place: Callable[[int], bool],
    waits: list[float],
) -> list[int]:
    """Retry the queue in FIFO order; a shape that failed once in this pass is not tried again."""
    still: list[int] = []
    failed_shapes: set[GpuDemand] = set()
    for pod in pending:
        if deleted[pod] <= now:
            continue  # deleted before it ever ran
        demand = demands[pod]
        if demand in failed_shapes or not try_place(pod):
            failed_shapes.add(demand)
            still.append(pod)
        else:
            waits.append(now - float(created[pod]))
    return still
