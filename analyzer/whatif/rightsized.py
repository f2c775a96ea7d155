"""The snapshot as it would have been with right-sized requests (usage unchanged).

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

from dataclasses import replace

import numpy as np
import pandas as pd

from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot

KEY = ["namespace", "owner_kind", "owner_name"]
RECOMMENDED = {"cpu": "cpu_recommended_millicores", "memory": "memory_recommended_bytes"}
REQUIRED_COLUMNS = (*KEY, *RECOMMENDED.values())


def workload_keys(pods: pd.DataFrame) -> pd.DataFrame:
    """``namespace, owner_kind, owner_name`` of each pod's workload.

    The rule of ``analyzer.nightly.capacity_rollups.workload_keys`` (docs/history.md), restated
    here because whatif (layer 4) cannot import nightly (layer 4).
    """
    kind = pods["workload_kind"].astype("string").fillna("")
    name = pods["workload_name"].astype("string").fillna("")
    bare = (kind == "") | (kind == "Node") | (name == "")
    return pd.DataFrame(
        {
            "namespace": pods["namespace"].astype("string").fillna("").to_numpy(dtype=object),
            "owner_kind": kind.where(~bare, "Pod").to_numpy(dtype=object),
            "owner_name": name.where(~bare, pods["name"].astype("string")).to_numpy(dtype=object),
        }
    )


def apply_recommended_requests(snapshot: Snapshot, recommendations: pd.DataFrame) -> Snapshot:
    """``snapshot`` with every recommended workload's pods at the recommended requests.

    TODO(integrator): the ``rightsize`` branch provides ``apply_recommendations(snapshot, recs)``
    with the same contract; swap this function for it when both are merged.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in recommendations.columns]
    if missing:
        raise InputError(
            f"right-sizing recommendations: missing column(s) {', '.join(missing)}; "
            "produce them with the right-sizing recipe"
        )
    pods = snapshot.pods.copy()
    keys = workload_keys(pods)
    recs = recommendations.drop_duplicates(KEY, keep="last")
    merged = keys.merge(recs[list(REQUIRED_COLUMNS)], on=KEY, how="left")
    for resource, column in RECOMMENDED.items():
        values = pd.to_numeric(merged[column], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.isfinite(values) & (values <= 0)
        if bad.any():
            row = merged.loc[bad].iloc[0]
            raise InputError(
                f"right-sizing recommendations: {column} of {row['namespace']}/"
                f"{row['owner_name']} is {values[bad][0]:g}; a recommendation must be positive "
                "(NaN keeps the current request)"
            )
        take = np.isfinite(values)
        if not take.any():
            continue
        new = np.ceil(values[take]).astype(np.int64)  # never below the recommendation
        for kind in ("requests", "nonzero_requests"):
            column_name = f"{kind}:{resource}"
            current = pods[column_name].to_numpy(dtype=np.int64).copy()
            current[take] = new
            pods[column_name] = current
        limit_name = f"limits:{resource}"
        if limit_name in pods.columns:
            limits = pods[limit_name].to_numpy(dtype=np.int64).copy()
            requests = pods[f"requests:{resource}"].to_numpy(dtype=np.int64)
            low = (limits > 0) & (limits < requests)
            limits[low] = requests[low]
            pods[limit_name] = limits
    return replace(snapshot, pods=pods)


def changed_pods(before: Snapshot, after: Snapshot) -> int:
    """How many pods have other cpu or memory requests in ``after`` than in ``before``."""
    differ = np.zeros(len(before.pods), dtype=bool)
    for resource in RECOMMENDED:
        column = f"requests:{resource}"
        differ |= before.pods[column].to_numpy() != after.pods[column].to_numpy()
    return int(differ.sum())
