"""Benchmark: making the replay's CA pods (``ReplayView.ca_pod``) through ``pods.RunningPods``
against the dataclasses' constructors (how ``ca_pod`` made them before), in the same process.

A synthetic cluster (``--nodes`` nodes, ``--days`` days at a 5-minute step, generator seed 1) is
prepared; the CA pods of its first ``--pods`` demands (the kube-default week at 500 nodes makes
8,296) are made both ways, each the best of ``--repeat`` runs in CPU seconds, alternating, with
the cycle collector paused as in the replay (``gc_paused``). Prints a human line and a JSON
line::

    {"pods": P, "constructors_s": C, "running_pods_s": R, "ratio": R / C}

    .venv/bin/python bench/ca_pods.py [--nodes 500] [--days 7] [--pods 8296] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from analyzer.autoscaler.pods import MIRROR_ANNOTATION, CAPod, RunningPods
from analyzer.core.memory import gc_paused
from analyzer.core.resources import Container, PodSpecResources
from analyzer.replay.autoscale_view import running_ca_pod
from analyzer.replay.input import prepare
from analyzer.scheduling.objects import PodObject
from analyzer.sources import SyntheticSpec, generate


def _constructors(demands: list[Any]) -> list[CAPod]:
    out = []
    for d in demands:
        kind = "" if d.controller is None else d.controller.kind
        spec = PodSpecResources((Container("main", dict(d.request_map)),))
        out.append(
            CAPod(
                PodObject(
                    name=d.name,
                    namespace=d.namespace,
                    spec=spec,
                    labels=d.labels,
                    annotations={MIRROR_ANNOTATION: "replay"} if kind == "Node" else {},
                    owner_kinds=(kind,) if kind else (),
                    phase="Running",
                    controller=d.controller,
                    uid=d.uid,
                )
            )
        )
    return out


def _running_pods(demands: list[Any]) -> list[CAPod]:
    made = RunningPods()
    return [running_ca_pod(made, d) for d in demands]


def main() -> None:
    """Run the benchmark (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--pods", type=int, default=8296)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    cluster = generate(SyntheticSpec(seed=1, nodes=args.nodes, days=args.days, step=300))
    demands = list(prepare(cluster.snapshot).demands[: args.pods])
    assert _constructors(demands) == _running_pods(demands)  # the same pods, field for field
    best = {"constructors": float("inf"), "running_pods": float("inf")}
    with gc_paused():
        for _ in range(args.repeat):
            for name, make in (("constructors", _constructors), ("running_pods", _running_pods)):
                t0 = time.process_time()
                made = make(demands)
                best[name] = min(best[name], time.process_time() - t0)
                del made
    ratio = best["running_pods"] / best["constructors"]
    print(f"{len(demands)} CA pods: constructors {best['constructors']:.4f} s, RunningPods "
          f"{best['running_pods']:.4f} s CPU ({ratio:.2f}x)")  # fmt: skip
    print(json.dumps({"pods": len(demands), "constructors_s": round(best["constructors"], 4),
                      "running_pods_s": round(best["running_pods"], 4),
                      "ratio": round(ratio, 3)}))  # fmt: skip


if __name__ == "__main__":
    main()
