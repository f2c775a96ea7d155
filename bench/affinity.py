"""Benchmark: what InterPodAffinity adds to scoring one pod against 5,000 nodes.

A synthetic cluster (3 zones, ``--pods`` bound pods of ``--workloads`` workloads labelled
``app=app-K`` in one namespace, tracked by ``ClusterState.pod_index``); the pods of every
``--carrier-every``-th workload carry pod (anti-)affinity terms (hostname anti-affinity to their
own app, preferred zone affinity weight 10 to the next app). Every figure is CPU time per pod of
``Profile.evaluate`` + ``select`` (``time.process_time``), as a ratio to the baseline measured in
the same run, the ``kube-default`` profile (TaintToleration, NodeAffinity, NodeResourcesFit
filters; Fit + BalancedAllocation), then kube-default + InterPodAffinity (filter, score weight 2):

- ``no terms, none placed``: a pod without terms in the same cluster with no carrier placed;
- ``no terms``: a pod without terms (pays for the placed carriers' terms: symmetry);
- ``required anti-affinity``: hostname anti-affinity to its own app;
- ``preferred affinity``: zone affinity weight 50 to another app;
- ``first of a group``: required zone affinity to an app no pod has yet (its counts kept after
  the first ask, as for a workload's next replicas); ``new selector``: a selector never asked
  before each time (the index walks the 500 pod groups once).

It also times ``ClusterState.bind`` + ``unbind`` of carriers as a ratio to pods without terms.

    .venv/bin/python bench/affinity.py [--nodes 5000] [--pods 50000] [--repeat 200]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable

import numpy as np

from analyzer.scheduling import ClusterState, WeightedScore, load_strategy, make_demand
from analyzer.scheduling.affinity_types import PodAffinity, parse_pod_affinity
from analyzer.scheduling.plugins.interpodaffinity import InterPodAffinity
from analyzer.scheduling.state import PodDemand

GI = 2**30
HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def _affinity(kind: str, mode: str, key: str, app: str, weight: int = 0) -> PodAffinity | None:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}
    field = f"{mode}DuringSchedulingIgnoredDuringExecution"
    entry = {"weight": weight, "podAffinityTerm": term} if mode == "preferred" else term
    return parse_pod_affinity({"affinity": {kind: {field: [entry]}}}, "bench", "default", {})


def _carrier(app: str, other: str) -> PodAffinity:
    spec = {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": HOST}
                ]
            },
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "podAffinityTerm": {
                            "labelSelector": {"matchLabels": {"app": other}},
                            "topologyKey": ZONE,
                        },
                    }
                ]
            },
        }
    }
    parsed = parse_pod_affinity(spec, "bench", "default", {"app": app})
    assert parsed is not None
    return parsed


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


def cluster(options: argparse.Namespace, carriers: bool) -> ClusterState:
    """Nodes in 3 zones with bound pods; every ``carrier_every``-th workload carries terms."""
    rng = np.random.default_rng(options.seed)
    names = [f"node-{i}" for i in range(options.nodes)]
    state = ClusterState.from_nodes(
        names,
        [{"cpu": 64_000, "memory": 256 * GI, "pods": 110} for _ in names],
        labels=[{HOST: n, ZONE: f"z{i % 3}"} for i, n in enumerate(names)],
    )
    state.attach_pod_index()
    terms: dict[int, PodAffinity] = {}
    for i in range(options.pods):
        k = i % options.workloads
        affinity = None
        if carriers and k % options.carrier_every == 0:
            affinity = terms.setdefault(k, _carrier(f"app-{k}", f"app-{k + 1}"))
        pod = _pod(state, f"p{i}", f"app-{k}", affinity=affinity)
        state.bind(int(rng.integers(options.nodes)), pod)
    return state


def _cpu_ms(run: Callable[[], object], repeat: int) -> float:
    for _ in range(min(20, repeat)):
        run()
    start = time.process_time()
    for _ in range(repeat):
        run()
    return (time.process_time() - start) / repeat * 1000


def main() -> None:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--workloads", type=int, default=500)
    parser.add_argument("--carrier-every", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    state = cluster(options, carriers=True)
    bare = cluster(options, carriers=False)
    base = load_strategy("kube-default")
    profile = load_strategy("kube-default")
    plugin = InterPodAffinity()
    profile.filters.append(plugin)
    profile.scorers.append(WeightedScore(plugin, 2))
    rng = np.random.default_rng(options.seed)

    plain = _pod(state, "new", "app-7")
    pods = {
        "no terms": plain,
        "required anti-affinity": _pod(
            state, "new", "app-7", affinity=_affinity("podAntiAffinity", "required", HOST, "app-7")
        ),
        "preferred affinity": _pod(
            state,
            "new",
            "app-7",
            affinity=_affinity("podAffinity", "preferred", ZONE, "app-3", weight=50),
        ),
    }
    assert "InterPodAffinity" not in profile.evaluate(bare, plain).scores
    assert "InterPodAffinity" in profile.evaluate(state, pods["preferred affinity"]).scores

    figures: dict[str, float] = {}
    figures["kube-default"] = _cpu_ms(
        lambda: base.select(base.evaluate(state, plain), rng), options.repeat
    )
    figures["no terms, none placed"] = _cpu_ms(
        lambda: profile.select(profile.evaluate(bare, plain), rng), options.repeat
    )
    for label, pod in pods.items():
        figures[label] = _cpu_ms(
            lambda p=pod: profile.select(profile.evaluate(state, p), rng), options.repeat
        )  # type: ignore[misc]
    first = _pod(
        state, "new", "app-new", affinity=_affinity("podAffinity", "required", ZONE, "app-new")
    )
    figures["first of a group"] = _cpu_ms(
        lambda: profile.select(profile.evaluate(state, first), rng), options.repeat
    )
    fresh = iter(range(10**9))

    def new_selector() -> object:
        app = f"app-new-{next(fresh)}"
        pod = _pod(state, "n", app, affinity=_affinity("podAffinity", "required", ZONE, app))
        return profile.select(profile.evaluate(state, pod), rng)

    figures["first of a group, new selector"] = _cpu_ms(new_selector, max(5, options.repeat // 5))

    # bind / unbind of pods with terms against pods without
    target = cluster(argparse.Namespace(**{**vars(options), "pods": 0}), carriers=False)
    carrier_terms = _carrier("app-1", "app-2")
    plain_binds = [
        (int(rng.integers(options.nodes)), _pod(target, f"b{i}", f"app-{i % 500}"))
        for i in range(5000)
    ]
    carrier_binds = [
        (node, _pod(target, pod.name, "app-1", affinity=carrier_terms)) for node, pod in plain_binds
    ]

    def churn(binds: list[tuple[int, PodDemand]]) -> Callable[[], None]:
        def run() -> None:
            for node, pod in binds:
                target.bind(node, pod)
            for node, pod in binds:
                target.unbind(node, pod)

        return run

    # alternated, best of 3 rounds each: a shared machine's load drifts between the two
    plain_runs, carrier_runs = [], []
    for _ in range(3):
        plain_runs.append(_cpu_ms(churn(plain_binds), 3) / (2 * len(plain_binds)) * 1000)
        carrier_runs.append(_cpu_ms(churn(carrier_binds), 3) / (2 * len(carrier_binds)) * 1000)
    bind_plain, bind_carrier = min(plain_runs), min(carrier_runs)

    baseline = figures["kube-default"]
    for label, value in figures.items():
        print(f"{label:31s} {value:8.3f} ms/pod  {value / baseline:5.2f}x kube-default")
    print(f"bind+unbind, no terms           {bind_plain:8.2f} µs/event")
    print(
        f"bind+unbind, with terms         {bind_carrier:8.2f} µs/event  {bind_carrier / bind_plain:5.2f}x"
    )
    carriers = sum(
        1 for i in range(options.pods) if (i % options.workloads) % options.carrier_every == 0
    )
    print(
        json.dumps(
            {
                "benchmark": "affinity",
                "nodes": options.nodes,
                "pods": options.pods,
                "pods_with_terms": carriers,
                "ms_per_pod": {k: round(v, 4) for k, v in figures.items()},
                "ratio_to_kube_default": {k: round(v / baseline, 2) for k, v in figures.items()},
                "bind_us": {"no_terms": round(bind_plain, 2), "with_terms": round(bind_carrier, 2)},
                "python": platform.python_version(),
                "numpy": np.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
