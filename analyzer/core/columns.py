"""Wrap filled numpy arrays as the snapshot's pandas column types without copying them.

A week of pod usage is tens of millions of rows: a copy of one column is 0.1–0.2 GB on top of
everything the collector holds at that moment. The builders allocate each column once, fill it
in place, and wrap it here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from numpy.typing import NDArray

UTC_NS = pd.DatetimeTZDtype("ns", "UTC")


def utc_column(ns: NDArray[np.int64]) -> pd.api.extensions.ExtensionArray:
    """``datetime64[ns, UTC]`` over ``ns`` (nanoseconds since the epoch), sharing its memory.

    pandas has no public zero-copy constructor for tz-aware arrays (``pd.array``,
    ``tz_localize`` and the Index constructors all copy), so this uses
    ``DatetimeArray._simple_new`` and falls back to a copy where that is gone.
    """
    naive = ns.view("datetime64[ns]")
    simple_new = getattr(pd.arrays.DatetimeArray, "_simple_new", None)
    if simple_new is not None:
        try:
            wrapped: pd.api.extensions.ExtensionArray = simple_new(naive, dtype=UTC_NS)
            return wrapped
        except TypeError:  # a pandas whose private signature changed
            pass
    return pd.array(pd.DatetimeIndex(naive).tz_localize("UTC"))


def codes_dtype(categories: pd.Index) -> np.dtype[np.signedinteger]:
    """The integer type pandas keeps a categorical's codes in for ``categories`` (int8 below
    128 categories, int16 below 32,768, ...): codes allocated in it are wrapped, not converted."""
    probe = pd.Categorical.from_codes(np.zeros(0, dtype=np.int64), categories=categories)
    dtype: np.dtype[np.signedinteger] = probe.codes.dtype
    return dtype


def category_column(codes: NDArray[np.signedinteger], categories: pd.Index) -> pd.Categorical:
    """A categorical over ``codes`` (in ``codes_dtype(categories)``: then no copy is made)."""
    return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(categories), validate=False)
