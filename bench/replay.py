"""Benchmark: replay a synthetic 5,000-node cluster with churn under each strategy.

The cluster comes from the synthetic generator (``analyzer.sources``: node pools, DaemonSets,
Deployments with rollouts, Jobs; one day, 5-minute usage so LoadAwareScheduling sees real
NodeMetrics). For each strategy the whole replay runs (every arrival, departure, retry; the best
of ``--repeat`` runs counts, since a shared machine only ever slows a run down) and
*placements/s* = pods placed by the scheduler (DaemonSet pods excluded) / CPU seconds of the
``replay`` call (CPU time of this process, so other jobs on a shared machine do not count).

The baseline runs the same engine with every pod scored by a straightforward per-node Python loop
of the same plugins — ``analyzer.scheduling.reference.kube_default_loop`` (the scheduling core's
own reference, written the way the Go code reads) for kube-default and most-allocated, the
replay's per-node scorer ``analyzer.replay.rows.score_rows`` over all nodes for rtcr-binpack —
over the first ``--baseline-pods`` scored pods of the same replay. Above 100 nodes the loop, as
kube-scheduler (percentageOfNodesToScore), scores only the feasible nodes it finds walking the node
list from its rotating start index (``reference.walk_found``). The loop's choices are checked
against the fast path's. With ``--pod-constraints`` (workloads with spread constraints and pod
(anti-)affinity, 3 zones) the baseline is ``Profile.evaluate`` over all nodes for every pod,
since the loop knows neither PodTopologySpread nor InterPodAffinity. The load-aware strategies (``*-loadaware``) replay the whole day
incrementally; their baseline is the full-rescoring path (``replay(..., rescore_all=True)``:
``Profile.evaluate`` over all nodes for every pod, the pod-assign cache recomputed at every
report), on the first ``--loadaware-events`` events only (it is slow), and the script checks
that the fast path's replay of the same prefix is identical. The NodeMetric feed's usage
matrices (``usage_matrices``) are built once per snapshot, as ``analyzer whatif`` does, and
timed separately.

    .venv/bin/python bench/replay.py [--nodes 5000] [--churn 1.3] [--snapshot DIR] [--pod-constraints]

Prints a human line per strategy and a final JSON line per strategy::

    {"nodes": N, "pods": P, "strategy": S, "placements_per_s": X,
     "baseline_placements_per_s": Y, "peak_rss_mb": M, "cpu_s": C, "wall_s": W,
     "load_avg": L}

(``cpu_s`` / ``wall_s``: the best run's CPU and wall seconds; ``load_avg``: the machine's
1-minute load average after the strategy's runs — wall well above CPU means a shared machine.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import analyzer.replay.engine as replay_module
from analyzer.core.snapshot import Snapshot, read_snapshot, write_snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import ReplayInput, prepare
from analyzer.replay.node_tree import NodeSampler
from analyzer.replay.projection import UsageMatrices, usage_matrices
from analyzer.replay.result import ReplayResult
from analyzer.replay.rows import score_rows
from analyzer.replay.score_plan import Kernel
from analyzer.replay.scoring import ScoreCache
from analyzer.replay.topology import InertIndex
from analyzer.scheduling import ClusterState, PodDemand, Profile, load_strategy
from analyzer.scheduling.reference import allowed_by_constraints, kube_default_loop, walk_found
from analyzer.sources import SyntheticSpec, generate

STRATEGIES = (
    "kube-default",
    "most-allocated",
    "rtcr-binpack",
    "koord-loadaware",
    "most-allocated-loadaware",
    "rtcr-binpack-loadaware",
)


class _Enough(Exception):
    """The baseline has scored enough pods."""


def _loop_choice(
    profile: Profile,
    state: ClusterState,
    pod: PodDemand,
    active: np.ndarray,
    name: str,
    find: Callable[[list[bool]], list[bool]] | None,
) -> tuple[list[bool], list[int]]:
    """Feasibility and totals of every node by the per-node loop; with ``find`` (more than 100
    nodes: percentageOfNodesToScore) only the nodes the scheduler finds are feasible and scored
    over, as upstream and the fast path."""
    if not isinstance(state.pod_index, InertIndex):
        # spread constraints / pod affinity in play (--pod-constraints): the loop knows neither
        # plugin, so the baseline is the profile's own evaluation of every node for every pod
        evaluation = profile.evaluate(state, pod)
        feasible = evaluation.feasible.tolist()
        if find is None or not any(feasible):
            return feasible, evaluation.total.tolist()
        found = np.array(find(feasible))  # scored and normalised over the nodes found only
        evaluation = profile.evaluate(state, pod, mask=found)
        return (evaluation.feasible & found).tolist(), evaluation.total.tolist()
    if name in ("kube-default", "most-allocated"):
        return kube_default_loop(
            state, pod, most=name == "most-allocated", taint_affinity=True, find=find
        )
    plan = Kernel(profile).plan(state, pod)
    rows = score_rows(state, plan.rows, list(range(state.node_count)), np.ones_like(active))
    # the constraint filters, node by node as the Go plugins do
    allowed = [allowed_by_constraints(state, pod, i) for i in range(state.node_count)]
    feasible = [ok and a for (ok, _), a in zip(rows, allowed, strict=True)]
    if find is not None:
        feasible = find(feasible)
    return feasible, [t for _, t in rows]


def _walker(sampler: NodeSampler, active: np.ndarray) -> Callable[[list[bool]], list[bool]]:
    """The nodes kube-scheduler finds, by ``reference.walk_found`` over the replay's node list
    (``sampler.tree``: the order nodes joined) from the loop's own start index, which it
    advances by the nodes processed (this replay's sampler serves only the loop)."""

    def find(feasible: list[bool]) -> list[bool]:
        order = sampler.tree.order().tolist()
        start = sampler.start % len(order) if order else 0
        present = [ok and bool(a) for ok, a in zip(feasible, active.tolist(), strict=True)]
        found, processed = walk_found(present, order, start, sampler.wanted)
        if order:
            sampler.start = (start + processed) % len(order)
        return found

    return find


def baseline_cache(name: str, limit: int, fast: dict[int, int | None]) -> type[ScoreCache]:
    """A ``ScoreCache`` whose every choice is a per-node Python loop over all nodes."""

    class LoopCache(ScoreCache):
        calls = 0
        seconds = 0.0

        def choose(
            self, key: bytes, demand: PodDemand, now: float, rng: np.random.Generator
        ) -> int | None:
            started = time.process_time()
            sampler = self.sampler if self.sampler is not None and self.sampler.active else None
            find = None if sampler is None else _walker(sampler, self.active)
            feasible, totals = _loop_choice(
                self.profile, self.state, demand, self.active, name, find
            )
            best, ties = None, []
            for i, (ok, total) in enumerate(zip(feasible, totals, strict=True)):
                if not ok or not self.active[i]:
                    continue
                if best is None or total > best:
                    best, ties = total, [i]
                elif total == best:
                    ties.append(i)
            choice = (
                None
                if not ties
                else ties[int(rng.integers(len(ties)))]
                if len(ties) > 1
                else ties[0]
            )
            LoopCache.seconds += time.process_time() - started
            if LoopCache.calls in fast and fast[LoopCache.calls] != choice:
                raise AssertionError(
                    f"baseline and fast path disagree at scored pod {LoopCache.calls}"
                )
            LoopCache.calls += 1
            if LoopCache.calls >= limit:
                raise _Enough
            return choice

    return LoopCache


def recording_cache(record: dict[int, int | None], limit: int) -> type[ScoreCache]:
    """The fast ``ScoreCache``, remembering its first ``limit`` choices."""

    class Recording(ScoreCache):
        def choose(
            self, key: bytes, demand: PodDemand, now: float, rng: np.random.Generator
        ) -> int | None:
            choice = super().choose(key, demand, now, rng)
            if len(record) < limit:
                record[len(record)] = choice
            return choice

    return Recording


def cluster(args: argparse.Namespace) -> Snapshot:
    """The benchmark cluster, generated once and kept in ``--snapshot`` when given."""
    path = Path(args.snapshot) if args.snapshot else None
    if path is not None and (path / "meta.json").is_file():
        return read_snapshot(path)
    spec = SyntheticSpec(
        seed=args.seed,
        nodes=args.nodes,
        days=1,
        step=300,
        churn=args.churn,
        zones=3 if args.pod_constraints else 0,
        pod_constraints=args.pod_constraints,
    )
    snapshot = generate(spec).snapshot
    if path is not None:
        write_snapshot(snapshot, path)
    return snapshot


def same_outcome(a: ReplayResult, b: ReplayResult) -> bool:
    """Every placement, run, wait and refusal equal."""
    fields = ("node", "placed_at", "wait", "waited", "pending_at_end", "abandoned")
    if not all(np.array_equal(getattr(a, f), getattr(b, f)) for f in fields):
        return False
    for table in ("segments", "waits"):
        for column, values in getattr(a, table).items():
            if not np.array_equal(getattr(b, table)[column], values):
                return False
    return a.refusals == b.refusals


def loadaware_baseline(
    inp: ReplayInput, strategy: Strategy, mats: UsageMatrices, events: int
) -> float:
    """Placements/s of the full-rescoring path on the first ``events`` events (checked equal to
    the incremental path's replay of the same prefix)."""
    fast = replay(inp, strategy, seed=0, stop_after=events, matrices=mats)
    started = time.process_time()
    slow = replay(inp, strategy, seed=0, stop_after=events, matrices=mats, rescore_all=True)
    seconds = time.process_time() - started
    if not same_outcome(fast, slow):
        raise AssertionError(f"{strategy.name}: incremental and full rescoring disagree")
    return int((~inp.pinned[slow.segments["pod"]]).sum()) / seconds


def run(
    inp: ReplayInput, name: str, args: argparse.Namespace, mats: UsageMatrices
) -> dict[str, Any]:
    """Replay ``name`` fully and measure its baseline (per-node loop, or full rescoring)."""
    strategy = Strategy(name, load_strategy(name))
    loadaware = name.endswith("loadaware")
    fast: dict[int, int | None] = {}
    replay_module.ScoreCache = recording_cache(fast, args.baseline_pods)  # type: ignore[misc]
    cpus, walls = [], []
    for _ in range(args.repeat):  # best of N: a shared machine only slows runs
        started, wall = time.process_time(), time.perf_counter()
        result = replay(inp, strategy, seed=0, matrices=mats)
        cpus.append(time.process_time() - started)
        walls.append(time.perf_counter() - wall)
    cpu, wall = min(cpus), min(walls)
    scored = int((~inp.pinned[result.segments["pod"]]).sum())
    baseline = None
    if loadaware:
        replay_module.ScoreCache = ScoreCache  # type: ignore[misc]
        baseline = loadaware_baseline(inp, strategy, mats, args.loadaware_events)
    else:
        loop = baseline_cache(name, args.baseline_pods, fast)
        replay_module.ScoreCache = loop  # type: ignore[misc]
        with contextlib.suppress(_Enough):  # the loop stops the replay after enough pods
            replay(inp, strategy, seed=0)
        baseline = loop.calls / loop.seconds if loop.seconds else None
    replay_module.ScoreCache = ScoreCache  # type: ignore[misc]
    return {
        "strategy": name,
        "scored": scored,
        "cpu_s": cpu,
        "cpu_runs": cpus,
        "wall_s": wall,
        "placements_per_s": scored / cpu if cpu else None,
        "baseline_placements_per_s": baseline,
        "waited": int(result.waited.sum()),
    }


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--churn", type=float, default=1.3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--snapshot", help="Keep/reuse the generated cluster in this folder.")
    parser.add_argument(
        "--pod-constraints",
        action="store_true",
        help="Generate workloads with spread constraints and pod (anti-)affinity (3 zones).",
    )
    parser.add_argument("--baseline-pods", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3, help="Replays per strategy (best counts).")
    parser.add_argument(
        "--loadaware-events",
        type=int,
        default=20000,
        help="Events the full-rescoring baseline of the load-aware strategies replays.",
    )
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    args = parser.parse_args()
    started = time.perf_counter()
    snapshot = cluster(args)
    inp = prepare(snapshot)
    built = time.process_time()
    mats = usage_matrices(inp)
    if mats.rows.directory is None:
        # the pod usage rows sorted by grid column, as the usage matrices held them before
        # 2026-11-29: built once per snapshot outside the timed replays (PodRows keeps them;
        # otherwise the first replay of --repeat 1 would pay ~4 CPU s at 5,000 nodes that later
        # replays, and a what-if's later strategies and seeds, do not)
        for k in range(len(mats.rows.chunks)):
            mats.rows.chunk(k)
    print(
        f"usage matrices (NodeMetric feed input, once per snapshot): "
        f"{time.process_time() - built:.1f} CPU s",
        file=sys.stderr,
    )
    print(
        f"cluster: {len(inp.node_names)} nodes, {inp.pod_count} pods "
        f"({int(inp.pinned.sum())} DaemonSet/static), {len(inp.events[0])} events; "
        f"ready in {time.perf_counter() - started:.1f} s; peak RSS after loading "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; "
        f"Python {platform.python_version()}",
        file=sys.stderr,
    )
    lines = []
    for name in args.strategies.split(","):
        figures = run(inp, name, args, mats)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        base = figures["baseline_placements_per_s"]
        print(
            f"{name}: {figures['scored']} placements in {figures['cpu_s']:.2f} CPU s "
            f"(runs: {', '.join(f'{c:.2f}' for c in figures['cpu_runs'])}) "
            f"({figures['wall_s']:.2f} s wall): "
            f"{figures['placements_per_s']:.0f}/s; baseline "
            f"{'n/a' if base is None else f'{base:.1f}/s'}; waited {figures['waited']}; "
            f"load average {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
        )
        lines.append(
            {
                "nodes": len(inp.node_names),
                "pods": inp.pod_count,
                "strategy": name,
                "placements_per_s": round(figures["placements_per_s"], 1),
                "baseline_placements_per_s": None if base is None else round(base, 2),
                "peak_rss_mb": round(rss, 1),
                "cpu_s": round(figures["cpu_s"], 2),
                "wall_s": round(figures["wall_s"], 2),
                "load_avg": round(os.getloadavg()[0], 1),
            }
        )
    for line in lines:
        print(json.dumps(line))


if __name__ == "__main__":
    main()
