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
snapshot sees the same constraints; DaemonSet pods keep their one node. The generator's
ReplicaSets and StatefulSets (``ClusterState.objects``, also written to the snapshot) give
PodTopologySpread's system default constraints their selectors here as in the replay. With a
profile that has DefaultPreemption (the v1 default does), ``preempt`` lets a pod that fits nowhere
evict lower-priority pods (``analyzer.sources.lifecycle_loop``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.scheduling import ClusterState as CoreState
from analyzer.scheduling import PodDemand, Profile, load_strategy, make_demand
from analyzer.scheduling.constraint_types import (
    PodConstraints,
    constraints_from_json,
    taints_from_json,
)
from analyzer.scheduling.kube_objects import from_kept
from analyzer.scheduling.pdb import DisruptionBudget
from analyzer.scheduling.plugins.defaultpreemption import (
    UNRESOLVABLE,
    BoundPod,
    node_statuses,
    preempt,
)
from analyzer.scheduling.plugins.interpodaffinity import InterPodAffinity
from analyzer.scheduling.plugins.podtopologyspread import PodTopologySpread
from analyzer.scheduling.pod_cells import (
    controller_from_owner,
    labels_from_cell,
    topology_from_cells,
)
from analyzer.scheduling.preemption_scenario import preemption_plugin
from analyzer.scheduling.requeue import Requeue
from analyzer.sources.placement import ClusterState, PlacementRequest, Running


@dataclass
class CoreMirror:
    """A scheduling core ``ClusterState`` that follows a generator ``ClusterState``.

    It holds the placed pods' labels and terms (for PodTopologySpread and InterPodAffinity) and
    catches up with the generator's bind log (``ClusterState.log``) only when asked (``state``),
    so a placer that consults it for some pods only pays for the others when it does.
    """

    _core: CoreState | None = field(default=None, repr=False)
    _source: ClusterState | None = field(default=None, repr=False)
    _applied: int = 0  # bind-log entries already applied to ``_core``
    _demands: dict[str, PodDemand] = field(default_factory=dict, repr=False)
    # parsed cells by their text: a workload's pods share them (the parsed values are frozen)
    _topology: dict[tuple[str, ...], tuple[Any, Any]] = field(default_factory=dict, repr=False)
    _constraints: dict[tuple[str, ...], PodConstraints] = field(default_factory=dict, repr=False)
    # parsed labels cells by their text (a ReplicaSet's pods share one; read-only once parsed)
    _labels: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)

    def state(self, state: ClusterState) -> CoreState:
        """The core state of ``state`` now (built on first use, then followed incrementally)."""
        if self._core is None or self._source is not state:
            names = [r for r in state.resources if r != "pods"]
            allocatable = [
                {r: int(state.allocatable[i, j]) for j, r in enumerate(state.resources)}
                for i in range(len(state.nodes))
            ]
            count = len(state.nodes)
            self._core = CoreState.from_nodes(
                list(state.nodes),
                allocatable,
                extra_resources=names,
                labels=[labels_from_cell(t) for t in state.node_labels]
                if state.node_labels
                else None,
                taints=[taints_from_json(t) for t in state.node_taints]
                if state.node_taints
                else None,
            )
            assert self._core.node_count == count
            # the snapshot's objects (ReplicaSets, StatefulSets): default spreading as replayed
            self._core.objects = from_kept(state.objects, "generator objects")
            self._core.attach_pod_index()
            # another cluster (e.g. the next history chunk) may reuse uids with other requests
            self._source, self._applied, self._demands = state, 0, {}
        core = self._core
        core.present = state.present
        for node, step, pod in state.log[self._applied :]:
            demand = self.demand(pod, core)
            if step == 1:
                core.bind(node, demand)
            elif step == -1:
                core.unbind(node, demand)
            elif step == 2:  # a nominated pod's room (``ClusterState.reserve``)
                core.reserve(node, demand)
            else:
                core.release(node, demand)
        self._applied = len(state.log)
        return core

    def demand(self, pod: PlacementRequest, core: CoreState) -> PodDemand:
        """The pod as a replay of the snapshot sees it (requests, constraints, labels, terms)."""
        found = self._demands.get(pod.uid)
        if found is not None:
            return found
        cells = pod.cells
        labels_cell = cells.get("labels", "{}")
        labels = self._labels.get(labels_cell)
        if labels is None:
            labels = self._labels[labels_cell] = labels_from_cell(labels_cell)
        affinity_cell, spread_cell = cells.get("affinity", ""), cells.get("topology_spread", "")
        key = (affinity_cell, spread_cell, pod.namespace, cells.get("labels", "{}"))
        topology = self._topology.get(key)
        if topology is None:
            topology = self._topology[key] = topology_from_cells(
                affinity_cell, spread_cell, pod.namespace, labels, "pod"
            )
        spread, affinity = topology
        tolerations, selector = cells.get("tolerations", ""), cells.get("node_selector", "")
        constraints = self._constraints.get((tolerations, selector, affinity_cell))
        if constraints is None:
            constraints = constraints_from_json(tolerations, selector, affinity_cell)
            self._constraints[(tolerations, selector, affinity_cell)] = constraints
        requests = {k: v for k, v in pod.requests.items() if k != "pods"}
        demand = make_demand(
            core.resources,
            requests,
            pod.non_zero,
            name=pod.uid,
            namespace=pod.namespace,
            priority=pod.priority,
            daemonset=pod.daemonset,
            constraints=constraints,
            labels=labels,
            spread=spread,
            affinity=affinity,
            controller=controller_from_owner(*pod.owner),
            uid=pod.uid,
        )
        self._demands[pod.uid] = demand
        return demand


@dataclass
class KubePlacer:
    """A generator ``Placer`` backed by a scheduling core profile and a seeded generator.

    It keeps its own core state (``CoreMirror``), so each placement costs one
    ``Profile.evaluate``.
    """

    profile: Profile
    rng: np.random.Generator
    ties: dict[str, list[int]] = field(default_factory=dict)  # uid -> tied node indices
    mirror: CoreMirror = field(default_factory=CoreMirror, repr=False)

    def _state(self, state: ClusterState) -> CoreState:
        return self.mirror.state(state)

    def _demand(self, pod: PlacementRequest, core: CoreState) -> PodDemand:
        return self.mirror.demand(pod, core)

    def requeue(
        self, state: ClusterState
    ) -> tuple[Requeue, Callable[[PlacementRequest], PodDemand]] | None:
        """The topology plugins' retry rule for the generator's loop on ``state``
        (``analyzer.scheduling.requeue``, as the replay runs it) and the demand of a request;
        None when the profile has neither plugin."""
        if not any(
            isinstance(f, (PodTopologySpread, InterPodAffinity)) for f in self.profile.filters
        ):
            return None
        core = self._state(state)
        return Requeue(core.objects.namespaces), lambda pod: self.mirror.demand(pod, core)

    def __call__(self, pod: PlacementRequest, state: ClusterState) -> int | None:
        if pod.daemonset:  # DaemonSet pods stay on their node, as in every replay
            node = int(np.flatnonzero(pod.allowed)[0])
            return node if bool(state.fits(pod)[node]) else None
        core = self._state(state)
        demand = self._demand(pod, core)
        # the pool mask stands for the pod's taint/selector filters (recorded in the snapshot
        # and given to the demand too, so both agree)
        evaluation = self.profile.evaluate(core, demand, float(pod.time), pod.allowed)
        self.ties[pod.uid] = [int(i) for i in evaluation.best()]
        return self.profile.select(evaluation, self.rng)

    def fits_alone(self, pod: PlacementRequest, state: ClusterState, node: int) -> bool:
        """Whether ``pod`` passes every filter on ``node`` alone: its nominated node, tried
        before the others (kube-scheduler's ``evaluateNominatedNode``, as the replay tries it);
        no tie-break draw."""
        core = self._state(state)
        demand = self._demand(pod, core)
        alone = np.zeros(len(state.nodes), dtype=bool)
        alone[node] = True
        evaluation = self.profile.evaluate(core, demand, float(pod.time), pod.allowed & alone)
        if not evaluation.feasible[node]:
            return False
        self.ties[pod.uid] = [node]
        return True

    def preempt(
        self,
        pod: PlacementRequest,
        state: ClusterState,
        now: int,
        lower: Sequence[Running],
        budgets: Sequence[DisruptionBudget] = (),
    ) -> tuple[int, list[str]] | None:
        """DefaultPreemption (``scheduling.plugins.defaultpreemption.preempt``, as ``analyzer score`` and the
        replay run it) for ``pod``, which fits nowhere: (node, victim uids) or None.

        Every pod may preempt (``preemptionPolicy`` is not modelled); ``budgets`` (with their
        status now, ``lifecycle_loop``) protect victims as in the replay; a node outside
        ``pod.allowed`` (taints, node selector) is UnschedulableAndUnresolvable. Victims' start
        time is their bind time, as the replay keeps it."""
        plugin = preemption_plugin(self.profile)
        if plugin is None or pod.daemonset or not lower:
            return None
        core = self._state(state)
        demand = self._demand(pod, core)
        evaluation = self.profile.evaluate(core, demand, float(now), pod.allowed)
        if evaluation.feasible.any():
            return None
        statuses = node_statuses(evaluation, self.profile.filters)
        for node in np.flatnonzero(~pod.allowed).tolist():
            statuses[node] = UNRESOLVABLE
        bound = []
        for running in lower:
            victim = self._demand(running.request, core)
            bound.append(BoundPod(running.node, victim.name, victim.namespace,
                                  running.request.priority, victim, victim.labels,
                                  running.since_ns))  # fmt: skip
        result = preempt(
            self.profile.filters, core, demand, pod.priority, "PreemptLowerPriority",
            statuses, bound, budgets, plugin.args, float(now),
        )  # fmt: skip
        if result.nominated is None:
            return None
        return result.nominated, [v.demand.uid for v in result.victims]


def kube_placer(strategy: str = "kube-default", *, seed: int = 0) -> KubePlacer:
    """A placer for ``generate(spec, place=...)`` using ``strategy`` with tie-break seed ``seed``."""
    return KubePlacer(load_strategy(strategy), np.random.default_rng(seed))
