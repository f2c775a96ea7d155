"""An exact kube-scheduler placement mode for the synthetic generator.

``generate(spec, place=kube_placer("kube-default", seed=7))`` makes the generator place every pod
with a scheduling core profile — ``Profile.evaluate`` over all nodes and ``Profile.select`` with a
seeded generator (uniform among tied nodes), exactly like ``analyzer score`` — instead of its
default least-allocated heuristic. A replay of the same profile and seed over the resulting
snapshot then has a known answer: the same node for every pod (the replay's own event loop and
incremental score cache must get there independently). The placer records, per pod uid, the tie
set it drew from (``placer.ties``), so a test can also check that other seeds only differ there.

The generator's pool restrictions (``PlacementRequest.allowed``) are exactly what the snapshot
records as node taints and pod tolerations/nodeSelectors (``catalog.template_constraints``), so
this mode applies them as the TaintToleration/NodeAffinity filters would, and a replay of the
snapshot sees the same constraints; DaemonSet pods keep their one node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from analyzer.scheduling import ClusterState as CoreState
from analyzer.scheduling import Profile, load_strategy, make_demand
from analyzer.sources.placement import ClusterState, PlacementRequest


@dataclass
class KubePlacer:
    """A generator ``Placer`` backed by a scheduling core profile and a seeded generator."""

    profile: Profile
    rng: np.random.Generator
    ties: dict[str, list[int]] = field(default_factory=dict)  # uid -> tied node indices

    def _state(self, state: ClusterState) -> CoreState:
        names = [r for r in state.resources if r != "pods"]
        allocatable = [
            {r: int(state.allocatable[i, j]) for j, r in enumerate(state.resources)}
            for i in range(len(state.nodes))
        ]
        core = CoreState.from_nodes(list(state.nodes), allocatable, extra_resources=names)
        for j, r in enumerate(state.resources):
            if r == "pods":
                core.pod_count[:] = state.requested[:, j]
            else:
                core.requested[:, core.resources.index(r)] = state.requested[:, j]
        core.nonzero_requested[:] = state.non_zero_requested
        return core

    def __call__(self, pod: PlacementRequest, state: ClusterState) -> int | None:
        if pod.daemonset:  # DaemonSet pods stay on their node, as in every replay
            node = int(np.flatnonzero(pod.allowed)[0])
            return node if bool(state.fits(pod)[node]) else None
        core = self._state(state)
        requests = {k: v for k, v in pod.requests.items() if k != "pods"}
        demand = make_demand(core.resources, requests, pod.non_zero, name=pod.uid, namespace="")
        evaluation = self.profile.evaluate(core, demand, float(pod.time))
        # the pool mask stands for the pod's taint/selector filters (recorded in the snapshot)
        evaluation.feasible = evaluation.feasible & pod.allowed
        self.ties[pod.uid] = [int(i) for i in evaluation.best()]
        return self.profile.select(evaluation, self.rng)


def kube_placer(strategy: str = "kube-default", *, seed: int = 0) -> KubePlacer:
    """A placer for ``generate(spec, place=...)`` using ``strategy`` with tie-break seed ``seed``."""
    return KubePlacer(load_strategy(strategy), np.random.default_rng(seed))
