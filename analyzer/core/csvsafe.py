"""CSV without formula injection: every CSV analyzer writes goes through here.

A spreadsheet opening a CSV runs a cell that begins with ``=``, ``+``, ``-`` or ``@`` (or a tab or
carriage return) as a formula. Node, pod, namespace and label values come from the cluster, so
anyone who can name a pod could plant one. OWASP's rule ("CSV Injection"): a **text** cell that
begins with one of those characters gets a leading ``'``, which spreadsheets show as text and
hide. Numbers stay numbers: numeric columns are never touched, and neither is a text cell that is
a plain number (``-3``, ``+1.5e3``), which cannot be a formula. Column names get the same rule.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

from analyzer.core.atomic import atomic_write_text

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def safe_cell(value: Any) -> Any:
    """``value`` with a leading ``'`` if it is text a spreadsheet would run as a formula."""
    if (
        isinstance(value, str)
        and value.startswith(FORMULA_START)
        and not _PLAIN_NUMBER.fullmatch(value)
    ):
        return "'" + value
    return value


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names are neutralised (numbers untouched)."""
    out = frame.copy()
    for name in out.columns:
        column = out[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            out[name] = column.astype(object).map(safe_cell)
        elif pd.api.types.is_object_dtype(column.dtype) or pd.api.types.is_string_dtype(
            column.dtype
        ):
            out[name] = column.map(safe_cell)
    out.columns = [safe_cell(name) for name in out.columns]
    return out


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as CSV text (no index), safe to open in a spreadsheet."""
    return str(safe_frame(frame).to_csv(index=False))


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` as a safe CSV file at ``path`` (atomically)."""
    atomic_write_text(Path(path), csv_text(frame))
