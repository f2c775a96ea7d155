"""The what-if notes, computed from the snapshot and the strategies compared (never fixed text).

Three kinds of sentence, each true of this run:

- **modelled**: how many nodes carry NoSchedule/NoExecute taints and how many pods have a
  nodeSelector or tolerations, and which strategies apply them (every profile with the
  TaintToleration / NodeAffinity filters; a configuration file without them is named);
- **preemption**: which strategies preempt, how many of the snapshot's PodDisruptionBudgets they
  count and how many pods may not preempt (``preemptionPolicy: Never``), or that the snapshot
  holds no such objects;
- **not modelled**: what the replay never does (``analyzer.replay.engine``):
  preferred node affinity outside the kube-based presets, the extra nodes parallel filters find beyond percentageOfNodesToScore's count; required
  node affinity (from Kubernetes objects) is applied when the snapshot
  has it; PreferNoSchedule taints, when the snapshot has some, for the strategies without a
  TaintToleration score;
- **sampling**: how many feasible nodes each strategy scores (percentageOfNodesToScore over the
  snapshot's node count, ``sampling_notes``) and that the node order is inferred;
- **missing data**: pods that ran without usage samples, pods never bound in reality;
- **field sources**: which pod fields were observed in Prometheus, read from Kubernetes objects
  (``collect --kube-objects``) or inferred (``meta.json`` ``extra.field_sources``).

The last two are ``analyzer.whatif.data_notes``'s (with the counting helpers shared here).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd

from analyzer.core.snapshot import Snapshot
from analyzer.replay.engine import Strategy
from analyzer.replay.input import NEVER_PREEMPT, preemption_policies
from analyzer.replay.topology import objects_of
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.node_sampling import MIN_FEASIBLE_NODES_TO_FIND, num_feasible_nodes_to_find
from analyzer.scheduling.plugins.defaultpreemption import NAME as PREEMPTION
from analyzer.scheduling.plugins.helper.node_constraints import AFFINITY_NAME, TAINT_NAME
from analyzer.scheduling.plugins.podtopologyspread import PodTopologySpread
from analyzer.scheduling.pod_cells import controller_from_owner
from analyzer.scheduling.priority_class import parse_priority_class
from analyzer.whatif.data_notes import counted as _pl
from analyzer.whatif.data_notes import data_notes as data_notes
from analyzer.whatif.data_notes import field_source_notes as field_source_notes
from analyzer.whatif.data_notes import non_empty as _non_empty
from analyzer.whatif.node_state_notes import node_state_notes
from analyzer.whatif.port_notes import port_notes

FILTERING_EFFECTS = ("NoSchedule", "NoExecute")
NOT_MODELLED = (
    "Not modelled by any strategy here: the few extra nodes kube-scheduler's 16 parallel filters may find beyond "
    "percentageOfNodesToScore's count."
)
_SPREAD, _INTER_POD, _IMAGES = "PodTopologySpread", "InterPodAffinity", "ImageLocality"
_SELECTING_KINDS = ("Service", "ReplicationController", "ReplicaSet", "StatefulSet")


def _json_list(text: object) -> list[object]:
    if not isinstance(text, str) or not text:
        return []
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # a cell nested past the parser
        return []
    return data if isinstance(data, list) else [data] if isinstance(data, dict) and data else []


def _tainted(nodes: pd.DataFrame, effects: Sequence[str] = FILTERING_EFFECTS) -> int:
    """Nodes with at least one taint of ``effects`` (default: those that filter)."""
    count = 0
    for text in nodes["taints"].tolist():
        taints = _json_list(text)
        if any(isinstance(t, dict) and t.get("effect") in effects for t in taints):
            count += 1
    return count


def _origin(snapshot: Snapshot) -> str:
    """Where a snapshot's pod constraints came from: the generator's, or Kubernetes objects."""
    synthetic = snapshot.meta.source.startswith("synthetic:")
    return "generated with the synthetic cluster" if synthetic else "from Kubernetes objects"


def whatif_notes(snapshot: Snapshot, strategies: Sequence[Strategy]) -> list[str]:
    """Every note of a comparison of ``strategies`` (by the names its page shows them with)."""
    return [*constraint_notes(snapshot, strategies), *data_notes(snapshot)]


def constraint_notes(snapshot: Snapshot, strategies: Sequence[Strategy]) -> list[str]:
    """What the replay applied of the snapshot's taints and node selectors, and what it did not."""
    nodes, pods = snapshot.nodes, snapshot.pods
    # older snapshots load with these columns empty ("[]"/"{}"): the same as none
    tainted = _tainted(nodes) if "taints" in nodes.columns else 0
    selecting = _non_empty(pods["node_selector"]) if "node_selector" in pods.columns else 0
    tolerating = _non_empty(pods["tolerations"]) if "tolerations" in pods.columns else 0
    profiles = [(s.name, s.profile) for s in strategies if s.profile is not None]
    applying = [
        name
        for name, profile in profiles
        if {f.name for f in profile.filters} >= {TAINT_NAME, AFFINITY_NAME}
    ]
    ignoring = [name for name, _ in profiles if name not in applying]
    notes: list[str] = []
    if not (tainted or selecting):
        notes.append(
            "No node in the snapshot has a NoSchedule/NoExecute taint and no pod has a "
            "nodeSelector, so every strategy may put any pod on any node with room (only "
            "DaemonSet and static pods stay on their node)."
        )
    else:
        who = "every strategy" if not ignoring else ", ".join(applying) or "no strategy"
        notes.append(
            f"Applied by {who}: NoSchedule/NoExecute taints on {_pl(tainted, 'node', 'nodes')} "
            f"of {len(nodes):,}, nodeSelectors of {_pl(selecting, 'pod', 'pods')} and "
            f"tolerations of {_pl(tolerating, 'pod', 'pods')} of {len(pods):,} "
            "(kube-scheduler's TaintToleration and NodeAffinity filters)."
        )
        if ignoring:
            notes.append(
                f"{', '.join(ignoring)}: the configuration has no TaintToleration/NodeAffinity "
                "filter, so it may put any pod on any node with room."
            )
    required = _required_node_affinity(pods)
    if required:
        appliers = "every strategy" if not ignoring else ", ".join(applying) or "no strategy"
        notes.append(
            f"Required node affinity of {_pl(required, 'pod', 'pods')} ({_origin(snapshot)}) "
            f"restricts where they may go, applied by {appliers} (the NodeAffinity filter)."
        )
    else:
        notes.append(
            "No pod in the snapshot has required node affinity terms (they come only from "
            "Kubernetes objects, collect --kube-objects), so only nodeSelectors restrict where a "
            "pod may go."
        )
    preferring = _tainted(nodes, ("PreferNoSchedule",)) if "taints" in nodes.columns else 0
    unscored = [
        name
        for name, profile in profiles
        if not any(w.plugin.name == TAINT_NAME for w in profile.scorers)
    ]
    if preferring and unscored:
        notes.append(
            f"{', '.join(unscored)}: {_pl(preferring, 'node carries', 'nodes carry')} "
            "PreferNoSchedule taints, which these strategies do not score (no TaintToleration "
            "score plugin; the kube-based presets score them)."
        )
    notes.extend(node_state_notes(snapshot))
    notes.extend(topology_notes(snapshot, strategies))
    notes.extend(image_notes(snapshot, strategies))
    notes.extend(port_notes(snapshot, strategies))
    notes.extend(preemption_notes(snapshot, strategies))
    notes.extend(sampling_notes(snapshot, strategies))
    notes.append(NOT_MODELLED)
    notes.extend(field_source_notes(snapshot))
    return notes


def sampling_notes(snapshot: Snapshot, strategies: Sequence[Strategy]) -> list[str]:
    """How many feasible nodes each strategy scores per pod (percentageOfNodesToScore at the
    snapshot's node count; fewer nodes may be present at a given moment)."""
    n = len(snapshot.nodes)
    if n < MIN_FEASIBLE_NODES_TO_FIND:
        return [
            f"percentageOfNodesToScore: with {_pl(n, 'node', 'nodes')} (fewer than "
            f"{MIN_FEASIBLE_NODES_TO_FIND}) every feasible node is scored, as kube-scheduler does."
        ]
    groups: dict[int, list[str]] = {}
    for strategy in strategies:
        if strategy.profile is not None:
            percentage = strategy.profile.percentage_of_nodes_to_score
            groups.setdefault(num_feasible_nodes_to_find(n, percentage), []).append(strategy.name)
    notes = []
    for wanted, names in sorted(groups.items()):
        if wanted >= n:
            notes.append(
                f"{', '.join(names)}: every feasible node is scored "
                "(percentageOfNodesToScore: 100)."
            )
        else:
            notes.append(
                f"{', '.join(names)}: with up to {n:,} nodes present, only the first "
                f"{wanted:,} feasible nodes found are scored per pod (percentageOfNodesToScore, "
                "as kube-scheduler), searched from a start index that moves on by the nodes "
                "examined, over a node list in kube-scheduler's order: zones round robin, the "
                "nodes present at the start by name, later joins appended. That order is "
                "inferred, not in the data."
            )
    return notes


def preemption_notes(snapshot: Snapshot, strategies: Sequence[Strategy]) -> list[str]:
    """Which strategies preempt, and what of the snapshot's budgets and classes they read."""
    preempting = [s.name for s in strategies if s.profile is not None
                  and any(p.name == PREEMPTION for p in s.profile.post_filters)]  # fmt: skip
    if not preempting:
        return []
    who = ", ".join(preempting)
    objects = getattr(snapshot, "objects", None) or {}  # older callers pass tables only
    budgets = len(objects.get("PodDisruptionBudget", []))
    notes = [
        f"{who} order the pending queue by priority and preempt lower-priority pods "
        "(DefaultPreemption: the victims keep their room for a 30 s graceful termination, the "
        "preemptor holds its node meanwhile against pods of its priority and below, and tries that "
        "node first); "
        + (
            f"they count the snapshot's {_pl(budgets, 'PodDisruptionBudget', 'PodDisruptionBudgets')}"
            " as kube-scheduler does (victims that would break a budget are evicted last, the node "
            "with the fewest of them preferred; each budget's disruptionsAllowed is derived from "
            "its pods existing and running at that instant)."
            if budgets
            else "the snapshot holds no PodDisruptionBudget (collect --kube-objects keeps them), "
            "so no preemption is held back by one."
        )
    ]
    raw = objects.get("PriorityClass", [])
    if raw:
        classes = {}
        for i, obj in enumerate(raw):
            body = {k: v for k, v in obj.items() if k != "name"}
            pc = parse_priority_class({"metadata": {"name": obj.get("name")}, **body}, f"[{i}]")
            classes[pc.name] = pc
        never = sum(p == NEVER_PREEMPT for p in preemption_policies(snapshot.pods, classes))
        notes.append(
            f"{_pl(never, 'pod has', 'pods have')} preemptionPolicy Never (from "
            "their PriorityClass): they wait instead of preempting."
        )
    else:
        notes.append(
            "The snapshot holds no PriorityClass objects (collect --kube-objects keeps them): "
            "every pod may preempt (preemptionPolicy PreemptLowerPriority)."
        )
    return notes


def topology_notes(snapshot: Snapshot, strategies: Sequence[Strategy]) -> list[str]:
    """What the replay applied of topology spread and pod (anti-)affinity, and what it could not."""
    pods = snapshot.pods
    spreading = _non_empty(pods["topology_spread"]) if "topology_spread" in pods.columns else 0
    terms = _pod_affinity_terms(pods)
    profiles = [(s.name, s.profile) for s in strategies if s.profile is not None]

    def names(plugin: str) -> list[str]:
        return [n for n, p in profiles if any(w.plugin.name == plugin for w in p.scorers)
                or any(f.name == plugin for f in p.filters)]  # fmt: skip

    spread_by, affinity_by = names(_SPREAD), names(_INTER_POD)
    notes = []
    if spreading or terms:
        appliers = (
            f"{', '.join(spread_by)} (PodTopologySpread and InterPodAffinity)"
            if spread_by and spread_by == affinity_by
            else f"{', '.join(spread_by) or 'no strategy'} (PodTopologySpread) and "
            f"{', '.join(affinity_by) or 'no strategy'} (InterPodAffinity)"
        )
        notes.append(
            f"Topology spread constraints of {_pl(spreading, 'pod', 'pods')} and pod "
            f"(anti-)affinity terms of {_pl(terms, 'pod', 'pods')} ({_origin(snapshot)}) are "
            f"applied by {appliers}, as kube-scheduler's default profile does."
        )
    else:
        notes.append(
            "No pod in the snapshot has topology spread constraints or pod (anti-)affinity terms "
            "(they come only from Kubernetes objects, collect --kube-objects), so "
            "PodTopologySpread and InterPodAffinity act on no pod."
        )
    objects = getattr(snapshot, "objects", None) or {}  # older callers pass tables only
    if spread_by and not any(objects.get(kind) for kind in _SELECTING_KINDS):
        notes.append(
            "PodTopologySpread's system default constraints (spread each ReplicaSet's and "
            "StatefulSet's pods over hostnames and zones) need the Services, ReplicaSets and "
            "StatefulSets that select the pods, which the snapshot does not hold: pods without "
            "their own constraints are not spread by default in the replay."
        )
    elif spread_by:
        defaulted = [n for n, p in profiles if _system_defaulted(p)]
        held = ", ".join(
            _pl(len(objects[kind]), kind, kind + "s") for kind in _SELECTING_KINDS
            if objects.get(kind)
        )  # fmt: skip
        count = _default_spread_pods(snapshot)
        notes.append(
            f"Default spreading: {_pl(count, 'pod', 'pods')} without their own constraints "
            f"{'is' if count == 1 else 'are'} selected by the snapshot's {held} "
            "(kube-scheduler's helper.DefaultSelector), so "
            f"{', '.join(defaulted) or 'no strategy'} spread them with PodTopologySpread's "
            "system default constraints (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway)."
        )
    return notes


def image_notes(snapshot: Snapshot, strategies: Sequence[Strategy]) -> list[str]:
    """Whether ImageLocality had images to score (node status.images, pod container images)."""
    scoring = [
        s.name
        for s in strategies
        if s.profile is not None and any(w.plugin.name == _IMAGES for w in s.profile.scorers)
    ]
    if not scoring:
        return []
    nodes, pods = snapshot.nodes, snapshot.pods
    listing = _non_empty(nodes["images"]) if "images" in nodes.columns else 0
    known = _non_empty(pods["container_images"]) if "container_images" in pods.columns else 0
    if not listing or not known:
        missing = (
            "no node lists its images (Node status.images, read from the Node objects given to "
            "collect --kube-objects)"
            if not listing
            else "no pod has known container images (kube_pod_container_info image_spec, or "
            "the owners' templates from collect --kube-objects)"
        )
        return [
            f"ImageLocality: no image data — {missing}, so it scores 0 on every node in "
            f"{', '.join(scoring)}, as kube-scheduler does when no node holds the pod's images."
        ]
    return [
        f"ImageLocality ({', '.join(scoring)}): {_pl(listing, 'node lists', 'nodes list')} "
        f"its images of {len(nodes):,} and {_pl(known, 'pod has', 'pods have')} known container "
        f"images of {len(pods):,}; nodes already holding a pod's images score higher (by size, "
        "damped by how many nodes hold them)."
    ]


def _system_defaulted(profile: Profile) -> bool:
    plugins = [*profile.filters, *(w.plugin for w in profile.scorers)]
    return any(isinstance(p, PodTopologySpread) and p.system_defaulted for p in plugins)


def _default_spread_pods(snapshot: Snapshot) -> int:
    """Pods without own spread constraints that a Service / RC / RS / StatefulSet selects."""
    pods = snapshot.pods
    held = objects_of(snapshot)
    own = pods["topology_spread"] if "topology_spread" in pods.columns else None
    text = own.fillna("").astype(str).str.strip() if own is not None else None
    columns = [pods[c].fillna("").astype(str) for c in ("namespace", "labels", "owner_kind",
                                                        "owner_name")]  # fmt: skip
    found: dict[tuple[str, str, str, str], bool] = {}
    count = 0
    for i, key in enumerate(zip(*columns, strict=True)):
        if text is not None and text.iat[i] not in ("", "[]", "null"):
            continue
        selected = found.get(key)
        if selected is None:
            namespace, labels, kind, name = key
            parsed = _json_object(labels)
            selector = held.default_selector(
                namespace or "default",
                {str(k): str(v) for k, v in parsed.items()},
                controller_from_owner(kind, name),
            )
            selected = found[key] = not selector.empty
        count += selected
    return count


def _pod_affinity_terms(pods: pd.DataFrame) -> int:
    """Pods whose ``affinity`` cell has podAffinity or podAntiAffinity."""
    if "affinity" not in pods.columns:
        return 0
    return sum(
        rows
        for text, rows in _distinct(pods["affinity"])
        if any(_json_object(text).get(k) for k in ("podAffinity", "podAntiAffinity"))
    )


def _distinct(column: pd.Series) -> list[tuple[object, int]]:
    """Each distinct cell of ``column`` and how many rows hold it: a JSON cell is parsed once, not
    once per pod (the replicas of a workload share theirs). Empty cells (NaN/None) parse to
    nothing, so they are left out."""
    counts = column.value_counts(dropna=True, sort=False)
    return list(zip(counts.index.tolist(), counts.tolist(), strict=True))


def _json_object(text: object) -> dict[str, object]:
    if not isinstance(text, str) or not text:
        return {}
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError):  # a cell nested past the parser
        return {}
    return data if isinstance(data, dict) else {}


def _required_node_affinity(pods: pd.DataFrame) -> int:
    """Pods whose ``affinity`` cell has required node affinity terms."""
    if "affinity" not in pods.columns:
        return 0
    count = 0
    for text, rows in _distinct(pods["affinity"]):
        node = _json_object(text).get("nodeAffinity")
        if isinstance(node, dict) and node.get("requiredDuringSchedulingIgnoredDuringExecution"):
            count += rows
    return count
