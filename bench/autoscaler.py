"""Benchmark: the replay under cluster-autoscaler against the same replay without it (issue 25).

A synthetic cluster (``analyzer.sources``: pools, DaemonSets, Deployments, Jobs; ``--nodes``
nodes, ``--days`` days at a 5-minute step) is prepared once; then, in the same process and run,
for each strategy:

- the baseline: ``replay(inp, strategy)`` — today's replay, the data's nodes as observed;
- the replay with CA: ``with_node_groups`` (spare slots, groups) and
  ``replay(auto, strategy, autoscaler=...)`` with the config's node groups at ``minSize 0`` (so
  CA may remove nodes: ``--bounds zero``, the default), or with no ``node-groups`` in the config
  (``--bounds observed``: each pool's minSize and maxSize the data's observed range, the
  product's default; the generator's node count is constant, so every pool sits at its minimum
  and CA removes nothing: what watching the cluster costs).

Each is timed in CPU seconds of this process (other jobs on a shared machine do not count), the
best of ``--repeat`` runs; the two alternate round by round (``rounds`` in the JSON line). The
ratio CA / baseline is the figure (issue 25: ≤ 2× for 500 nodes × 7 days). Prints a human line
per strategy and a JSON line::

    {"nodes": N, "days": D, "bounds": B, "strategy": S, "cpu_s": C, "ca_cpu_s": A, "ratio": A / C,
     "nodes_removed": R, "nodes_added": U, "node_hours": H, "observed_node_hours": O}

    .venv/bin/python bench/autoscaler.py [--nodes 500] [--days 1] [--repeat 1] [--bounds zero]
        [--kubernetes-version 1.35] [--breakdown] [--autoscaled] [--arrivals created]

``--autoscaled``: the generator's autoscaled cluster instead (``SyntheticSpec.autoscaled``: one
pool, ``--nodes`` at the start, its nodes joining and leaving by cluster-autoscaler's rules, no
DaemonSets) — data an autoscaler already shaped; with ``--bounds observed`` the product's
default bounds on it (each pool's observed range).

``--arrivals created``: both replays read the pods as arriving when created, as the product's
replays under an autoscaler do since 2026-12-02 (docs/autoscaling.md "Arrivals"); the default,
``scheduled``, keeps the figures comparable with the earlier ones.

``--breakdown`` adds one more replay with CA, its parts timed (CPU s, in the JSON line's
``breakdown``): ``tick`` (the autoscaler's runs: scale-up, the scale-down passes, deletions),
within it ``simulate`` (the passes' candidates through ``SimulateNodeRemoval``, simulated or
taken again: ``autoscale_candidates.simulate_candidates``), and ``outside`` the rest (the
scheduler's passes, the evicted pods placed again, the loop's bookkeeping at each bind). Its
``floor`` is the ratio less the simulations' share of that run's CPU (ratio × (1 −
``simulate`` / ``total``)): the ratio were the removal simulations free; ``by_hour``: ``tick`` and ``simulate`` by the hour of the data.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from typing import Any

from analyzer.replay import autoscale_scaledown
from analyzer.replay.autoscale_loop import ClusterAutoscaler
from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import ARRIVALS, prepare
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


def _breakdown(run: Any, start: int) -> tuple[dict[str, float], dict[int, list[float]]]:
    """``run()`` (a replay with CA) with ``ClusterAutoscaler.tick`` and the scale-down's
    ``simulate_candidates`` timed in CPU seconds (module docstring); and both by the hour of the
    data (from ``start``, ns) at which the loop ran."""
    spent = {"tick": 0.0, "simulate": 0.0}
    hours: dict[int, list[float]] = {}
    # (the module's own name for it, which ``update_unneeded`` calls)
    names = vars(autoscale_scaledown)
    tick, simulate = ClusterAutoscaler.tick, names["simulate_candidates"]

    def timed(key: str, func: Any) -> Any:
        def wrapper(ca: Any, *args: Any) -> Any:
            t0 = time.process_time()
            try:
                return func(ca, *args)
            finally:
                took = time.process_time() - t0
                spent[key] += took
                hour = hours.setdefault((ca.clock - start) // (3600 * 10**9), [0.0, 0.0])
                hour[key == "simulate"] += took

        return wrapper

    ClusterAutoscaler.tick = timed("tick", tick)  # type: ignore[method-assign]
    names["simulate_candidates"] = timed("simulate", simulate)
    try:
        t0 = time.process_time()
        run()
        total = time.process_time() - t0
    finally:
        ClusterAutoscaler.tick = tick  # type: ignore[method-assign]
        names["simulate_candidates"] = simulate
    return {"total": total, **spent, "outside": total - spent["tick"]}, hours


def main() -> None:
    """Run the benchmark (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--days", type=float, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--strategy", action="append", default=None)
    parser.add_argument("--bounds", choices=("zero", "observed"), default="zero")
    # the cluster's Kubernetes version: its scheduler plugins and its cluster-autoscaler's rules
    # (1.36: a node at the threshold is a candidate, least-waste the default expander)
    parser.add_argument("--kubernetes-version", default=None)
    parser.add_argument("--breakdown", action="store_true")
    # the generator's autoscaled cluster (``SyntheticSpec.autoscaled``: one pool whose nodes join
    # and leave by CA's rules, no DaemonSets): data an autoscaler already shaped, as a recorded
    # autoscaled cluster is; with ``--bounds observed`` the product's default on such data
    parser.add_argument("--autoscaled", action="store_true")
    # how both replays read arrivals: ``created`` is how the product's replays under an
    # autoscaler read them since 2026-12-02 (``whatif.autoscaled.for_autoscaler``); the default
    # keeps the figures comparable with those before
    parser.add_argument("--arrivals", choices=ARRIVALS, default=ARRIVALS[0])
    args = parser.parse_args()
    t0 = time.process_time()
    spec = SyntheticSpec(
        seed=1, nodes=args.nodes, days=args.days, step=300, autoscaled=args.autoscaled
    )
    cluster = generate(spec)
    inp = prepare(cluster.snapshot, args.arrivals)
    print(f"generated and prepared in {time.process_time() - t0:.1f} s CPU: "
          f"{len(inp.node_names)} nodes, {inp.pod_count} pods")  # fmt: skip
    pools = set(cluster.snapshot.nodes["pool"].fillna("default").astype(str)) or {"default"}
    settings = parse_settings(None)
    if args.bounds == "zero":
        settings = type(settings)(
            **{**vars(settings), "groups": {p or "default": GroupBounds(min_size=0) for p in pools}}
        )
    for name in args.strategy or ["kube-default", "most-allocated"]:
        strategy = Strategy(name, load_strategy(name, args.kubernetes_version))
        auto, groups = with_node_groups(inp, settings)
        # the two replays alternate, round by round: a VM that slows down or speeds up during
        # the run (seen here: the same replay 0.98 s in one hour, 1.06-1.18 s in another) then
        # weighs on both minima alike, not on the one measured second
        base_cpu = ca_cpu = float("inf")
        result = None
        rounds = []
        for _ in range(args.repeat):
            base_round, _ = _cpu(lambda s=strategy: replay(inp, s, 0), 1)
            # printed at once: a long run (5,000 nodes) stopped by a timeout keeps this figure
            print(f"{name}: without CA {base_round:.1f} s CPU", flush=True)
            ca_round, result = _cpu(
                lambda s=strategy, a=auto, g=groups: replay(a, s, 0, autoscaler=(g, settings)), 1
            )
            base_cpu, ca_cpu = min(base_cpu, base_round), min(ca_cpu, ca_round)
            rounds.append([round(base_round, 3), round(ca_round, 3)])
        assert result is not None
        outcome = outcome_of(auto, inp, result)
        row = {
            "nodes": args.nodes,
            "days": args.days,
            "bounds": args.bounds,
            "autoscaled": args.autoscaled,
            "arrivals": args.arrivals,
            "kubernetes_version": str(strategy.profile.version if strategy.profile else ""),
            "pods": inp.pod_count,
            "strategy": name,
            "cpu_s": round(base_cpu, 2),
            "ca_cpu_s": round(ca_cpu, 2),
            "ratio": round(ca_cpu / base_cpu, 2),
            "rounds": rounds,  # [without, with CA] CPU s of each round
            "nodes_removed": outcome.total.nodes_removed,
            "nodes_added": outcome.total.nodes_added,
            "pods_evicted": outcome.total.pods_evicted,
            "node_hours": round(outcome.total.node_hours, 1),
            "observed_node_hours": round(outcome.total.observed_node_hours, 1),
            "simulated": result.autoscaler.simulated,
            "reused": result.autoscaler.reused,
            "skipped_passes": result.autoscaler.skipped,
            "passes": result.autoscaler.passes,
            "hinted": result.autoscaler.hinted,
            "reused_by_hints": result.autoscaler.reused_by_hints,
            "reused_over_epochs": result.autoscaler.reused_over_epochs,
            # (getattr: a tree from before the counter, run with PYTHONPATH set to it)
            "reused_unread": getattr(result.autoscaler, "reused_unread", None),
            "machine": f"{platform.machine()} {platform.python_version()}",
        }
        if args.breakdown:
            parts, hours = _breakdown(
                lambda s=strategy, a=auto, g=groups: replay(a, s, 0, autoscaler=(g, settings)),
                inp.start,
            )
            parts = {k: round(v, 2) for k, v in parts.items()}
            # the ratio without the simulations' share of this run (its total differs from
            # the timed rounds' best: the VM drifts between runs)
            share = 1.0 - parts["simulate"] / parts["total"] if parts["total"] else 1.0
            parts["floor"] = round(ca_cpu / base_cpu * share, 2)
            row["breakdown"] = parts
            # per hour of the data: [tick, of it simulations] CPU s
            row["by_hour"] = {h: [round(a, 3), round(b, 3)] for h, (a, b) in sorted(hours.items())}
        print(f"{name}: without {base_cpu:.1f} s, with CA {ca_cpu:.1f} s CPU "
              f"(x{ca_cpu / base_cpu:.2f}); CA removed {row['nodes_removed']}, added "
              f"{row['nodes_added']}; node-hours {row['node_hours']} vs observed "
              f"{row['observed_node_hours']}")  # fmt: skip
        print(json.dumps(row))


if __name__ == "__main__":
    main()
