"""kube-scheduler's ``helper.DefaultNormalizeScore`` over the feasible nodes, as one numpy pass.

Upstream (research/kube-plugins.md §3–4): ``max`` = the largest raw score of the nodes that passed
the filters; ``max == 0`` → every node 0 (reverse: 100); else ``100 · raw / max`` with int64
division, reversed as ``100 − that``. Raw scores are never negative, so Go's truncation and
Python's floor agree. Upstream scores only feasible nodes; here infeasible nodes get the same
formula (over the feasible nodes' max) clipped to 0..100, so ``--explain`` still shows a number a
reader can compare.
"""

from __future__ import annotations

import numpy as np

from analyzer.scheduling.arith import BoolArray, Int64Array

MAX_NODE_SCORE = 100


def default_normalize(
    raw: Int64Array, feasible: BoolArray, reverse: bool, top: int = MAX_NODE_SCORE
) -> Int64Array:
    """``DefaultNormalizeScore(top, reverse)`` with the max taken over ``feasible`` nodes."""
    # raw ≥ 0: a raw score that is 0 everywhere (the common case) has max 0 over any subset
    peak = int(raw[feasible].max()) if raw.any() and feasible.any() else 0
    if peak == 0:
        value = top if reverse else 0
        return np.full(raw.shape, value, dtype=np.int64)
    scaled = np.minimum(top * raw // peak, top)
    result: Int64Array = (top - scaled if reverse else scaled).astype(np.int64)
    return result
