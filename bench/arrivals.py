"""Benchmark: the replay with ``arrivals="created"`` against the default arrivals, same snapshot.

A contended synthetic cluster placed by kube-default (``pods_per_node`` app pods per node, more
than fits: pods wait, high-priority pods preempt; spread constraints, anti-affinity and budgets in
play, as ``tests/test_replay_reproduction.py``'s clusters but larger). The same snapshot is
prepared both ways and replayed under kube-default, alternating: *scheduled* (the baseline: the
data's waits and preemptions as recorded, the replay evicts nobody) and *created* (every pod
offered at its creation, the replay waits and preempts by itself). CPU seconds of the ``replay``
call, best of ``--repeat``; the ratio created/scheduled is the figure. Also prints the
preemptions, victims and pods that waited of each, and whether the created replay reproduced
the generator pod for pod (node and bind second) and its preemptions.

    .venv/bin/python bench/arrivals.py [--nodes 100] [--pods-per-node 20] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import ARRIVALS, prepare
from analyzer.scheduling import load_strategy
from analyzer.sources import SyntheticSpec, generate
from analyzer.sources.kube_placement import kube_placer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods-per-node", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spec = SyntheticSpec(seed=args.seed, nodes=args.nodes, days=1, step=300, churn=0.8,
                         gpu_pool=False, pending_fraction=0.0, zones=3, pod_constraints=True,
                         pods_per_node=args.pods_per_node)  # fmt: skip
    started = time.process_time()
    cluster = generate(spec, place=kube_placer("kube-default", seed=args.seed))
    generated = time.process_time() - started
    inputs = {how: prepare(cluster.snapshot, how) for how in ARRIVALS}
    strategy = Strategy("kube-default", load_strategy("kube-default"))
    best = dict.fromkeys(inputs, float("inf"))
    outcome: dict[str, dict[str, int | bool]] = {}
    for _ in range(args.repeat):
        for how, inp in inputs.items():
            start = time.process_time()
            result = replay(inp, strategy, seed=args.seed)
            best[how] = min(best[how], time.process_time() - start)
            pre = result.preemptions
            pods = {p.uid: p for p in cluster.pods}
            ordered = [pods[u] for u in inp.pod_uids]
            bound = inp.real_node >= 0
            second = np.array([-1 if p.scheduled is None else p.scheduled for p in ordered])
            made = {
                (t // 10**9, n, inp.pod_uids[q], inp.pod_uids[v])
                for v, q, n, t in zip(*(pre[c].tolist() for c in
                                        ("victim", "preemptor", "node", "time")), strict=True)
            }  # fmt: skip
            want = {(t, n, p.uid, v) for p in ordered for t, n, vs in p.preemptions for v in vs}
            outcome[how] = {
                "preemptions": len({(q, t) for _, _, q, t in zip(*pre.values(), strict=True)}),
                "victims": len(pre["victim"]),
                "waited": int(result.waited.sum()),
                "same_placements": bool(
                    np.array_equal(result.node, inp.real_node)
                    and np.array_equal(result.placed_at[bound] // 10**9, second[bound])
                ),
                "same_preemptions": made == want,
            }
    line = {
        "bench": "arrivals",
        "nodes": args.nodes,
        "pods": inputs["created"].pod_count,
        "generate_cpu_s": round(generated, 2),
        "scheduled_cpu_s": round(best["scheduled"], 3),
        "created_cpu_s": round(best["created"], 3),
        "ratio": round(best["created"] / best["scheduled"], 3),
        "outcome": outcome,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
