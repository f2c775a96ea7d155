"""Growth made into pods and nodes: one month of a ``GrowthPlan`` applied to the busiest window.

- **Workloads** are the pods' (namespace, workload name) — the owner's name where the snapshot
  has no workload name, else the pod's own name; DaemonSet and static pods never grow (they
  follow the nodes). Today's replicas r0 = the most pods of the workload holding a node (or
  pending) at once in the window.
- **Lanes**: the workload's pods ordered by (arrival, uid); pod j is in lane j mod r0, so a
  steady workload has one pod per lane and a rolled-out one its successive pods in the same
  lane. Month m's target t (``GrowthPlan.replicas``): t > r0 adds t − r0 copies of lanes
  0, 1, ..., r0−1, 0, 1, ... (every pod of the lane, same requests, constraints, times and usage
  samples, a new uid); t < r0 removes lanes r0−1, r0−2, ... down to t.
- **Manifest pods** run the whole window, no usage samples (usage-aware strategies see them
  idle), unbound in the data (attributed to their change's ``pool``).
- **Extra nodes** (the nodes-to-add search): copies of the pool's most common node shape
  (allocatable; ties: the first by name), present the whole window, each with a copy of that
  node's DaemonSet pods.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from analyzer.core.pod_intervals import pinned_pods
from analyzer.core.snapshot import Snapshot
from analyzer.core.snapshot_schema import resource_column
from analyzer.whatif.growth_plan import GrowthPlan

COPY_MARK = "~g"  # copies' uids: <uid>~g<month>.<k>; never a Kubernetes uid character


def workload_keys(pods: pd.DataFrame) -> list[tuple[str, str]]:
    """(namespace, workload) of every pod (module docstring's rule)."""

    def column(name: str) -> pd.Series:
        if name not in pods.columns:
            return pd.Series([""] * len(pods), index=pods.index)
        return pods[name].fillna("").astype(str)

    name = column("workload_name")
    name = name.where(name != "", column("owner_name"))
    name = name.where(name != "", column("name"))
    return list(zip(column("namespace").tolist(), name.tolist(), strict=True))


def _arrivals(pods: pd.DataFrame) -> pd.Series:
    out = pd.to_datetime(pods["scheduled"], utc=True)
    for col in ("created", "first_seen"):
        out = out.fillna(pd.to_datetime(pods[col], utc=True))
    return out


def _ends(pods: pd.DataFrame, end: pd.Timestamp) -> pd.Series:
    out = pd.to_datetime(pods["finished"], utc=True)
    return out.fillna(pd.to_datetime(pods["last_seen"], utc=True)).fillna(end)


def lanes(snapshot: Snapshot) -> dict[tuple[str, str], list[list[int]]]:
    """Per growing workload, its lanes: lists of pod row positions (module docstring)."""
    pods = snapshot.pods
    keys = workload_keys(pods)
    pinned = pinned_pods(pods).to_numpy()
    start = _arrivals(pods).fillna(snapshot.start).to_numpy()
    stop = _ends(pods, snapshot.end).to_numpy()
    uids = pods["uid"].astype(str).tolist()
    members: dict[tuple[str, str], list[int]] = {}
    for i, key in enumerate(keys):
        if not pinned[i]:
            members.setdefault(key, []).append(i)
    out = {}
    for key, rows in members.items():
        rows.sort(key=lambda i: (start[i], uids[i]))
        # the most pods at once: +1 at each start, -1 at each end (ends first at a tie)
        events = sorted([(start[i], 1) for i in rows] + [(stop[i], -1) for i in rows],
                        key=lambda e: (e[0], e[1]))  # fmt: skip
        held = peak = 0
        for _, step in events:
            held += step
            peak = max(peak, held)
        today = max(1, peak)
        out[key] = [rows[j::today] for j in range(today)]
    return out


def _manifest_rows(
    snapshot: Snapshot, pod: Mapping[str, object], copies: int, tag: str
) -> pd.DataFrame:
    """``copies`` rows of a manifest's pod running the whole window, unbound."""
    pods = snapshot.pods
    requests = pod["requests"]
    assert isinstance(requests, Mapping)
    rows = []
    for k in range(copies):
        row: dict[str, object] = dict.fromkeys(pods.columns, pd.NA)
        row.update(
            uid=f"{tag}.{k}", namespace=pod["namespace"], name=f"{pod['name']}-{tag}-{k}",
            owner_kind="ReplicaSet", owner_name=pod["name"], workload_kind=pod["kind"],
            workload_name=pod["name"], qos_class="Burstable", phase="Running",
            labels=pod["labels"], node_selector=pod["node_selector"],
            tolerations=pod["tolerations"], affinity=pod["affinity"],
            topology_spread=pod["topology_spread"], priority_class=pod["priority_class"],
            created=snapshot.start, scheduled=snapshot.start, first_seen=snapshot.start,
            last_seen=snapshot.end,
        )  # fmt: skip
        for col in pods.columns:
            kind, _, resource = str(col).partition(":")
            if kind in ("requests", "nonzero_requests", "limits") and resource:
                value = int(requests.get(resource, 0))
                if kind == "nonzero_requests" and value == 0:  # the scheduler's defaults
                    value = 100 if resource == "cpu" else 200 * 2**20
                row[col] = 0 if kind == "limits" else value
        rows.append(row)
    return pd.DataFrame(rows, columns=pods.columns)


def _copies(
    snapshot: Snapshot, rows: list[int], tags: list[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The pod rows at ``rows`` with new uids ``<uid><tag>`` and their usage samples (one take
    and one merge for every copy: a month adds thousands)."""
    pods = snapshot.pods.iloc[rows].copy()
    old = pods["uid"].astype(str).to_numpy()
    suffix = np.array(tags, dtype=object)
    pods["uid"] = old + suffix
    pods["name"] = pods["name"].astype(str).to_numpy() + suffix
    usage = snapshot.pod_usage
    pairs = pd.DataFrame({"uid": old, "new": pods["uid"].to_numpy()})
    mine = usage.assign(uid=usage["uid"].astype(str)).merge(pairs, on="uid")
    mine = mine.drop(columns="uid").rename(columns={"new": "uid"})[list(usage.columns)]
    return pods, mine


def _extra_nodes(snapshot: Snapshot, extra: Mapping[str, int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Node rows of the extra nodes per pool and copies of their template's DaemonSet pods."""
    nodes = snapshot.nodes
    pools = nodes["pool"].fillna("").astype(str) if "pool" in nodes.columns else None
    alloc = [c for c in nodes.columns if str(c).startswith("allocatable:")]
    new_nodes, new_pods = [], []
    pods = snapshot.pods
    pinned = pinned_pods(pods)
    for pool, count in sorted(extra.items()):
        if count <= 0:
            continue
        mine = nodes[pools == pool] if pools is not None else nodes
        shapes = mine.sort_values("node")[alloc].astype(str).agg("|".join, axis=1)
        common = shapes.value_counts(sort=True)
        best = common[common == common.max()].index
        template = mine.sort_values("node")[shapes.isin(best[:1])].iloc[0]
        ds = pods[pinned & (pods["node"].astype(str) == str(template["node"]))]
        for i in range(count):
            name = f"{pool or 'default'}-growth-{i}"
            row = template.copy()
            row["node"], row["first_seen"], row["last_seen"] = name, snapshot.start, snapshot.end
            new_nodes.append(row)
            if len(ds):
                copy = ds.copy()
                copy["uid"] = copy["uid"].astype(str) + f"@{name}"
                copy["node"] = name
                new_pods.append(copy)
    node_frame = pd.DataFrame(new_nodes, columns=nodes.columns)
    pod_frame = pd.concat(new_pods) if new_pods else pods.iloc[0:0]
    return node_frame, pod_frame


def grown(
    snapshot: Snapshot,
    plan: GrowthPlan,
    month: int,
    extra_nodes: Mapping[str, int] | None = None,
    lanes_of: dict[tuple[str, str], list[list[int]]] | None = None,
) -> tuple[Snapshot, dict[str, str]]:
    """``snapshot`` with month ``month``'s replicas (module docstring) and ``extra_nodes`` per
    pool; and the pool each manifest pod's uid is attributed to (its change's ``pool``)."""
    lanes_of = lanes(snapshot) if lanes_of is None else lanes_of
    drop: list[int] = []
    add_pods, add_usage = [], []
    rows: list[int] = []
    tags: list[str] = []
    for key, groups in lanes_of.items():
        today = len(groups)
        target = plan.replicas(key[0], key[1], today, month)
        if target < today:
            drop.extend(i for lane in groups[target:] for i in lane)
        for k in range(max(0, target - today)):
            rows.extend(groups[k % today])
            tags.extend([f"{COPY_MARK}{month}.{k}"] * len(groups[k % today]))
    if rows:
        pods, usage = _copies(snapshot, rows, tags)
        add_pods.append(pods)
        add_usage.append(usage)
    home: dict[str, str] = {}
    for n, change in enumerate(plan.changes):
        if change.pod is not None and month >= change.month and change.copies:
            tag = f"manifest{n}{COPY_MARK}{month}"
            add_pods.append(_manifest_rows(snapshot, change.pod, change.copies, tag))
            home.update({f"{tag}.{k}": change.pool or "" for k in range(change.copies)})
    nodes_add, ds_add = _extra_nodes(snapshot, extra_nodes or {})
    pods = snapshot.pods.drop(index=snapshot.pods.index[drop]) if drop else snapshot.pods
    frames = [f for f in (pods, *add_pods, ds_add) if len(f)]
    new_pods = pd.concat(frames, ignore_index=True) if len(frames) > 1 else pods
    usage = snapshot.pod_usage
    if drop:
        gone = set(snapshot.pods["uid"].iloc[drop].astype(str))
        usage = usage[~usage["uid"].astype(str).isin(gone)]
    if add_usage:
        usage = pd.concat([usage.astype({"uid": str}), *add_usage], ignore_index=True)
        usage["uid"] = usage["uid"].astype("category")
    nodes = snapshot.nodes
    if len(nodes_add):
        nodes = pd.concat([nodes, nodes_add], ignore_index=True)
    for col in new_pods.columns:  # concatenation of an empty frame may loosen an integer column
        if str(col).partition(":")[0] in ("requests", "nonzero_requests", "limits"):
            new_pods[col] = new_pods[col].fillna(0).astype(np.int64)
    out = Snapshot(
        meta=snapshot.meta, nodes=nodes.reset_index(drop=True),
        pods=new_pods.reset_index(drop=True), node_usage=snapshot.node_usage,
        pod_usage=usage.reset_index(drop=True), objects=snapshot.objects,
        node_state=snapshot.node_state,
    )  # fmt: skip
    return out, home


def requests_of(snapshot: Snapshot, resource: str) -> np.ndarray:
    """Each pod's request of ``resource`` (0 where the column is missing), snapshot order."""
    col = resource_column("requests", resource)
    if col not in snapshot.pods.columns:
        return np.zeros(len(snapshot.pods), dtype=np.float64)
    out: np.ndarray = snapshot.pods[col].fillna(0).to_numpy(dtype=np.float64)
    return out
