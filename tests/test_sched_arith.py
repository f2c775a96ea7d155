"""Go rounding and division rules (the places Python's defaults give different numbers)."""

from __future__ import annotations

import numpy as np

from analyzer.scheduling.arith import (
    go_div,
    go_div_array,
    go_round,
    go_round_array,
    round_half_away_div,
)


def test_go_division_truncates_toward_zero() -> None:
    assert go_div(-1000, 30) == -33  # Python's // gives -34
    assert go_div(1000, -30) == -33
    assert go_div(1000, 30) == 33
    values = np.array([-1000, 1000, -30, 29], dtype=np.int64)
    assert go_div_array(values, 30).tolist() == [-33, 33, -1, 0]


def test_go_round_is_half_away_from_zero() -> None:
    assert go_round(18.5) == 19  # Python round() gives 18
    assert go_round(-2.5) == -3
    assert go_round(2.4999999) == 2
    # the largest double below 0.5: x + 0.5 rounds to 1.0 in floating point, Go gives 0
    assert go_round(0.49999999999999994) == 0
    assert go_round_array(np.array([18.5, 0.49999999999999994, 2.5, 3.0])).tolist() == [19, 0, 3, 3]


def test_integer_round_half_away_division() -> None:
    assert round_half_away_div(37, 2) == 19  # 18.5
    assert round_half_away_div(536, 9) == 60  # 59.56, the bin-packing page's node 1
    assert round_half_away_div(625, 9) == 69  # 69.44
