"""What a monthly review recommended, as the ledger stores it (``analyzer.history.ledger``).

``ledger_payload`` collects, at the end of the reviewed month:

- per workload whose CPU or memory request the right-sizing changes: its key, its pool, its
  replicas (the month's last day's time-weighted mean), the per-pod requests it had and the ones
  recommended (null for a resource the recipe left alone);
- per pool: the decision's action (add / release / none), its node count and date, and the pool's
  node count on the last day of history (what "release 5" is counted from);
- the scheduler: today's configuration and the repack configuration the simulated decision
  recommends (null when the review ran without a snapshot or recommended keeping today's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from analyzer import __version__


def _num(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def workload_entries(
    changed: pd.DataFrame, replicas: Mapping[tuple[str, str, str], float]
) -> list[dict[str, Any]]:
    """One entry per recommended workload (``changed``: the right-sizing frame's changed rows);
    ``replicas`` maps a workload key to its replicas on the month's last day."""
    out = []
    for row in changed.to_dict("records"):
        key = (str(row["namespace"]), str(row["owner_kind"]), str(row["owner_name"]))
        entry: dict[str, Any] = {
            "namespace": key[0],
            "owner_kind": key[1],
            "owner_name": key[2],
            "pool": str(row["pool"]),
            "replicas": _num(replicas.get(key, row.get("replicas_max"))) or 0.0,
        }
        for resource, unit in (("cpu", "millicores"), ("memory", "bytes")):
            now = _num(row.get(f"{resource}_request_{unit}"))
            new = _num(row.get(f"{resource}_recommended_{unit}"))
            same = now is None or new is None or new == now
            entry[f"{resource}_request_{unit}"] = now
            entry[f"{resource}_recommended_{unit}"] = None if same else new
        if (
            entry["cpu_recommended_millicores"] is None
            and entry["memory_recommended_bytes"] is None
        ):
            continue
        out.append(entry)
    return out


def last_day_replicas(workload_days: pd.DataFrame) -> dict[tuple[str, str, str], float]:
    """Each workload's time-weighted replicas on its last day in ``workload_days``."""
    if workload_days.empty:
        return {}
    rows = workload_days.sort_values("day", kind="stable").drop_duplicates(
        ["namespace", "owner_kind", "owner_name"], keep="last"
    )
    return {
        (str(r.namespace), str(r.owner_kind), str(r.owner_name)): float(r.replicas_mean)
        for r in rows.itertuples()
    }


def pool_entries(payload: Mapping[str, Any], daily: pd.DataFrame) -> list[dict[str, Any]]:
    """One entry per reviewed pool: its decision and its node count on the last day."""
    out = []
    for pool in payload["pools"]:
        rows = daily[daily["pool"] == pool["name"]].sort_values("day")
        nodes = float(rows["nodes_mean"].iloc[-1]) if len(rows) else 0.0
        decision = pool["decision"]
        out.append(
            {
                "pool": str(pool["name"]),
                "action": decision["action"],
                "nodes": int(decision["nodes"]) if decision["action"] != "none" else 0,
                "by_date": decision["by_date"],
                "nodes_at_review": round(nodes, 3),
                "sentence": decision["sentence"],
            }
        )
    return out


def scheduler_entry(payload: Mapping[str, Any]) -> dict[str, str | None]:
    """Today's scheduler and the repack configuration recommended (None: none recommended)."""
    simulation = payload.get("simulation") or {}
    if not simulation.get("available"):
        return {"today": None, "recommended": None}
    repack = simulation.get("repack")
    recommends = any(
        (p.get("simulated_decision") or {}).get("action") == "change-scheduler"
        for p in payload["pools"]
    )
    return {"today": simulation.get("baseline"), "recommended": repack if recommends else None}


def ledger_payload(
    payload: Mapping[str, Any],
    daily: pd.DataFrame,
    changed: pd.DataFrame,
    workload_days: pd.DataFrame,
    history_end: str,
    recipe: str,
) -> dict[str, Any]:
    """The ledger record of one review (``analyzer.history.ledger.write_ledger`` adds the
    month and schema version)."""
    return {
        "history_end": history_end,
        "analyzer_version": __version__,
        "recipe": recipe,
        "workloads": workload_entries(changed, last_day_replicas(workload_days)),
        "pools": pool_entries(payload, daily),
        "scheduler": scheduler_entry(payload),
    }
