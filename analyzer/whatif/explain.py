"""Why an outcome came out as it did: why pods waited, and which pods went where.

- **wait reasons**: for every pod that waited inside the window, the last refusal the replay
  recorded (``ReplayResult.refusals``: kube-scheduler's "0/N nodes are available: …" counts).
  Grouped by the pod's pool (the pool of the node it really ran on) and reason: how many waiting
  pods were refused for that reason, and by how many nodes (the lower median over those pods).
- **moves**: pods that really ran (not DaemonSet/static) and were placed in another pool than
  they ran in, counted by (pool they ran in, pool the strategy put them in); "never placed"
  when the strategy placed them nowhere.
- per-pod listings for the CSV files: every waiting pod (wait in seconds, last refusal) and every
  pod placed on another node than the one it really ran on.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from analyzer.replay.input import ReplayInput
from analyzer.replay.result import ReplayResult

NO_POOL = "(no pool)"
UNPLACED = "never placed"
UNBOUND = "not bound"
WAIT_REASON_COLUMNS = ["pool", "reason", "pods", "nodes_refusing_median"]
MOVE_COLUMNS = ["from_pool", "to_pool", "pods"]
WAITING_POD_COLUMNS = [
    "namespace",
    "name",
    "uid",
    "pool",
    "wait_s",
    "observed_node",
    "replayed_node",
    "last_refusal",
]
MOVED_POD_COLUMNS = [
    "namespace",
    "name",
    "uid",
    "observed_node",
    "replayed_node",
    "from_pool",
    "to_pool",
]


GIB = 2**30
BYTE_RESOURCES = ("memory", "ephemeral-storage")


def _amount(resource: str, value: int) -> str:
    if resource == "cpu":
        return f"{value / 1000:.3g} cores"
    if resource in BYTE_RESOURCES or resource.startswith("hugepages-"):
        return f"{value / GIB:.3g} GiB {resource}"
    return f"{value:,} {resource}"


def shape_labels(shapes: pd.DataFrame) -> dict[int, str]:
    """Pod shape → "0.3 cores, 0.312 GiB memory, 1 GiB ephemeral-storage" (the page's units:
    CPU in cores, memory in GiB), from ``FragmentationResult.shapes``' request columns."""
    skip = {"shape", "label", "pods", "share"}
    resources = [c for c in shapes.columns if c not in skip]
    out: dict[int, str] = {}
    for _, row in shapes.iterrows():
        parts = [_amount(r, int(row[r])) for r in resources if int(row[r]) > 0]
        out[int(row["shape"])] = ", ".join(parts) or "no requests"
    return out


def node_pools(inp: ReplayInput) -> list[str]:
    """The pool of every node (``NO_POOL`` where the snapshot has none)."""
    nodes = inp.snapshot.nodes
    if "pool" not in nodes.columns:
        return [NO_POOL] * len(inp.node_names)
    return [str(p) if isinstance(p, str) and p else NO_POOL for p in nodes["pool"].tolist()]


def _pool_of(pools: list[str], node: int, missing: str) -> str:
    return pools[node] if node >= 0 else missing


def wait_reasons(inp: ReplayInput, result: ReplayResult) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(reasons by pool, one row per waiting pod) — see the module docstring."""
    pools = node_pools(inp)
    pods = inp.snapshot.pods
    names, namespaces = pods["name"].astype(str).tolist(), pods["namespace"].astype(str).tolist()
    per_pod: list[dict[str, Any]] = []
    counted: dict[tuple[str, str], list[int]] = {}
    for pod in np.flatnonzero(result.waited).tolist():
        refusal = result.refusals.get(pod)
        pool = _pool_of(pools, int(inp.real_node[pod]), UNBOUND)
        per_pod.append(
            {
                "namespace": namespaces[pod],
                "name": names[pod],
                "uid": inp.pod_uids[pod],
                "pool": pool,
                "wait_s": int(result.wait[pod]) / 1e9,
                "observed_node": _node(inp, int(inp.real_node[pod])),
                "replayed_node": _node(inp, int(result.node[pod])),
                "last_refusal": refusal.message() if refusal else "",
            }
        )
        if refusal is None:
            continue
        for reason, nodes in refusal.reasons:
            # a reason that is no filter's (its node left, never bound) counts no nodes
            counted.setdefault((pool, reason), []).append(nodes if refusal.nodes else -1)
    rows = [
        {
            "pool": pool,
            "reason": reason,
            "pods": len(nodes),
            # the lower median: a count one of these pods really saw (an integer)
            "nodes_refusing_median": (
                int(np.quantile(nodes, 0.5, method="lower")) if min(nodes) >= 0 else None
            ),
        }
        for (pool, reason), nodes in counted.items()
    ]
    table = pd.DataFrame(rows, columns=WAIT_REASON_COLUMNS)
    table = table.sort_values(
        ["pods", "nodes_refusing_median", "pool", "reason"],
        ascending=[False, False, True, True],
        na_position="last",
    ).reset_index(drop=True)
    return table, pd.DataFrame(per_pod, columns=WAITING_POD_COLUMNS)


def _node(inp: ReplayInput, node: int) -> str:
    return inp.node_names[node] if node >= 0 else ""


def moves(inp: ReplayInput, result: ReplayResult) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(pods by from-pool → to-pool, one row per pod placed on another node) for pods that
    really ran and are not DaemonSet/static pods."""
    pools = node_pools(inp)
    ran = np.flatnonzero(~inp.pinned & (inp.real_node >= 0))
    real, now = inp.real_node[ran], result.node[ran]
    from_pool = [pools[n] for n in real.tolist()]
    to_pool = [_pool_of(pools, n, UNPLACED) for n in now.tolist()]
    moved = real != now
    # the table: moves to another pool (or nowhere) only — they explain pool-bound pods crowded
    # out; moves within a pool are in the listing
    table = (
        pd.DataFrame({"from_pool": from_pool, "to_pool": to_pool, "moved": moved})
        .loc[lambda f: f["moved"] & (f["from_pool"] != f["to_pool"])]
        .groupby(["from_pool", "to_pool"], as_index=False)
        .size()
        .rename(columns={"size": "pods"})
    )
    table = table.sort_values(["pods", "from_pool", "to_pool"], ascending=[False, True, True])
    pods = inp.snapshot.pods
    index = ran[moved]
    listing = pd.DataFrame(
        {
            "namespace": pods["namespace"].astype(str).to_numpy()[index],
            "name": pods["name"].astype(str).to_numpy()[index],
            "uid": np.array(inp.pod_uids, dtype=object)[index],
            "observed_node": [inp.node_names[n] for n in inp.real_node[index].tolist()],
            "replayed_node": [_node(inp, n) for n in result.node[index].tolist()],
            "from_pool": np.array(from_pool, dtype=object)[moved],
            "to_pool": np.array(to_pool, dtype=object)[moved],
        },
        columns=MOVED_POD_COLUMNS,
    )
    return table.reset_index(drop=True)[MOVE_COLUMNS], listing


def why_sentence(strategy: str, waiting: pd.DataFrame, pool_moves: pd.DataFrame) -> str:
    """One sentence: how many pods waited, from which pools, the most common last refusal, and
    how many pods the strategy put in another pool than they ran in ("" when nothing to say)."""
    parts = []
    if len(waiting):
        pools = waiting["pool"].value_counts()
        listed = ", ".join(
            f"{count:,} never bound in reality" if pool == UNBOUND else f"{count:,} of pool {pool}"
            for pool, count in pools.head(3).items()
        )
        common = waiting["last_refusal"].value_counts()
        message = str(common.index[0]).rstrip(".")
        parts.append(
            f"{_pods(len(waiting))} waited ({listed}{', …' if len(pools) > 3 else ''}); the "
            f'most common last refusal ({_pods(int(common.iloc[0]))}): "{message}"'
        )
    across = pool_moves[pool_moves["to_pool"] != UNPLACED]
    if len(across):
        top = across.iloc[0]
        parts.append(
            f"{_pods(int(across['pods'].sum()))} placed in another pool than they ran in "
            f"(most: {int(top['pods']):,} from {top['from_pool']} to {top['to_pool']})"
        )
    return f"{strategy}: " + "; ".join(parts) + "." if parts else ""


def _pods(count: int) -> str:
    return f"{count:,} pod" if count == 1 else f"{count:,} pods"
