"""Property-based tests of the history readers (issue 31 item 8): whatever a history file holds,
a reader returns checked rows or refuses in one line naming the file (exit 2 through the CLI).

Per reader (pools, workloads, rollups and summaries, stored forecasts), Hypothesis generates:
random bytes as a day file, a column replaced by values of another type (text holding every
Unicode line break, control characters and formula prefixes; booleans; non-finite, huge and
negative numbers), another day's rows, zero rows, and file names holding the same characters.
In-process examples check the reader function itself (many, fast); a few through the real CLI
(``rightsize``, ``report monthly``) check the contract of tests/cli_contract.py.
"""

from __future__ import annotations

import json
import math
import shutil
from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_contract import assert_contract, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from monthly_history import PoolTruth, WorkloadTruth, write_history

from analyzer.core.errors import InputError
from analyzer.history.capacity import POOL_SCHEMA, WORKLOAD_SCHEMA, read_pools, read_workloads
from analyzer.history.files import MAX_QUANTITY
from analyzer.history.forecasts import read_forecast, write_forecast
from analyzer.history.store import HistoryStore

START = date(2026, 10, 1)
DAY = "2026-10-02"
BREAKS = ["\n", "\r", "\x85", "\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
PREFIXES = ["=", "+", "-", "@", "\t", "\r"]
HOSTILE_TEXT = st.builds(
    lambda prefix, a, brk, b: f"{prefix}{a}{brk}{b}",
    st.sampled_from(PREFIXES),
    st.text(max_size=8),
    st.sampled_from([*BREAKS, "\x00", "\x1b[31m", "\u202e"]),
    st.text(max_size=8),
)
NUMBERS = st.one_of(
    st.sampled_from([math.inf, -math.inf, math.nan, -1.0, -1e18, 1e300, 1e19, 0.0]),
    st.floats(allow_nan=True, allow_infinity=True),
)
PROPERTY = settings(
    max_examples=40, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip
CLI = settings(
    max_examples=6, deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)  # fmt: skip


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("clean") / "h"
    write_history(root, START, 3, [PoolTruth("general")], [WorkloadTruth("api", "general")])
    store = HistoryStore(root)
    rollups = pq.read_table(root / "pools" / f"{DAY}.parquet").to_pandas()[["day", "pool"]]
    for t in range(3):
        day = date(2026, 10, 1 + t)
        frame = rollups.assign(
            node="n1", day=rollups["day"] + (day - date(2026, 10, 2)), resource="cpu",
            stat="avg", value=1.0, allocatable=4000, requested=1.0, samples=288, missing=False,
        )  # fmt: skip
        store.write_day(day, frame, {"nodes": 3, "pods": 10})
    write_forecast(root, "2026-09", {"history_end": "2026-09-30", "pools": {"general": {
        "requested_cpu_cores": {"method": "linear", "series": [
            {"date": "2026-10-01", "mean": 1.0, "lo80": 0.5, "hi80": 1.5, "lo95": 0.2, "hi95": 2.0}
        ]}}}})  # fmt: skip
    return root


def _copy(clean: Path, tmp_path: Path, n: int) -> Path:
    root = tmp_path / f"h{n}"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(clean, root)
    return root


def _one_line_naming(exc: InputError, path: Path) -> None:
    text = str(exc)
    assert len(text.splitlines()) == 1, text
    assert str(path) in text or path.name in text, text


def _damage_parquet(path: Path, data: st.DataObject) -> None:
    """Replace ``path`` with a generated damage of it."""
    table = pq.read_table(path)
    kind = data.draw(st.sampled_from(["bytes", "truncate", "column", "day", "empty"]))
    if kind == "bytes":
        path.write_bytes(data.draw(st.binary(max_size=2000)))
    elif kind == "truncate":
        raw = path.read_bytes()
        path.write_bytes(raw[: data.draw(st.integers(0, len(raw) - 1))])
    elif kind == "column":
        name = data.draw(st.sampled_from(table.schema.names))
        n = table.num_rows
        values = data.draw(
            st.one_of(
                st.lists(HOSTILE_TEXT, min_size=n, max_size=n).map(pa.array),
                st.lists(NUMBERS, min_size=n, max_size=n).map(
                    lambda v: pa.array(v, pa.float64(), from_pandas=False)
                ),
                st.lists(st.booleans(), min_size=n, max_size=n).map(pa.array),
                st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n).map(pa.array),
            )
        )
        index = table.schema.get_field_index(name)
        changed = table.set_column(index, name, values)
        pq.write_table(changed.replace_schema_metadata(table.schema.metadata), path)
    elif kind == "day":
        # any instant from 1970 to 2200 but 2026-10-02 00:00 (ns since the epoch)
        instant = data.draw(st.integers(0, 84_000 * 86_400 * 10**9))
        midnight = (date(2026, 10, 2) - date(1970, 1, 1)).days * 86_400 * 10**9
        if instant == midnight:
            instant += 1
        stamps = pa.array([instant] * table.num_rows, pa.int64()).cast(pa.timestamp("ns", tz="UTC"))
        index = table.schema.get_field_index("day")
        changed = table.set_column(index, "day", stamps)
        pq.write_table(changed.replace_schema_metadata(table.schema.metadata), path)
    else:
        pq.write_table(table.slice(0, 0), path)


def _rows_are_sound(frame: object, schema: pa.Schema) -> None:
    """What a reader returns: every quantity finite, ≥ 0 and under the bound, or null."""
    import pandas as pd

    assert isinstance(frame, pd.DataFrame)
    for field in schema:
        if field.name == "schema_version" or not (
            pa.types.is_integer(field.type) or pa.types.is_floating(field.type)
        ):
            continue
        values = frame[field.name].dropna().astype(float)
        assert ((values >= 0) & (values <= MAX_QUANTITY)).all(), field.name


@pytest.mark.parametrize(
    ("table", "schema", "reader"),
    [("pools", POOL_SCHEMA, read_pools), ("workloads", WORKLOAD_SCHEMA, read_workloads)],
)
@PROPERTY
@given(data=st.data())
def test_a_damaged_table_day_is_read_checked_or_refused_in_one_line(
    clean: Path, tmp_path: Path, table: str, schema: pa.Schema, reader: object, data: st.DataObject
) -> None:
    root = _copy(clean, tmp_path, 0)
    path = root / table / f"{DAY}.parquet"
    _damage_parquet(path, data)
    try:
        frame = reader(root)  # type: ignore[operator]
    except InputError as exc:
        _one_line_naming(exc, path)
        return
    _rows_are_sound(frame, schema)
    days = set(frame["day"].dt.date)
    assert days <= {date(2026, 10, d) for d in (1, 2, 3)}


@PROPERTY
@given(name=st.builds(lambda a, b: f"{a}2026-10-02{b}", HOSTILE_TEXT | st.just(""), HOSTILE_TEXT))
def test_foreign_names_are_never_read(clean: Path, tmp_path: Path, name: str) -> None:
    root = _copy(clean, tmp_path, 1)
    for table in ("pools", "workloads", "rollups"):
        try:
            shutil.copy(root / table / f"{DAY}.parquet", root / table / f"{name}.parquet")
        except (OSError, ValueError):
            return  # a name the file system refuses (NUL, '/', too long)
    assert read_pools(root).equals(read_pools(clean))
    assert read_workloads(root).equals(read_workloads(clean))
    assert HistoryStore(root).rollups().equals(HistoryStore(clean).rollups())


@PROPERTY
@given(data=st.data())
def test_a_damaged_rollups_or_summary_day_is_refused_in_one_line(
    clean: Path, tmp_path: Path, data: st.DataObject
) -> None:
    root = _copy(clean, tmp_path, 2)
    store = HistoryStore(root)
    if data.draw(st.booleans()):
        path = root / "rollups" / f"{DAY}.parquet"
        _damage_parquet(path, data)
        read = store.rollups
    else:
        path = root / "summary" / f"{DAY}.json"
        value = data.draw(
            st.one_of(
                st.binary(max_size=300).map(lambda b: b.decode("latin-1")),
                st.recursive(
                    st.none() | st.booleans() | NUMBERS | HOSTILE_TEXT,
                    lambda inner: (
                        st.lists(inner, max_size=3)
                        | st.dictionaries(HOSTILE_TEXT, inner, max_size=3)
                    ),
                    max_leaves=10,
                ).map(lambda v: json.dumps({"day": DAY, "nodes": v})),
                st.just("[" * 5000 + "]" * 5000),
            )
        )
        path.write_text(value, encoding="utf-8", errors="surrogateescape")
        read = store.summaries
    try:
        read()
    except InputError as exc:
        _one_line_naming(exc, path)


FORECAST_VALUES = st.recursive(
    st.none() | st.booleans() | NUMBERS | HOSTILE_TEXT | st.sampled_from(["2026-10-01", "x"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["series", "date", "mean", "lo80", "hi80", "lo95", "hi95", "method"])
            | HOSTILE_TEXT,
            inner,
            max_size=6,
        )
    ),
    max_leaves=20,
)


@PROPERTY
@given(pools=FORECAST_VALUES)
def test_a_stored_forecast_of_any_shape_reads_whole_or_is_refused(
    clean: Path, tmp_path: Path, pools: object
) -> None:
    root = _copy(clean, tmp_path, 3)
    path = root / "forecasts" / "2026-09.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "pools": pools}))
    try:
        stored = read_forecast(root, "2026-09")
    except InputError as exc:
        _one_line_naming(exc, path)
        return
    assert stored is not None
    # what is accepted is the shape the back-test reads (monthly/backtest.py)
    for series in stored["pools"].values():
        for entry in series.values():
            for point in entry.get("series", []):
                date.fromisoformat(point["date"])
                assert all(
                    point[k] is None or math.isfinite(point[k])
                    for k in ("mean", "lo80", "hi80", "lo95", "hi95")
                )


# -- through the real CLI -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("month") / "h"
    write_history(root, START, 31, [PoolTruth("general")], [WorkloadTruth("api", "general")])
    return root


@CLI
@given(data=st.data())
def test_rightsize_keeps_the_contract_on_a_damaged_workloads_day(
    month: Path, tmp_path: Path, data: st.DataObject
) -> None:
    root = _copy(month, tmp_path, 4)
    _damage_parquet(root / "workloads" / "2026-10-31.parquet", data)
    out = tmp_path / "rs.csv"
    out.unlink(missing_ok=True)
    outcome = run_cli(["rightsize", str(root), "--recipe", "krr", "--out", str(out)])
    assert_contract(outcome, watched=[root, tmp_path], absent_unless_ok=[out])


@CLI
@given(data=st.data())
def test_report_monthly_keeps_the_contract_on_a_damaged_pools_day(
    month: Path, tmp_path: Path, data: st.DataObject
) -> None:
    """Damages that must be refused (the review of an accepted one renders charts, which is the
    monthly bench's business, not a bounded property's): garbage bytes, another day's rows, zero
    rows, a non-finite quantity."""
    root = _copy(month, tmp_path, 5)
    path = root / "pools" / "2026-10-15.parquet"
    table = pq.read_table(path)
    kind = data.draw(st.sampled_from(["bytes", "day", "empty", "quantity"]))
    if kind == "bytes":
        path.write_bytes(data.draw(st.binary(max_size=500)))
    elif kind == "day":
        shutil.copy(root / "pools" / "2026-10-14.parquet", path)
    elif kind == "empty":
        pq.write_table(table.slice(0, 0), path)
    else:
        name = data.draw(st.sampled_from([f.name for f in POOL_SCHEMA if f.type == pa.float64()]))
        value = data.draw(st.sampled_from([math.inf, math.nan, -1.0, 1e300]))
        column = pa.array([value] * table.num_rows, pa.float64(), from_pandas=False)
        pq.write_table(table.set_column(table.schema.get_field_index(name), name, column), path)
    out = tmp_path / "m"
    outcome = run_cli(["report", "monthly", str(root), "--out", str(out)], timeout=120)
    assert outcome.exit_code == 2, outcome.stderr
    assert str(path) in outcome.stderr
    # The time bound here guards against a hang, not a speed claim (bench/monthly.py measures
    # speed): ``report monthly`` imports pandas, pyarrow and matplotlib before it reads, which
    # takes well over 5 s of wall time on a shared 2-core machine under load (about 1 s of CPU).
    assert_contract(outcome, max_seconds=30, watched=[root, tmp_path], absent_unless_ok=[out])
