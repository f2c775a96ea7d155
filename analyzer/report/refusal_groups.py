"""Nodes that cannot go alone, grouped by why: one line per group instead of one message per node.

The drain dry run (``analyzer.whatif.drain``) refuses a node when a pod of it fits nowhere else,
with kube-scheduler's full message per workload ("1 pod of shop/api-7: 0/145 nodes are available:
100 Insufficient cpu, 30 node(s) had untolerated taint {…}, …"). The same 240-character message
on 27 rows hides the answer, so the pages group a pool's blocked nodes by the *kinds* of filter
reason that refused their pods (the reasons without their node counts, e.g. "insufficient cpu
elsewhere, its topology spread"): every node is in exactly one group, so the groups' counts add
up to the pool's blocked nodes, and each group opens to its nodes and the workloads they hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from analyzer.core.text import escaped

# Upstream filter reasons (kube-scheduler's FitError wording) as a reader says them; the
# message's node counts are dropped because they differ by a node or two between the nodes of
# one group (which node was drained is itself one of the nodes counted).
_SHORT = (
    ("didn't match Pod's node affinity/selector", "its node affinity/selector"),
    ("didn't match pod affinity rules", "its pod affinity"),
    ("didn't match pod anti-affinity rules", "its pod anti-affinity"),
    ("didn't satisfy existing pods anti-affinity rules", "other pods' anti-affinity"),
    ("didn't match pod topology spread constraints", "its topology spread"),
    ("didn't have free ports", "its host ports"),
    ("were unschedulable", "unschedulable nodes"),
    ("had untolerated taint", "taints it does not tolerate"),
)


def reason_kind(reason: str) -> str:
    """A filter reason without its node count, in a reader's words ("Insufficient cpu" →
    "insufficient cpu elsewhere")."""
    if reason.startswith("Insufficient "):
        return f"insufficient {reason.removeprefix('Insufficient ')} elsewhere"
    for marker, short in _SHORT:
        if marker in reason:
            return short
    return escaped(reason.removeprefix("node(s) "))


def _rank(kind: str) -> tuple[int, str]:
    """The order a group names its kinds in: what the pod lacks first, then its own
    constraints, the nodes' taints last (they mostly say the other pools are not for it)."""
    if kind.startswith("insufficient "):
        return (0, kind)
    shorts = [short for _, short in _SHORT]
    return (1 + shorts.index(kind), kind) if kind in shorts else (len(shorts) + 1, kind)


def _kinds(blocked: Mapping[str, Any]) -> tuple[str, ...]:
    """The node's reason kinds as a set in a fixed order (two nodes refused for the same kinds
    in another order are one group); a node stored before the drain kept structured refusals
    (no ``refusals``) is grouped by its full messages."""
    refusals = blocked.get("refusals")
    if refusals is None:
        return tuple(str(r) for r in blocked["reasons"])
    kinds = {reason_kind(str(reason)) for refusal in refusals for reason in refusal["reasons"]}
    return tuple(sorted(kinds, key=_rank))


@dataclass
class RefusalGroup:
    """The pool's blocked nodes refused for the same kinds of reason."""

    reasons: tuple[str, ...]
    nodes: list[dict[str, Any]] = field(default_factory=list)  # {node, workloads, reasons}
    workloads: dict[str, None] = field(default_factory=dict)  # first-seen order

    @property
    def count(self) -> int:
        """How many nodes the group holds."""
        return len(self.nodes)

    def summary(self, shown: int = 2) -> str:
        """ "13 nodes: insufficient cpu elsewhere, its topology spread (pods of shop/api-7 and
        3 more workloads)"."""
        names = list(self.workloads)
        who = ", ".join(names[:shown])
        if len(names) > shown:
            more = len(names) - shown
            who += f" and {more} more workload{'s' if more != 1 else ''}"
        plural = "node" if self.count == 1 else "nodes"
        because = ", ".join(self.reasons) if self.reasons else "no reason recorded"
        return f"{self.count} {plural}: {because}" + (f" (pods of {who})" if who else "")


def group_blocked(blocked_nodes: list[Mapping[str, Any]]) -> list[RefusalGroup]:
    """One pool's blocked nodes in groups, the largest first (ties: first seen); a group lists
    its nodes in the order given and the workloads they hold in first-seen order."""
    groups: dict[tuple[str, ...], RefusalGroup] = {}
    for b in blocked_nodes:
        kinds = _kinds(b)
        group = groups.setdefault(kinds, RefusalGroup(kinds))
        workloads = [escaped(r["workload"]) for r in b.get("refusals") or []]
        for w in workloads:
            group.workloads.setdefault(w, None)
        group.nodes.append(
            {"node": escaped(b["node"]), "workloads": ", ".join(workloads), "reasons": b["reasons"]}
        )
    order = list(groups)
    return sorted(groups.values(), key=lambda g: (-g.count, order.index(g.reasons)))


def blocked_groups(payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per pool with blocked nodes: ``pool``, ``total`` and its ``groups`` (largest first), for
    the monthly page's "cannot go alone" list."""
    out = []
    for pool in payload["pools"]:
        groups = group_blocked(pool.get("blocked_nodes") or [])
        if groups:
            out.append(
                {"pool": pool["name"], "total": sum(g.count for g in groups), "groups": groups}
            )
    return out
