"""History files are checked, not trusted: one naming rule and one reader for every history table.

Every reader of ``OUT/history`` (the rollups and summaries of ``store.py``, the pools and
workloads of ``capacity.py``, the stored forecasts of ``forecasts.py``) lists its files with
:func:`day_files` / :func:`month_name` and opens each inside :func:`reading`, so that:

- only ``YYYY-MM-DD.parquet`` / ``YYYY-MM-DD.json`` (and ``YYYY-MM.json`` for forecasts) of a real
  day are read; anything else (``20261014.parquet``, ``2026-13-45.parquet``, a ``.bak``, a
  temporary of an atomic write) is ignored like any stray file;
- a file that cannot be read — damaged pages, a foreign schema, a column of the wrong type, rows
  of another day, non-finite or negative quantities — ends in ONE line naming the file, what is
  wrong (the first line of the library's text) and the fix, exit 2 (``InputError``).

``docs/history.md`` ("Checks on read") and ``docs/reliability.md`` ("History store") list the
refusals.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path
from typing import Any, NoReturn

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from analyzer.core.atomic import atomic_write_text
from analyzer.core.errors import InputError
from analyzer.core.structured import load_json
from analyzer.core.text import escaped, shortened

DAY_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.(parquet|json)$")
MONTH_FILE = re.compile(r"^(\d{4}-\d{2})\.json$")
# No quantity of one day of one cluster comes near this (1e18 bytes is an exabyte; 1e18
# millicores a thousand million million cores): a larger value is a damaged file, and sums of a
# year of such values stay finite.
MAX_QUANTITY = 1e18
DELETE = "delete that file"
_SHOWN = 160  # characters of a library's message kept in ours
_EPOCH = date(1970, 1, 1)
_NS_PER_DAY = 86_400 * 10**9


def rerun(day: date) -> str:
    """The fix for a damaged day file: make the day again (or drop it)."""
    return f"re-run `analyzer history backfill` for {day} (with --force) or delete that file"


def file_day(name: str, suffix: str) -> date | None:
    """The day a history file named ``name`` holds (``YYYY-MM-DD.<suffix>``), else None.

    A regex first: ``date.fromisoformat`` alone also takes the basic form (``20261014``), which
    would read a stray copy as a second day.
    """
    match = DAY_FILE.match(name)
    if match is None or match.group(2) != suffix:
        return None
    try:
        return date.fromisoformat(match.group(1))
    except ValueError:
        return None  # 2026-13-45: not a day, so not a day file


def day_files(
    folder: Path, suffix: str, start: date | None = None, end: date | None = None
) -> list[tuple[date, Path]]:
    """The day files of ``folder`` within ``start``..``end`` (None = open), oldest first."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        day = file_day(path.name, suffix)
        if day is not None and (start is None or day >= start) and (end is None or day <= end):
            found.append((day, path))
    return sorted(found)


def first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's text, shortened (thrift texts end in newlines,
    pandas' and pyarrow's span several lines)."""
    text = str(exc).strip() or type(exc).__name__
    line = text.splitlines()[0].strip() if text.splitlines() else text
    return shortened(escaped(line), _SHOWN)


def refuse(path: Path, what: str, fix: str = DELETE) -> NoReturn:
    """End the run: ``history: FILE WHAT; FIX`` (exit 2), on one line whatever a name holds
    (a line break or control character in a path or a column name is shown escaped)."""
    text = f"history: {path} {what}; {fix}"
    raise InputError(escaped(text))


# What reading a file can raise that is the file's fault (not ours): the OS, pyarrow (thrift
# errors surface as OSError or ArrowInvalid), JSON, text decoding, and nesting too deep to parse.
FILE_ERRORS = (OSError, pa.ArrowException, ValueError, UnicodeDecodeError, RecursionError)


@contextmanager
def reading(path: Path, fix: str = DELETE) -> Iterator[None]:
    """Turn any error of reading ``path`` into one line naming it (exit 2)."""
    try:
        yield
    except InputError:
        raise
    except FILE_ERRORS as exc:
        refuse(path, f"is unreadable ({first_line(exc)})", fix)


def read_json(path: Path, fix: str = DELETE) -> object:
    """The JSON value in ``path`` (one line naming it when it is not JSON)."""
    with reading(path, fix):
        return json.loads(path.read_bytes().decode("utf-8"))
    raise AssertionError("unreachable")  # pragma: no cover  (mypy: reading re-raises)


def schema_version(path: Path, metadata: dict[bytes, bytes] | None, key: bytes) -> int:
    """The schema version a parquet file's metadata records (1 when it records none)."""
    raw = (metadata or {}).get(key, b"1")
    try:
        return int(raw)
    except ValueError:
        shown = raw[:40]
        refuse(path, f"has schema version {shown!r}, not a number")


def _no_duplicates(path: Path, table: pa.Table) -> None:
    names = table.schema.names
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        refuse(path, f"has column(s) {', '.join(twice[:4])} more than once")


def _compatible(actual: pa.DataType, expected: pa.DataType) -> bool:
    """A stored column of type ``actual`` reads as ``expected`` without losing its meaning."""
    if actual.equals(expected) or pa.types.is_null(actual):
        return True
    if pa.types.is_floating(expected):
        return bool(pa.types.is_floating(actual) or pa.types.is_integer(actual))
    if pa.types.is_integer(expected):
        # a float column of whole numbers (a pandas round trip of a nullable count) casts
        # safely; a fraction does not, and is refused by the cast
        return bool(pa.types.is_integer(actual) or pa.types.is_floating(actual))
    if pa.types.is_timestamp(expected):
        return bool(pa.types.is_timestamp(actual) and actual.tz in ("UTC", "+00:00", "Etc/UTC"))
    if pa.types.is_string(expected):
        return bool(pa.types.is_string(actual) or pa.types.is_large_string(actual))
    return False


def _type_name(kind: pa.DataType) -> str:
    return str(kind).replace("timestamp[ns, tz=UTC]", "timestamp (UTC)")


def conform(path: Path, table: pa.Table, schema: pa.Schema, required: frozenset[str]) -> pa.Table:
    """``table`` with ``schema``'s columns and types; a missing required column or a column of
    another type ends the run naming the file (a column added by a later version, absent from an
    older file, reads as null)."""
    _no_duplicates(path, table)
    missing = [name for name in schema.names if name in required and name not in table.schema.names]
    if missing:
        shown = ", ".join(missing[:4]) + (
            f" and {len(missing) - 4} more" if len(missing) > 4 else ""
        )
        refuse(path, f"is not a history table of this kind (it lacks column(s) {shown})")
    columns = []
    for field in schema:
        if field.name not in table.schema.names:
            columns.append(pa.nulls(table.num_rows, field.type))
            continue
        column = table.column(field.name)
        if not _compatible(column.type, field.type):
            refuse(
                path,
                f"has column {field.name} of type {_type_name(column.type)}, "
                f"not {_type_name(field.type)}",
            )
        try:
            columns.append(column.cast(field.type, safe=True))
        except (pa.ArrowException, ValueError) as exc:
            refuse(
                path, f"has column {field.name} that does not fit {field.type} ({first_line(exc)})"
            )
    return pa.Table.from_arrays(columns, schema=schema)


_KINDS: dict[str, Callable[[pa.DataType], bool]] = {
    "text": lambda t: pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t),
    "number": lambda t: pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t),
    "time": lambda t: pa.types.is_timestamp(t) and t.tz in ("UTC", "+00:00", "Etc/UTC"),
    "bool": lambda t: pa.types.is_boolean(t) or pa.types.is_null(t),
}


def check_kinds(
    path: Path, table: pa.Table, kinds: dict[str, str], required: frozenset[str]
) -> None:
    """``table`` has the ``required`` columns, and every column of ``kinds`` it has (name → text,
    number, time or bool) is of that kind (a table whose exact types the reader keeps)."""
    _no_duplicates(path, table)
    missing = [name for name in kinds if name in required and name not in table.schema.names]
    if missing:
        refuse(
            path,
            f"is not a history table of this kind (it lacks column(s) {', '.join(missing[:4])})",
        )
    for name, kind in kinds.items():
        if name not in table.schema.names:
            continue
        actual = table.schema.field(name).type
        if not bool(_KINDS[kind](actual)):
            refuse(path, f"has column {name} of type {_type_name(actual)}, not {kind}")


def check_day(path: Path, table: pa.Table, day: date, column: str = "day") -> None:
    """Every row of ``table`` is of ``day`` (the file's name), at its UTC midnight: a copy of
    another day's file, or a file holding another month's rows, would count its rows twice or in
    the wrong month. ``column`` is ``timestamp[ns, UTC]`` (``conform`` made it so)."""
    values = table.column(column)
    if values.null_count:
        refuse(path, f"has rows without a {column}", rerun(day))
    if table.num_rows == 0:
        return
    bounds = pc.min_max(pc.cast(values, pa.int64()))
    midnight = (day - _EPOCH).days * _NS_PER_DAY
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if lo != midnight or hi != midnight:
        first, last = (_EPOCH + timedelta(days=v // _NS_PER_DAY) for v in (lo, hi))
        shown = f"{first}" if first == last else f"{first} .. {last}"
        if first == last == day:
            shown = f"{day} at times other than its midnight"
        refuse(path, f"holds rows of {shown}, not of the day its name says", rerun(day))


def check_quantities(
    table: pa.Table, columns: list[str], where: list[tuple[int, Path]], day_of: dict[Path, date]
) -> None:
    """Quantities are finite, not negative and under ``MAX_QUANTITY`` (nulls allowed: a
    statistic without data); the first bad value names its file. ``where`` lists each file's first
    row in ``table`` (files concatenated in that order), so the check runs once per column over
    all files and finds the file only when a value is wrong."""
    for name in columns:
        column = table.column(name)
        if not len(column):
            continue
        if pa.types.is_floating(column.type):
            bad = pc.or_kleene(pc.invert(pc.is_finite(column)), pc.less(column, 0.0))
            bad = pc.or_kleene(bad, pc.greater(column, MAX_QUANTITY))
        else:
            bad = pc.or_kleene(pc.less(column, 0), pc.greater(column, int(MAX_QUANTITY)))
        if not pc.any(bad).as_py():
            continue
        row = pc.index(bad, True).as_py()
        value = column[row].as_py()
        path = next(p for first, p in reversed(where) if first <= row)
        problem = (
            "is not finite"
            if value != value or value in (float("inf"), float("-inf"))
            else ("is negative" if value < 0 else f"is over {MAX_QUANTITY:.0e}")
        )
        refuse(path, f"has {name} = {value!r}, which {problem}", rerun(day_of[path]))


def read_parquet(path: Path, day: date) -> pa.Table:
    """The whole table of ``path`` (every page, not only the footer: damaged pages surface here,
    not later in a computation), or one line naming the damaged file (exit 2)."""
    if not path.is_file():
        refuse(path, "is not a file (a folder or a broken link)", rerun(day))
    with reading(path, rerun(day)):
        return pq.ParquetFile(path).read()
    raise AssertionError("unreachable")  # pragma: no cover  (mypy: reading re-raises)


def make_readable(path: Path) -> None:
    """Mode 0644 less the process umask on a just-written history file (atomic writes create
    0600 temporaries): readable by the report's readers like every other day file."""
    mask = os.umask(0)  # reading the umask means setting it; set it back at once
    os.umask(mask)
    path.chmod(0o644 & ~mask)


def read_month_record(path: Path, newest: int) -> dict[str, Any] | None:
    """A month's JSON record of the history (a stored forecast, a ledger): None when the file is
    absent; one line naming the file and the fix when it is not a JSON object with a
    ``schema_version`` this analyzer reads (``newest`` or older). The caller checks its shape."""
    if not path.is_file():
        return None
    try:  # core.structured: bounded nesting, one line naming the file
        data = load_json(path, what="history:")
    except InputError as exc:
        raise InputError(f"{exc}; {DELETE}") from None
    if not isinstance(data, dict):
        refuse(path, "does not hold a JSON object")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        refuse(path, "has no schema_version number")
    if version > newest:
        raise InputError(
            f"history: {path} has schema version {version}, newer than this analyzer reads "
            f"({newest}); upgrade analyzer to read it"
        )
    return data


def write_month_record(path: Path, record: dict[str, Any]) -> Path:
    """Store a month's JSON record atomically, readable like the day files; returns ``path``."""
    text = json.dumps(record, sort_keys=True, allow_nan=False) + "\n"  # compact: C encoder
    atomic_write_text(path, text)
    make_readable(path)
    return path
