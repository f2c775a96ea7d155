"""What the replay's node autoscaler did: node presence, scale-ups, removals, evictions, reasons.

Times are int64 nanoseconds as everywhere in the replay; slots index the autoscaled input's nodes
(``analyzer.replay.autoscale_setup.with_node_groups``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

NEVER = (1 << 63) - 1


@dataclass
class AutoscalerRecord:
    """The autoscaler's actions during one replay (``ReplayResult.autoscaler``)."""

    kind: str  # "cluster-autoscaler"
    groups: list[str]
    of_node: list[int]  # slot -> group index
    spare_from: int  # slots from here on were provisioned by the autoscaler
    # per slot, the [start, end) intervals it existed (end NEVER: to the end of the data)
    presence: dict[int, list[list[int]]] = field(default_factory=dict)
    scale_ups: list[tuple[int, int, int]] = field(default_factory=list)  # time, group, nodes
    added: list[tuple[int, int]] = field(default_factory=list)  # ready time, slot
    removed: list[tuple[int, int, bool]] = field(default_factory=list)  # time, slot, drained
    evictions: list[tuple[int, int]] = field(default_factory=list)  # time, pod
    # at each full scale-down pass: time and the number of present nodes per unremovable reason
    reasons: list[tuple[int, dict[str, int]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # removal simulations run, and taken again from an earlier pass (exact reuse)
    simulated: int = 0
    reused: int = 0
    skipped: int = 0  # scale-down passes not run: the same answer as the last (exact)
    passes: int = 0  # scale-down passes run
    hinted: int = 0  # pods a simulation placed on their hinted node (CA's scheduling hints)
    reused_by_hints: int = 0  # of ``reused``: answers placed by hints alone, checked again
    reused_over_epochs: int = 0  # of ``reused``: answers kept over a join or removal (lasting)
    # of ``reused``: answers placed by hints alone taken again without a check, nothing they
    # read having changed since the last pass (``autoscale_reuse.SimulationMemo.unread``)
    reused_unread: int = 0
    # Karpenter: commands abandoned by their validation 15 s after they were made
    abandoned: int = 0

    def joined(self, slot: int, now: int) -> None:
        """``slot`` exists from ``now``."""
        self.presence.setdefault(slot, []).append([now, NEVER])

    def left(self, slot: int, now: int) -> None:
        """``slot`` is gone from ``now``."""
        self.presence[slot][-1][1] = now
