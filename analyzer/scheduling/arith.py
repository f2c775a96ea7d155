"""Go integer and float rounding rules, for scalars and numpy int64 arrays.

Upstream schedulers are written in Go, whose rules differ from Python's in two places that change
scores (research/kube-scoring.md §12):

- integer division truncates toward zero (Python ``//`` floors: ``-1000 // 30`` is -34, Go gives -33);
- ``math.Round`` rounds half away from zero (Python ``round`` rounds half to even: 18.5 → 18, Go 19).
"""

from __future__ import annotations

from typing import Any

import numpy as np

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
FloatArray = np.ndarray[Any, np.dtype[np.float64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


def go_div(numerator: int, denominator: int) -> int:
    """Go ``a / b`` for int64: the quotient truncated toward zero."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator > 0) else -quotient


def go_div_array(numerator: Int64Array, denominator: Int64Array | int) -> Int64Array:
    """Element-wise Go integer division (truncation toward zero); denominators must be non-zero."""
    quotient = np.abs(numerator) // np.abs(denominator)
    negative = (numerator < 0) != (np.asarray(denominator) < 0)
    result: Int64Array = np.where(negative, -quotient, quotient).astype(np.int64)
    return result


def go_round(value: float) -> int:
    """Go ``math.Round``: nearest integer, halves away from zero (exact for every double)."""
    whole = float(np.trunc(value))
    if abs(value - whole) >= 0.5:
        whole += 1.0 if value > 0 else -1.0
    return int(whole)


def go_round_array(values: FloatArray) -> FloatArray:
    """Element-wise Go ``math.Round`` (``x - trunc(x)`` is exact, so no ``x + 0.5`` error)."""
    whole = np.trunc(values)
    step = np.where(np.abs(values - whole) >= 0.5, np.sign(values), 0.0)
    result: FloatArray = whole + step
    return result


def round_half_away_div(numerator: int, denominator: int) -> int:
    """Go ``math.Round(float64(n) / float64(d))`` for ``n >= 0, d > 0``, done exactly in integers.

    The float form and this one agree whenever the float quotient is exact to well under 0.5,
    which holds for every scheduler score (n ≤ 100 × Σ weights).
    """
    return (2 * numerator + denominator) // (2 * denominator)
