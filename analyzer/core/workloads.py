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
- :func:`read_recommendations`: a recommendations CSV (``analyzer rightsize``'s, or one written
  by hand) checked at the boundary: the writer's formula mark undone, every recommended value a
  plain finite number within :data:`MAX_RECOMMENDED` (or empty / ``nan``: keep the current
  request), each refusal one line naming the file, row, column, workload and value.

**Bounds** (:data:`MAX_RECOMMENDED`, per pod): 100,000 cores and 1 PiB of memory. The largest
single machines sold have under 2,000 cores and under 50 TiB of memory, so a value above these
is a unit or typing error (bytes in the millicores column, ``1e30``), never a workload; below
them every value stays an exact integer in float64 and int64, so the rounding up to whole
millicores and bytes is exact. A request above every node of the snapshot but under these
bounds is a legitimate what-if: the replay leaves such a pod pending and says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from analyzer.core.csvsafe import read_csv_written_by_us
from analyzer.core.errors import InputError
from analyzer.core.snapshot import Snapshot
from analyzer.core.text import one_line

KEY = ["namespace", "owner_kind", "owner_name"]
# (resource, per-pod column of the recommendation frame)
RECOMMENDED = (("cpu", "cpu_recommended_millicores"), ("memory", "memory_recommended_bytes"))
# per-pod bounds of a recommended request (module docstring), with the unit's words and example
MAX_RECOMMENDED = {"cpu_recommended_millicores": 1e8, "memory_recommended_bytes": float(2**50)}
_UNIT = {
    "cpu_recommended_millicores": ("millicores", "100,000 cores", "250"),
    "memory_recommended_bytes": ("bytes", "1 PiB", "268435456"),
}
_HINT = "produce them with analyzer rightsize"


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


def _workload(frame: pd.DataFrame, position: int) -> str:
    row = frame.iloc[position]
    return one_line(f"{row['namespace']}/{row['owner_name']}")


def _number(value: float) -> str:
    """A value as the user wrote it, near enough: whole numbers in full, others in 6 digits."""
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e16:
        return f"{value:.0f}"
    return f"{value:.6g}"


def check_values(
    recommendations: pd.DataFrame, where: Callable[[int], str] = lambda _: "recommendations"
) -> None:
    """Refuse a recommended value that is not finite, not positive or above its bound.

    NaN keeps the current request. ``where(position)`` names the row in the message (a file's
    row for the CSV reader). The columns must already be numbers.
    """
    for _, column in RECOMMENDED:
        values = recommendations[column].to_numpy(np.float64)
        unit, bound_text, example = _UNIT[column]
        checks = (
            (np.isinf(values), "is not finite"),
            (values <= 0, "is not positive"),
            (values > MAX_RECOMMENDED[column], f"is above {bound_text}, more than any machine"),
        )
        for bad, why in checks:
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputError(
                    f"{where(i)}: {column} of {_workload(recommendations, i)} is "
                    f"{_number(values[i])}, which {why}; give the per-pod request in {unit} (e.g. "
                    f"{example}), or leave it empty to keep the current request"
                )


def _numbers(text: pd.Series) -> np.ndarray:
    """The cells as float64, NaN where a cell is not a number (the caller names it)."""
    try:  # Arrow's cast is ~5× faster than pandas' to_numeric on a million cells
        cast = pc.cast(pa.array(text, type=pa.string()), pa.float64())
        return np.asarray(cast.to_numpy(zero_copy_only=False), dtype=np.float64)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        # a cell Arrow cannot read: pandas' parser decides (it also takes a leading "+")
        return np.asarray(pd.to_numeric(text, errors="coerce"), dtype=np.float64)


def read_recommendations(path: Path, what: str | None = None) -> pd.DataFrame:
    """The workload key and the recommended values of a recommendations CSV, checked.

    ``what`` names the file in messages (default: the path). A recommended cell must be a plain
    number (``250m`` is refused naming the cell: the column's unit is in its name), empty or
    ``nan`` (keep the current request); then :func:`check_values`. Other columns are not read.
    """
    where = what or str(path)
    columns = [*KEY, *(column for _, column in RECOMMENDED)]
    frame = read_csv_written_by_us(path, columns, what=where, hint=_HINT)
    out = frame[KEY].copy()
    label = one_line(where, 120)
    for _, column in RECOMMENDED:
        text = frame[column].astype(str).str.strip()
        keep = ((text == "") | (text.str.lower() == "nan")).to_numpy()
        values = _numbers(text.where(~keep, "nan"))
        bad = np.isnan(values) & ~keep
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            unit, _, example = _UNIT[column]
            raise InputError(
                f"{label} row {i + 1}, column {column}: '{one_line(frame[column].iloc[i], 40)}' "
                f"is not a number ({_workload(out, i)}); write plain {unit}, e.g. {example}, or "
                "leave it empty to keep the current request"
            )
        out[column] = np.where(keep, np.nan, values)
    check_values(out, lambda i: f"{label} row {i + 1}")
    return out


def apply_recommendations(snapshot: Snapshot, recommendations: pd.DataFrame) -> Snapshot:
    """``snapshot`` with every pod of a recommended workload given the recommended requests.

    Per resource, a row whose recommended value is NaN keeps the pods' current request; a value
    that is not a number, not finite, ≤ 0 or above its bound is refused (:func:`check_values`).
    A pod
    gets exactly the recommended (integer) request; its ``nonzero_requests`` (what kube-scheduler's
    scoring reads) becomes the same value, since a request set for the whole pod leaves no
    container without one. A limit that is set (> 0) and now below the request is raised to it
    (Kubernetes refuses a request above its limit). Usage, nodes and every other pod are unchanged.
    """
    missing = [c for c in (*KEY, *(col for _, col in RECOMMENDED)) if c not in recommendations]
    if missing:
        raise InputError(f"recommendations: missing column(s) {', '.join(missing)}; {_HINT}")
    if recommendations.duplicated(KEY).any():
        row = recommendations.loc[recommendations.duplicated(KEY), KEY].iloc[0]
        raise InputError(
            f"recommendations: workload {one_line('/'.join(map(str, row)))} appears twice"
        )
    numbers = {}
    for _, column in RECOMMENDED:
        try:
            numbers[column] = pd.to_numeric(recommendations[column]).to_numpy(np.float64)
        except (ValueError, TypeError):
            raise InputError(
                f"recommendations: {column} holds a value that is not a number; {_HINT}"
            ) from None
    check_values(recommendations.assign(**numbers))
    pods = snapshot.pods.copy()
    if pods.empty or recommendations.empty:
        return replace(snapshot, pods=pods)
    keys = pd.MultiIndex.from_frame(workload_keys(pods).astype(str))
    wanted = pd.MultiIndex.from_frame(recommendations[KEY].astype(str))
    row_of = wanted.get_indexer(keys)
    for resource, column in RECOMMENDED:
        values = numbers[column]
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
