"""Benchmark: the cost of PodDisruptionBudgets and preemptionPolicy in the replay's preemption.

A synthetic cluster with Kubernetes objects (``SyntheticSpec(pod_constraints=True)``: budgets on
the replicated services, a ``preemptionPolicy: Never`` class for ``batch-low``), every node's cpu
and memory cut to ``--share`` so pods wait and preempt. The same snapshot is replayed under
kube-default twice per round, alternating: *with* its PodDisruptionBudget and PriorityClass
objects, and *without* them (the baseline: the replay as it was before budgets were modelled —
no budget, every pod may preempt). CPU seconds of the ``replay`` call, best of ``--repeat``;
the ratio with/without is the figure. Also prints the preemptions and victims of each.

    .venv/bin/python bench/preemption_budgets.py [--nodes 300] [--share 0.55] [--repeat 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time

from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import NEVER_PREEMPT, prepare
from analyzer.scheduling import load_strategy
from analyzer.sources import SyntheticSpec, generate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--share", type=float, default=0.55)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spec = SyntheticSpec(seed=1, nodes=args.nodes, days=1, step=300, zones=3, pod_constraints=True)
    snapshot = generate(spec).snapshot
    nodes = snapshot.nodes.copy()
    for column in ("allocatable:cpu", "allocatable:memory"):
        nodes[column] = (nodes[column] * args.share).astype("int64")
    with_objects = dataclasses.replace(snapshot, nodes=nodes)
    without = dataclasses.replace(with_objects, objects={})
    inputs = {"with": prepare(with_objects), "without": prepare(without)}
    strategy = Strategy("kube-default", load_strategy("kube-default"))
    best = dict.fromkeys(inputs, float("inf"))
    outcome: dict[str, dict[str, int]] = {}
    for _ in range(args.repeat):
        for name, inp in inputs.items():
            start = time.process_time()
            result = replay(inp, strategy, seed=0)
            best[name] = min(best[name], time.process_time() - start)
            pre = result.preemptions
            outcome[name] = {
                "preemptions": len(
                    set(zip(pre["preemptor"].tolist(), pre["time"].tolist(), strict=True))
                ),
                "victims": len(pre["victim"]),
                "waited": int(result.waited.sum()),
            }
    inp = inputs["with"]
    line = {
        "bench": "preemption_budgets",
        "nodes": args.nodes,
        "pods": inp.pod_count,
        "share": args.share,
        "budgets": len(with_objects.objects.get("PodDisruptionBudget", [])),
        "never_pods": sum(d.preemption_policy == NEVER_PREEMPT for d in inp.demands),
        "cpu_s_with": round(best["with"], 3),
        "cpu_s_without": round(best["without"], 3),
        "ratio": round(best["with"] / best["without"], 3),
        "outcome": outcome,
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
