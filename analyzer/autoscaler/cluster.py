"""The instant cluster-autoscaler looks at: nodes, their pods, node groups, budgets, controllers.

``Cluster`` is what ``analyzer autoscale`` builds from a scenario and what the replay (issue 25
item 2) would build from its own state at each autoscaler tick: plain data, no I/O.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from analyzer.autoscaler.drainability import Controllers
from analyzer.autoscaler.options import CAOptions
from analyzer.autoscaler.pods import CAPod
from analyzer.scheduling.constraint_types import Taint
from analyzer.scheduling.pdb import DisruptionBudget

SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"
MAX_NODE_DELETION_SECONDS = 300  # actuation.MaxCloudProviderNodeDeletionTime


@dataclass(frozen=True)
class CANode:
    """A node as the autoscaler reads it."""

    name: str
    allocatable: Mapping[str, int]
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False  # spec.unschedulable: never a destination
    # status.conditions' Ready status ("True", "False", "Unknown"; None: no such condition given)
    ready: str | None = None
    # ``kube_util.GetNodeReadiness``' answer where the scenario gives the node's conditions:
    # Ready True, neither DiskPressure nor NetworkUnavailable True, no not-ready taint (a node
    # without a Ready condition is not ready); None: not given (read as ready)
    readiness: bool | None = None
    deleting: bool = False  # metadata.deletionTimestamp is set

    @property
    def scale_down_disabled(self) -> bool:
        """``eligibility.HasNoScaleDownAnnotation``."""
        return self.annotations.get(SCALE_DOWN_DISABLED) == "true"

    def being_deleted(self, now: float) -> bool:
        """``actuation.IsNodeBeingDeleted``: CA's ToBeDeleted taint, whose value is the unix
        second it was added, is younger than ``MaxCloudProviderNodeDeletionTime`` (5 min); a
        value that is not a number is no deletion time (``taints.GetToBeDeletedTime``)."""
        for taint in self.taints:
            if taint.key == TO_BE_DELETED_TAINT:
                since = go_int(taint.value)
                if since is not None:
                    return now - since < MAX_NODE_DELETION_SECONDS
        return False


def go_int(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: an optional sign and ASCII digits within int64;
    None where it fails."""
    if not _GO_INT.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


_GO_INT = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class NodeGroup:
    """A node group: its size bounds and per-group options (``NodeGroupAutoscalingOptions``)."""

    name: str
    min_size: int = 0
    max_size: int = 1_000_000
    options: CAOptions | None = None  # per-group thresholds; None: the global options


@dataclass
class Cluster:
    """Nodes (in the order CA lists them), each node's pods, groups, PDBs and controllers."""

    nodes: list[CANode]
    pods: dict[str, list[CAPod]]  # node name -> its pods, in the order they were bound
    groups: dict[str, NodeGroup]  # node name -> its group (absent: not autoscaled)
    budgets: list[DisruptionBudget] = field(default_factory=list)
    controllers: Controllers | None = None  # None: no listers (no ``objects:``)
    # ``group_sizes`` as a caller that keeps ``groups`` between calls counted it (None: count)
    sizes: dict[str, int] | None = None

    def group_sizes(self) -> dict[str, int]:
        """Each group's current size: the nodes that belong to it."""
        if self.sizes is not None:
            return dict(self.sizes)
        return dict(Counter(group.name for group in self.groups.values()))
