"""Benchmark: what PodTopologySpread adds to scoring one pod against 5,000 nodes.

A synthetic cluster (3 zones, ``--pods`` bound pods spread over ``--workloads`` workloads labelled
``app=app-K`` in one namespace, tracked by ``ClusterState.pod_index``). Every figure is CPU time
per pod of ``Profile.evaluate`` + ``select`` (``time.process_time``: other jobs on a shared
machine do not count), as a ratio to the baseline measured in the same run, the ``kube-default``
profile (TaintToleration, NodeAffinity, NodeResourcesFit filters; Fit + BalancedAllocation):

- ``no constraints``: kube-default + PodTopologySpread (filter, score weight 2) for a pod without
  constraints and no object selecting it (System defaults, empty selector: both skip);
- ``system defaults``: the same pod owned by a ReplicaSet (selector app=app-7): hostname + zone
  ScheduleAnyway over the pod index's kept counts;
- ``own constraints``: zone DoNotSchedule maxSkew 1 + hostname ScheduleAnyway maxSkew 1;
- ``first pod of a workload``: own constraints with a selector never asked before (the index walks
  every placed pod once, then keeps the counts).

It also times ``ClusterState.bind`` with the index (and ``--kept`` selectors kept up to date) as a
ratio to ``bind`` without it.

``--replay DIR``: the whole-replay figure instead. The ``bench/replay.py`` cluster (5,000 nodes,
churn; generated into DIR when DIR has no snapshot) is replayed with ``kube-default`` as is (its
objects hold no ReplicaSet: no default spreading, the baseline) and with the ReplicaSets and
StatefulSets owning its pods added to its objects (selector ``app=<workload>``, as the generator
writes them with ``--pod-constraints``): every replicated pod then gets PodTopologySpread's System
default constraints. Runs alternate (baseline, spread, ...; best of ``--repeat``), placements/s
= scheduler-placed pods / CPU seconds of ``replay``; the same is done on the first
``--profile-events`` events with the fast path switched off (``Profile``-style scoring of every
spread pod, ``TopologyCheck.choose``), and both spread replays are checked identical there.

    .venv/bin/python bench/spread.py [--nodes 5000] [--pods 50000] [--repeat 200]
    .venv/bin/python bench/spread.py --replay /tmp/spread-bench [--repeat 2] [--zones 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from analyzer.core.kube_objects import kept_objects
from analyzer.core.snapshot import Snapshot, read_snapshot, write_snapshot
from analyzer.replay.default_spread import UNHANDLED, DefaultSpread
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import ReplayInput, prepare
from analyzer.replay.result import ReplayResult
from analyzer.scheduling import ClusterState, WeightedScore, load_strategy, make_demand
from analyzer.scheduling.kube_objects import KubeObjects, SelectorObject
from analyzer.scheduling.label_selectors import parse_label_selector
from analyzer.scheduling.plugins.podtopologyspread import PodTopologySpread
from analyzer.scheduling.spread_types import OwnerRef, parse_spread_constraint
from analyzer.scheduling.state import PodDemand
from analyzer.sources import SyntheticSpec, generate

GI = 2**30


def cluster(nodes: int, pods: int, workloads: int, seed: int, index: bool) -> ClusterState:
    """Nodes in 3 zones with ``pods`` bound pods of ``workloads`` apps."""
    rng = np.random.default_rng(seed)
    names = [f"node-{i}" for i in range(nodes)]
    state = ClusterState.from_nodes(
        names,
        [{"cpu": 64_000, "memory": 256 * GI, "pods": 110} for _ in names],
        labels=[
            {"kubernetes.io/hostname": n, "topology.kubernetes.io/zone": f"z{i % 3}"}
            for i, n in enumerate(names)
        ],
    )
    if index:
        state.attach_pod_index()
    for i in range(pods):
        state.bind(int(rng.integers(nodes)), _pod(state, f"p{i}", f"app-{i % workloads}"))
    return state


def _pod(state: ClusterState, name: str, app: str, **info: object) -> PodDemand:
    return make_demand(
        state.resources,
        {"cpu": 100, "memory": GI // 4},
        {"cpu": 100, "memory": GI // 4},
        name=name,
        namespace="default",
        labels={"app": app},
        **info,
    )


def _cpu_ms(run: Callable[[], object], repeat: int) -> float:
    for _ in range(min(20, repeat)):
        run()
    start = time.process_time()
    for _ in range(repeat):
        run()
    return (time.process_time() - start) / repeat * 1000


def _with_selectors(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` with the ReplicaSets / StatefulSets owning its pods in its objects."""
    pods = snapshot.pods
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for kind, ns, name, labels in zip(
        pods["owner_kind"], pods["namespace"], pods["owner_name"], pods["labels"], strict=True
    ):
        if kind in ("ReplicaSet", "StatefulSet") and (kind, ns, name) not in found:
            app = {"app": json.loads(labels)["app"]}
            found[(kind, ns, name)] = {
                "kind": kind,
                "metadata": {"namespace": ns, "name": name},
                "spec": {"selector": {"matchLabels": app}},
            }
    return replace(snapshot, objects={**snapshot.objects, **kept_objects(found.values())})


def _replay_rate(inp: ReplayInput, stop: int | None) -> tuple[float, ReplayResult]:
    strategy = Strategy("kube-default", load_strategy("kube-default"))
    started = time.process_time()
    result = replay(inp, strategy, seed=0, stop_after=stop)
    seconds = time.process_time() - started
    placed = int((~inp.pinned[result.segments["pod"]]).sum())
    return placed / seconds, result


def replay_figures(options: argparse.Namespace) -> None:
    """Whole replays of kube-default without and with default spreading (``--replay``)."""
    path = Path(options.replay)
    if (path / "meta.json").is_file():
        plain = read_snapshot(path)
    else:
        spec = SyntheticSpec(
            seed=1, nodes=options.nodes, days=1, step=300, churn=1.3, zones=options.zones
        )
        plain = generate(spec).snapshot  # bench/replay.py's cluster (``--zones``: labelled)
        write_snapshot(plain, path)
    spread = _with_selectors(plain)
    inputs = {"baseline": prepare(plain), "default spreading": prepare(spread)}
    held = spread.objects
    rates: dict[str, list[float]] = {k: [] for k in inputs}
    for _ in range(options.repeat):
        for label, inp in inputs.items():
            rates[label].append(_replay_rate(inp, None)[0])
    best = {k: max(v) for k, v in rates.items()}
    # the first events with the fast path off: every spread pod through TopologyCheck.choose
    stop = options.profile_events
    fast_prefix, fast_result = _replay_rate(inputs["default spreading"], stop)
    original = DefaultSpread.choose
    DefaultSpread.choose = lambda self, *args: UNHANDLED  # type: ignore[method-assign]
    try:
        slow_prefix, slow_result = _replay_rate(inputs["default spreading"], stop)
    finally:
        DefaultSpread.choose = original  # type: ignore[method-assign]
    assert (fast_result.node == slow_result.node).all(), "fast path and profile path disagree"
    base_prefix = _replay_rate(inputs["baseline"], stop)[0]
    load = os.getloadavg()[0]
    counts = {k: len(held.get(k, [])) for k in ("ReplicaSet", "StatefulSet")}
    print(f"objects added: {counts}; load average {load:.1f}")
    for label, value in best.items():
        print(f"{label:20s} {value:9.0f} placements/s  {value / best['baseline']:5.2f}x baseline")
    faster = f"{fast_prefix / slow_prefix:.1f}x faster" if slow_prefix else "no placement yet"
    print(f"first {stop} events: baseline {base_prefix:.0f}/s, default spreading {fast_prefix:.0f}/s"
          f", fast path off {slow_prefix:.0f}/s ({faster})")  # fmt: skip
    print(
        json.dumps(
            {
                "benchmark": "spread-replay",
                "nodes": plain.nodes.shape[0],
                "pods": plain.pods.shape[0],
                "objects": counts,
                "placements_per_s": {k: round(v) for k, v in best.items()},
                "ratio": round(best["default spreading"] / best["baseline"], 3),
                "prefix_events": stop,
                "prefix_placements_per_s": {
                    "baseline": round(base_prefix),
                    "default spreading": round(fast_prefix),
                    "fast path off": round(slow_prefix),
                },
                "load_average": round(load, 1),
                "python": platform.python_version(),
            }
        )
    )


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--workloads", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--kept", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--replay", help="Whole-replay figures on this snapshot folder.")
    parser.add_argument("--profile-events", type=int, default=15_000)
    parser.add_argument(
        "--zones", type=int, default=0, help="--replay: zones of a generated cluster (0: none)."
    )
    options = parser.parse_args()
    if options.replay:
        replay_figures(options)
        return
    state = cluster(options.nodes, options.pods, options.workloads, options.seed, index=True)
    state.objects = KubeObjects(
        replica_sets=[
            SelectorObject(
                "web", "default", parse_label_selector({"matchLabels": {"app": "app-7"}}, "rs")
            )
        ]
    )
    base = load_strategy("kube-default")
    spread = load_strategy("kube-default")
    plugin = PodTopologySpread()
    spread.filters.append(plugin)
    spread.scorers.append(WeightedScore(plugin, 2))
    rng = np.random.default_rng(options.seed)

    plain = _pod(state, "new", "app-7")
    owned = _pod(state, "new", "app-7", controller=OwnerRef("apps/v1", "ReplicaSet", "web"))
    constraints = tuple(
        parse_spread_constraint(
            {
                "maxSkew": 1,
                "topologyKey": key,
                "whenUnsatisfiable": when,
                "labelSelector": {"matchLabels": {"app": "app-7"}},
            },
            "bench",
        )
        for key, when in (
            ("topology.kubernetes.io/zone", "DoNotSchedule"),
            ("kubernetes.io/hostname", "ScheduleAnyway"),
        )
    )
    own = _pod(state, "new", "app-7", spread=constraints)
    assert "PodTopologySpread" not in spread.evaluate(state, plain).scores
    assert "PodTopologySpread" in spread.evaluate(state, owned).scores
    assert "PodTopologySpread" in spread.evaluate(state, own).scores

    figures: dict[str, float] = {}
    figures["kube-default"] = _cpu_ms(
        lambda: base.select(base.evaluate(state, plain), rng), options.repeat
    )
    for label, pod in (
        ("no constraints", plain),
        ("system defaults", owned),
        ("own constraints", own),
    ):
        figures[label] = _cpu_ms(
            lambda p=pod: spread.select(spread.evaluate(state, p), rng), options.repeat
        )  # type: ignore[misc]

    fresh = iter(range(10**9))

    def first_pod() -> object:
        k = next(fresh)
        selector = {"matchLabels": {"app": f"app-{options.workloads + k}"}}
        zone = {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector,
        }
        cons = (parse_spread_constraint(zone, "bench"),)
        return spread.select(spread.evaluate(state, _pod(state, "n", "x", spread=cons)), rng)

    figures["first pod of a workload"] = _cpu_ms(first_pod, max(5, options.repeat // 10))

    # bind / unbind: without the index, and with it keeping ``--kept`` selectors up to date
    plain_state = cluster(options.nodes, 0, 1, options.seed, index=False)
    indexed = cluster(options.nodes, 0, 1, options.seed, index=True)
    assert indexed.pod_index is not None
    for k in range(options.kept):
        indexed.pod_index.match_counts(
            parse_label_selector({"matchLabels": {"app": f"app-{k}"}}, "s"), "default"
        )
    binds = [
        (int(rng.integers(options.nodes)), _pod(plain_state, f"b{i}", f"app-{i % 500}"))
        for i in range(5000)
    ]

    def churn(target: ClusterState) -> Callable[[], None]:
        def run() -> None:
            for node, pod in binds:
                target.bind(node, pod)
            for node, pod in binds:
                target.unbind(node, pod)

        return run

    bind_plain = _cpu_ms(churn(plain_state), 3) / (2 * len(binds)) * 1000
    bind_index = _cpu_ms(churn(indexed), 3) / (2 * len(binds)) * 1000

    baseline = figures["kube-default"]
    for label, value in figures.items():
        print(f"{label:26s} {value:8.3f} ms/pod  {value / baseline:5.2f}x kube-default")
    print(f"bind+unbind without index  {bind_plain:8.2f} µs/event")
    print(f"bind+unbind with index     {bind_index:8.2f} µs/event  {bind_index / bind_plain:5.2f}x ({options.kept} kept selectors)")  # fmt: skip
    print(
        json.dumps(
            {
                "benchmark": "spread",
                "nodes": options.nodes,
                "pods": options.pods,
                "ms_per_pod": {k: round(v, 4) for k, v in figures.items()},
                "ratio_to_kube_default": {k: round(v / baseline, 2) for k, v in figures.items()},
                "bind_us": {"plain": round(bind_plain, 2), "indexed": round(bind_index, 2)},
                "kept_selectors": options.kept,
                "python": platform.python_version(),
                "numpy": np.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
