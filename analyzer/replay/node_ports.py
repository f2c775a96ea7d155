"""NodePorts in the replay's score cache: the host-port check on the rows a refresh recomputes.

A pod shape with host ports (its ports are part of the shape key, ``analyzer.replay.input``)
keeps its own cache entry; a bind or unbind touches the node, so the node's row is recomputed
and these helpers apply the port check to it — the same answer ``NodePorts.filter`` gives, on
the changed rows only. Shapes without host ports never call them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from analyzer.scheduling.arith import BoolArray, Int64Array
from analyzer.scheduling.host_ports import HostPort
from analyzer.scheduling.state import ClusterState


def ports_mask(state: ClusterState, ports: Sequence[HostPort], rows: Int64Array) -> BoolArray:
    """Per row: True where none of ``ports`` is in use on that node."""
    ok = np.ones(len(rows), dtype=bool)
    blocked = state.ports.blocked(ports)
    if blocked:
        ok &= ~np.isin(rows, np.fromiter(blocked, dtype=np.int64, count=len(blocked)))
    return ok


def ports_rows(
    state: ClusterState, ports: Sequence[HostPort], rows: Sequence[int], values: list[int], low: int
) -> list[int]:
    """``values`` with ``low`` on the rows where one of ``ports`` is in use."""
    index = state.ports
    return [low if index.conflicts(r, ports) else v for r, v in zip(rows, values, strict=True)]
