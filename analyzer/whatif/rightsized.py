"""The snapshot as it would have been with right-sized requests (usage unchanged).

``apply_recommendations`` and ``workload_keys`` are ``analyzer.core.workloads``' (re-exported
here for the scenarios); this module adds ``changed_pods``.

Input: the right-sizing recommendations, one row per workload — ``namespace``, ``owner_kind``,
``owner_name`` (the workload key of ``docs/history.md``: the pod's ``workload_kind`` /
``workload_name``, a bare or static pod being its own workload of kind ``Pod``), ``pool``,
current ``cpu_request_millicores`` / ``memory_request_bytes`` and recommended
``cpu_recommended_millicores`` / ``memory_recommended_bytes`` per pod (NaN = keep the current
request), ``skipped_reason``.

Rule: every pod of a recommended workload gets the recommended request of each resource that has
one (``requests:`` and ``nonzero_requests:`` — a positive request is its own non-zero value); a
limit below the new request is raised to it (a request cannot exceed its limit); QoS class, usage
and everything else stay as they were. Workloads without a recommendation keep their requests.
"""

from __future__ import annotations

import numpy as np

from analyzer.core.snapshot import Snapshot
from analyzer.core.workloads import KEY, apply_recommendations, workload_keys

# The workload rule and the operation itself live in core (every replaying stage needs them).
__all__ = ["KEY", "apply_recommendations", "changed_pods", "workload_keys"]


def changed_pods(before: Snapshot, after: Snapshot) -> int:
    """How many pods have other cpu or memory requests in ``after`` than in ``before``."""
    differ = np.zeros(len(before.pods), dtype=bool)
    for resource in ("cpu", "memory"):
        column = f"requests:{resource}"
        differ |= before.pods[column].to_numpy() != after.pods[column].to_numpy()
    return int(differ.sum())
