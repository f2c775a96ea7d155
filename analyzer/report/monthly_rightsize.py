"""The monthly review's right-sizing: recommendations from the month's workload history.

``rightsize_review(review, recipe)`` runs ``analyzer.monthly.rightsize.recommend`` over the
reviewed month's workload-day rows (``Review.workload_days``, read with the rest of the review:
no second read of the history), with the whole month as its window, and adds to the payload:

- ``workloads[].current`` / ``workloads[].recommended``: per-pod requests ``{cpu_cores,
  memory_gib}`` (current = the workload's last day in the month; recommended null when skipped,
  and ``workloads[].rightsize_skipped`` says why);
- ``rightsizing``: the recipe, why it is the default, the counts and the requests × peak replicas
  before and after.

The page's "top right-sizing changes" table is ordered by the CPU the change frees over the
workload's peak replicas (cores), then memory. ``docs/monthly.md`` "Right-sizing" explains it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analyzer.monthly.review import Review
from analyzer.monthly.rightsize import KEY, parse_recipe, recommend
from analyzer.report.views import Column, TableView

GIB = 2**30
DEFAULT_RECIPE = "krr"
DEFAULT_WHY = (
    "krr is the default: a monthly review proposes requests a team applies once, and krr's rule "
    "(CPU the largest daily p95, memory the month's observed max + 15 %) never sets memory under "
    "any peak of the month, so the nodes the scenarios release do not rest on memory the "
    "workloads were seen to use; vpa's p90 targets suit a recommender that keeps adjusting"
)
TOP_CHANGES = 15


@dataclass
class Rightsizing:
    """The recommendation frame of the month and what the page and report.json show of it."""

    recipe: str
    description: str
    frame: pd.DataFrame  # analyzer.monthly.rightsize recommendation frame
    summary: dict[str, Any]

    def changed(self) -> pd.DataFrame:
        """The recommended workloads whose CPU or memory request changes."""
        f = self.frame
        ok = f["skipped_reason"] == ""
        cpu = pd.to_numeric(f["cpu_change_millicores"], errors="coerce").fillna(0) != 0
        mem = pd.to_numeric(f["memory_change_bytes"], errors="coerce").fillna(0) != 0
        return f[ok & (cpu | mem)]

    def changed_in_pool(self, pool: str) -> int:
        """How many workloads of ``pool`` (their pool on their last day) change a request."""
        return int((self.changed()["pool"] == pool).sum())


def _totals(frame: pd.DataFrame) -> dict[str, Any]:
    replicas = pd.to_numeric(frame["replicas_max"], errors="coerce").to_numpy(np.float64)
    out: dict[str, Any] = {}
    for resource, unit, scale, key in (
        ("cpu", "millicores", 1000.0, "cpu_cores"),
        ("memory", "bytes", float(GIB), "memory_gib"),
    ):
        current = pd.to_numeric(frame[f"{resource}_request_{unit}"], errors="coerce")
        new = pd.to_numeric(frame[f"{resource}_recommended_{unit}"], errors="coerce")
        after = new.fillna(current).to_numpy(np.float64)
        now = current.to_numpy(np.float64)
        out.setdefault("before", {})[key] = float(np.nansum(now * replicas) / scale)
        out.setdefault("after", {})[key] = float(np.nansum(after * replicas) / scale)
    return out


def rightsize_review(review: Review, recipe_text: str = DEFAULT_RECIPE) -> Rightsizing:
    """Recommend over the reviewed month and add the results to ``review.payload``."""
    recipe = parse_recipe(recipe_text)
    rows = review.workload_days
    frame = recommend(rows, recipe, days=review.month.days)
    ok = frame["skipped_reason"] == ""
    summary = {
        "recipe": recipe.name,
        "description": recipe.describe(),
        "default_recipe": DEFAULT_RECIPE,
        "why_default": DEFAULT_WHY,
        "window": {
            "first_day": review.month.first.isoformat(),
            "last_day": review.month.last.isoformat(),
        },
        "workloads": len(frame),
        "recommended": int(ok.sum()),
        "skipped": int((~ok).sum()),
        "skipped_by_reason": skipped_by_reason(frame.loc[~ok, "skipped_reason"]),
        "requested_times_peak_replicas": _totals(frame) if len(frame) else None,
    }
    result = Rightsizing(recipe.name, recipe.describe(), frame, summary)
    summary["changed"] = len(result.changed()) if len(frame) else 0
    review.payload["rightsizing"] = summary
    _join_workloads(review.payload["workloads"], frame)
    return result


def _pair(cpu_m: Any, mem_b: Any) -> dict[str, float | None]:
    def num(v: Any, scale: float) -> float | None:
        return None if v is None or pd.isna(v) else float(v) / scale

    return {"cpu_cores": num(cpu_m, 1000.0), "memory_gib": num(mem_b, float(GIB))}


def _join_workloads(records: list[dict[str, Any]], frame: pd.DataFrame) -> None:
    """``current``, ``recommended`` and ``rightsize_skipped`` on every workload record."""
    by_key = {
        tuple(r): i for i, r in enumerate(frame[KEY].astype(str).itertuples(index=False, name=None))
    }
    cols = [frame[c].tolist() for c in ("cpu_request_millicores", "memory_request_bytes",
            "cpu_recommended_millicores", "memory_recommended_bytes", "skipped_reason")]  # fmt: skip
    for record in records:
        i = by_key.get((record["namespace"], record["owner_kind"], record["owner_name"]))
        if i is None:
            record["current"] = {"cpu_cores": None, "memory_gib": None}
            record["recommended"] = {"cpu_cores": None, "memory_gib": None}
            record["rightsize_skipped"] = "no workload rows in the month"
            continue
        record["current"] = _pair(cols[0][i], cols[1][i])
        record["recommended"] = _pair(cols[2][i], cols[3][i])
        record["rightsize_skipped"] = cols[4][i]


def changes_frame(rs: Rightsizing) -> pd.DataFrame:
    """The changed workloads in page units, most CPU freed (over peak replicas) first."""
    f = rs.changed()
    if f.empty:
        return pd.DataFrame(columns=[c.key for c in CHANGE_COLUMNS])
    num = {c: pd.to_numeric(f[c], errors="coerce") for c in f.columns if c not in KEY}
    replicas = num["replicas_max"]
    cpu_now, cpu_new = (
        num["cpu_request_millicores"] / 1000.0,
        num["cpu_recommended_millicores"] / 1000.0,
    )
    mem_now, mem_new = num["memory_request_bytes"] / GIB, num["memory_recommended_bytes"] / GIB
    basis, mem_max = num["cpu_basis_millicores"] / 1000.0, num["memory_max_bytes"] / GIB
    out = pd.DataFrame(
        {
            "workload": f["namespace"] + "/" + f["owner_name"],
            "owner_kind": f["owner_kind"],
            "pool": f["pool"],
            "replicas_max": replicas,
            "cpu": [_arrow(a, b, 3) for a, b in zip(cpu_now, cpu_new, strict=True)],
            "memory": [_arrow(a, b, 2) for a, b in zip(mem_now, mem_new, strict=True)],
            "evidence": [
                f"CPU {_num(c, 3)} cores, memory max {_num(m, 2)} GiB, {int(d)} days"
                + (f"; {r}" if r else "")
                for c, m, d, r in zip(basis, mem_max, num["days"], f["rules"], strict=True)
            ],
            "cpu_change_total": num["cpu_change_millicores"].fillna(0) * replicas / 1000.0,
            "memory_change_total": num["memory_change_bytes"].fillna(0) * replicas / GIB,
        }
    )
    return out.sort_values(
        ["cpu_change_total", "memory_change_total", "workload"], kind="stable"
    ).reset_index(drop=True)


def _num(value: float, digits: int) -> str:
    return "–" if pd.isna(value) else f"{value:,.{digits}f}"


def _arrow(now: float, new: float, digits: int) -> str:
    """ "2.100 → 1.500" (the recommendation "–" when the recipe keeps the request)."""
    return f"{_num(now, digits)} → {_num(new, digits)}"


CHANGE_COLUMNS = [
    Column("workload", "Workload"), Column("owner_kind", "Kind"), Column("pool", "Pool"),
    Column("replicas_max", "Peak replicas", "int"),
    Column("cpu", "CPU per pod, now → recommended (cores)"),
    Column("memory", "Memory per pod, now → recommended (GiB)"),
    Column("evidence", "Evidence (per pod: the recipe's CPU statistic, memory max, days; rules)"),
    Column("cpu_change_total", "Change × peak replicas, CPU (cores)", "num", 2),
    Column("memory_change_total", "Change × peak replicas, memory (GiB)", "num", 2),
]  # fmt: skip


def changes_table(rs: Rightsizing) -> TableView:
    frame = changes_frame(rs)
    return TableView(
        "rightsizing_changes",
        f"Top right-sizing changes ({len(frame)} workloads change a request)",
        CHANGE_COLUMNS,
        frame,
        limit=TOP_CHANGES,
    )


def skipped_by_reason(reasons: pd.Series) -> list[dict[str, Any]]:
    """Skipped workloads counted by the kind of reason (the text before its first " (", e.g.
    "not running on 2026-10-31, the window's last day", without the workload's own count of
    samples or days), most frequent first."""
    stems = reasons.astype(str).str.split(" (", n=1, regex=False).str[0]
    # "24 usage samples, fewer than --min-samples 100" → "fewer than --min-samples 100 usage
    # samples" (the workload's own figure stays in rightsizing.csv)
    stems = stems.str.replace(
        r"^\d+ (usage samples|day\(s\) of usage history), fewer than (--min-\S+ \d+)$",
        r"fewer than \2 \1",
        regex=True,
    )
    counts = stems.value_counts(sort=False)
    ordered = sorted(counts.items(), key=lambda kv: (-int(kv[1]), str(kv[0])))
    return [{"reason": str(k), "workloads": int(v)} for k, v in ordered]


def _skipped_text(s: dict[str, Any], shown: int = 3) -> str:
    """``1,243 skipped: 1,200 not running on …; 43 …`` (every reason in rightsizing.csv)."""
    if not s["skipped"]:
        return "none skipped"
    parts = [f"{r['workloads']:,} {r['reason']}" for r in s["skipped_by_reason"][:shown]]
    more = len(s["skipped_by_reason"]) - shown
    tail = f"; {more} other reason(s)" if more > 0 else ""
    return (
        f"{s['skipped']:,} skipped: {'; '.join(parts)}{tail} — each workload's reason is in "
        "rightsizing.csv"
    )


def sentence(rs: Rightsizing) -> str:
    """The section's sentence, from ``payload["rightsizing"]``'s values."""
    s = rs.summary
    totals = s["requested_times_peak_replicas"]
    if not s["workloads"]:
        return f"Recipe {rs.description}: the month has no workload history to right-size."
    return (
        f"Recipe {rs.description}, over {s['window']['first_day']} – {s['window']['last_day']}: "
        f"{s['recommended']} of {s['workloads']} workloads have a recommendation "
        f"({_skipped_text(s)}) and {s['changed']} "
        f"change a request. Requests × peak replicas: CPU {totals['before']['cpu_cores']:,.1f} → "
        f"{totals['after']['cpu_cores']:,.1f} cores, memory "
        f"{totals['before']['memory_gib']:,.1f} → {totals['after']['memory_gib']:,.1f} GiB."
    )
