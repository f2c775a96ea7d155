"""Right-sizing recipes over the workload history: per workload, the per-pod requests to set.

Input: workload-day rows (``history/capacity.py`` ``WORKLOAD_SCHEMA``: ``read_workloads`` of a
history folder, or ``nightly.capacity_rollups.workload_days`` of a snapshot). Output, the
**recommendation frame** every other stage reads (``core.workloads.apply_recommendations``, the
joint right-size-then-repack simulation, the CSV/YAML of ``analyzer rightsize``) — one row per
workload, these columns kept exactly:

=============================  ==========  ====================================================
column                         unit        meaning
=============================  ==========  ====================================================
namespace, owner_kind,         —           the workload (``core.workloads.workload_keys``)
owner_name
pool                           —           its pool on the last day it ran
cpu_request_millicores         millicores  current request per pod (its last day in the window)
memory_request_bytes           bytes       current request per pod
cpu_recommended_millicores     millicores  recommended request per pod; NaN = none, keep current
memory_recommended_bytes       bytes       same for memory
days                           days        history days with usage samples that were used
skipped_reason                 —           "" when recommended, else why not (one sentence)
=============================  ==========  ====================================================

Evidence columns (documented in docs/rightsizing.md): ``recipe``, ``samples``, ``first_day``,
``last_day``, ``replicas_max``, ``cpu_limit_millicores``, ``memory_limit_bytes``,
``cpu_basis_millicores`` / ``memory_basis_bytes`` (the statistic before headroom),
``cpu_max_millicores`` / ``memory_max_bytes`` (observed per-pod maxima), the VPA bounds
``{cpu,memory}_{lower,upper}_bound_{millicores,bytes}`` (NaN for other recipes),
``cpu_change_millicores``, ``memory_change_bytes``, ``cpu_change_pct``, ``memory_change_pct``,
``oom_kills`` (nullable: null = not exported), ``oom``, ``hpa``, ``rules`` (which rules raised the
value), ``note`` (what the kind means for applying it).

Rules (docs/rightsizing.md gives each with its source):

- **Days to window.** The history holds one row per workload and day, with that day's per-pod
  percentiles. A multi-day percentile is taken as the **maximum of the daily percentiles**: the
  pooled p-th percentile of several days can never exceed the largest daily one (each day has at
  least a share p of its samples at or below its own, hence below the largest), so this never
  recommends less than the exact pooled value would; a quiet day never hides a busy one. VPA's
  memory statistic is, as in VPA, a percentile **of the daily peaks** (nearest rank over days).
- **Recipes.** ``vpa``: target = CPU max-of-daily p90 × 1.15, memory p90 of daily peaks × 1.15,
  at least 25 m / 250 MiB; lower bound p50 × 1.15 × (1 + 0.001/c)^-2, upper bound
  p95 × 1.15 × (1 + 1/c), c = days of history (the VPA recommender's confidence). ``krr``: CPU
  max-of-daily p95, memory max × 1.15, at least 10 m / 100 MiB. ``percentile:P,headroom:H`` per
  resource (syntax in :func:`parse_recipe`), at least 10 m / 100 MiB.
- **Memory never below the observed max** (every recipe). **OOM bump**: a workload with OOM kills
  in the window gets at least 1.25 × its memory limit (× its observed max when it has no limit),
  krr's rule; null kill counts read "not exported". **HPA**: flagged, never skipped ("unknown"
  when no HPA data is given). **Minimum history**: at least ``min_days`` days with samples and
  ``min_samples`` usage samples (krr's 100 points), and running on the window's last day.
- Recommendations are rounded **up** to whole millicores and whole MiB.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analyzer.core.errors import InputError
from analyzer.usage.percentiles import grouped_stats

KEY = ["namespace", "owner_kind", "owner_name"]
MIB = 2**20
DAY = pd.Timedelta(days=1)
OOM_BUMP = 0.25  # krr: oom_memory_buffer_percentage = 25
VPA_MARGIN = 0.15  # VPA: recommendation-margin-fraction
DEFAULT_DAYS = 14  # krr: history_duration 336 h
DEFAULT_MIN_SAMPLES = 100  # krr: points_required
PATCHABLE = ("Deployment", "StatefulSet", "DaemonSet")

# The daily statistics the history holds per resource (history/capacity.py WORKLOAD_SCHEMA).
DAILY = {
    "cpu": {s: f"cpu_used_{s}_millicores" for s in ("p50", "p90", "p95", "p99", "max")},
    "memory": {"p99": "memory_used_p99_bytes", "max": "memory_used_max_bytes"},
}
UNIT = {"cpu": "millicores", "memory": "bytes"}
COLUMNS = [
    *KEY,
    "pool",
    "cpu_request_millicores",
    "memory_request_bytes",
    "cpu_recommended_millicores",
    "memory_recommended_bytes",
    "days",
    "skipped_reason",
    "recipe",
    "samples",
    "first_day",
    "last_day",
    "replicas_max",
    "cpu_limit_millicores",
    "memory_limit_bytes",
    "cpu_basis_millicores",
    "memory_basis_bytes",
    "cpu_max_millicores",
    "memory_max_bytes",
    "cpu_lower_bound_millicores",
    "cpu_upper_bound_millicores",
    "memory_lower_bound_bytes",
    "memory_upper_bound_bytes",
    "cpu_change_millicores",
    "memory_change_bytes",
    "cpu_change_pct",
    "memory_change_pct",
    "oom_kills",
    "oom",
    "hpa",
    "rules",
    "note",
]


@dataclass(frozen=True)
class Rule:
    """One resource's rule: a daily statistic, how days combine, and the headroom."""

    stat: str  # a key of DAILY[resource]
    across: str  # "max" (largest daily value) or "p50"/"p90"/"p95" (nearest rank over days)
    headroom: float  # fraction: 0.15 = +15 %

    def text(self, resource: str) -> str:
        basis = (
            f"max of daily {self.stat}"
            if self.across == "max"
            else f"{self.across} of daily {'peaks' if self.stat == 'max' else self.stat}"
        )
        return f"{resource} {basis} + {_pct(self.headroom)} %"


@dataclass(frozen=True)
class Recipe:
    """A named recipe: a rule per resource (None = keep the current request) and the floors."""

    name: str
    cpu: Rule | None
    memory: Rule | None
    cpu_min_millicores: float
    memory_min_bytes: float
    vpa_bounds: bool = False

    def describe(self) -> str:
        parts = [r.text(res) for res, r in (("cpu", self.cpu), ("memory", self.memory)) if r]
        floors = f"at least {self.cpu_min_millicores:g} m cpu, {self.memory_min_bytes / MIB:g} MiB"
        return f"{self.name}: {'; '.join(parts)}; {floors}"


def _pct(fraction: float) -> str:
    return f"{fraction * 100:g}"


VPA = Recipe(
    "vpa",
    cpu=Rule("p90", "max", VPA_MARGIN),
    memory=Rule("max", "p90", VPA_MARGIN),
    cpu_min_millicores=25,  # VPA: pod-recommendation-min-cpu-millicores
    memory_min_bytes=250 * MIB,  # VPA: pod-recommendation-min-memory-mb (× 1024 × 1024)
    vpa_bounds=True,
)
# VPA's lower and upper bounds: cpu p50 / p95 (max of daily), memory p50 / p95 of the daily
# peaks, each with the 15 % margin, before the confidence multipliers.
VPA_BOUNDS = {
    "cpu": (Rule("p50", "max", VPA_MARGIN), Rule("p95", "max", VPA_MARGIN)),
    "memory": (Rule("max", "p50", VPA_MARGIN), Rule("max", "p95", VPA_MARGIN)),
}
KRR = Recipe(
    "krr",
    cpu=Rule("p95", "max", 0.0),
    memory=Rule("max", "max", 0.15),
    cpu_min_millicores=10,  # krr: cpu_min_value
    memory_min_bytes=100 * MIB,  # krr: memory_min_value
)

_PART = re.compile(
    r"^(?:(?P<resource>[a-z]+)=)?percentile:(?P<p>[^,]+)(?:,headroom:(?P<h>[^,]+))?$"
)
SYNTAX = (
    "vpa, krr, or [cpu=|memory=]percentile:P[,headroom:H] with parts joined by ';', "
    "e.g. 'cpu=percentile:95,headroom:10;memory=percentile:max,headroom:15'"
)


def parse_recipe(text: str, option: str = "--recipe") -> Recipe:
    """``vpa``, ``krr`` or a percentile recipe; anything else → one-line ``InputError``.

    Percentile syntax: parts joined by ``;``, each ``[RESOURCE=]percentile:P[,headroom:H]``.
    RESOURCE is ``cpu`` or ``memory``; a part without it sets both. P is a statistic the history
    holds per day — cpu 50, 90, 95, 99 or max (= 100); memory 99 or max — and H a headroom in
    percent (≥ 0, default 0). A resource no part names keeps its current request. ``option``
    is the flag the caller read the recipe from (``--rightsize`` for the what-if): messages
    name it.
    """
    spec = text.strip().lower()
    if spec == "vpa":
        return VPA
    if spec == "krr":
        return KRR
    rules: dict[str, Rule] = {}
    for raw in spec.split(";"):
        part = raw.strip().replace(" ", "")
        match = _PART.match(part)
        if not match:
            raise InputError(f"{option}: {raw.strip()!r} is not a recipe; use {SYNTAX}")
        names = [match["resource"]] if match["resource"] else ["cpu", "memory"]
        for resource in names:
            if resource not in DAILY:
                raise InputError(
                    f"{option}: {resource!r} is not a resource; use cpu= or memory= ({SYNTAX})"
                )
            if resource in rules:
                raise InputError(f"{option}: {resource} is given twice in {text.strip()!r}")
            stat = _stat(resource, match["p"], option)
            rules[resource] = Rule(stat, "max", _headroom(match["h"], option))
    return Recipe(
        spec,
        cpu=rules.get("cpu"),
        memory=rules.get("memory"),
        cpu_min_millicores=KRR.cpu_min_millicores,
        memory_min_bytes=KRR.memory_min_bytes,
    )


def _stat(resource: str, value: str, option: str) -> str:
    stat = "max" if value in ("max", "100") else f"p{value}"
    if stat not in DAILY[resource]:
        held = ", ".join(s.removeprefix("p") for s in DAILY[resource])
        raise InputError(
            f"{option}: percentile:{value} is not kept for {resource} by the history "
            f"(it keeps {held} per day); pick one of those"
        )
    return stat


def _headroom(value: str | None, option: str) -> float:
    if value is None:
        return 0.0
    try:
        number = float(value.removesuffix("%"))
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or not 0 <= number <= 1000:
        raise InputError(
            f"{option}: headroom:{value} must be a percentage from 0 to 1000, e.g. headroom:15"
        )
    return number / 100


def vpa_confidence_factors(days: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """VPA's confidence multipliers for c days of history: lower (1 + 0.001/c)^-2, upper 1 + 1/c.

    ``vertical-pod-autoscaler/pkg/recommender/logic/recommender.go`` (multiplier 0.001, exponent
    -2 for the lower bound; 1.0, +1 for the upper) with ``estimator.go``'s ``(1 + m/c)^e``.
    """
    c = np.asarray(days, dtype=np.float64)
    with np.errstate(divide="ignore"):
        lower = np.where(c > 0, (1.0 + 0.001 / np.maximum(c, 1e-300)) ** -2.0, 0.0)
        upper = np.where(c > 0, 1.0 + 1.0 / np.maximum(c, 1e-300), np.inf)
    return lower, upper


def _across(ids: np.ndarray, values: np.ndarray, n: int, across: str) -> np.ndarray:
    """Per workload: the largest daily value, or a nearest-rank percentile over the days."""
    stats = grouped_stats(ids, values.astype(np.float64), n, "nearest-rank")
    return np.asarray(stats[across], dtype=np.float64)


def _basis(rows: pd.DataFrame, ids: np.ndarray, n: int, resource: str, rule: Rule) -> np.ndarray:
    """The rule's statistic over the window × (1 + headroom), per workload."""
    daily = rows[DAILY[resource][rule.stat]].to_numpy(dtype=np.float64)
    return _across(ids, daily, n, rule.across) * (1 + rule.headroom)


def _ceil(values: np.ndarray, step: float) -> np.ndarray:
    out: np.ndarray = np.ceil(np.round(values / step, 9)) * step
    return out


def empty_recommendations() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="object") for c in COLUMNS})


def recommend(
    workload_days: pd.DataFrame,
    recipe: Recipe,
    *,
    days: int = DEFAULT_DAYS,
    min_days: int = 1,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    hpa: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The recommendation frame (module docstring) of the last ``days`` days of ``workload_days``.

    ``hpa``: optional frame of ``namespace, owner_kind, owner_name`` of the HPA-managed
    workloads; without it the ``hpa`` column reads "unknown".
    """
    for name, value, low in (("--days", days, 1), ("--min-days", min_days, 1)):
        if value < low:
            raise InputError(f"{name}: {value} must be at least {low}")
    if min_samples < 0:
        raise InputError(f"--min-samples: {min_samples} must be at least 0")
    if workload_days.empty:
        return empty_recommendations()
    rows = workload_days.copy()
    rows["day"] = pd.to_datetime(rows["day"], utc=True)
    last_day = rows["day"].max()
    rows = rows[rows["day"] > last_day - days * DAY].sort_values("day", kind="stable")
    rows = rows.reset_index(drop=True)
    groups = rows.groupby([rows[k].astype(str) for k in KEY], sort=False)
    ids = groups.ngroup().to_numpy(dtype=np.int64)
    n = groups.ngroups
    latest = rows.assign(_id=ids).drop_duplicates("_id", keep="last").set_index("_id").sort_index()
    out = latest[KEY].astype(str).reset_index(drop=True)
    out["pool"] = latest["pool"].to_numpy(dtype=object)
    for resource, unit in UNIT.items():
        out[f"{resource}_request_{unit}"] = latest[f"{resource}_request_{unit}"].to_numpy(float)
        out[f"{resource}_limit_{unit}"] = latest[f"{resource}_limit_{unit}"].to_numpy(float)
    samples = rows["cpu_samples"].fillna(0).to_numpy(dtype=np.int64)
    with_samples = samples > 0
    out["days"] = np.bincount(ids[with_samples], minlength=n).astype(np.int64)
    out["samples"] = np.bincount(ids, weights=samples, minlength=n).astype(np.int64)
    first = rows.groupby(ids)["day"].min()
    out["first_day"] = first.dt.strftime("%Y-%m-%d").to_numpy(dtype=object)
    out["last_day"] = latest["day"].dt.strftime("%Y-%m-%d").to_numpy(dtype=object)
    out["replicas_max"] = latest["replicas_max"].to_numpy()
    out["recipe"] = recipe.name
    out["cpu_max_millicores"] = _across(ids, rows[DAILY["cpu"]["max"]].to_numpy(float), n, "max")
    out["memory_max_bytes"] = _across(ids, rows[DAILY["memory"]["max"]].to_numpy(float), n, "max")

    rules_applied: list[list[str]] = [[] for _ in range(n)]
    for resource, rule in (("cpu", recipe.cpu), ("memory", recipe.memory)):
        unit = UNIT[resource]
        recommended = np.full(n, np.nan)
        basis = np.full(n, np.nan)
        lower = upper = np.full(n, np.nan)
        if rule is not None:
            basis = _basis(rows, ids, n, resource, Rule(rule.stat, rule.across, 0.0))
            floor = recipe.cpu_min_millicores if resource == "cpu" else recipe.memory_min_bytes
            target = basis * (1 + rule.headroom)
            recommended = np.maximum(target, floor)
            _note(rules_applied, (target < floor) & ~np.isnan(target), f"{resource} floor")
            if recipe.vpa_bounds:
                lo_f, up_f = vpa_confidence_factors(out["days"].to_numpy())
                low_rule, up_rule = VPA_BOUNDS[resource]
                lower = np.maximum(_basis(rows, ids, n, resource, low_rule) * lo_f, floor)
                upper = np.maximum(_basis(rows, ids, n, resource, up_rule) * up_f, floor)
            if resource == "memory":
                observed = out["memory_max_bytes"].to_numpy(dtype=np.float64)
                raised = observed > recommended
                _note(rules_applied, raised, "memory raised to the observed max")
                recommended = np.where(raised, observed, recommended)
        out[f"{resource}_basis_{unit}"] = basis
        out[f"{resource}_recommended_{unit}"] = recommended
        out[f"{resource}_lower_bound_{unit}"] = lower
        out[f"{resource}_upper_bound_{unit}"] = upper

    # OOM kills: krr's bump, on the memory limit (the observed max when no limit is set).
    kills = pd.to_numeric(rows["oom_kills"], errors="coerce").to_numpy(dtype=np.float64)
    known = ~np.isnan(kills)
    total = np.bincount(ids[known], weights=kills[known], minlength=n)
    exported = np.bincount(ids[known], minlength=n) > 0
    out["oom_kills"] = pd.array(np.where(exported, total, np.nan), dtype="Float64").astype("Int64")
    out["oom"] = np.where(
        ~exported, "not exported", np.where(total > 0, "OOM-killed: bumped", "none")
    )
    if recipe.memory is not None:
        limit = out["memory_limit_bytes"].to_numpy(dtype=np.float64)
        base = np.where(limit > 0, limit, out["memory_max_bytes"].to_numpy(dtype=np.float64))
        bump = base * (1 + OOM_BUMP)
        memory = out["memory_recommended_bytes"].to_numpy(dtype=np.float64)
        bumped = exported & (total > 0) & (bump > memory)
        _note(rules_applied, bumped, "OOM bump (1.25 x limit)")
        out["memory_recommended_bytes"] = np.where(bumped, bump, memory)

    out["hpa"] = _hpa(out, hpa)
    reasons = _skips(out, last_day, min_days, min_samples)
    out["skipped_reason"] = reasons
    skipped = reasons != ""
    for resource, step in (("cpu", 1.0), ("memory", float(MIB))):
        unit = UNIT[resource]
        for column in (f"{resource}_recommended_{unit}",):
            values = _ceil(out[column].to_numpy(dtype=np.float64), step)
            out[column] = np.where(skipped, np.nan, values)
        current = out[f"{resource}_request_{unit}"].to_numpy(dtype=np.float64)
        change = out[f"{resource}_recommended_{unit}"].to_numpy(dtype=np.float64) - current
        out[f"{resource}_change_{unit}"] = change
        with np.errstate(invalid="ignore", divide="ignore"):
            out[f"{resource}_change_pct"] = np.where(current > 0, 100 * change / current, np.nan)
    out["rules"] = ["; ".join(r) for r in rules_applied]
    out["note"] = [_kind_note(k) for k in out["owner_kind"]]
    return out[COLUMNS].sort_values(KEY, kind="stable").reset_index(drop=True)


def _note(applied: list[list[str]], mask: np.ndarray, text: str) -> None:
    for i in np.flatnonzero(mask):
        applied[i].append(text)


def _hpa(out: pd.DataFrame, hpa: pd.DataFrame | None) -> np.ndarray:
    if hpa is None:
        return np.full(len(out), "unknown", dtype=object)
    managed = pd.MultiIndex.from_frame(hpa[KEY].astype(str))
    mine = pd.MultiIndex.from_frame(out[KEY].astype(str))
    flagged: np.ndarray = np.where(mine.isin(managed), "yes", "no").astype(object)
    return flagged


def _skips(
    out: pd.DataFrame, last_day: pd.Timestamp, min_days: int, min_samples: int
) -> np.ndarray:
    last = f"{last_day:%Y-%m-%d}"
    reasons = []
    for seen, days, samples in zip(out["last_day"], out["days"], out["samples"], strict=True):
        if seen != last:
            reasons.append(f"not running on {last}, the window's last day (last seen {seen})")
        elif samples == 0:
            reasons.append("no usage samples in the window")
        elif days < min_days:
            reasons.append(f"{days} day(s) of usage history, fewer than --min-days {min_days}")
        elif samples < min_samples:
            reasons.append(f"{samples} usage samples, fewer than --min-samples {min_samples}")
        else:
            reasons.append("")
    return np.asarray(reasons, dtype=object)


def _kind_note(kind: str) -> str:
    if kind == "DaemonSet":
        return "one pod per node: the change applies on every node it runs on"
    if kind == "Pod":
        return "bare pod: no controller to patch; change its manifest"
    if kind == "CronJob":
        return "patch spec.jobTemplate.spec.template (not emitted as YAML)"
    if kind not in PATCHABLE:
        return f"{kind}: patch its pod template by hand (not emitted as YAML)"
    return ""
