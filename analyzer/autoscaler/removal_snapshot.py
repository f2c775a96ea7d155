"""What cluster-autoscaler's snapshot holds of a node while, and after, its removal is simulated.

PodTopologySpread counts the domains of the nodes in the snapshot, so whether a drained node is
still there changes where its pods may go (simulator/cluster.go ``findPlaceFor``):

- up to 1.32 the candidate stays in the snapshot with no pods, and so does a node found
  removable earlier in the pass: each counts as a domain holding 0 pods;
- 1.33–1.35 take the candidate out of the snapshot while its pods are placed (``RemoveNodeInfo``;
  kept out when it is removable, the fork committed);
- from 1.36 the candidate is replaced by a pod-less copy tainted
  ``ToBeDeletedByClusterAutoscaler:NoSchedule`` (``replaceWithTaintedGhostNode``: a domain under
  the default ``nodeTaintsPolicy: Ignore``, none under ``Honor`` for a pod not tolerating the
  taint), removed once the simulation succeeds.

``SnapshotRules`` says which; ``enter`` and ``leave`` apply them around one simulation on the
scheduler state (``state.present`` marks the nodes in the snapshot). ``analyzer autoscale`` uses
them; the replay's passes do not (docs/autoscaling.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analyzer.autoscaler.release import CANDIDATE_GONE, GHOST, Release, has
from analyzer.scheduling.constraint_types import Taint
from analyzer.scheduling.node_taints import set_node_taints
from analyzer.scheduling.state import ClusterState

TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler"


@dataclass(frozen=True)
class SnapshotRules:
    """Which of the snapshot rules (module docstring) a cluster-autoscaler version follows."""

    ghost: bool = False  # 1.36+: the candidate a tainted pod-less copy while simulated
    candidate_gone: bool = False  # 1.33–1.35: the candidate out of the snapshot while simulated
    # 1.33+: a removable node out of the snapshot for later candidates (``candidate_gone``
    # always comes with it: its fork is committed)
    gone_after: bool = False

    @property
    def active(self) -> bool:
        """Any rule to apply (else the state is left as it is: up to 1.32)."""
        return self.ghost or self.candidate_gone or self.gone_after


NO_RULES = SnapshotRules()


def rules_for(release: Release) -> SnapshotRules:
    """The rules of cluster-autoscaler ``release`` (``analyzer.autoscaler.release``: the ghost
    from 1.36 and in 1.33.5, 1.34.4, 1.35.1; the candidate out of the snapshot from 1.33 and
    in 1.32.3)."""
    if has(release, GHOST):
        return SnapshotRules(ghost=True, gone_after=True)
    if has(release, CANDIDATE_GONE):
        return SnapshotRules(candidate_gone=True, gone_after=True)
    return NO_RULES


def enter(
    state: ClusterState, node: int, rules: SnapshotRules, now: float
) -> tuple[Taint, ...] | None:
    """Before ``node``'s pods are placed: the candidate out of the snapshot, or its ghost taint.
    Returns the node's taints before (to put back), None when they were left alone."""
    if state.present is None:
        state.present = np.ones(state.node_count, dtype=bool)
    if rules.candidate_gone:
        state.present[node] = False
        return None
    if rules.ghost:
        before = tuple(state.node_taints[node]) if state.node_taints else ()
        ghost = Taint(TO_BE_DELETED, str(int(now)), "NoSchedule")
        set_node_taints(state, [node], [(*before, ghost)])
        return before
    return None


def leave(
    state: ClusterState,
    node: int,
    rules: SnapshotRules,
    before: tuple[Taint, ...] | None,
    removable: bool,
) -> None:
    """After the simulation: the ghost's taint back off; a removable node out of the snapshot
    (1.33+), an unremovable one back in."""
    assert state.present is not None
    if before is not None:
        set_node_taints(state, [node], [before])
    state.present[node] = not (removable and rules.gone_after)
