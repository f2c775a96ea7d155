"""Percentile rules, vectorised over many groups or sliding windows at once.

Two methods (DESIGN.md "Semantics"):

- ``nearest-rank`` — koordlet's rule (research/koordinator.md §4): sort ascending, take index
  ``int(float32(n) * p) - 1`` clamped at 0; no interpolation. 9 samples 0..800 give p90 = 700,
  p50 = 300. The product is formed in float32 as koordlet does, so the truncation matches.
- ``linear`` — Prometheus ``quantile_over_time`` (rank ``p * (n - 1)``, linear interpolation
  between the neighbours), identical to numpy's default ``np.quantile``.

Samples that are NaN are absent (a gap), never zero.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from analyzer.core.errors import InputError

METHODS = ("nearest-rank", "linear")
STAT_QUANTILES: dict[str, float] = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def check_method(method: str) -> str:
    """Return ``method`` if known, else ``InputError`` naming the valid ones."""
    if method not in METHODS:
        raise InputError(
            f"--method: {method!r} is not a percentile method (one of {', '.join(METHODS)})"
        )
    return method


def nearest_rank_index(count: npt.ArrayLike, quantile: float) -> IntArray:
    """koordlet's index into the ascending samples: ``max(int(float32(n) * float32(p)) - 1, 0)``."""
    product = np.asarray(count, dtype=np.float32) * np.float32(quantile)
    # Go's int(float32) truncates toward zero; the product is never negative here.
    index = np.trunc(product).astype(np.int64) - 1
    clamped: IntArray = np.maximum(index, 0)
    return clamped


def sorted_quantile(
    values: FloatArray, counts: IntArray, quantile: float, method: str
) -> FloatArray:
    """Quantile of each row of ``values`` (ascending, NaN padding after the ``counts`` samples).

    ``values`` has shape (..., k); rows with ``counts == 0`` give NaN.
    """
    counts = np.asarray(counts, dtype=np.int64)
    empty = counts <= 0
    safe = np.where(empty, 1, counts)
    if method == "nearest-rank":
        index = np.minimum(nearest_rank_index(safe, quantile), safe - 1)
        result = np.take_along_axis(values, index[..., None], axis=-1)[..., 0]
    else:
        rank = quantile * (safe - 1).astype(np.float64)
        lower = np.floor(rank).astype(np.int64)
        upper = np.minimum(lower + 1, safe - 1)
        weight = rank - lower
        low = np.take_along_axis(values, lower[..., None], axis=-1)[..., 0]
        high = np.take_along_axis(values, upper[..., None], axis=-1)[..., 0]
        # Same expression as Prometheus' quantile(): lower*(1-w) + upper*w.
        result = low * (1.0 - weight) + high * weight
    return np.where(empty, np.nan, result)


def quantile(samples: npt.ArrayLike, q: float, method: str = "nearest-rank") -> float:
    """Quantile of one sample set (NaN dropped); NaN when there are no samples."""
    data = np.asarray(samples, dtype=np.float64)
    data = np.sort(data[~np.isnan(data)])
    counts = np.array(data.size, dtype=np.int64)
    return float(sorted_quantile(data, counts, q, check_method(method)))


# Samples sorted at once by grouped_stats: above this, the groups are taken in blocks of about
# this many samples (a sort's working set is ~40 bytes a sample: 8 M samples ~ 0.3 GB).
BLOCK_SAMPLES = 1 << 23


def grouped_stats(
    group_ids: IntArray,
    values: FloatArray,
    n_groups: int,
    method: str,
    *,
    block_samples: int = BLOCK_SAMPLES,
) -> dict[str, FloatArray]:
    """avg/p50/p90/p95/p99/max per group (``group_ids`` in ``0..n_groups-1``), NaN dropped.

    Returns ``{"count": ..., "avg": ..., "p50": ..., "max": ...}`` arrays of length ``n_groups``.

    Exact, in bounded memory: consecutive groups are taken together in blocks of about
    ``block_samples`` samples (a group larger than that is a block of its own), each block
    sorted on its own. Every group's samples are all in its block and in the same order as in
    one sort of everything, so the results are the same whatever the block size.
    """
    if len(values) <= block_samples or n_groups <= 1:
        return _block_stats(group_ids, values, n_groups, method)
    ends = np.cumsum(np.bincount(group_ids, minlength=n_groups))
    targets = np.arange(block_samples, int(ends[-1]), block_samples)
    cuts = np.searchsorted(ends, targets, side="left") + 1  # a block ends after that group
    edges = np.unique(np.concatenate(([0], np.minimum(cuts, n_groups), [n_groups])))
    out: dict[str, FloatArray] = {}
    for first, last in zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True):
        rows = np.flatnonzero((group_ids >= first) & (group_ids < last))
        part = _block_stats(group_ids[rows] - first, values[rows], last - first, method)
        del rows
        for name, column in part.items():
            out.setdefault(name, np.empty(n_groups))[first:last] = column
    return out


def _block_stats(
    group_ids: IntArray, values: FloatArray, n_groups: int, method: str
) -> dict[str, FloatArray]:
    """``grouped_stats`` of one block, sorted at once.

    The samples are put in (group, value) order by one float sort followed by a stable sort of
    the group ids, which numpy does as a radix sort for 16-bit ids: on the millions of samples
    of a day's pod usage this is about twice as fast as ``np.lexsort``, with the same order of
    values.
    """
    keep = ~np.isnan(values)
    ids = group_ids[keep]
    vals = values[keep]
    del keep
    by_value = np.argsort(vals)
    narrow = np.int16 if n_groups <= np.iinfo(np.int16).max else np.int32
    order = by_value[np.argsort(ids[by_value].astype(narrow), kind="stable")]
    # intermediates freed as soon as they are used: on a large cluster's day (tens of millions
    # of samples) each is hundreds of MB, and together they were the nightly run's peak
    del by_value
    ids, vals = ids[order], vals[order]
    del order
    counts = np.bincount(ids, minlength=n_groups).astype(np.int64)
    sums = np.bincount(ids, weights=vals, minlength=n_groups)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    out: dict[str, FloatArray] = {"count": counts.astype(np.float64)}
    with np.errstate(invalid="ignore", divide="ignore"):
        out["avg"] = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    safe = np.maximum(counts, 1)
    for stat, q in STAT_QUANTILES.items():
        if method == "nearest-rank":
            local = np.minimum(nearest_rank_index(safe, q), safe - 1)
            picked = vals[np.minimum(starts + local, max(vals.size - 1, 0))] if vals.size else 0.0
            out[stat] = np.where(counts > 0, picked, np.nan)
        else:
            rank = q * (safe - 1).astype(np.float64)
            lower = np.floor(rank).astype(np.int64)
            upper = np.minimum(lower + 1, safe - 1)
            weight = rank - lower
            if vals.size:
                last = vals.size - 1
                low = vals[np.minimum(starts + lower, last)]
                high = vals[np.minimum(starts + upper, last)]
                picked = low * (1.0 - weight) + high * weight
            else:
                picked = np.zeros(n_groups)
            out[stat] = np.where(counts > 0, picked, np.nan)
    last = np.minimum(np.maximum(starts + counts - 1, 0), max(vals.size - 1, 0))
    out["max"] = np.where(counts > 0, vals[last] if vals.size else 0.0, np.nan)
    return out


def rolling_stat(
    matrix: FloatArray, window: int, stat: str, method: str, every: int = 1
) -> tuple[FloatArray, IntArray]:
    """The stat over trailing windows of ``window`` columns, for every row of ``matrix``.

    ``matrix`` is rows × time (NaN = no sample). Column ``j`` of the result covers columns
    ``j-window+1 .. j`` (fewer at the start). Only every ``every``-th column (counted from the
    last one, so the final column is always evaluated) is computed; the others are NaN.
    Returns (values, sample counts), both rows × time.
    """
    rows, width = matrix.shape
    valid = ~np.isnan(matrix)
    filled = np.where(valid, matrix, 0.0)
    pad = window - 1
    # Cumulative counts give the number of samples in every window in O(n).
    csum_n = np.concatenate([np.zeros((rows, 1)), np.cumsum(valid, axis=1)], axis=1)
    lo = np.maximum(np.arange(width) - pad, 0)
    counts = (csum_n[:, np.arange(width) + 1] - csum_n[:, lo]).astype(np.int64)
    columns = np.arange(width - 1, -1, -every)[::-1]
    result = np.full((rows, width), np.nan)
    # Bound memory: materialise at most ~4M window elements at a time.
    chunk = max(1, 4_000_000 // max(rows * window, 1))
    if stat == "avg":
        # Sum each window directly: a running cumsum of large floats would drift.
        padded = np.concatenate([np.zeros((rows, pad)), filled], axis=1)
        for start in range(0, columns.size, chunk):
            cols = columns[start : start + chunk]
            idx = cols[:, None] + np.arange(window)[None, :]
            sums = padded[:, idx].sum(axis=2)
            n = counts[:, cols]
            with np.errstate(invalid="ignore", divide="ignore"):
                result[:, cols] = np.where(n > 0, sums / np.maximum(n, 1), np.nan)
        return result, counts
    q = STAT_QUANTILES[stat]
    padded = np.concatenate([np.full((rows, pad), np.nan), matrix], axis=1)
    for start in range(0, columns.size, chunk):
        cols = columns[start : start + chunk]
        idx = cols[:, None] + np.arange(window)[None, :]
        windows = np.sort(padded[:, idx], axis=2)  # NaN sorts last
        result[:, cols] = sorted_quantile(windows, counts[:, cols], q, method)
    return result, counts
