"""The collector's scheduling-constraint columns from hand-written kube-state-metrics series.

Each case is a KSM series shape written out by hand (kube_node_spec_taint,
kube_pod_tolerations, kube_pod_nodeselectors) and the JSON the replay must read back; the
end-to-end comparison against the generator on a real Prometheus is in test_collect_synthetic.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from analyzer.collect.constraints import add_constraints, recover_selector_key, selector_key_table
from analyzer.prom.client import Series
from analyzer.prom.fetch import QueryResult
from analyzer.prom.profile import QuerySpec
from analyzer.scheduling.constraint_types import (
    Taint,
    Toleration,
    constraints_from_json,
    taints_from_json,
)


def _result(name: str, *label_sets: dict[str, str]) -> QueryResult:
    series = [Series(labels, np.array([100.0]), np.array([1.0])) for labels in label_sets]
    return QueryResult(QuerySpec(name, "", kind="window", required=False), "", series)


def test_selector_key_recovery_by_hand() -> None:
    # No node labels exported: well-known keys are the only candidates.
    table = selector_key_table([])
    assert recover_selector_key("cloud_google_com_gke_nodepool", table) == (
        "cloud.google.com/gke-nodepool"
    )
    assert recover_selector_key("kubernetes_io_os", table) == "kubernetes.io/os"
    assert recover_selector_key("example_com_tier", table) is None
    # Exported node labels make a custom key recoverable and win over a well-known key that
    # sanitises the same way ("kubernetes.io-os" and "kubernetes.io/os" both → kubernetes_io_os).
    table = selector_key_table(["example.com/tier", "kubernetes.io-os"])
    assert recover_selector_key("example_com_tier", table) == "example.com/tier"
    assert recover_selector_key("kubernetes_io_os", table) == "kubernetes.io-os"


def test_constraint_columns_from_ksm_series() -> None:
    nodes = pd.DataFrame(
        {"node": ["n1", "n2"], "labels": [json.dumps({"example.com/tier": "gold"}), "{}"]}
    )
    pods = pd.DataFrame({"uid": ["u1", "u2", "u3"]})
    results = {
        # Scraped without honor_labels: the node name is in exported_node, node is the target's.
        "node_info": _result("node_info", {"exported_node": "n1", "node": "ksm-host"}),
        "node_taints": _result(
            "node_taints",
            {
                "exported_node": "n1",
                "node": "ksm-host",
                "key": "gpu",
                "value": "yes",
                "effect": "NoSchedule",
            },
            {"exported_node": "n1", "node": "ksm-host", "key": "spot", "effect": "NoExecute"},
            # a cordon seen at some point of the range: transient, must not bar n1 for the replay
            {
                "exported_node": "n1",
                "node": "ksm-host",
                "key": "node.kubernetes.io/unschedulable",
                "effect": "NoSchedule",
            },
        ),
        "pod_tolerations": _result(
            "pod_tolerations",
            {"uid": "u1", "operator": "Exists"},  # tolerate everything
            {"uid": "u1", "key": "gpu", "value": "yes", "effect": "NoSchedule"},  # no operator
            {"uid": "u2", "key": "spot", "operator": "Exists"},
        ),
        "pod_nodeselectors": _result(
            "pod_nodeselectors",
            {"uid": "u1", "nodeselector_example_com_tier": "gold"},
            {
                "uid": "u2",
                "nodeselector_cloud_google_com_gke_nodepool": "gpu",
                "nodeselector_x_y": "1",
            },
        ),
    }
    warnings = add_constraints(results, nodes, pods)
    assert json.loads(nodes.at[0, "taints"]) == [
        {"key": "gpu", "value": "yes", "effect": "NoSchedule"},
        {"key": "spot", "value": "", "effect": "NoExecute"},
    ]
    assert nodes.at[1, "taints"] == "[]"
    assert taints_from_json(nodes.at[0, "taints"]) == (
        Taint("gpu", "yes", "NoSchedule"),
        Taint("spot", "", "NoExecute"),
    )
    u1 = constraints_from_json(pods.at[0, "tolerations"], pods.at[0, "node_selector"])
    assert set(u1.tolerations) == {
        Toleration(operator="Exists"),
        Toleration("gpu", "Equal", "yes", "NoSchedule"),
    }
    assert u1.node_selector == (("example.com/tier", "gold"),)
    assert {frozenset(t.items()) for t in json.loads(pods.at[0, "tolerations"])} == {
        frozenset({"operator": "Exists"}.items()),
        frozenset(
            {"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}.items()
        ),
    }
    assert json.loads(pods.at[1, "node_selector"]) == {
        "cloud.google.com/gke-nodepool": "gpu",
        "x_y": "1",  # unrecoverable: stays sanitised, with a warning
    }
    assert pods.at[2, "tolerations"] == "[]" and pods.at[2, "node_selector"] == "{}"
    assert len(warnings) == 1 and "x_y" in warnings[0]


def test_without_constraint_queries_defaults_and_no_warning() -> None:
    nodes = pd.DataFrame({"node": ["n1"], "labels": ["{}"]})
    pods = pd.DataFrame({"uid": ["u1"]})
    assert add_constraints({}, nodes, pods) == []
    assert nodes.at[0, "taints"] == "[]"
    assert pods.at[0, "tolerations"] == "[]" and pods.at[0, "node_selector"] == "{}"
