"""``scale-down-unready-enabled: false`` in ``analyzer autoscale``: an unready node is no
candidate (``ScaleDownUnreadyDisabled``; core/scaledown/eligibility/eligibility.go, after the
utilisation and before the threshold). Unready is ``kube_util.GetNodeReadiness``: a Ready
condition False or Unknown, a DiskPressure or NetworkUnavailable condition True, or a
node.kubernetes.io/not-ready, disk-pressure or network-unavailable taint; a node without a Ready
condition is not ready either (upstream's zero answer). Written here from that code; upstream's
own case is in ``tests/data/autoscaler/audit_more.yaml``. The replay refuses the flag (its
nodes' not-ready periods are not modelled as CA's unready nodes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import by_name, run

from analyzer.core.errors import InputError
from analyzer.replay.autoscale_setup import parse_settings

NOW = "2026-06-10T12:00:00Z"
READY = {"type": "Ready", "status": "True"}


def _node(name: str, conditions: list[dict[str, str]], taints: list[Any]) -> dict[str, Any]:
    return {"kind": "Node", "metadata": {"name": name}, "spec": {"taints": taints},
            "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"},
                       "conditions": conditions}}  # fmt: skip


NODES = {
    "ready": ([READY], []),
    "not-ready": ([{"type": "Ready", "status": "False"}], []),
    "unknown": ([{"type": "Ready", "status": "Unknown"}], []),
    "disk": ([READY, {"type": "DiskPressure", "status": "True"}], []),
    "tainted": ([READY], [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]),
    "silent": ([], []),
}


@pytest.mark.parametrize("enabled", [True, False])
def test_unready_nodes_are_kept_when_the_flag_is_off(tmp_path: Path, enabled: bool) -> None:
    scenario = {
        "autoscaler": "cluster-autoscaler",
        "now": NOW,
        "options": {"scale-down-unready-enabled": enabled},
        "nodes": [_node(name, *facts) for name, facts in NODES.items()],
        "pods": [],
    }
    nodes = by_name(run(tmp_path, scenario))
    for name in NODES:
        if enabled or name == "ready":
            assert nodes[name]["candidate"], name
        else:
            assert nodes[name]["unremovableReason"] == "ScaleDownUnreadyDisabled", name


def test_the_replay_refuses_the_flag_off() -> None:
    with pytest.raises(InputError, match="scale-down-unready-enabled: false is not modelled"):
        parse_settings({"scale-down-unready-enabled": False})
    assert parse_settings({"scale-down-unready-enabled": True}).options.scale_down_unready_enabled
