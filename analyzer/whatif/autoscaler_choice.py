"""``--autoscaler auto``: the node autoscaler a recorded cluster's data suggests, and why.

The evidence, strongest first (the first that holds decides):

1. **Karpenter**: a node labelled ``karpenter.sh/nodepool``, ``karpenter.sh/capacity-type`` or
   ``karpenter.sh/provisioner-name`` (Karpenter labels every node it launches; the last is its
   pre-v1 name): replayed with Karpenter (the comparison, the search's finalists and the
   monthly scenarios alike), whether or not nodes came and went during the data (a Karpenter
   cluster whose nodes stayed is still one whose nodes Karpenter would consolidate).
2. **cluster-autoscaler's own marks**: a node tainted ``ToBeDeletedByClusterAutoscaler`` or
   ``DeletionCandidateOfClusterAutoscaler`` (in the nodes table or the node-state intervals), or
   annotated ``cluster-autoscaler.kubernetes.io/...``: only CA writes these.
3. **node groups that churn**: nodes labelled with a managed node group
   (``eks.amazonaws.com/nodegroup``, ``alpha.eksctl.io/nodegroup-name``,
   ``cloud.google.com/gke-nodepool``, ``kubernetes.azure.com/agentpool``) and nodes that joined
   after the data's start or left before its end: a cloud node group scaled by CA.
4. Otherwise **none**: the nodes stayed as they were (or came and went with nothing naming an
   autoscaler), so the replay keeps the data's nodes.

A node "joined" when first seen more than one step after the data's start, "left" when last seen
more than one step before its end (a step is the collect's resolution: closer is the same).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analyzer.core.snapshot import Snapshot
from analyzer.core.text import escaped

KARPENTER_LABELS = (
    "karpenter.sh/nodepool",
    "karpenter.sh/capacity-type",
    "karpenter.sh/provisioner-name",
)
CA_TAINTS = ("ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler")
CA_ANNOTATION_PREFIX = "cluster-autoscaler.kubernetes.io/"
NODE_GROUP_LABELS = (
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
)


@dataclass(frozen=True)
class AutoscalerChoice:
    """What ``--autoscaler`` asked, the autoscaler replayed and the one line saying why."""

    asked: str
    chosen: str
    why: str

    def to_dict(self) -> dict[str, str]:
        """JSON-ready."""
        return {"asked": self.asked, "chosen": self.chosen, "why": self.why}


def _column(nodes: pd.DataFrame, name: str, empty: str) -> list[str]:
    """The nodes' JSON cells of ``name`` (``empty`` for each when the table has no such column)."""
    if name not in nodes.columns:
        return [empty] * len(nodes)
    return [str(v) for v in nodes[name].fillna(empty).tolist()]


def _objects(cells: list[str]) -> list[dict[str, Any]]:
    out = []
    for raw in cells:
        try:
            value = json.loads(raw) if raw else {}
        except (ValueError, RecursionError):  # an unreadable cell is no evidence either way
            value = {}
        out.append(value if isinstance(value, dict) else {})
    return out


def _taint_keys(nodes: pd.DataFrame, snapshot: Snapshot) -> dict[str, str]:
    """node -> the first CA taint key it carried (the nodes table, then the intervals)."""
    seen: dict[str, str] = {}
    for node, raw in zip(nodes["node"].tolist(), _column(nodes, "taints", "[]"), strict=True):
        try:
            taints = json.loads(raw) if raw else []
        except (ValueError, RecursionError):
            taints = []
        for t in taints if isinstance(taints, list) else []:
            if isinstance(t, dict) and t.get("key") in CA_TAINTS:
                seen.setdefault(str(node), str(t["key"]))
    state = snapshot.node_state
    if state is not None and len(state):
        marked = state[state["key"].isin(CA_TAINTS)]
        for node, key in zip(marked["node"].tolist(), marked["key"].tolist(), strict=True):
            seen.setdefault(str(node), str(key))
    return seen


def _churn(nodes: pd.DataFrame, snapshot: Snapshot) -> tuple[int, int]:
    """(nodes that joined after the start, nodes that left before the end), one step's slack."""
    step = pd.Timedelta(seconds=snapshot.meta.step_seconds)
    start, end = pd.Timestamp(snapshot.meta.start), pd.Timestamp(snapshot.meta.end)
    joined = int((nodes["first_seen"] > start + step).sum())
    left = int((nodes["last_seen"] < end - step).sum())
    return joined, left


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _first(names: list[str]) -> str:
    return escaped(sorted(names)[0])


def choose_autoscaler(snapshot: Snapshot) -> AutoscalerChoice:
    """The autoscaler ``snapshot``'s data suggests (module docstring), with its one line."""
    nodes = snapshot.nodes
    labels = _objects(_column(nodes, "labels", "{}"))
    names = [str(n) for n in nodes["node"].tolist()]
    joined, left = _churn(nodes, snapshot)
    churn = joined + left > 0
    moved = f"{_plural(joined, 'node')} joined and {left} left during the data"
    karpenter = [
        n for n, lab in zip(names, labels, strict=True) if set(lab) & set(KARPENTER_LABELS)
    ]
    if karpenter:
        key = next(k for k in KARPENTER_LABELS if any(k in lab for lab in labels))
        return AutoscalerChoice(
            "auto",
            "karpenter",
            f"--autoscaler auto: karpenter ({_plural(len(karpenter), 'node')} labelled {key}, "
            f"e.g. {_first(karpenter)}; {moved}), so replayed with Karpenter driving the nodes",
        )
    tainted = _taint_keys(nodes, snapshot)
    if tainted:
        node = sorted(tainted)[0]
        return AutoscalerChoice(
            "auto",
            "cluster-autoscaler",
            f"--autoscaler auto: cluster-autoscaler ({_plural(len(tainted), 'node')} carried its "
            f"taint {tainted[node]}, e.g. {escaped(node)})",
        )
    annotations = _objects(_column(nodes, "annotations", "{}"))
    annotated = [
        n
        for n, ann in zip(names, annotations, strict=True)
        if any(str(k).startswith(CA_ANNOTATION_PREFIX) for k in ann)
    ]
    if annotated:
        return AutoscalerChoice(
            "auto",
            "cluster-autoscaler",
            f"--autoscaler auto: cluster-autoscaler ({_plural(len(annotated), 'node')} annotated "
            f"{CA_ANNOTATION_PREFIX}..., e.g. {_first(annotated)})",
        )
    grouped = [n for n, lab in zip(names, labels, strict=True) if set(lab) & set(NODE_GROUP_LABELS)]
    if grouped and churn:
        key = next(k for k in NODE_GROUP_LABELS if any(k in lab for lab in labels))
        return AutoscalerChoice(
            "auto",
            "cluster-autoscaler",
            f"--autoscaler auto: cluster-autoscaler ({_plural(len(grouped), 'node')} in node "
            f"groups labelled {key}; {moved})",
        )
    why = (
        f"{moved}, but no node label, taint or annotation names an autoscaler"
        if churn
        else "no node joined or left during the data"
    )
    return AutoscalerChoice(
        "auto", "none", f"--autoscaler auto: none ({why}), so the data's nodes stay as observed"
    )


def resolve_autoscaler(asked: str, snapshot: Snapshot) -> AutoscalerChoice | None:
    """``auto`` resolved against ``snapshot``; None when ``asked`` names the autoscaler itself."""
    return choose_autoscaler(snapshot) if asked == "auto" else None
