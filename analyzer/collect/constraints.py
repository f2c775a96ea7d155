"""Fill the snapshot's scheduling-constraint columns from kube-state-metrics.

``nodes.taints`` comes from ``kube_node_spec_taint``, ``pods.tolerations`` from
``kube_pod_tolerations`` and ``pods.node_selector`` from ``kube_pod_nodeselectors``, all optional
window queries: without them the columns keep their defaults (``[]``/``{}``), which is normal on
older kube-state-metrics. Every taint or toleration seen in the range counts (a window summary
cannot say when one was removed).

KSM sanitises selector keys (``cloud.google.com/gke-nodepool`` →
``nodeselector_cloud_google_com_gke_nodepool``) and the sanitising is not invertible, so the
original key is found by sanitising candidate keys and matching: the node label keys in the
snapshot (``kube_node_labels``, opt-in) first, then well-known node label keys. A key that matches
nothing stays sanitised and is reported in ``meta.json`` warnings, since a replay then cannot match
it against node labels.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

import pandas as pd

from analyzer.collect.common import exported_names, label, window_values
from analyzer.collect.usage import KNOWN_LABELS
from analyzer.core.quantity import sanitize_resource_name
from analyzer.prom.fetch import QueryResult
from analyzer.scheduling.constraint_types import AUTOSCALER_TAINT_KEYS

_SELECTOR_PREFIX = "nodeselector_"
# Well-known node label keys pods select on, tried after the snapshot's own node label keys.
WELL_KNOWN_NODE_LABELS = (
    *KNOWN_LABELS,
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "node.kubernetes.io/lifecycle",
    "nvidia.com/gpu.present",
    "nvidia.com/gpu.product",
    "cloud.google.com/gke-accelerator",
    "cloud.google.com/gke-spot",
    "cloud.google.com/gke-preemptible",
    "cloud.google.com/machine-family",
    "eks.amazonaws.com/capacityType",
    "karpenter.sh/capacity-type",
    "kubernetes.azure.com/scalesetpriority",
)


def selector_key_table(node_label_keys: Iterable[str]) -> dict[str, str]:
    """Sanitised key → original key: the snapshot's node label keys win over well-known ones.

    Among several keys with the same sanitised form the first seen (then alphabetical) wins.
    """
    table: dict[str, str] = {}
    for key in [*sorted(set(node_label_keys)), *WELL_KNOWN_NODE_LABELS]:
        table.setdefault(sanitize_resource_name(key), key)
    return table


def recover_selector_key(sanitised: str, table: Mapping[str, str]) -> str | None:
    """The original label key of a ``nodeselector_<sanitised>`` label (None: not recoverable)."""
    return table.get(sanitised)


def _node_label_keys(nodes: pd.DataFrame) -> set[str]:
    keys: set[str] = set()
    if nodes.empty or "labels" not in nodes.columns:
        return keys
    for text in nodes["labels"]:
        if isinstance(text, str) and text:
            keys.update(json.loads(text))
    return keys


# Taints the node lifecycle controller and kubectl cordon set for a node's passing condition
# (not-ready, unreachable, unschedulable, pressure…). A window summary cannot tell when they were
# removed, so keeping one would bar the node for the whole replay; workload taints stay.
CONDITION_TAINT_PREFIX = "node.kubernetes.io/"


def node_taints(results: dict[str, QueryResult]) -> dict[str, list[dict[str, str]]]:
    """Node name → its taints as ``{key, value, effect}`` (missing labels are empty strings).

    Condition taints (``node.kubernetes.io/*``) and the autoscalers' taints
    (``AUTOSCALER_TAINT_KEYS``) are left out: they are transient (their times are in the
    snapshot's node_state_intervals, ``analyzer.collect.node_state``).
    """
    exported = exported_names(window_values(results.get("node_info")))
    out: dict[str, set[tuple[str, str, str]]] = {}
    for item in window_values(results.get("node_taints")):
        node = label(item.labels, "node", exported)
        key = item.labels.get("key", "")
        transient = key.startswith(CONDITION_TAINT_PREFIX) or key in AUTOSCALER_TAINT_KEYS
        if node and key and not transient:
            out.setdefault(node, set()).add(
                (key, item.labels.get("value", ""), item.labels.get("effect", ""))
            )
    return {
        node: [{"key": k, "value": v, "effect": e} for k, v, e in sorted(taints)]
        for node, taints in out.items()
    }


def pod_tolerations(results: dict[str, QueryResult]) -> dict[str, list[dict[str, str]]]:
    """Pod uid → tolerations, unset fields omitted; operator Equal when a key is set without one;
    ``tolerationSeconds`` (a string of digits) when kube-state-metrics exports it."""
    out: dict[str, set[tuple[tuple[str, str], ...]]] = {}
    for item in window_values(results.get("pod_tolerations")):
        uid = item.labels.get("uid", "")
        if not uid:
            continue
        fields = {f: item.labels.get(f, "") for f in ("key", "operator", "value", "effect")}
        if fields["key"] and not fields["operator"]:
            fields["operator"] = "Equal"  # core/v1: an empty operator means Equal
        # KSM's toleration_seconds label: how long a NoExecute taint is tolerated
        seconds = item.labels.get("toleration_seconds", "")
        if seconds.lstrip("-").isdigit():
            fields["tolerationSeconds"] = seconds
        out.setdefault(uid, set()).add(tuple((k, v) for k, v in fields.items() if v))
    return {uid: [dict(t) for t in sorted(items)] for uid, items in out.items()}


def pod_node_selectors(
    results: dict[str, QueryResult], table: Mapping[str, str]
) -> tuple[dict[str, dict[str, str]], set[str]]:
    """Pod uid → nodeSelector, and the sanitised keys no known node label key matched."""
    out: dict[str, dict[str, str]] = {}
    unknown: set[str] = set()
    for item in window_values(results.get("pod_nodeselectors")):
        uid = item.labels.get("uid", "")
        if not uid:
            continue
        selector = out.setdefault(uid, {})
        for name, value in item.labels.items():
            if not name.startswith(_SELECTOR_PREFIX) or value == "":
                continue
            sanitised = name[len(_SELECTOR_PREFIX) :]
            key = recover_selector_key(sanitised, table)
            if key is None:
                unknown.add(sanitised)
            selector[key or sanitised] = value
    return out, unknown


def add_constraints(
    results: dict[str, QueryResult], nodes: pd.DataFrame, pods: pd.DataFrame
) -> list[str]:
    """Set ``nodes.taints``, ``pods.tolerations`` and ``pods.node_selector`` in place; warnings."""
    if not nodes.empty:
        taints = node_taints(results)
        nodes["taints"] = [json.dumps(taints.get(str(n), [])) for n in nodes["node"]]
    if pods.empty:
        return []
    tolerations = pod_tolerations(results)
    selectors, unknown = pod_node_selectors(results, selector_key_table(_node_label_keys(nodes)))
    uids = [str(u) for u in pods["uid"]]
    pods["tolerations"] = [json.dumps(tolerations.get(u, [])) for u in uids]
    pods["node_selector"] = [json.dumps(selectors.get(u, {}), sort_keys=True) for u in uids]
    if not unknown:
        return []
    sample = ", ".join(sorted(unknown)[:3])
    return [
        f"{len(unknown)} nodeSelector key(s) could not be recovered from kube-state-metrics' "
        f"sanitised names and stay sanitised (e.g. {sample}); export the node labels "
        "(kube_node_labels, --metric-labels-allowlist=nodes=[*]) so they can be matched"
    ]
