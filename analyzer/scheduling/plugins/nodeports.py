"""kube-scheduler ``NodePorts`` (``pkg/scheduler/framework/plugins/nodeports``): a filter only.

PreFilter collects the pod's host ports (app containers and sidecar init containers,
``analyzer.scheduling.host_ports.pod_host_ports``) and returns Skip when there are none, so
nearly every pod passes without a look at the nodes. Filter refuses a node where one of them
conflicts with a port a pod on the node already uses (same protocol and port, and the same
hostIP or ``0.0.0.0`` on either side), status ``Unschedulable`` with upstream's reason: moving
pods away frees the port, so preemption may help.

The ports in use are kept by ``ClusterState.bind``/``unbind`` in ``ClusterState.ports``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from analyzer.scheduling.framework import FilterResult
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.versions import KubeVersion

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"


def _reasons(node: int) -> list[str]:
    return [ERR_REASON]


class NodePorts:
    """The NodePorts filter over every node at once."""

    name = NAME

    def __init__(self, args: Any = None, version: KubeVersion | None = None) -> None:
        self.version = version

    def filter(self, state: ClusterState, pod: PodDemand, now: float) -> FilterResult:
        """Every node feasible without host ports (PreFilter Skip); else the nodes where no
        wanted port is in use."""
        feasible = np.ones(state.node_count, dtype=bool)
        if pod.host_ports:
            blocked = state.ports.blocked(pod.host_ports)
            if blocked:
                feasible[list(blocked)] = False
        return FilterResult(feasible, _reasons)
