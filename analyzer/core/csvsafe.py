"""CSV without formula injection: every CSV analyzer writes goes through here.

A spreadsheet opening a CSV runs a cell that begins with ``=``, ``+``, ``-`` or ``@`` (or a tab or
carriage return) as a formula. Node, pod, namespace and label values come from the cluster, so
anyone who can name a pod could plant one. OWASP's rule ("CSV Injection"): a **text** cell that
begins with one of those characters gets a leading ``'``, which spreadsheets show as text and
hide. Numbers stay numbers: numeric columns are never touched, and neither is a text cell that is
a plain number (``-3``, ``+1.5e3``), which cannot be a formula. Column names get the same rule.

**Reading back.** Analyzer reads some of its own CSVs again (``whatif --recommendations`` reads
``rightsize``'s). :func:`unsafe_cell` undoes :func:`safe_cell` exactly, and
:func:`read_csv_written_by_us` is the one reader of such files: every cell as text, the writer's
``'`` removed, one line naming the file on any parse error. So that the inverse is exact for
every text, the writer also marks a text that *already* begins with ``'`` before a formula
character (``'=x`` is written ``''=x``): a reader removes exactly one ``'`` from a cell whose
leading run of ``'`` is followed by a formula character, and a text that never was a formula
(``'quoted``, ``'-3``) is left alone both ways.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv

from analyzer.core.atomic import atomic_write_text
from analyzer.core.errors import InputError
from analyzer.core.text import one_line

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _formula_like(text: str) -> bool:
    """Whether ``text``, past any leading ``'``, begins like a formula and is not a number."""
    core = text.lstrip("'")
    return core.startswith(FORMULA_START) and not _PLAIN_NUMBER.fullmatch(core)


def safe_cell(value: Any) -> Any:
    """``value`` with a leading ``'`` if it is text a spreadsheet would run as a formula."""
    if isinstance(value, str) and _formula_like(value):
        return "'" + value
    return value


def unsafe_cell(value: Any) -> Any:
    """The inverse of :func:`safe_cell`: ``unsafe_cell(safe_cell(v)) == v`` for every ``v``."""
    if isinstance(value, str) and value.startswith("'") and _formula_like(value):
        return value[1:]
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


def _holds_carriage_return(frame: pd.DataFrame) -> bool:
    if any("\r" in str(name) for name in frame.columns):
        return True
    return any(
        frame[name].map(lambda v: isinstance(v, str) and "\r" in v).any()
        for name in frame.columns
        if pd.api.types.is_object_dtype(frame[name].dtype)
        or pd.api.types.is_string_dtype(frame[name].dtype)
    )


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as CSV text (no index), safe to open in a spreadsheet.

    Rows end in ``\n``, except in a file whose text holds a carriage return: there they end in
    RFC 4180's ``\r\n``. With ``\n`` ends, Python's csv writer (under pandas) quotes a cell
    holding ``\n`` but not one holding a lone ``\r``, which every reader (spreadsheets,
    pandas, Arrow, the csv module) takes as the end of the row: ``x\r=cmd`` would start a
    row with a formula. With ``\r\n`` ends the writer quotes such cells too.
    """
    safe = safe_frame(frame)
    ends = "\r\n" if _holds_carriage_return(safe) else "\n"
    return str(safe.to_csv(index=False, lineterminator=ends))


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    """Write ``frame`` as a safe CSV file at ``path`` (atomically)."""
    atomic_write_text(Path(path), csv_text(frame))


def read_csv_written_by_us(
    path: Path, columns: Sequence[str], *, what: str, hint: str
) -> pd.DataFrame:
    """``columns`` of a CSV analyzer wrote, every cell as text with the writer's ``'`` undone.

    Only the named columns are kept (a million-row file costs their cells only), as ``str``
    with no value turned into NaN (a workload named ``NA`` or ``null`` stays itself; an empty
    cell is ``""``), so no type is guessed and pandas has no ``DtypeWarning`` to print. Refused
    with one line (:class:`InputError`) naming ``what`` (e.g. ``--recommendations FILE``): an
    unreadable or unparsable file, a row with more or fewer fields than the header (only the
    first line of the parser's message) and missing columns (``hint`` says where such a file
    comes from). Values are not interpreted here: the caller checks them.
    """
    where = one_line(what, 160)
    try:
        raw = [str(name) for name in pd.read_csv(path, nrows=0, dtype=str).columns]
        header = [unsafe_cell(name) for name in raw]
        missing = [c for c in columns if c not in header]
        if len(header) == 1 and ";" in header[0] and missing:
            raise InputError(
                f"{where}: looks semicolon-separated (no comma in its first line); write it "
                f"with commas; {hint}"
            )
        if missing and len(missing) == len(columns):
            raise InputError(f"{where}: has none of the columns {', '.join(columns)}; {hint}")
        if missing:
            raise InputError(f"{where}: missing column(s) {', '.join(missing)}; {hint}")
        wanted = [raw[header.index(c)] for c in columns]
        # Arrow's reader, not pandas': it refuses a row with more or fewer fields than the
        # header even when only some columns are kept (pandas' usecols silently drops the
        # extra fields), reads quoted line breaks, and holds the text compactly
        table = pa_csv.read_csv(
            path,
            # one thread: the threaded reader was twice as slow on a busy 2-core machine
            read_options=pa_csv.ReadOptions(use_threads=False),
            parse_options=pa_csv.ParseOptions(newlines_in_values=True),
            convert_options=pa_csv.ConvertOptions(
                include_columns=wanted,
                column_types=dict.fromkeys(wanted, pa.string()),
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (ValueError, OSError, csv.Error, pa.ArrowException) as exc:
        # UnicodeDecodeError and pandas' ParserError are ValueErrors; pandas' text ends in a
        # newline and Arrow's quotes the row: keep the first line, cut short
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{where} is not a readable CSV ({one_line(first, 160)})") from None
    frame = table.to_pandas()  # text stays Arrow-backed where pandas keeps strings so
    frame.columns = [unsafe_cell(str(name)) for name in frame.columns]
    frame = frame[list(columns)]
    for name in frame.columns:
        quoted = frame[name].str.startswith("'")  # only those can carry the writer's mark
        if quoted.any():
            frame.loc[quoted, name] = frame.loc[quoted, name].map(unsafe_cell)
    return frame
