"""Growth replayed with the scheduler, month by month (issue 28 item 2; docs/whatif.md).

Month 0 is today's busiest window replayed as it is; month m (1..N) is the same window with the
plan's growth by month m (``analyzer.whatif.growth_apply``), replayed with the cluster's strategy
(default ``kube-default``; ``--strategy``) and, with ``--autoscaler cluster-autoscaler`` or
``karpenter``, with that autoscaler driving the nodes (``auto``: the one the snapshot's nodes
suggest, ``analyzer.whatif.autoscaler_choice``). Per month and pool:

- **capacity**: the summed allocatable of the pool's nodes in the window (cores, GiB);
- **requested peak**: the most requests held at once by the pods the replay placed in the pool
  plus the pods waiting for it (a waiting pod counts in the pool of the node it ran on in the data;
  copies inherit it; a manifest's pods count in their change's ``pool``, else the pool with the
  most nodes);
- **N+1 holds**: capacity − the pool's largest node − requested peak ≥ 0 for CPU and memory (the
  monthly review's N+1 rule, here on the replayed month);
- **waiting pods**: pods pending longer than ``WAIT_THRESHOLD_S`` seconds (0: any wait) in the
  replay, or still pending at its end;
- **nodes to add**: without an autoscaler, the fewest nodes of the pool's most common shape that
  leave no pod of the pool waiting — replays with k extra nodes, k doubled from last month's
  answer until no pod of the pool waits, then bisected (pools searched one at a time, the others
  at their current count, at most ``ROUNDS`` rounds; a pool whose pods still wait at
  ``cap = max(8, 4 × its nodes)`` extra nodes has no answer: they wait for something nodes of
  its shape do not give); with cluster-autoscaler, the nodes its scale-ups added in the pool
  (each group may reach 3 × its nodes unless the config sets its maxSize); with Karpenter, the
  most nodes present at once in the pool on the replay's evaluation grid minus the most the data
  had at once there, never below 0 (Karpenter also consolidates and replaces nodes, so counting
  its launches would count replacements as growth; it may launch, per shape of the pool, 2 × the
  pool's most nodes at once beyond the data's: ``with_shapes(room=…)``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from analyzer.core.executor import ExecutorSpec, Shared, open_session
from analyzer.core.snapshot import Snapshot
from analyzer.replay.autoscale_setup import (
    DEFAULT_GROUP,
    AutoscalerSettings,
    GroupBounds,
    with_node_groups,
)
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import ARRIVALS, NEVER, ReplayInput, prepare
from analyzer.replay.karpenter_setup import KarpenterSettings, with_shapes
from analyzer.replay.result import ReplayResult
from analyzer.scheduling.plugins.loadaware.plugin import LoadAwareScheduling
from analyzer.whatif.autoscaled import ARRIVALS_UNDER_AUTOSCALER, outcome_of
from analyzer.whatif.busiest import busiest_window, cut
from analyzer.whatif.explain import node_pools
from analyzer.whatif.growth_apply import grown, lanes, requests_of
from analyzer.whatif.growth_plan import GrowthPlan
from analyzer.whatif.growth_result import (
    WAIT_THRESHOLD_S,
    GrowthMonth,
    GrowthResult,
    PoolMonth,
)

ROUNDS = 3
KARPENTER_ROOM = 2  # spare slots per shape: 2 × the pool's most nodes at once (module docstring)
GIB = float(2**30)


@dataclass
class _Run:
    """One replay of one month, with each pod's and node's pool."""

    inp: ReplayInput
    result: ReplayResult
    node_pool: list[str]
    pod_pool: list[str]
    added: dict[str, int]  # the autoscaler's nodes to add per pool (module docstring)


def _pod_pools(
    inp: ReplayInput, node_pool: list[str], home: dict[str, str], fallback: str
) -> list[str]:
    """Each pod's pool for waiting pods (module docstring)."""
    out = []
    for uid, node in zip(inp.pod_uids, inp.real_node.tolist(), strict=True):
        given = home.get(uid)
        out.append(given or (node_pool[node] if node >= 0 else fallback))
    return out


def _waiting(result: ReplayResult) -> np.ndarray:
    """Pods pending longer than the threshold, or still pending at the end."""
    wait: np.ndarray = (result.wait > WAIT_THRESHOLD_S * 1_000_000_000) | result.pending_at_end
    return wait


def _peaks(run: _Run, pools: list[str]) -> dict[str, tuple[float, float]]:
    """Per pool, the most CPU cores and GiB requested at once (placed + waiting for it)."""
    snap = run.inp.snapshot
    cpu, mem = requests_of(snap, "cpu") / 1000.0, requests_of(snap, "memory") / GIB
    seg, waits = run.result.segments, run.result.waits
    spans = [
        (np.asarray(seg["pod"]), np.asarray(seg["start"]), np.asarray(seg["end"]),
         [run.node_pool[int(n)] for n in np.asarray(seg["node"]).tolist()]),
        (np.asarray(waits["pod"]), np.asarray(waits["start"]), np.asarray(waits["end"]),
         [run.pod_pool[int(p)] for p in np.asarray(waits["pod"]).tolist()]),
    ]  # fmt: skip
    out = {}
    for pool in pools:
        times, dc, dm = [], [], []
        for pod, lo, hi, where in spans:
            mine = np.array([w == pool for w in where], dtype=bool)
            if not mine.any():
                continue
            p, a, b = pod[mine].astype(np.int64), lo[mine], hi[mine]
            b = np.where(b == NEVER, run.inp.end + 1, b)
            times += [a, b]
            dc += [cpu[p], -cpu[p]]
            dm += [mem[p], -mem[p]]
        if not times:
            out[pool] = (0.0, 0.0)
            continue
        t = np.concatenate(times)
        order = np.lexsort((np.concatenate(dc) > 0, t))  # ends before starts at one instant
        out[pool] = (
            float(max(0.0, np.cumsum(np.concatenate(dc)[order]).max())),
            float(max(0.0, np.cumsum(np.concatenate(dm)[order]).max())),
        )
    return out


class _Replayer:
    """Replays months of one window with one strategy (and autoscaler)."""

    def __init__(
        self,
        window: Snapshot,
        plan: GrowthPlan,
        strategy: Strategy,
        autoscaling: AutoscalerSettings | KarpenterSettings | None,
    ) -> None:
        self.window, self.plan, self.strategy = window, plan, strategy
        self.autoscaling = autoscaling
        self.lanes = lanes(window)
        base = prepare(window)
        self.base_pools = node_pools(base)
        counts = pd.Series(self.base_pools).value_counts()
        self.fallback = str(sorted(counts[counts == counts.max()].index)[0]) if len(counts) else ""
        self.replays = 0
        self._last: tuple[tuple[int, tuple[tuple[str, int], ...]], _Run] | None = None

    def run(self, month: int, extra: dict[str, int]) -> _Run:
        """Month ``month`` with ``extra`` nodes per pool, replayed (the last replay is kept: the
        search's check of its own answer is that same replay)."""
        key = (month, tuple(sorted((p, k) for p, k in extra.items() if k)))
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        done = self._replay(month, extra)
        self._last = (key, done)
        return done

    def _replay(self, month: int, extra: dict[str, int]) -> _Run:
        snap, home = grown(self.window, self.plan, month, extra, self.lanes)
        # under an autoscaler the pods arrive when created (``whatif.autoscaled.for_autoscaler``)
        inp = prepare(snap, ARRIVALS[0] if self.autoscaling is None else ARRIVALS_UNDER_AUTOSCALER)
        node_pool = node_pools(inp)
        added: dict[str, int] = {}
        self.replays += 1
        if self.autoscaling is None:
            result = replay(inp, self.strategy, 0)
        else:
            if isinstance(self.autoscaling, KarpenterSettings):
                auto, pools = with_shapes(inp, self.autoscaling, None, room=KARPENTER_ROOM)
                result = replay(auto, self.strategy, 0, autoscaler=(pools, self.autoscaling))
            else:
                auto, groups = with_node_groups(inp, self._room(inp))
                result = replay(auto, self.strategy, 0, autoscaler=(groups, self.autoscaling))
            outcome = outcome_of(auto, inp, result)
            record = result.autoscaler
            assert record is not None
            # the autoscalers call a node without a pool "default"; the pages say NO_POOL
            named = {record.groups[record.of_node[s]]: node_pool[s] for s in range(len(node_pool))}
            node_pool = [named.get(record.groups[g], record.groups[g]) for g in record.of_node]
            if isinstance(self.autoscaling, KarpenterSettings):
                added = {named.get(k, k): max(0, f.peak_nodes - f.observed_peak_nodes)
                         for k, f in outcome.pools.items()}  # fmt: skip
            else:
                added = {named.get(k, k): f.nodes_added for k, f in outcome.pools.items()}
            inp = auto
        pod_pool = _pod_pools(inp, node_pool, home, self.fallback)
        return _Run(inp, result, node_pool, pod_pool, added)

    def _room(self, inp: ReplayInput) -> AutoscalerSettings:
        """The autoscaler's settings with room to grow: a group without a configured maxSize may
        reach 3 × its nodes in the data (the data's own maximum would forbid any growth)."""
        assert isinstance(self.autoscaling, AutoscalerSettings)
        groups = dict(self.autoscaling.groups)
        nodes = inp.snapshot.nodes
        pools = nodes["pool"].fillna("").astype(str) if "pool" in nodes.columns else None
        names = ["" for _ in range(len(nodes))] if pools is None else pools.tolist()
        for pool, count in pd.Series([n or DEFAULT_GROUP for n in names]).value_counts().items():
            bounds = groups.get(str(pool), GroupBounds())
            if bounds.max_size is None:
                groups[str(pool)] = replace(bounds, max_size=3 * int(count))
        return replace(self.autoscaling, groups=groups)

    def waiting_pools(self, run: _Run) -> dict[str, int]:
        """Waiting pods per pool."""
        out: dict[str, int] = {}
        for pod in np.flatnonzero(_waiting(run.result)).tolist():
            out[run.pod_pool[pod]] = out.get(run.pod_pool[pod], 0) + 1
        return out


def _search(rp: _Replayer, month: int, start: dict[str, int]) -> tuple[dict[str, int], set[str]]:
    """The fewest extra nodes per pool that leave no pod waiting (module docstring), and the
    pools without an answer."""
    ks = dict(start)
    hopeless: set[str] = set()
    for _ in range(ROUNDS):
        waits = rp.waiting_pools(rp.run(month, ks))
        todo = [p for p in sorted(waits) if p not in hopeless]
        if not todo:
            break
        for pool in todo:
            cap = max(8, 4 * rp.base_pools.count(pool))

            def fits(k: int, pool: str = pool) -> bool:
                return pool not in rp.waiting_pools(rp.run(month, {**ks, pool: k}))

            low, step = ks.get(pool, 0), 1  # low: known to leave pods waiting
            high = None
            while low + step <= cap:
                if fits(low + step):
                    high = low + step
                    break
                low, step = low + step, step * 2
            if high is None:
                if fits(cap):
                    high = cap
                else:
                    hopeless.add(pool)
                    ks[pool] = 0
                    continue
            while high - low > 1:
                mid = (low + high) // 2
                low, high = (low, mid) if fits(mid) else (mid, high)
            ks[pool] = high
    return ks, hopeless


def _month(
    rp: _Replayer, month: int, run: _Run, ks: dict[str, int], hopeless: set[str]
) -> GrowthMonth:
    base = rp.window.nodes
    alloc_cpu = base["allocatable:cpu"].fillna(0).to_numpy(dtype=float) / 1000.0
    alloc_mem = base["allocatable:memory"].fillna(0).to_numpy(dtype=float) / GIB
    pools_of_nodes = np.array(rp.base_pools, dtype=object)
    names = sorted(set(rp.base_pools) | set(run.pod_pool))
    peaks = _peaks(run, names)
    waits = rp.waiting_pools(run)
    rows = []
    for pool in names:
        mine = pools_of_nodes == pool
        add = run.added.get(pool, 0) if rp.autoscaling is not None else ks.get(pool, 0)
        rows.append(
            PoolMonth(
                pool=pool,
                nodes=int(mine.sum()),
                capacity_cpu_cores=float(alloc_cpu[mine].sum()),
                capacity_memory_gib=float(alloc_mem[mine].sum()),
                largest_cpu_cores=float(alloc_cpu[mine].max()) if mine.any() else 0.0,
                largest_memory_gib=float(alloc_mem[mine].max()) if mine.any() else 0.0,
                requested_peak_cpu_cores=peaks[pool][0],
                requested_peak_memory_gib=peaks[pool][1],
                waiting_pods=waits.get(pool, 0),
                nodes_to_add=None if pool in hopeless else add,
            )
        )
    return GrowthMonth(month, run.inp.pod_count, int(_waiting(run.result).sum()), rows)


def _month_ahead(rp: _Replayer, month: int) -> GrowthMonth | None:
    """Month ``month`` replayed as it is, in a pool process: its row when no pod waits (then it
    is all ``run_growth`` does with that month), None when pods wait (the month is replayed again
    in order, with the nodes-to-add search, which starts from the month before's answer)."""
    run = rp.run(month, {})
    if rp.waiting_pools(run):
        return None
    return _month(rp, month, run, {}, set())


def _months_ahead(rp: _Replayer, months: int, workers: int) -> list[GrowthMonth | None]:
    """Every month's ``_month_ahead``, over ``workers`` forked processes (each inherits ``rp``:
    the window and its preparation, not pickled)."""
    with open_session(ExecutorSpec(), workers, Shared("growth:memory", value=rp)) as session:
        return session.map(_month_ahead, [(month,) for month in range(months + 1)])


def run_growth(
    snapshot: Snapshot,
    plan: GrowthPlan,
    strategy: Strategy,
    autoscaling: AutoscalerSettings | KarpenterSettings | None = None,
    *,
    days: int = 7,
    progress: Callable[[int], None] | None = None,
    search_nodes: bool = True,
    stop_at_first_wait: bool = False,
    workers: int = 1,
) -> GrowthResult:
    """Months 0..``plan.months`` of ``snapshot``'s busiest ``days`` replayed (module docstring).

    ``search_nodes=False`` skips the nodes-to-add search (0 is reported); ``stop_at_first_wait``
    ends at the first month a pod waits (the benchmark needs no more). ``workers`` > 1: the
    months are first replayed as they are in that many processes at once (each month's replay
    is independent of the others'; only the nodes-to-add search reads the month before's
    answer), and a month whose pods wait is replayed again in order with its search: the same
    result, the same replay count, in less wall time when no month waits (the demo's)."""
    start, end = busiest_window(snapshot, days)
    window = cut(snapshot, start, end)
    profile = strategy.profile
    plugins = [] if profile is None else [*profile.filters, *(w.plugin for w in profile.scorers)]
    if profile is not None and not any(isinstance(p, LoadAwareScheduling) for p in plugins):
        # no usage-aware plugin: the samples would only be copied along with every pod copy
        window = replace(window, pod_usage=window.pod_usage.iloc[0:0],
                         node_usage=window.node_usage.iloc[0:0])  # fmt: skip
    rp = _Replayer(window, plan, strategy, autoscaling)
    growing = all(c.rate >= 0 and c.count >= 0 for c in plan.changes)
    months: list[GrowthMonth] = []
    ks: dict[str, int] = {}
    notes: list[str] = []
    ahead = (
        _months_ahead(rp, plan.months, workers)
        if workers > 1 and not stop_at_first_wait
        else [None] * (plan.months + 1)
    )
    for month in range(plan.months + 1):
        done = ahead[month]
        if done is not None:  # no pod waited: the row below, replayed in a pool process
            rp.replays += 1
            ks = {}
            months.append(done)
            if progress is not None:
                progress(month)
            continue
        run = rp.run(month, {})
        hopeless: set[str] = set()
        if autoscaling is None and search_nodes and rp.waiting_pools(run):
            # growth only adds pods: last month's nodes are still needed, start there
            ks, hopeless = _search(rp, month, ks if growing else {})
            for pool in sorted(hopeless):
                notes.append(f"month {month}: pods of pool {pool} still wait with "
                             f"{max(8, 4 * rp.base_pools.count(pool))} extra nodes of its shape "
                             "(a constraint those nodes do not meet?): no node count given")  # fmt: skip
        elif autoscaling is None:
            ks = {}
            if not search_nodes:  # not searched: no count to give where pods wait
                hopeless = set(rp.waiting_pools(run))
        months.append(_month(rp, month, run, ks, hopeless))
        if progress is not None:
            progress(month)
        if stop_at_first_wait and months[-1].waiting_pods:
            break
    notes.append(f"{rp.replays} replays of the window {start.isoformat()} .. {end.isoformat()}")
    return GrowthResult(
        strategy=strategy.name,
        autoscaler="none"
        if autoscaling is None
        else "karpenter"
        if isinstance(autoscaling, KarpenterSettings)
        else "cluster-autoscaler",
        start=start,
        end=end,
        changes=[c.label() for c in plan.changes],
        months=months,
        notes=notes,
    )
