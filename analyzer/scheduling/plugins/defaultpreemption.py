"""kube-scheduler ``DefaultPreemption`` (PostFilter): candidates, minimal victims, the chosen node.

Upstream algorithm (research/kube-plugins.md §6; ``defaultpreemption`` and
``framework/preemption``), run when the incoming pod fits on no node:

1. A pod with ``preemptionPolicy: Never`` preempts nothing.
2. Only nodes whose Filter status was ``Unschedulable`` are tried (``UnschedulableAndUnresolvable``
   — taints, node affinity — cannot be cured by evicting pods).
3. On a node (``SelectVictimsOnNode``): the pods of strictly lower priority are removed; if the
   pod still does not fit (the profile's filters, first failing plugin's reasons) the node is no
   candidate. The removed pods are sorted most important first (priority desc, earlier start
   first), split into PDB-violating and not, and added back one by one (violating first): a pod
   the incoming pod still fits beside stays, otherwise it is a victim.
4. Candidates are searched over the potential nodes starting at an offset and wrapping around
   (``GetOffsetAndNumCandidates``: ``rand.Int31n(len(potential nodes))``) until
   ``max(nodes · minCandidateNodesPercentage / 100, minCandidateNodesAbsolute)`` (at most all of
   them) are found, at least one without PDB violations; those without violations come first.
   The offset is drawn from the caller's seeded generator (a replay's; ``analyzer score`` only
   with ``--seed``, else 0); before 1.20 every potential node was tried from the first.
5. The node (``pickOneNodeForPreemption``), each step keeping the ties of the previous one: fewest
   PDB violations; lowest highest-victim priority; smallest Σ (priority + 2³¹); fewest victims;
   latest earliest start time among the highest-priority victims; the first.

Victims are removed with ``ClusterState.unbind`` and restored with ``bind``, so every filter that
reads the state (resources, pod count, anything a plugin keeps per bound pod) sees the node as
upstream's NodeInfo copy would; the state is unchanged afterwards.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.core.errors import InputError
from analyzer.scheduling.fields import integer, mapping
from analyzer.scheduling.framework import Evaluation, FilterPlugin
from analyzer.scheduling.pdb import DisruptionBudget
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.versions import KubeVersion

NAME = "DefaultPreemption"
UNSCHEDULABLE = "Unschedulable"
UNRESOLVABLE = "UnschedulableAndUnresolvable"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING = "not eligible due to a terminating pod on the nominated node."
PRIORITY_OFFSET = 1 << 31  # MaxInt32 + 1: every victim adds a positive amount to the sum
# Filters whose refusal preemption cannot cure (their status is UnschedulableAndUnresolvable).
UNRESOLVABLE_FILTERS = frozenset(
    {"TaintToleration", "NodeAffinity", "NodeUnschedulable", "NodeName"}
)


@dataclass(frozen=True)
class PreemptionArgs:
    """``DefaultPreemptionArgs`` after v1 defaulting."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    def candidates_wanted(self, nodes: int) -> int:
        """``calculateNumCandidates``: the percentage of ``nodes``, at least the absolute, ≤ nodes."""
        wanted = max(nodes * self.min_candidate_nodes_percentage // 100,
                     self.min_candidate_nodes_absolute)  # fmt: skip
        return min(wanted, nodes)


def parse_preemption_args(raw: Mapping[str, Any] | None, where: str) -> PreemptionArgs:
    """Default and validate ``DefaultPreemptionArgs`` (upstream ``ValidateDefaultPreemptionArgs``)."""
    raw = mapping(raw, where)
    unknown = sorted(
        set(raw)
        - {"minCandidateNodesPercentage", "minCandidateNodesAbsolute", "apiVersion", "kind"}
    )
    if unknown:
        raise InputError(
            f"{where}.{unknown[0]}: unknown field "
            "(valid: minCandidateNodesPercentage, minCandidateNodesAbsolute)"
        )
    pct_field, abs_field = "minCandidateNodesPercentage", "minCandidateNodesAbsolute"
    pct = integer(raw.get(pct_field, 10), f"{where}.{pct_field}")
    absolute = integer(raw.get(abs_field, 100), f"{where}.{abs_field}")
    errors = []
    if not 0 <= pct <= 100:
        errors.append(f"{where}.{pct_field}: Invalid value: {pct}: not in valid range [0, 100]")
    if absolute < 0:
        errors.append(
            f"{where}.{abs_field}: Invalid value: {absolute}: not in valid range [0, inf)"
        )
    if pct == 0 and absolute == 0:
        errors.append(f"{where}: Invalid value: {pct_field} and {abs_field} cannot be both zero")
    if errors:
        raise InputError("; ".join(errors))
    return PreemptionArgs(pct, absolute)


class DefaultPreemption:
    """The PostFilter plugin: holds the args; the algorithm is :func:`preempt`."""

    name = NAME

    def __init__(self, args: PreemptionArgs | None = None, version: KubeVersion | None = None):
        self.args = args if isinstance(args, PreemptionArgs) else PreemptionArgs()
        self.sampling = version is None or version.preemption_sampling

    def offset_and_count(self, potential: int, rng: np.random.Generator | None) -> tuple[int, int]:
        """``GetOffsetAndNumCandidates`` for ``potential`` nodes (see :func:`offset_and_count`)."""
        return offset_and_count(self.args, potential, rng, self.sampling)


def offset_and_count(
    args: PreemptionArgs, potential: int, rng: np.random.Generator | None, sampling: bool = True
) -> tuple[int, int]:
    """Where the candidate search starts among ``potential`` nodes and how many candidates it
    wants: a uniform offset in [0, potential) from ``rng`` (0 without one) and
    ``args.candidates_wanted``; before 1.20 (``sampling`` False) offset 0 and every node."""
    if potential <= 0:
        return 0, 0
    if not sampling:
        return 0, potential
    offset = 0 if rng is None else int(rng.integers(potential))
    return offset, args.candidates_wanted(potential)


def rotated(nodes: Sequence[int], offset: int) -> list[int]:
    """``nodes`` read from ``offset`` on, wrapping around (upstream's ``(offset + i) % n``)."""
    if not nodes:
        return []
    offset %= len(nodes)
    return [*nodes[offset:], *nodes[:offset]]


@dataclass(frozen=True, eq=False)
class BoundPod:
    """A pod running on a node, as preemption sees it."""

    node: int
    name: str
    namespace: str
    priority: int
    demand: PodDemand
    labels: Mapping[str, str] = field(default_factory=dict)
    start_ns: int | None = None  # status.startTime; None sorts as "now" (latest)

    @property
    def key(self) -> str:
        """``namespace/name``."""
        return f"{self.namespace}/{self.name}"

    def importance(self) -> tuple[int, float]:
        """Sort key of ``MoreImportantPod``: higher priority, then earlier start, first."""
        return (-self.priority, float("inf") if self.start_ns is None else self.start_ns)


@dataclass
class Candidate:
    """A node where evicting ``victims`` (most important first) lets the pod fit."""

    node: int
    victims: list[BoundPod]
    pdb_violations: int


@dataclass
class PreemptionResult:
    """The PostFilter outcome: the nominated node (None: none), victims and the candidates."""

    nominated: int | None
    victims: list[BoundPod]
    candidates: list[Candidate]
    code: str  # "Success" | "Unschedulable"
    message: str = ""
    node_reasons: dict[int, list[str]] = field(default_factory=dict)  # why tried nodes failed


def filter_failure(
    filters: Sequence[FilterPlugin], state: ClusterState, pod: PodDemand, node: int, now: float
) -> list[str] | None:
    """The first refusing filter's reasons on ``node`` (None: the pod fits)."""
    for plugin in filters:
        result = plugin.filter(state, pod, now)
        if not result.feasible[node]:
            return result.reasons(node) or [f"{plugin.name} refused the node"]
    return None


def filter_failure_nominated(
    filters: Sequence[FilterPlugin],
    state: ClusterState,
    pod: PodDemand,
    node: int,
    now: float,
    nominated: Sequence[PodDemand] = (),
) -> list[str] | None:
    """``RunFilterPluginsWithNominatedPods`` on ``node``: with ``nominated`` (the pods nominated
    there that count for ``pod``, ``nominated_pods.counted_for``) bound, then, when that passes,
    without them; the first failure's reasons (None: both pass)."""
    if nominated:
        with state.bound_for_now(node, nominated):
            reasons = filter_failure(filters, state, pod, node, now)
        if reasons is not None:
            return reasons
    return filter_failure(filters, state, pod, node, now)


def node_statuses(evaluation: Evaluation, filters: Sequence[FilterPlugin]) -> dict[int, str]:
    """Each refused node's Filter status code, from the first refusing filter (upstream stops
    there): Unresolvable for taints/affinity, Unschedulable for the others."""
    out: dict[int, str] = {}
    for i in range(len(evaluation.node_names)):
        if evaluation.feasible[i]:
            continue
        code = UNSCHEDULABLE
        for plugin, (feasible, _) in zip(filters, evaluation.reason_fns, strict=False):
            if not feasible[i]:
                code = UNRESOLVABLE if plugin.name in UNRESOLVABLE_FILTERS else UNSCHEDULABLE
                break
        out[i] = code
    return out


def split_by_pdb(
    pods: Sequence[BoundPod], budgets: Sequence[DisruptionBudget]
) -> tuple[list[BoundPod], list[BoundPod]]:
    """``filterPodsWithPDBViolation``: (violating, non-violating), input order kept in each.
    A pod without labels matches no budget there (even a selector of only ``DoesNotExist``)."""
    allowed = [b.disruptions_allowed for b in budgets]
    violating: list[BoundPod] = []
    fine: list[BoundPod] = []
    for pod in pods:
        violated = False
        for i, budget in enumerate(budgets if pod.labels else ()):
            if not budget.selects(pod.namespace, pod.labels) or pod.name in budget.disrupted_pods:
                continue
            allowed[i] -= 1
            if allowed[i] < 0:
                violated = True
        (violating if violated else fine).append(pod)
    return violating, fine


def select_victims(
    filters: Sequence[FilterPlugin],
    state: ClusterState,
    pod: PodDemand,
    priority: int,
    node: int,
    on_node: Sequence[BoundPod],
    budgets: Sequence[DisruptionBudget],
    now: float = 0.0,
    nominated: Sequence[PodDemand] = (),
) -> tuple[list[BoundPod] | None, int, list[str]]:
    """``SelectVictimsOnNode``: (victims most important first, PDB violations, failure reasons);
    ``nominated``: the pods nominated to ``node`` its filters count (``filter_failure_nominated``)."""
    potential = [p for p in on_node if p.priority < priority]
    if not potential:
        return None, 0, [NO_VICTIMS]
    for victim in potential:
        state.unbind(node, victim.demand)
    removed = {id(p): p for p in potential}  # unbound now: restored on the way out
    try:
        reasons = filter_failure_nominated(filters, state, pod, node, now, nominated)
        if reasons is not None:
            return None, 0, reasons
        ordered = sorted(potential, key=BoundPod.importance)
        violating, fine = split_by_pdb(ordered, budgets)
        victims: list[BoundPod] = []
        violations = 0
        for group, counts in ((violating, 1), (fine, 0)):
            for candidate in group:
                state.bind(node, candidate.demand)
                del removed[id(candidate)]
                if filter_failure_nominated(filters, state, pod, node, now, nominated) is not None:
                    state.unbind(node, candidate.demand)
                    removed[id(candidate)] = candidate
                    victims.append(candidate)
                    violations += counts
        if violating and fine:
            victims.sort(key=BoundPod.importance)
        return victims, violations, []
    finally:
        for victim in removed.values():
            state.bind(node, victim.demand)


def _earliest_start(victims: Sequence[BoundPod]) -> float:
    """``GetEarliestPodStartTime``: the earliest start among the highest-priority victims."""
    top = max(v.priority for v in victims)
    return min(v.importance()[1] for v in victims if v.priority == top)


def pick_candidate(candidates: Sequence[Candidate]) -> Candidate | None:
    """``pickOneNodeForPreemption``: the criteria in upstream's order, each keeping ties."""
    if not candidates:
        return None
    for candidate in candidates:
        if not candidate.victims:
            return candidate
    steps = (
        lambda c: c.pdb_violations,
        lambda c: c.victims[0].priority,
        lambda c: sum(v.priority + PRIORITY_OFFSET for v in c.victims),
        lambda c: len(c.victims),
        lambda c: -_earliest_start(c.victims),
    )
    remaining = list(candidates)
    for step in steps:
        best = min(step(c) for c in remaining)
        remaining = [c for c in remaining if step(c) == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def dry_run(
    filters: Sequence[FilterPlugin],
    state: ClusterState,
    pod: PodDemand,
    priority: int,
    nodes: Sequence[int],
    pods_by_node: Mapping[int, Sequence[BoundPod]],
    budgets: Sequence[DisruptionBudget],
    args: PreemptionArgs,
    now: float = 0.0,
    wanted: int | None = None,
    nominated: Mapping[int, Sequence[PodDemand]] | None = None,
) -> tuple[list[Candidate], dict[int, list[str]]]:
    """``DryRunPreemption`` over ``nodes`` in order (already rotated to the offset): (candidates,
    failure reasons per node); ``wanted`` defaults to ``args.candidates_wanted``; ``nominated``:
    per node, the nominated pods its filters count."""
    if wanted is None:
        wanted = args.candidates_wanted(len(nodes))
    clean: list[Candidate] = []
    violating: list[Candidate] = []
    failures: dict[int, list[str]] = {}
    for node in nodes:
        victims, violations, reasons = select_victims(
            filters, state, pod, priority, node, pods_by_node.get(node, ()), budgets, now,
            (nominated or {}).get(node, ()),
        )  # fmt: skip
        if victims:
            (violating if violations else clean).append(Candidate(node, victims, violations))
            if clean and len(clean) + len(violating) >= wanted:
                break
            continue
        failures[node] = reasons or [f"expected at least one victim pod on node {node}"]
    return clean + violating, failures


def fit_error(node_count: int, failures: Mapping[int, Sequence[str]]) -> str:
    """``FitError.Error()``: "0/N nodes are available: <count reason>, …." (sorted strings);
    nodes without a status count as "Preemption is not helpful for scheduling"."""
    histogram: Counter[str] = Counter()
    for reasons in failures.values():
        histogram.update(reasons)
    absent = node_count - len(failures)
    if absent:
        histogram[NOT_HELPFUL] += absent
    parts = sorted(f"{count} {reason}" for reason, count in histogram.items())
    return f"0/{node_count} nodes are available: {', '.join(parts)}."


def preempt(
    filters: Sequence[FilterPlugin],
    state: ClusterState,
    pod: PodDemand,
    priority: int,
    policy: str,
    statuses: Mapping[int, str],
    bound: Iterable[BoundPod],
    budgets: Sequence[DisruptionBudget] = (),
    args: PreemptionArgs | None = None,
    now: float = 0.0,
    rng: np.random.Generator | None = None,
    sampling: bool = True,
    nominated: Mapping[int, Sequence[PodDemand]] | None = None,
) -> PreemptionResult:
    """``PostFilter``: try the ``Unschedulable`` nodes of ``statuses`` from an offset drawn
    from ``rng`` (0 without one; ``sampling`` False: pre-1.20, every node) and nominate one."""
    if policy == "Never":
        return PreemptionResult(None, [], [], UNSCHEDULABLE, f"preemption: {NEVER}")
    pods_by_node: dict[int, list[BoundPod]] = {}
    for p in bound:
        pods_by_node.setdefault(p.node, []).append(p)
    nodes = [i for i in range(state.node_count) if statuses.get(i) == UNSCHEDULABLE]
    args = args or PreemptionArgs()
    offset, wanted = offset_and_count(args, len(nodes), rng, sampling)
    candidates, failures = dry_run(
        filters, state, pod, priority, rotated(nodes, offset), pods_by_node, budgets, args, now,
        wanted, nominated,
    )  # fmt: skip
    chosen = pick_candidate(candidates)
    if chosen is None:
        message = "preemption: " + fit_error(state.node_count, failures)
        return PreemptionResult(None, [], candidates, UNSCHEDULABLE, message, failures)
    return PreemptionResult(chosen.node, chosen.victims, candidates, "Success", "", failures)


def result_json(result: PreemptionResult, node_names: Sequence[str]) -> dict[str, Any]:
    """The ``preemption:`` block of ``analyzer score``."""
    out: dict[str, Any] = {
        "nominatedNode": None if result.nominated is None else node_names[result.nominated],
        "victims": [v.key for v in result.victims],
        "candidates": [
            {
                "node": node_names[c.node],
                "victims": [v.key for v in c.victims],
                "numPDBViolations": c.pdb_violations,
            }
            for c in result.candidates
        ],
        "status": result.code,
    }
    if result.message:
        out["message"] = result.message
    return out
