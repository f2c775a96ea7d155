"""The what-if notes about the data itself (``analyzer.whatif.notes`` gathers every note): where
the pods' scheduling fields came from (observed in Prometheus, read from Kubernetes objects with
``collect --kube-objects``, inferred: ``meta.json`` ``extra.field_sources``), and the gaps that
change what the replay can say (pods that ran without usage samples, pods never bound). With the
counting helpers the other notes share.
"""

from __future__ import annotations

import pandas as pd

from analyzer.core.pod_intervals import pinned_pods
from analyzer.core.snapshot import Snapshot
from analyzer.replay.podrows import sampled_uids


def non_empty(column: pd.Series) -> int:
    """Rows whose JSON text is a non-empty list or object."""
    text = column.fillna("").astype(str).str.strip()
    return int((~text.isin(["", "[]", "{}", "null"])).sum())


def counted(count: int, one: str, many: str) -> str:
    """``count`` with its noun: "1 pod", "2,000 pods"."""
    return f"{count:,} {one if count == 1 else many}"


# pods.field_sources values in the words of the notes
_SOURCE_WORDS = {
    "metrics": "observed in Prometheus",
    "objects": "read from Kubernetes objects",
    "inferred": "inferred",
    "none": "unknown",
}
_FIELD_WORDS = {
    "tolerations": "tolerations",
    "node_selector": "nodeSelectors",
    "affinity": "affinity",
    "topology_spread": "topology spread constraints",
    "labels": "pod labels",
    "priority": "priorities",
    "container_images": "container images",
    "host_ports": "host ports",
}


def field_source_notes(snapshot: Snapshot) -> list[str]:
    """Which scheduling fields of the pods were observed, read from objects or inferred."""
    pods = snapshot.pods
    spread = non_empty(pods["topology_spread"]) if "topology_spread" in pods.columns else 0
    affinity = non_empty(pods["affinity"]) if "affinity" in pods.columns else 0
    sources = snapshot.meta.extra.get("field_sources")
    pod_sources = sources.get("pods") if isinstance(sources, dict) else None
    if not isinstance(pod_sources, dict):
        if snapshot.meta.source.startswith("synthetic:"):
            return [
                "Pod fields are the generator's ground truth: "
                f"{counted(affinity, 'pod has', 'pods have')} affinity terms and "
                f"{counted(spread, 'pod has', 'pods have')} topology spread constraints."
            ]
        return [
            "The snapshot was collected without Kubernetes objects (collect --kube-objects): pod "
            "affinity and topology spread constraints are unknown; tolerations and nodeSelectors "
            "are what kube-state-metrics exported, priorities come from PriorityClass names "
            "(built-in values and --priority-class)."
        ]
    parts = []
    for name, words in _FIELD_WORDS.items():
        counts = pod_sources.get(name)
        if not isinstance(counts, dict) or not counts:
            continue
        ordered = sorted(counts.items(), key=lambda kv: (-int(kv[1]), str(kv[0])))
        said = ", ".join(f"{int(n):,} {_SOURCE_WORDS.get(str(k), str(k))}" for k, n in ordered)
        parts.append(f"{words}: {said}")
    notes = [
        f"Where the {len(pods):,} pods' scheduling fields come from (pods): "
        + "; ".join(parts)
        + "."
    ]
    node_sources = sources.get("nodes") if isinstance(sources, dict) else None
    if isinstance(node_sources, dict) and isinstance(node_sources.get("labels"), dict):
        from_objects = int(node_sources["labels"].get("objects", 0))
        rest = (
            "; the others' are what kube-state-metrics exported"
            if from_objects < len(snapshot.nodes)
            else ""
        )
        notes.append(
            f"Node labels and taints of {counted(from_objects, 'node', 'nodes')} of "
            f"{len(snapshot.nodes):,} were read from Node objects{rest}."
        )
    notes.append(
        f"{counted(affinity, 'pod has', 'pods have')} affinity terms and "
        f"{counted(spread, 'pod has', 'pods have')} topology spread constraints in the snapshot."
    )
    return notes


def data_notes(snapshot: Snapshot) -> list[str]:
    """Gaps in the snapshot that change what the replay can say."""
    pods = snapshot.pods
    notes: list[str] = []
    bound = pods["node"].notna() & (pods["node"].astype(str) != "")
    workload = ~pinned_pods(pods).to_numpy(dtype=bool)
    ran = bound.to_numpy(dtype=bool) & workload
    # The distinct uids first (a categorical's unique values): converting every usage row's uid
    # to str cost seconds per comparison on the demo's 4.6 million rows, for ~10,000 names.
    if snapshot.usage_dir is not None:  # left on disk: its uid column, a group at a time
        sampled = sampled_uids(snapshot.usage_dir, pods["uid"])
    else:
        seen = pd.Series(snapshot.pod_usage["uid"].unique()).astype(str)
        sampled = pods["uid"].astype(str).isin(set(seen)).to_numpy()
    without = int((ran & ~sampled).sum())
    if without:
        notes.append(
            f"No usage samples for {counted(without, 'pod', 'pods')} of {int(ran.sum()):,} that ran: "
            "under every strategy their real usage stays on the node they really ran on (in its "
            "overhead), and they add none where a strategy puts them."
        )
    unbound = int((~bound.to_numpy(dtype=bool)).sum())
    if unbound:
        notes.append(
            f"{counted(unbound, 'pod was', 'pods were')} never bound to a node in the data: observed "
            f"counts {'it' if unbound == 1 else 'them'} as never placed; the strategies try to "
            f"place {'it' if unbound == 1 else 'them'}."
        )
    return notes
