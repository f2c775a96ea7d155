"""Profile = filter plugins + weighted score plugins; evaluation for all nodes at once; selection.

kube-scheduler's cycle (research/kube-scoring.md §2): filters remove nodes; every score plugin gives
each feasible node an int in [0, MaxNodeScore]; total = Σ plugin weight × score; the highest total
wins and ties are broken uniformly at random. Here every plugin works on whole columns (numpy int64
over all nodes) and scores are computed for infeasible nodes too, so a user sees how a refused node
would have scored. ``select`` only ever picks a feasible node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.versions import KubeVersion

ReasonFn = Callable[[int], list[str]]
SUCCESS, UNSCHEDULABLE, UNRESOLVABLE = "Success", "Unschedulable", "UnschedulableAndUnresolvable"


@dataclass(frozen=True)
class FilterResult:
    """Feasibility of every node for one plugin; ``reasons(i)`` explains a refused node.

    ``unresolvable`` marks the refused nodes whose status is UnschedulableAndUnresolvable (moving
    pods away would not help, so preemption skips them); None: every refusal is Unschedulable.
    """

    feasible: BoolArray
    reasons: ReasonFn
    unresolvable: BoolArray | None = None


@dataclass(frozen=True)
class ExplainRow:
    """One line of ``--explain``: a resource's inputs and raw score on one node for one plugin."""

    plugin: str
    resource: str
    requested: int | None
    allocatable: int | None
    utilisation: float | None
    score: int | float | None
    note: str = ""


@runtime_checkable
class FilterPlugin(Protocol):
    """A filter: which nodes can run the pod."""

    name: str

    def filter(self, state: ClusterState, pod: PodDemand, now: float) -> FilterResult:
        """Feasibility of every node (``now`` in unix seconds)."""
        ...


@runtime_checkable
class ScorePlugin(Protocol):
    """A score plugin: a raw int score per node, or None when the plugin skips this pod."""

    name: str

    def score(self, state: ClusterState, pod: PodDemand, now: float) -> Int64Array | None:
        """Raw scores of every node on the plugin's scale (0–100; 0–10 for legacy versions)."""
        ...

    def explain(
        self, state: ClusterState, pod: PodDemand, node: int, now: float
    ) -> list[ExplainRow]:
        """Per-resource detail of node ``node``'s score."""
        ...


@dataclass(frozen=True)
class WeightedScore:
    """A score plugin with its profile weight."""

    plugin: ScorePlugin
    weight: int


@dataclass
class Evaluation:
    """The result of scoring one pod against every node."""

    node_names: tuple[str, ...]
    feasible: BoolArray
    scores: dict[str, Int64Array]  # plugin name -> raw score per node (skipped plugins absent)
    total: Int64Array  # Σ weight × raw score, per node (also for infeasible nodes)
    reason_fns: list[tuple[BoolArray, ReasonFn]] = field(default_factory=list)
    # per filter, in order: which refused nodes are UnschedulableAndUnresolvable (None: none)
    unresolvable: list[BoolArray | None] = field(default_factory=list)

    def status(self, node: int) -> str:
        """The filter status code of node ``node``: Success, or the code of the first filter
        (profile order) that refused it — Unschedulable or UnschedulableAndUnresolvable."""
        for (feasible, _), unresolvable in zip(self.reason_fns, self.unresolvable, strict=False):
            if not feasible[node]:
                if unresolvable is not None and unresolvable[node]:
                    return UNRESOLVABLE
                return UNSCHEDULABLE
        return SUCCESS if self.feasible[node] else UNSCHEDULABLE

    def reasons(self, node: int) -> list[str]:
        """Why node ``node`` was refused (empty when feasible)."""
        out: list[str] = []
        for feasible, fn in self.reason_fns:
            if not feasible[node]:
                out.extend(fn(node))
        return out

    def best(self) -> Int64Array:
        """Indices of the feasible nodes with the highest total (the tie set)."""
        if not self.feasible.any():
            return np.zeros(0, dtype=np.int64)
        masked = np.where(self.feasible, self.total, np.iinfo(np.int64).min)
        result: Int64Array = np.flatnonzero(masked == masked.max())
        return result


@dataclass
class Profile:
    """A scheduler profile: filters, weighted scorers, and the name it is known by."""

    name: str
    filters: list[FilterPlugin]
    scorers: list[WeightedScore]
    description: str = ""
    notes: list[str] = field(default_factory=list)  # e.g. configured plugins not modelled
    post_filters: list[Any] = field(default_factory=list)  # e.g. DefaultPreemption
    queue_sort: str = ""  # "PrioritySort" when the profile orders its queue by priority
    # percentageOfNodesToScore in effect (0: adaptive, 100: every node; ``node_sampling``)
    percentage_of_nodes_to_score: int = 0
    # the Kubernetes version the plugins were built for (None: built by hand, the default's
    # behaviour); cluster-autoscaler's rules that changed by version read it too
    version: KubeVersion | None = None

    def evaluate(
        self, state: ClusterState, pod: PodDemand, now: float = 0.0, mask: BoolArray | None = None
    ) -> Evaluation:
        """Run every filter and scorer over all nodes (``now``: unix seconds, for NodeMetric age).

        ``mask`` (optional) marks the nodes that exist at all (a replay's active nodes): the
        others are infeasible before any filter runs. A scorer with a ``normalize(raw, feasible)``
        method (kube's ScoreExtensions.NormalizeScore) gets the feasible nodes to normalise over.
        A scorer with a ``score_feasible(state, pod, now, feasible)`` method (PreScore works on
        the nodes that passed Filter, e.g. PodTopologySpread) is called with them instead and
        returns final scores (0 on the other nodes) or None (Skip).
        """
        count = state.node_count
        feasible = np.ones(count, dtype=bool) if mask is None else mask.copy()
        reason_fns: list[tuple[BoolArray, ReasonFn]] = []
        unresolvable: list[BoolArray | None] = []
        for plugin in self.filters:
            result = plugin.filter(state, pod, now)
            feasible &= result.feasible
            reason_fns.append((result.feasible, result.reasons))
            unresolvable.append(result.unresolvable)
        scores: dict[str, Int64Array] = {}
        total = np.zeros(count, dtype=np.int64)
        for weighted in self.scorers:
            on_feasible = getattr(weighted.plugin, "score_feasible", None)
            if on_feasible is not None:
                raw = on_feasible(state, pod, now, feasible)
                if raw is None:
                    continue
            else:
                raw = weighted.plugin.score(state, pod, now)
                if raw is None:  # PreScore Skip: the plugin contributes nothing for this pod
                    continue
                normalize = getattr(weighted.plugin, "normalize", None)
                if normalize is not None:
                    raw = normalize(raw, feasible)
            scores[weighted.plugin.name] = raw
            total += raw if weighted.weight == 1 else weighted.weight * raw
        return Evaluation(state.node_names, feasible, scores, total, reason_fns, unresolvable)

    def select(self, evaluation: Evaluation, rng: np.random.Generator) -> int | None:
        """The chosen node index: highest total among feasible nodes, ties uniform via ``rng``."""
        return select(evaluation, rng)

    @property
    def uses_devices(self) -> bool:
        """True when a plugin needs the per-GPU device state (``ClusterState.devices``)."""
        plugins = [*self.filters, *(w.plugin for w in self.scorers)]
        return any(getattr(p, "needs_devices", False) for p in plugins)

    def without_devices(self) -> Profile:
        """This profile without the plugins that need per-GPU device state (GPU-sharing
        policies) and with the GPU resources they took over counted again by the plugins that
        left them out (a plugin's own ``without_devices``: NodeResourcesFit's
        ``ignoredResources``): what a node autoscaler's own scheduler simulation runs, as
        cluster-autoscaler and Karpenter know GPUs as extended resources, not shared GPUs."""
        if not self.uses_devices:
            return self

        def counting(plugin: Any) -> Any:
            again = getattr(plugin, "without_devices", None)
            return plugin if again is None else again()

        return dataclasses.replace(
            self,
            filters=[counting(f) for f in self.filters if not getattr(f, "needs_devices", False)],
            scorers=[
                dataclasses.replace(w, plugin=counting(w.plugin))
                for w in self.scorers
                if not getattr(w.plugin, "needs_devices", False)
            ],
        )

    def choose_gpus(
        self, state: ClusterState, pod: PodDemand, node: int, rng: np.random.Generator
    ) -> tuple[int, ...] | None:
        """The GPUs the profile's GPU policy takes on ``node`` (None: the state's best-fit)."""
        if state.devices is None:
            return None
        for weighted in self.scorers:
            chooser = getattr(weighted.plugin, "choose_gpus", None)
            if chooser is not None:
                gpus: tuple[int, ...] = chooser(state, pod, node, rng)
                return gpus
        return None

    def explain(
        self, state: ClusterState, pod: PodDemand, node: int, now: float = 0.0
    ) -> list[ExplainRow]:
        """Per-resource explanation of every scorer for node ``node``."""
        rows: list[ExplainRow] = []
        for weighted in self.scorers:
            rows.extend(weighted.plugin.explain(state, pod, node, now))
        return rows


def select(evaluation: Evaluation, rng: np.random.Generator) -> int | None:
    """Highest-total feasible node; a uniform draw from ``rng`` only when several tie."""
    candidates = evaluation.best()
    if len(candidates) == 0:
        return None
    if len(candidates) == 1:
        return int(candidates[0])
    return int(candidates[int(rng.integers(len(candidates)))])


def combine_filters(results: Sequence[FilterResult], count: int) -> BoolArray:
    """Logical AND of several filter results (all nodes feasible when there are none)."""
    feasible = np.ones(count, dtype=bool)
    for result in results:
        feasible &= result.feasible
    return feasible
