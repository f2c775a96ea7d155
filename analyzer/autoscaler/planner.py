"""One scale-down pass of cluster-autoscaler: ``Planner.categorizeNodes`` and ``NodesToDelete``
(core/scaledown/planner/planner.go), ``unneeded.Nodes.RemovableAt`` (core/scaledown/unneeded/
nodes.go) and ``ScaleDownBudgetProcessor.CropNodes`` (core/scaledown/budgets/budgets.go).

1. every node: utilisation and eligibility (``eligibility.check``); a node whose group is at or
   below its minSize is no candidate (``NodeGroupMinSizeReached``), never simulated and still a
   destination (``PreFilteringScaleDownNodeProcessor.GetScaleDownCandidates``, processors/nodes/
   pre_filtering_processor.go, which runs before the planner);
2. the candidates, empty ones first (``EmptySorting``: no pod to move, judged without PDBs or
   controllers; from CA 1.36 those with a pod left to finish after the other empty ones),
   each simulated in turn (``removal``); a removable node stops being a destination and its
   moved pods take their PDBs' disruptions (``RemainingPdbTracker.RemovePods``);
3. the unneeded nodes are assumed unneeded for ``scale-down-unneeded-time`` already (one instant);
   empty ones first, then those that need a drain, each refused with ``NodeGroupMinSizeReached``
   when its group, less its nodes CA is deleting now (``verifyMinSize``: ``DeletionsCount``; here
   its nodes with a fresh ToBeDeleted taint), would fall to its minimum (sizes counted down as
   nodes are accepted); drained
   nodes whose PDBs do not allow all their pods at once go last (``sortByRisk``);
3b. (CA 1.36+) an admitted node with a pod left to finish (``safe-to-evict: on-completion``)
   is not deleted (``BlockedByOnCompletionPod``);
4. the budgets: empty nodes up to ``max-scale-down-parallelism`` (``max-empty-bulk-delete``), then
   drained nodes up to ``max-drain-parallelism`` within what is left, both grouped by node group
   in first-seen order, each budget less the deletions still in progress
   (``NodeDeletionTracker.DeletionsInProgress``: every one counts against the parallelism, a
   drained one against the drain parallelism too). ``removed`` is that list, in that order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from analyzer.autoscaler.cluster import Cluster
from analyzer.autoscaler.drainability import PdbTracker, Status, pods_to_move
from analyzer.autoscaler.eligibility import Eligibility, check, rules_for
from analyzer.autoscaler.options import CAOptions
from analyzer.autoscaler.pods import CAPod
from analyzer.autoscaler.removal import RemovalSimulator
from analyzer.autoscaler.removal_snapshot import rules_for as snapshot_rules
from analyzer.autoscaler.removal_state import Outcome
from analyzer.scheduling.framework import Profile


@dataclass
class NodeDecision:
    """Everything the output says about one node."""

    name: str
    eligibility: Eligibility
    candidate: bool
    outcome: Outcome | None = None
    reason: str = ""  # the unremovable reason ("" when removable)

    @property
    def removable(self) -> bool:
        """Passed every check of the pass."""
        return self.candidate and not self.reason


@dataclass
class Plan:
    """The pass: per-node decisions (scenario order) and the nodes deleted now, in order."""

    nodes: list[NodeDecision]
    removed: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)
    drained: list[str] = field(default_factory=list)


def empty_rank(cluster: Cluster, name: str, options: CAOptions, now: float) -> int:
    """``EmptySorting.ScaleDownEarlierThan`` as a sort key: 0 for an empty node (no pod to
    move, judged without PDBs or controllers), 1 for an empty node with a pod left to finish
    (CA 1.36+ ``safe-to-evict: on-completion``), 2 for the others."""
    found = pods_to_move(cluster.pods.get(name, []), options, _NO_BUDGETS, now, first=True)
    if found.blocking is not None or found.pods:
        return 2
    return 1 if found.on_completion else 0


def has_no_pod_to_move(
    pods: Sequence[CAPod],
    options: CAOptions,
    now: float,
    verdicts: dict[int, tuple[CAPod, Status]] | None = None,
) -> bool:
    """``is_empty`` of a node with ``pods``. ``verdicts``: a caller's kept drain verdicts
    (``drainability.pods_to_move``; the same ``options``). The walk stops at the first pod that
    blocks or is to be moved: either answers False, whatever the pods after it."""
    found = pods_to_move(pods, options, _NO_BUDGETS, now, None, verdicts, first=True)
    return found.blocking is None and not found.pods


# the budgets ``has_no_pod_to_move`` judges with: none (one tracker, never changed: with no
# budget nothing is matched, counted or removed)
_NO_BUDGETS = PdbTracker([])


def _by_group(names: list[str], cluster: Cluster) -> list[list[str]]:
    order: dict[str, list[str]] = {}
    for name in names:
        order.setdefault(cluster.groups[name].name, []).append(name)
    return list(order.values())


def _crop(groups: list[list[str]], budget: int) -> list[str]:
    """``cropIndividualNodes``: whole groups while the budget lasts, the last one cut."""
    out: list[str] = []
    for nodes in groups:
        if budget < 1:
            break
        taken = nodes[:budget]
        out.extend(taken)
        budget -= len(taken)
    return out


def plan(
    cluster: Cluster,
    profile: Profile,
    options: CAOptions,
    now: float,
    in_progress: tuple[int, int] = (0, 0),
) -> Plan:
    """The scale-down decision at ``now``, with ``in_progress`` (empty, drained) deletions not
    yet done (``select``)."""
    decisions = []
    rules = rules_for(profile, options.rules_version)
    for node in cluster.nodes:
        pods = cluster.pods.get(node.name, [])
        elig = check(node, pods, cluster.groups.get(node.name), options, now, rules)
        decisions.append(NodeDecision(node.name, elig, not elig.reason, reason=elig.reason))
    by_name = {d.name: d for d in decisions}
    sizes = cluster.group_sizes()
    for d in decisions:
        group = cluster.groups.get(d.name)
        if d.candidate and group is not None and sizes[group.name] <= group.min_size:
            d.candidate, d.reason = False, "NodeGroupMinSizeReached"
    candidates = [d.name for d in decisions if d.candidate]
    empty_first = sorted(candidates, key=lambda n: empty_rank(cluster, n, options, now))
    pdbs = PdbTracker(cluster.budgets)
    simulator = RemovalSimulator(cluster, profile, options, now)
    simulator.snapshot = snapshot_rules(options.rules_version)
    unneeded: list[Outcome] = []
    for name in empty_first:
        outcome = simulator.simulate(name, pdbs)
        by_name[name].outcome = outcome
        if not outcome.removable:
            by_name[name].reason = outcome.reason
            continue
        simulator.drop(name)
        pdbs.remove(outcome.moved)
        unneeded.append(outcome)
    deleting: dict[str, int] = {}
    for node in cluster.nodes:
        group = cluster.groups.get(node.name)
        if group is not None and node.being_deleted(now):
            deleting[group.name] = deleting.get(group.name, 0) + 1
    held: list[str] = []
    empty_now, drain_now, refused = select(unneeded, cluster, options, in_progress, deleting, held)
    for name in refused:
        by_name[name].reason = "NodeGroupMinSizeReached"
    for name in held:
        by_name[name].reason = "BlockedByOnCompletionPod"
    return Plan(decisions, empty_now + drain_now, empty_now, drain_now)


def admit(
    unneeded: Sequence[Outcome], cluster: Cluster, deleting: dict[str, int] | None = None
) -> tuple[list[str], list[Outcome], list[str]]:
    """Step 3 of the pass over nodes unneeded long enough: (empty nodes, drained nodes'
    outcomes, nodes refused as ``NodeGroupMinSizeReached``), before the budgets. ``deleting``:
    per group, its deletions in progress (``DeletionsCount``; none by default)."""
    sizes = cluster.group_sizes()
    for name, count in (deleting or {}).items():
        sizes[name] -= count
    empty: list[str] = []
    drain: list[Outcome] = []
    refused: list[str] = []
    for outcome in [o for o in unneeded if not o.moved] + [o for o in unneeded if o.moved]:
        group = cluster.groups[outcome.node]
        if sizes[group.name] <= group.min_size:
            refused.append(outcome.node)
            continue
        sizes[group.name] -= 1
        if outcome.moved:
            drain.append(outcome)
        else:
            empty.append(outcome.node)
    return empty, drain, refused


def select(
    unneeded: list[Outcome],
    cluster: Cluster,
    options: CAOptions,
    in_progress: tuple[int, int] = (0, 0),
    deleting: dict[str, int] | None = None,
    held: list[str] | None = None,
) -> tuple[list[str], list[str], list[str]]:
    """Steps 3 (``admit``) and 4 of the pass over nodes unneeded long enough: (empty nodes
    deleted now, drained nodes deleted now, nodes refused as ``NodeGroupMinSizeReached``).
    ``in_progress``: the (empty, drained) deletions started earlier and not yet done
    (``CropNodes``: the parallelism less both, the drain parallelism less the drained ones; a
    budget below 1 takes no node); ``deleting``: ``admit``'s. An admitted node with pods left
    to finish (CA 1.36+) is not deleted (``NodesToDelete``: ``BlockedByOnCompletionPod``,
    after ``RemovableAt``, so it counted against its group's minimum, and before the
    budgets): it is appended to ``held``, if given."""
    empty, drain, refused = admit(unneeded, cluster, deleting)
    waiting = {o.node for o in unneeded if o.on_completion}
    if waiting:
        admitted = [*empty, *(o.node for o in drain)]
        if held is not None:
            held.extend(name for name in admitted if name in waiting)
        empty = [name for name in empty if name not in waiting]
        drain = [o for o in drain if o.node not in waiting]
    drain_order = [o.node for o in drain if not o.risky] + [o.node for o in drain if o.risky]
    empty_going, drain_going = in_progress
    budget = options.max_scale_down_parallelism - empty_going - drain_going
    empty_now = _crop(_by_group(empty, cluster), budget)
    drain_budget = min(budget - len(empty_now), options.max_drain_parallelism - drain_going)
    drain_now = _crop(_by_group(drain_order, cluster), drain_budget)
    return empty_now, drain_now, refused
