"""Which workload a pod belongs to, and a snapshot whose workloads have new requests.

- :func:`workload_keys`: ``namespace, owner_kind, owner_name`` of each pod's workload — the pod's
  top owner as the snapshot resolved it (``workload_kind``/``workload_name``: ReplicaSet →
  Deployment, Job → CronJob); a pod without a controller, or a static pod (owned by its Node), is
  its own workload of kind ``Pod``, named after the pod. The history's workload rows
  (``nightly/capacity_rollups.py``, docs/history.md) use this very rule, so a recommendation made
  from the history names the same pods in a snapshot.
- :func:`apply_recommendations`: the snapshot with the recommended per-pod requests set on every
  pod of each recommended workload (usage tables untouched). It lives in ``core`` so that every
  stage that replays (``whatif``, ``monthly``) can apply a recommendation frame
  (``analyzer/monthly/rightsize.py`` documents its columns).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot

KEY = ["namespace", "owner_kind", "owner_name"]
# (resource, per-pod column of the recommendation frame)
RECOMMENDED = (("cpu", "cpu_recommended_millicores"), ("memory", "memory_recommended_bytes"))


def workload_keys(pods: pd.DataFrame) -> pd.DataFrame:
    """``namespace, owner_kind, owner_name`` of each pod's workload (see the module docstring)."""
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


def apply_recommendations(snapshot: Snapshot, recommendations: pd.DataFrame) -> Snapshot:
    """``snapshot`` with every pod of a recommended workload given the recommended requests.

    Per resource, a row whose recommended value is NaN keeps the pods' current request; a value
    ≤ 0 is refused. A pod
    gets exactly the recommended (integer) request; its ``nonzero_requests`` (what kube-scheduler's
    scoring reads) becomes the same value, since a request set for the whole pod leaves no
    container without one. A limit that is set (> 0) and now below the request is raised to it
    (Kubernetes refuses a request above its limit). Usage, nodes and every other pod are unchanged.
    """
    missing = [c for c in (*KEY, *(col for _, col in RECOMMENDED)) if c not in recommendations]
    if missing:
        raise InputError(
            f"recommendations: missing column(s) {', '.join(missing)}; "
            "produce them with analyzer rightsize"
        )
    if recommendations.duplicated(KEY).any():
        row = recommendations.loc[recommendations.duplicated(KEY), KEY].iloc[0]
        raise InputError(f"recommendations: workload {'/'.join(map(str, row))} appears twice")
    pods = snapshot.pods.copy()
    if pods.empty or recommendations.empty:
        return replace(snapshot, pods=pods)
    keys = pd.MultiIndex.from_frame(workload_keys(pods).astype(str))
    wanted = pd.MultiIndex.from_frame(recommendations[KEY].astype(str))
    row_of = wanted.get_indexer(keys)
    for resource, column in RECOMMENDED:
        values = pd.to_numeric(recommendations[column], errors="coerce").to_numpy(np.float64)
        bad = ~np.isnan(values) & (values <= 0)
        if bad.any():
            row = recommendations.loc[bad].iloc[0]
            raise InputError(
                f"recommendations: {column} of {row['namespace']}/{row['owner_name']} is "
                f"{values[bad][0]:g}; a recommendation must be positive (NaN keeps the current "
                "request)"
            )
        new = np.where(row_of >= 0, values[np.maximum(row_of, 0)], np.nan)
        change = ~np.isnan(new)
        if not change.any():
            continue
        request = np.ceil(new[change]).astype(np.int64)
        pods.loc[change, f"requests:{resource}"] = request
        pods.loc[change, f"nonzero_requests:{resource}"] = request
        limit_col = f"limits:{resource}"
        if limit_col in pods:
            limits = pods.loc[change, limit_col].to_numpy(dtype=np.int64)
            pods.loc[change, limit_col] = np.where(
                (limits > 0) & (limits < request), request, limits
            )
    return replace(snapshot, pods=pods)


def changed_pods(before: Snapshot, after: Snapshot) -> int:
    """How many pods have other cpu or memory requests in ``after`` than in ``before``."""
    differ = np.zeros(len(before.pods), dtype=bool)
    for resource, _ in RECOMMENDED:
        column = f"requests:{resource}"
        differ |= before.pods[column].to_numpy() != after.pods[column].to_numpy()
    return int(differ.sum())
