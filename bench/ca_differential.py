"""The replay's autoscaler shortcuts against their plain paths on random configurations.

For each seed a random small cluster (the generator: 8 to 200 nodes, 3 to 48 hours at a 5-minute
step, sometimes pod constraints, more churn, pods held pending, a GPU pool, DaemonSet pods that
request up to 4 cores) is replayed twice under the same autoscaler, with random settings:

- ``--autoscaler cluster-autoscaler``: the fast path (answers and passes reused,
  ``AutoscalerSettings.reuse``) and the plain one (every candidate simulated at every pass), CA
  flags drawn from the candidates limit, recheck timeout, unneeded time, delay after add,
  threshold, ``ignore-daemonsets-utilization``, ``ignore-mirror-pods-utilization``, empty bulk
  delete, scan interval, expander, frequent loops and the two ``skip-nodes-with-*`` flags; node
  groups at minSize
  0, a few under their size, or the data's observed range;
- ``--autoscaler karpenter``: the consolidation's exact shortcuts (``KarpenterSettings.fast``)
  and the plain path, with a random consolidation policy, ``consolidateAfter`` and budget,
  sometimes a second node shape in one pool (a share of its nodes with their cpu and memory
  scaled: replacements by a cheaper shape) and sometimes prices per core-hour and GiB-hour.

Each run prints one line (``ok`` or ``DIFF`` and the records that differ: node presence,
removals, additions, scale-ups, evictions, reasons, every pod's node, placement time and wait)
and the command exits 1 if any differs. The same seed gives the same configuration.

    .venv/bin/python bench/ca_differential.py [--autoscaler cluster-autoscaler] [--seeds 1000:1100]
        [--constraints]

On the 2-core VM a CA run takes 0.1-2 s (the plain path simulates every candidate every pass).
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import sys
import time
from typing import Any

import numpy as np

from analyzer.core.prices import PoolPrice, Prices
from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.replay.karpenter_setup import parse_karpenter, with_shapes
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate

CONSTRAINTS = 0.2  # the share of clusters with pod constraints (``--constraints``: all)
RECORDS = ("presence", "removed", "added", "scale_ups", "evictions", "reasons")
PER_POD = ("node", "placed_at", "wait")

CA_FLAGS: list[tuple[float, str, list[Any]]] = [
    (0.4, "max-scale-down-parallelism", [1, 2, 5]),
    (0.4, "unremovable-node-recheck-timeout", ["1m", "2m", "5m", "20m"]),
    (0.3, "scale-down-unneeded-time", ["1m", "2m", "5m", "30m"]),
    (0.3, "scale-down-delay-after-add", ["0s", "1m", "5m", "20m"]),
    (0.3, "scale-down-utilization-threshold", [0.2, 0.35, 0.7, 0.9]),
    (0.35, "ignore-daemonsets-utilization", [True]),
    (0.1, "ignore-mirror-pods-utilization", [True]),
    (0.2, "max-empty-bulk-delete", [1, 3]),
    (0.2, "scan-interval", ["5s", "30s", "1m"]),
    (0.2, "expander", ["least-waste", "random"]),
    (0.15, "skip-nodes-with-local-storage", [False]),
    (0.15, "skip-nodes-with-system-pods", [False]),
    (0.3, "frequent-loops-enabled", [False]),  # on by default (the default version, 1.36)
]


def _cluster(rng: random.Random, seed: int, sizes: list[int], hours: list[int]) -> Any:
    """A random generated cluster (module docstring) and what was drawn."""
    spec: dict[str, Any] = {
        "seed": seed,
        "nodes": rng.choice(sizes),
        "days": rng.choice(hours) / 24,
        "step": 300,
        "pod_constraints": rng.random() < CONSTRAINTS,
    }
    if rng.random() < 0.3:
        spec["churn"] = rng.choice([0.5, 2.0, 4.0])
    if rng.random() < 0.2:
        spec["pending_fraction"] = rng.choice([0.1, 0.3])
    if rng.random() < 0.2:
        spec["gpu_pool"] = rng.random() < 0.5
    cluster = generate(SyntheticSpec(**spec))
    if rng.random() < 0.35:  # DaemonSet pods that weigh (ignore-daemonsets-utilization acts)
        pods = cluster.snapshot.pods
        daemons = pods["owner_kind"] == "DaemonSet"
        cpu = float(rng.choice([400, 1000, 2000, 4000]))
        pods.loc[daemons, "requests:cpu"] = cpu
        pods.loc[daemons, "nonzero_requests:cpu"] = cpu
        spec["daemonset_cpu"] = cpu
    return cluster, spec


def _differ(fast: Any, plain: Any) -> list[str]:
    a, b = fast.autoscaler, plain.autoscaler
    out = [k for k in RECORDS if getattr(a, k) != getattr(b, k)]
    return out + [k for k in PER_POD if not np.array_equal(getattr(fast, k), getattr(plain, k))]


def cluster_autoscaler(seed: int) -> tuple[dict[str, Any], list[str]]:
    """One CA configuration: what was drawn, and the records that differ."""
    rng = random.Random(seed)
    cluster, spec = _cluster(rng, seed, [8, 16, 24, 40, 64, 120, 200], [3, 6, 12, 24, 48])
    strategy = rng.choice(["kube-default", "most-allocated"])
    raw = {flag: rng.choice(values) for share, flag, values in CA_FLAGS if rng.random() < share}
    inp = prepare(cluster.snapshot)
    settings = parse_settings(raw or None)
    bounds = rng.choice(["zero", "zero", "below", "observed"])
    if bounds != "observed":
        below = rng.choice([1, 2, 4])
        sizes = cluster.snapshot.nodes["pool"].fillna("default").astype(str).value_counts()
        groups = {
            p or "default": GroupBounds(min_size=0 if bounds == "zero" else max(0, int(n) - below))
            for p, n in sizes.to_dict().items()
        }
        settings = dataclasses.replace(settings, groups=groups)
    auto, groups_ = with_node_groups(inp, settings)
    chosen = Strategy(strategy, load_strategy(strategy))
    fast = replay(auto, chosen, seed, autoscaler=(groups_, settings))
    plain_settings = dataclasses.replace(settings, reuse=False)
    plain = replay(auto, chosen, seed, autoscaler=(groups_, plain_settings))
    drawn = {**spec, "strategy": strategy, "flags": raw, "bounds": bounds}
    return drawn, _differ(fast, plain)


def _mixed_shapes(rng: random.Random, nodes: Any) -> list[Any]:
    """Scale the cpu and memory of a random share of one pool's nodes (a second shape in that
    pool, larger or smaller); returns what was drawn."""
    pool = rng.choice(sorted(nodes["pool"].fillna("default").astype(str).unique()))
    members = nodes.index[nodes["pool"].fillna("default").astype(str) == pool]
    chosen = [i for i in members if rng.random() < 0.5]
    factor = rng.choice([0.5, 0.75, 1.5, 2.0])
    for column in ("allocatable:cpu", "allocatable:memory", "capacity:cpu", "capacity:memory"):
        if column in nodes:
            nodes.loc[chosen, column] = (nodes.loc[chosen, column] * factor).round()
    return [pool, len(chosen), factor]


def karpenter(seed: int) -> tuple[dict[str, Any], list[str]]:
    """One Karpenter configuration: what was drawn, and the records that differ."""
    rng = random.Random(seed)
    cluster, spec = _cluster(rng, seed, [8, 16, 24, 40], [3, 6, 12])
    strategy = rng.choice(["kube-default", "most-allocated"])
    disruption: dict[str, Any] = {}
    if rng.random() < 0.4:
        disruption["consolidationPolicy"] = rng.choice(
            ["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"]
        )
    if rng.random() < 0.4:
        disruption["consolidateAfter"] = rng.choice(["0s", "30s", "5m", "1h"])
    if rng.random() < 0.3:
        disruption["budgets"] = [{"nodes": rng.choice(["1", "2", "20%", "50%", "100%"])}]
    if rng.random() < 0.4:  # several shapes in a pool: replacements by a cheaper one
        spec["shapes"] = _mixed_shapes(rng, cluster.snapshot.nodes)
    prices = None
    if rng.random() < 0.4:
        core, gib = rng.choice([(0.03, 0.004), (0.05, 0.002), (0.02, 0.01)])
        prices = Prices("USD", {}, PoolPrice(core_hour=core, gib_hour=gib), "drawn")
        spec["prices"] = [core, gib]
    inp = prepare(cluster.snapshot)
    settings = parse_karpenter({"disruption": disruption} if disruption else None, 120 * 10**9)
    auto, pools = with_shapes(inp, settings, prices)
    chosen = Strategy(strategy, load_strategy(strategy))
    fast = replay(auto, chosen, seed, autoscaler=(pools, settings))
    plain = replay(
        auto, chosen, seed, autoscaler=(pools, dataclasses.replace(settings, fast=False))
    )
    return {**spec, "strategy": strategy, "disruption": disruption}, _differ(fast, plain)


def main() -> None:
    """Run the seeds (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--autoscaler", choices=("cluster-autoscaler", "karpenter"), default="cluster-autoscaler"
    )
    parser.add_argument("--seeds", default="1000:1100", help="FIRST:STOP (STOP not included)")
    parser.add_argument(
        "--constraints",
        action="store_true",
        help="every cluster with pod constraints (spread, affinity), not a fifth of them",
    )
    args = parser.parse_args()
    if args.constraints:
        global CONSTRAINTS
        CONSTRAINTS = 1.0
    first, stop = (int(x) for x in args.seeds.split(":"))
    run = cluster_autoscaler if args.autoscaler == "cluster-autoscaler" else karpenter
    differing = 0
    for seed in range(first, stop):
        t0 = time.process_time()
        drawn, differ = run(seed)
        differing += bool(differ)
        verdict = f"DIFF {differ}" if differ else "ok"
        print(f"{seed} {verdict} {drawn} {time.process_time() - t0:.1f} s CPU", flush=True)
    print(f"{stop - first} configurations, {differing} differing")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
