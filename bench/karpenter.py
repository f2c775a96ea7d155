"""Benchmark: the replay under Karpenter against the same replay without it (issue 25).

A synthetic cluster (``analyzer.sources``: pools, DaemonSets, Deployments, Jobs; ``--nodes``
nodes, ``--days`` days at a 5-minute step) is prepared once; then, in the same process and run,
for each strategy:

- the baseline: ``replay(inp, strategy)`` — today's replay, the data's nodes as observed;
- the replay with Karpenter: ``with_shapes`` (spare slots per pool and shape) and
  ``replay(k, strategy, autoscaler=(pools, settings))`` with Karpenter's defaults
  (WhenEmptyOrUnderutilized, consolidateAfter 0s, budget 10 %), unpriced (shapes ranked by
  capacity);
- with ``--plain``, the same Karpenter replay with the simulation's shortcuts off
  (``KarpenterSettings.fast`` False): the speed-up of the fast path is plain / Karpenter.

Each is timed in CPU seconds of this process (other jobs on a shared machine do not count), the
best of ``--repeat`` runs. The ratio Karpenter / baseline is the figure. Prints a human line per
strategy and a JSON line::

    {"nodes": N, "days": D, "strategy": S, "cpu_s": C, "karpenter_cpu_s": K, "ratio": K / C, ...}

    .venv/bin/python bench/karpenter.py [--nodes 500] [--days 1] [--repeat 1] [--plain]
        [--policy Balanced]

``--seed``, ``--second-shape F`` (every other node of the general pool with its cpu and memory
scaled by F: a second shape, so replacements by a cheaper one happen) and ``--prices C,G`` (per
core-hour and GiB-hour, every pool) vary the cluster. ``--policy``: the NodePool's
``consolidationPolicy`` (default WhenEmptyOrUnderutilized; Balanced
scores each move against the pool's totals, made at every disruption pass).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
from typing import Any

from analyzer.core.prices import PoolPrice, Prices
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.replay.karpenter_setup import parse_karpenter, with_shapes
from analyzer.scheduling.strategies import load_strategy
from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.autoscaled import outcome_of


def _cpu(func: Any, repeat: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        out = func()
        best = min(best, time.process_time() - t0)
    return best, out


def main() -> None:
    """Run the benchmark (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--days", type=float, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--strategy", action="append", default=None)
    parser.add_argument(
        "--plain", action="store_true", help="also time the plain simulation (settings.fast off)"
    )
    parser.add_argument("--policy", default=None, help="the NodePool's consolidationPolicy")
    parser.add_argument("--seed", type=int, default=1, help="the generator's seed")
    parser.add_argument(
        "--validation", type=float, default=15.0,
        help="seconds between a command and its validation (upstream: 15; 0: at once)",
    )  # fmt: skip
    parser.add_argument(
        "--second-shape",
        type=float,
        default=None,
        help="scale cpu and memory of every other node of the general pool by this factor "
        "(a second shape: replacements by a cheaper one)",
    )
    parser.add_argument(
        "--prices", default=None, help="CORE_HOUR,GIB_HOUR for every pool (default: unpriced)"
    )
    args = parser.parse_args()
    t0 = time.process_time()
    cluster = generate(SyntheticSpec(seed=args.seed, nodes=args.nodes, days=args.days, step=300))
    if args.second_shape is not None:
        nodes = cluster.snapshot.nodes
        half = nodes.index[nodes["pool"] == "general"][::2]
        for column in ("allocatable:cpu", "allocatable:memory", "capacity:cpu", "capacity:memory"):
            nodes.loc[half, column] = (nodes.loc[half, column] * args.second_shape).round()
    prices = None
    if args.prices is not None:
        core, gib = (float(x) for x in args.prices.split(","))
        prices = Prices("USD", {}, PoolPrice(core_hour=core, gib_hour=gib), "--prices")
    inp = prepare(cluster.snapshot)
    print(f"generated and prepared in {time.process_time() - t0:.1f} s CPU: "
          f"{len(inp.node_names)} nodes, {inp.pod_count} pods")  # fmt: skip
    raw = None if args.policy is None else {"disruption": {"consolidationPolicy": args.policy}}
    settings = parse_karpenter(raw, 120 * 1_000_000_000)
    settings = dataclasses.replace(settings, validation=int(args.validation * 1_000_000_000))
    karpenter, pools = with_shapes(inp, settings, prices)
    for name in args.strategy or ["kube-default", "most-allocated"]:
        strategy = Strategy(name, load_strategy(name))
        base_cpu, _ = _cpu(lambda s=strategy: replay(inp, s, 0), args.repeat)
        k_cpu, result = _cpu(
            lambda s=strategy: replay(karpenter, s, 0, autoscaler=(pools, settings)),
            args.repeat,
        )
        outcome = outcome_of(karpenter, inp, result)
        plain_cpu = None
        if args.plain:  # the same replay without the simulation's shortcuts (issue karpfast)
            off = dataclasses.replace(settings, fast=False)
            plain_cpu, plain = _cpu(
                lambda s=strategy, o=off: replay(karpenter, s, 0, autoscaler=(pools, o)),
                args.repeat,
            )
            assert plain.autoscaler.removed == result.autoscaler.removed  # the same decisions
        row = {
            "nodes": args.nodes,
            "days": args.days,
            "pods": inp.pod_count,
            "slots": len(karpenter.node_names),
            "strategy": name,
            "policy": settings.policy,
            "cpu_s": round(base_cpu, 2),
            "karpenter_cpu_s": round(k_cpu, 2),
            "ratio": round(k_cpu / base_cpu, 2),
            "plain_cpu_s": None if plain_cpu is None else round(plain_cpu, 2),
            "plain_ratio": None if plain_cpu is None else round(plain_cpu / base_cpu, 2),
            "nodes_removed": outcome.total.nodes_removed,
            "nodes_added": outcome.total.nodes_added,
            "pods_evicted": outcome.total.pods_evicted,
            "scale_ups": len(result.autoscaler.scale_ups),
            "validation_s": args.validation,
            "abandoned": result.autoscaler.abandoned,
            "node_hours": round(outcome.total.node_hours, 1),
            "observed_node_hours": round(outcome.total.observed_node_hours, 1),
            "machine": f"{platform.machine()} {platform.python_version()}",
        }
        print(f"{name}: without {base_cpu:.1f} s, with Karpenter {k_cpu:.1f} s CPU "
              f"(x{k_cpu / base_cpu:.2f}); removed {row['nodes_removed']}, added "
              f"{row['nodes_added']}; node-hours {row['node_hours']} vs observed "
              f"{row['observed_node_hours']}")  # fmt: skip
        print(json.dumps(row))


if __name__ == "__main__":
    main()
