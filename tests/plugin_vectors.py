"""Turn a ``kube-plugins-vectors.yaml`` case into an ``analyzer score`` scenario (upstream's shape).

The cases already hold real Kubernetes objects (``nodes``, ``existing_pods``, ``pod``,
``objects``), so the scenario takes them as they are, with:

- the profile the upstream unit test builds: only the plugin under test
  (``multiPoint: {enabled: [{name: P}], disabled: [{name: "*"}]}``) and its ``args``;
- ``featureGates`` = the case's ``feature_flags`` (the values the test forces);
- ``candidateNodes`` = the case's ``candidate_nodes`` (score cases: the nodes passed to PreScore);
- nodes without ``status.allocatable`` get ``{pods: "32"}``: what ``st.MakeNode()`` gives every
  test node (vector meta ``source_files.testing/wrappers.go``); resources are irrelevant to these
  plugins and the profile runs no resource filter.
"""

from __future__ import annotations

import copy
from typing import Any

from sched_vectors import API, load

PLUGINS = load("kube-plugins-vectors.yaml")


def cases(plugin: str, phase: str) -> list[dict[str, Any]]:
    """The cases of one plugin and phase."""
    return [c for c in PLUGINS["cases"] if c["plugin"] == plugin and c["phase"] == phase]


def _node(node: dict[str, Any]) -> dict[str, Any]:
    node = copy.deepcopy(node)
    status = node.setdefault("status", {})
    status.setdefault("allocatable", {"pods": "32"})
    return node


def plugin_scenario(case: dict[str, Any]) -> dict[str, Any]:
    """A scenario running only ``case['plugin']`` with the case's args and gates."""
    plugin = case["plugin"]
    profile: dict[str, Any] = {
        "plugins": {
            "multiPoint": {"enabled": [{"name": plugin}], "disabled": [{"name": "*"}]},
        },
    }
    if case.get("args") is not None:
        profile["pluginConfig"] = [{"name": plugin, "args": case["args"]}]
    scenario: dict[str, Any] = {
        "scheduler": {
            "apiVersion": API,
            "kind": "KubeSchedulerConfiguration",
            "profiles": [profile],
        },
        "nodes": [_node(n) for n in case["nodes"]],
        "pods": copy.deepcopy(case.get("existing_pods") or []),
        "pod": copy.deepcopy(case["pod"]),
    }
    if case.get("feature_flags"):
        scenario["featureGates"] = dict(case["feature_flags"])
    if case.get("objects"):
        scenario["objects"] = copy.deepcopy(case["objects"])
    if case.get("candidate_nodes") is not None:
        scenario["candidateNodes"] = list(case["candidate_nodes"])
    return scenario
