"""One day's pool and workload rollups for the history store (``docs/history.md`` defines them).

Everything is computed with numpy group-bys over the day's snapshot (no loop over pods or nodes):

- A node belongs to its pool (``tables.node_pools``); a pod to the pool of its node.
- *Time-weighted mean* of a quantity over the day = Σ value × (time it was present in the day)
  ÷ 24 h; *peak* = the highest total at any instant of the day (an interval ending at t and one
  starting at t do not overlap). Pods hold their node over ``core.pod_intervals.pod_intervals``;
  nodes exist from ``first_seen`` to ``last_seen`` (unknown = the whole day). What is still
  there at the day's last usage sample counts to midnight (data stopping at 23:55 is not a
  cluster emptying at 23:55).
- Pool *used* stats: the pool's usage summed over its nodes at each sample time of the day
  ``(midnight, next midnight]``, then avg/p95/p99/max over those totals.
- A workload is the pod's top owner as the snapshot resolves it (``workload_kind``/
  ``workload_name``: ReplicaSet → Deployment, Job → CronJob); a pod without a controller (or a
  static pod, owned by its Node) is its own workload, kind ``Pod``, named after the pod.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analyzer.core.frames import utc
from analyzer.core.pod_intervals import pod_intervals
from analyzer.core.snapshot import Snapshot
from analyzer.core.workloads import workload_keys
from analyzer.nightly.tables import PoolUsage, in_period, node_pools, pool_usage
from analyzer.usage.percentiles import grouped_stats

RESOURCES = (("cpu", "millicores"), ("memory", "bytes"))
__all__ = ["pool_rollups", "workload_days", "workload_keys", "workload_rollups"]


def interval_mean_peak(
    groups: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    weights: np.ndarray,
    *,
    lo: int,
    hi: int,
    n_groups: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per group: the time-weighted mean over ``[lo, hi)`` and the peak of Σ ``weights`` of the
    intervals ``[starts, ends)`` present (times in ns, integer weights ≥ 0).

    The peak is exact integer arithmetic: at equal times the ends are applied before the starts.
    """
    s = np.clip(starts, lo, hi)
    e = np.clip(ends, lo, hi)
    valid = e > s
    g, s, e = groups[valid], s[valid], e[valid]
    w = weights[valid].astype(np.int64)
    span = float(hi - lo)
    mean = np.bincount(g, weights=w.astype(np.float64) * (e - s) / span, minlength=n_groups)
    mean = mean.astype(np.float64)
    peak = np.zeros(n_groups, dtype=np.int64)
    if len(g) == 0:
        return mean, peak
    ev_group = np.concatenate([g, g])
    ev_time = np.concatenate([s, e])
    ev_start = np.concatenate([np.ones(len(g), bool), np.zeros(len(g), bool)])
    ev_delta = np.concatenate([w, -w])
    order = np.lexsort((ev_start, ev_time, ev_group))
    # Every interval closes inside [lo, hi], so the running total is back at 0 between groups.
    running = np.cumsum(ev_delta[order])
    # The events are sorted by group: each group's maximum over its own run of the array (an
    # integer maximum, the same as a group-by's; without building a pandas group-by per call).
    sorted_group = ev_group[order]
    first = np.flatnonzero(np.concatenate(([True], sorted_group[1:] != sorted_group[:-1])))
    peak[sorted_group[first]] = np.maximum.reduceat(running, first)
    return mean, peak


def _last_data(day: Snapshot, start: pd.Timestamp, end: pd.Timestamp) -> int:
    """The day's last instant with usage data (ns); ``end`` when the day has none."""
    stamps = day.node_usage["timestamp"]
    inside = stamps[in_period(stamps, start, end)]
    return (
        int(pd.Timestamp(inside.max()).as_unit("ns").value)
        if len(inside)
        else _day_bounds(start, end)[1]
    )


def _to_day_end(ends: np.ndarray, last_data: int, hi: int) -> np.ndarray:
    """Something still there at the day's last data instant is there to the end of the day (a
    snapshot collected just after midnight can stop at 23:55; nothing is known to end there)."""
    extended: np.ndarray = np.where(ends >= last_data, hi, ends)
    return extended


def _node_intervals(
    nodes: pd.DataFrame, lo: pd.Timestamp, hi: pd.Timestamp, last_data: int
) -> tuple[np.ndarray, np.ndarray]:
    first = utc(nodes["first_seen"]).fillna(lo).clip(lower=lo)
    last = _ns(utc(nodes["last_seen"]).fillna(hi))  # no record: the whole day
    return _ns(first), _to_day_end(last, last_data, _day_bounds(lo, hi)[1])


def _ns(times: pd.Series) -> np.ndarray:
    values: np.ndarray = pd.DatetimeIndex(times).as_unit("ns").asi8
    return values


def _uid_positions(uids: pd.Series, wanted: pd.Index) -> np.ndarray:
    """Position in ``wanted`` of each usage row's uid (-1: not wanted), via the categories."""
    categorical = pd.Categorical(uids) if not isinstance(uids.dtype, pd.CategoricalDtype) else uids
    codes = np.asarray(pd.Series(categorical).cat.codes)  # int32 or narrower: 4 bytes a row
    categories = pd.Series(categorical).cat.categories.astype(str)
    # code -1 (NaN) → -1; int32 positions (a pod count never reaches 2**31)
    per_category = np.append(wanted.get_indexer(categories), -1).astype(np.int32)
    positions: np.ndarray = per_category[codes]
    return positions


def _day_bounds(start: pd.Timestamp, end: pd.Timestamp) -> tuple[int, int]:
    return int(start.as_unit("ns").value), int(end.as_unit("ns").value)


def pool_rollups(
    day: Snapshot,
    start: pd.Timestamp,
    end: pd.Timestamp,
    *,
    method: str = "nearest-rank",
    usage: PoolUsage | None = None,
    intervals: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per pool for the day ``(start, end]`` of ``day`` (a snapshot sliced to the day).

    Columns as ``analyzer.history.capacity.POOL_SCHEMA`` (without ``schema_version``). ``usage``:
    the pools' usage stats of that day when the caller has them (the nightly run computes them
    once for its pool table too), else computed here. ``intervals``: ``pod_intervals(day)`` when
    the caller has it (``workload_rollups`` of the same day reads it too), never modified.
    """
    nodes = day.nodes.reset_index(drop=True)
    pool_of = node_pools(nodes)
    pools = sorted(pool_of.unique())
    n = len(pools)
    pool_idx = pd.Index(pools).get_indexer(pool_of.to_numpy()).astype(np.int64)
    names = pd.Index(nodes["node"].astype(str))
    lo, hi = _day_bounds(start, end)
    out = pd.DataFrame({"day": pd.Series([start] * n, dtype="datetime64[ns, UTC]"), "pool": pools})
    last_data = _last_data(day, start, end)
    node_start, node_end = _node_intervals(nodes, start, end, last_data)
    count_mean, count_peak = interval_mean_peak(
        pool_idx, node_start, node_end, np.ones(len(nodes)), lo=lo, hi=hi, n_groups=n
    )
    out["nodes_mean"], out["nodes_max"] = count_mean, count_peak

    if intervals is None:
        intervals = pod_intervals(day)
    pods = day.pods.set_index("uid").loc[intervals["uid"]].reset_index()
    node_idx = names.get_indexer(intervals["node"].astype(str))
    on_known = node_idx >= 0
    pod_pool = pool_idx[node_idx[on_known]]
    pod_start = _ns(utc(intervals["start"]))[on_known]
    pod_end = _to_day_end(_ns(utc(intervals["end"]))[on_known], last_data, hi)
    kind = pods["workload_kind"].astype("string").fillna("")
    daemonset = (kind == "DaemonSet") | (pods["owner_kind"].astype("string") == "DaemonSet")
    daemonset = daemonset.fillna(False).to_numpy(dtype=bool)[on_known]

    if usage is None:
        usage = pool_usage(day.node_usage, nodes, start=start, end=end, method=method)
    assert usage.pools == pools, (usage.pools, pools)

    for resource, unit in RESOURCES:
        alloc = nodes[f"allocatable:{resource}"].to_numpy(dtype=np.int64)
        mean, peak = interval_mean_peak(
            pool_idx, node_start, node_end, alloc, lo=lo, hi=hi, n_groups=n
        )
        out[f"{resource}_allocatable_mean_{unit}"] = mean
        out[f"{resource}_allocatable_peak_{unit}"] = peak.astype(np.float64)
        requests = pods[f"requests:{resource}"].to_numpy(dtype=np.int64)[on_known]
        for prefix, mask in (
            ("requested", np.ones(len(pod_pool), bool)),
            ("daemonset_requested", daemonset),
        ):
            mean, peak = interval_mean_peak(
                pod_pool[mask],
                pod_start[mask],
                pod_end[mask],
                requests[mask],
                lo=lo,
                hi=hi,
                n_groups=n,
            )
            out[f"{resource}_{prefix}_mean_{unit}"] = mean
            out[f"{resource}_{prefix}_peak_{unit}"] = peak.astype(np.float64)
        # The pool total at each sample time (NaN samples skipped), then stats over the times.
        stats = usage.stats[resource]
        out[f"{resource}_used_avg_{unit}"] = stats["avg"]
        out[f"{resource}_used_p95_{unit}"] = stats["p95"]
        out[f"{resource}_used_p99_{unit}"] = stats["p99"]
        out[f"{resource}_used_max_{unit}"] = stats["max"]
        if resource == "cpu":
            out["used_samples"] = stats["count"].astype(np.int64)

    # The largest node: most allocatable cpu, then memory, then the name (deterministic).
    ranked = pd.DataFrame(
        {
            "pool": pool_of.to_numpy(),
            "node": names.to_numpy(),
            "cpu": nodes["allocatable:cpu"].to_numpy(dtype=np.int64),
            "memory": nodes["allocatable:memory"].to_numpy(dtype=np.int64),
        }
    ).sort_values(["pool", "cpu", "memory", "node"], ascending=[True, False, False, True])
    largest = ranked.drop_duplicates("pool").set_index("pool")
    out["largest_node"] = out["pool"].map(largest["node"])
    out["largest_node_cpu_allocatable_millicores"] = out["pool"].map(largest["cpu"])
    out["largest_node_memory_allocatable_bytes"] = out["pool"].map(largest["memory"])
    return out


def workload_rollups(
    day: Snapshot,
    start: pd.Timestamp,
    end: pd.Timestamp,
    *,
    method: str = "nearest-rank",
    intervals: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per workload that held a node during the day ``(start, end]`` of ``day``.

    Columns as ``analyzer.history.capacity.WORKLOAD_SCHEMA`` (without ``schema_version``).
    ``restarts`` and ``oom_kills`` are null: the snapshot does not record them. ``intervals``:
    ``pod_intervals(day)`` when the caller has it (never modified).
    """
    lo, hi = _day_bounds(start, end)
    if intervals is None:
        intervals = pod_intervals(day)
    p_start = np.clip(_ns(utc(intervals["start"])), lo, hi)
    p_end = np.clip(
        _to_day_end(_ns(utc(intervals["end"])), _last_data(day, start, end), hi), lo, hi
    )
    ran = p_end > p_start
    intervals = intervals[ran].reset_index(drop=True)
    p_start, p_end = p_start[ran], p_end[ran]
    pods = day.pods.set_index("uid").loc[intervals["uid"]].reset_index()
    keys = workload_keys(pods)
    codes, uniques = pd.MultiIndex.from_frame(keys).factorize()
    codes = codes.astype(np.int64)
    n = len(uniques)
    out = pd.DataFrame(list(uniques), columns=["namespace", "owner_kind", "owner_name"])
    out.insert(0, "day", pd.Series([start] * n, dtype="datetime64[ns, UTC]"))
    duration = (p_end - p_start).astype(np.float64)

    # The pool most of its pod-time ran in (ties: the first pool by name).
    pool_of = node_pools(day.nodes)
    pod_pool = intervals["node"].astype(str).map(pool_of).fillna("(none)")
    share = pd.DataFrame({"w": codes, "pool": pod_pool.to_numpy(), "t": duration})
    by_pool = share.groupby(["w", "pool"], sort=True)["t"].sum().reset_index()
    by_pool = by_pool.sort_values(["w", "t", "pool"], ascending=[True, False, True])
    out["pool"] = by_pool.drop_duplicates("w").set_index("w")["pool"].reindex(range(n)).to_numpy()

    out["pods"] = np.bincount(codes, minlength=n).astype(np.int64)
    mean, peak = interval_mean_peak(
        codes, p_start, p_end, np.ones(len(codes)), lo=lo, hi=hi, n_groups=n
    )
    out["replicas_mean"], out["replicas_max"] = mean, peak
    pod_time = np.bincount(codes, weights=duration, minlength=n)
    for resource, unit in RESOURCES:
        for kind, label in (("requests", "request"), ("limits", "limit")):
            column = f"{kind}:{resource}"
            values = (
                pods[column].to_numpy(dtype=np.float64)
                if column in pods
                else np.full(len(pods), np.nan)
            )
            weighted = np.bincount(codes, weights=values * duration, minlength=n)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[f"{resource}_{label}_{unit}"] = weighted / pod_time

    # One mask over the usage rows and two value columns picked through it: the day's pod usage
    # is the largest table of a nightly run (63 M rows at 5,000 nodes), so it is never copied
    # whole (bench/memory.py; the values and their order are those of a copied table)
    usage = day.pod_usage
    uid_codes = _uid_positions(usage["uid"], pd.Index(intervals["uid"].astype(str)))
    known = (uid_codes >= 0) & in_period(usage["timestamp"], start, end).to_numpy(dtype=bool)
    ids = codes[uid_codes[known]].astype(np.int32 if n < 2**31 else np.int64)
    del uid_codes
    cpu = grouped_stats(ids, usage["cpu"].to_numpy(dtype=np.float64)[known], n, method)
    for stat in ("p50", "p90", "p95", "p99", "max"):
        out[f"cpu_used_{stat}_millicores"] = cpu[stat]
    memory = grouped_stats(ids, usage["memory"].to_numpy(dtype=np.float64)[known], n, method)
    out["memory_used_p99_bytes"] = memory["p99"]
    out["memory_used_max_bytes"] = memory["max"]
    out["cpu_samples"] = cpu["count"].astype(np.int64)
    out["restarts"] = pd.array([pd.NA] * n, dtype="Int64")
    out["oom_kills"] = pd.array([pd.NA] * n, dtype="Int64")
    return out.sort_values(["namespace", "owner_kind", "owner_name"]).reset_index(drop=True)


def workload_days(snapshot: Snapshot, *, method: str = "nearest-rank") -> pd.DataFrame:
    """The workload rows of every UTC day of ``snapshot`` that has pod usage samples (the days
    a nightly run of each day would store), oldest first: a snapshot as a small history, e.g. for
    a right-sizing recommendation from the snapshot's own usage.

    A sample at t covers the step ending at t, so a sample at 00:00 closes the day before.
    """
    stamps = snapshot.pod_usage["timestamp"]
    if len(stamps) == 0:
        return workload_rollups(snapshot, snapshot.start, snapshot.start, method=method)
    one_ns = pd.Timedelta(1, "ns")
    first = (pd.Timestamp(stamps.min()) - one_ns).floor("D")
    last = (pd.Timestamp(stamps.max()) - one_ns).floor("D")
    frames = [
        workload_rollups(snapshot, day, day + pd.Timedelta(days=1), method=method)
        for day in pd.date_range(first, last, freq="D")
    ]
    return pd.concat(frames, ignore_index=True)
