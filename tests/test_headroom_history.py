"""The history's headroom table (``history/headroom.py``): written and read back, versioned, and
checked as the pool and workload tables are (a newer version, a negative count or another day's
rows end the run naming the file)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from analyzer.core.errors import InputError
from analyzer.history.headroom import METADATA_KEY, read_headroom, write_headroom

DAY = date(2026, 11, 1)


def _shapes(copies: int = 6) -> pd.DataFrame:
    at = pd.Timestamp("2026-11-01T05:00:00Z")
    return pd.DataFrame(
        {
            "shape": ["web"], "source": ["declared"], "pods_seen": [0],
            "copies_now": [copies], "now_at": [at], "reason_now": ["Insufficient cpu (3)"],
            "copies_min": [copies], "min_at": [at], "reason_min": ["Insufficient cpu (3)"],
            "method": ["closed form"],
        }
    )  # fmt: skip


def test_two_days_read_back_in_order(tmp_path: Path) -> None:
    write_headroom(tmp_path, date(2026, 11, 2), _shapes(4))
    write_headroom(tmp_path, DAY, _shapes(6))
    assert write_headroom(tmp_path, date(2026, 11, 3), _shapes().iloc[0:0]) is None
    frame = read_headroom(tmp_path)
    assert frame["copies_now"].tolist() == [6, 4]
    assert [d.date() for d in frame["day"]] == [DAY, date(2026, 11, 2)]
    assert read_headroom(tmp_path, start=date(2026, 11, 2))["copies_now"].tolist() == [4]


def _rewrite(path: Path, table: pa.Table, version: bytes = b"1") -> None:
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: version}), path)


def test_damaged_files_are_refused_naming_them(tmp_path: Path) -> None:
    path = write_headroom(tmp_path, DAY, _shapes())
    assert path is not None
    table = pq.read_table(path)
    _rewrite(path, table, b"99")
    with pytest.raises(InputError, match=r"2026-11-01.parquet.*newer than this analyzer"):
        read_headroom(tmp_path)
    column = table.schema.get_field_index("copies_now")
    _rewrite(path, table.set_column(column, "copies_now", pa.array([-1], pa.int64())))
    with pytest.raises(InputError, match=r"2026-11-01.parquet has copies_now = -1.*negative"):
        read_headroom(tmp_path)
    other = path.with_name("2026-11-05.parquet")
    path.rename(other)
    _rewrite(other, table)
    with pytest.raises(InputError, match=r"not of the day its name says"):
        read_headroom(tmp_path)
