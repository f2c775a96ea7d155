"""History files are checked, not trusted (issue 31 item 3; reliability-2026-11 rows 1-32, 85).

A small synthetic history (tests/monthly_history.py: October 2026, two pools, two workloads) is
damaged the way the campaign damaged the demo's, then read by the real commands (``report
monthly``, ``rightsize``, ``whatif --rightsize-history``). Each damage ends in one line naming
the damaged file and the fix, exit 2 (docs/reliability.md, "History store"), and nothing is
written; stray names are ignored.
"""

from __future__ import annotations

import json
import math
import shutil
import struct
from collections.abc import Callable
from datetime import date
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_contract import assert_contract, run_cli
from click.testing import CliRunner, Result
from monthly_history import PoolTruth, WorkloadTruth, write_history
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.history.capacity import METADATA_KEY, read_pools, read_workloads
from analyzer.history.forecasts import write_forecast

OCT = date(2026, 10, 1)
DAY = "2026-10-15"


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("clean") / "h"
    write_history(
        root, OCT, 31, [PoolTruth("general"), PoolTruth("memory", nodes=4)],
        [WorkloadTruth("api", "general"), WorkloadTruth("db", "memory")],
    )  # fmt: skip
    return root


@pytest.fixture
def h(clean: Path, tmp_path: Path) -> Path:
    root = tmp_path / "h"
    shutil.copytree(clean, root)
    return root


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _monthly(h: Path, out: Path, *extra: str) -> Result:
    return _run("report", "monthly", str(h), "--out", str(out), *extra)


def _refused(run: Result, code: int, *words: str) -> str:
    """The run ended in one stderr line holding ``words``, with the fault's documented ``code``."""
    assert run.exit_code == code, run.output
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, run.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _rewrite(path: Path, change: Callable[[pd.DataFrame], pd.DataFrame], **kw: object) -> None:
    """Rewrite a day file with ``change`` applied to its rows, keeping its metadata."""
    table = pq.read_table(path)
    frame = change(table.to_pandas())
    out = pa.Table.from_pandas(frame, preserve_index=False, **kw)  # type: ignore[arg-type]
    pq.write_table(out.replace_schema_metadata(table.schema.metadata), path)


def _scramble_pages(path: Path) -> None:
    """The campaign's row 4: every byte between the magic and the footer scrambled."""
    data = bytearray(path.read_bytes())
    end = len(data) - 8 - struct.unpack("<I", data[-8:-4])[0]
    for i in range(4, end - 4):
        data[i] = (data[i] * 7 + 13) & 255
    path.write_bytes(bytes(data))


# -- damaged files: rows 1-6, 85 -----------------------------------------------------------------


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[:1000], id="truncated"),  # row 1
        pytest.param(lambda b: b"", id="empty"),  # row 2
        pytest.param(lambda b: b[:8] + bytes(len(b) // 2 - 8) + b[len(b) // 2 :], id="footer"),
    ],
)
def test_a_damaged_pools_day_is_one_line_naming_it(
    h: Path, tmp_path: Path, damage: Callable[[bytes], bytes]
) -> None:
    path = h / "pools" / f"{DAY}.parquet"
    path.write_bytes(damage(path.read_bytes()))
    line = _refused(
        _monthly(h, tmp_path / "m"), documented_exit("history-damaged"), str(path), "is unreadable"
    )
    assert "delete that file" in line or "history backfill" in line
    assert not (tmp_path / "m").exists()


def test_scrambled_data_pages_name_the_file_exit_2_one_line(h: Path, tmp_path: Path) -> None:
    """Rows 4 and 6: the footer reads, the pages do not: exit 1 and three lines without a file
    before; the whole file is now read inside a try that names it."""
    _scramble_pages(h / "pools" / f"{DAY}.parquet")
    outcome = run_cli(["report", "monthly", str(h), "--out", str(tmp_path / "m")], timeout=120)
    assert outcome.exit_code == documented_exit("history-damaged"), outcome.stderr
    assert f"pools/{DAY}.parquet is unreadable" in outcome.stderr
    assert "check the free space" not in outcome.stderr
    assert_contract(outcome, max_seconds=60, absent_unless_ok=[tmp_path / "m"])
    _scramble_pages(h / "workloads" / "2026-10-31.parquet")
    outcome = run_cli(["rightsize", str(h), "--recipe", "krr", "--out", str(tmp_path / "rs.csv")])
    assert outcome.exit_code == 2 and "workloads/2026-10-31.parquet is unreadable" in outcome.stderr
    assert_contract(outcome, max_seconds=60, absent_unless_ok=[tmp_path / "rs.csv"])


def test_whatif_rightsize_history_goes_through_the_same_reader(h: Path, tmp_path: Path) -> None:
    """Row 85: ``whatif --rightsize krr --rightsize-history H`` with a scrambled workloads day."""
    from analyzer.core.snapshot import write_snapshot
    from analyzer.sources import SyntheticSpec, generate

    snap = write_snapshot(generate(SyntheticSpec(seed=3, nodes=3, days=1)).snapshot, tmp_path / "s")
    _scramble_pages(h / "workloads" / "2026-10-31.parquet")
    run = _run("whatif", str(snap), "--strategy", "most-allocated", "--rightsize", "krr",
               "--rightsize-history", str(h))  # fmt: skip
    _refused(run, documented_exit("history-damaged"), "workloads/2026-10-31.parquet is unreadable")


# -- foreign content: rows 7, 8, 29, 31, 21, 20 ------------------------------------------------


def test_a_foreign_schema_names_its_missing_columns(h: Path, tmp_path: Path) -> None:
    """Row 7: a snapshot's nodes table copied in as a pools day read as all-null columns."""
    nodes = pd.DataFrame({"node": ["n1"], "pool": ["general"], "cpu_allocatable": [4000]})
    nodes.to_parquet(h / "pools" / f"{DAY}.parquet", index=False)
    line = _refused(
        _monthly(h, tmp_path / "m"), documented_exit("history-column-type"), f"{DAY}.parquet"
    )
    assert "lacks column(s) schema_version, day, nodes_mean" in line


def test_text_in_a_number_column_names_file_column_and_type(h: Path, tmp_path: Path) -> None:
    """Row 8: ``nodes_mean`` holding "40.0x" was an ArrowInvalid traceback."""
    path = h / "pools" / f"{DAY}.parquet"
    _rewrite(path, lambda f: f.assign(nodes_mean="40.0x"))
    line = _refused(_monthly(h, tmp_path / "m"), documented_exit("history-column-type"), str(path))
    assert "column nodes_mean of type" in line and "not double" in line


@pytest.mark.parametrize("month", ["2026-10", "2026-12"])
def test_rows_of_another_day_name_the_file(h: Path, tmp_path: Path, month: str) -> None:
    """Rows 21 and 29: the 10-14 file copied as 10-15 (a second 10-14), or as 2026-12-01 (another
    month's rows: a bare AssertionError before)."""
    name = f"{DAY}.parquet" if month == "2026-10" else "2026-12-01.parquet"
    for table in ("pools", "workloads"):
        shutil.copy(h / table / "2026-10-14.parquet", h / table / name)
    run = _monthly(h, tmp_path / "m", "--month", month)
    line = _refused(
        run, documented_exit("history-day-mismatch"), f"pools/{name}", "holds rows of 2026-10-14"
    )
    assert "history backfill" in line  # the fix: make that day again


def test_a_zero_row_pools_day_is_one_line(h: Path, tmp_path: Path) -> None:
    """Row 31: a valid schema with no rows as the month's only day (AssertionError before)."""
    path = h / "pools" / "2026-12-01.parquet"
    table = pq.read_table(h / "pools" / "2026-10-14.parquet")
    pq.write_table(table.slice(0, 0), path)
    _refused(_monthly(h, tmp_path / "m", "--month", "2026-12"), documented_exit("history-day-mismatch"),
             str(path), "holds no rows")  # fmt: skip


def test_stray_names_are_ignored_the_basic_form_too(h: Path, clean: Path) -> None:
    """Rows 19 and 20: ``20261014.parquet`` was read as a second 10-14 (date.fromisoformat takes
    the basic form); now it is a stray name like the others, and the rows read are the clean ones."""
    pools = h / "pools"
    for name in ("20261014.parquet", "2026-10-14.parquet.bak", "copy of 2026-10-14.parquet",
                 "2026-13-45.parquet", ".2026-10-14.parquet.abcdefgh.tmp"):  # fmt: skip
        shutil.copy(pools / "2026-10-14.parquet", pools / name)
    assert read_pools(h).equals(read_pools(clean))
    (h / "workloads" / "20261031.parquet").write_bytes(b"garbage")
    assert read_workloads(h, last=1).equals(read_workloads(clean, last=1))


# -- impossible values: row 30 -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "value", "says"),
    [
        ("cpu_allocatable_mean_millicores", math.inf, "is not finite"),
        ("memory_requested_peak_bytes", math.nan, "is not finite"),
        ("cpu_used_p95_millicores", -1e18, "is negative"),
        ("memory_allocatable_peak_bytes", 1e300, "is over 1e+18"),
    ],
)
def test_impossible_quantities_are_refused_naming_the_file(
    h: Path, tmp_path: Path, column: str, value: float, says: str
) -> None:
    path = h / "pools" / f"{DAY}.parquet"
    table = pq.read_table(path)
    index = table.schema.get_field_index(column)
    values = pa.array([value] * table.num_rows, pa.float64(), from_pandas=False)
    pq.write_table(table.set_column(index, column, values), path)
    line = _refused(
        _monthly(h, tmp_path / "m"), documented_exit("history-non-finite"), str(path), column, says
    )
    assert "history backfill" in line


def test_the_workloads_reader_checks_quantities_for_rightsize(h: Path, tmp_path: Path) -> None:
    path = h / "workloads" / "2026-10-31.parquet"
    _rewrite(path, lambda f: f.assign(memory_used_max_bytes=-5.0))
    run = _run("rightsize", str(h), "--recipe", "krr", "--out", str(tmp_path / "rs.csv"))
    _refused(
        run,
        documented_exit("history-non-finite"),
        str(path),
        "memory_used_max_bytes",
        "is negative",
    )
    assert not (tmp_path / "rs.csv").exists()


# -- versions, folders, links: rows 9-11, 17, 18 --------------------------------------------------


def test_versions_folders_and_links(h: Path, tmp_path: Path) -> None:
    path = h / "workloads" / "2026-10-31.parquet"
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: b"7"}), path)  # row 11
    run = _run("rightsize", str(h), "--recipe", "krr", "--format", "yaml")
    _refused(run, documented_exit("history-damaged"), "schema version 7, newer", "upgrade analyzer")
    pq.write_table(table.replace_schema_metadata({METADATA_KEY: b"\xff\xfe1x"}), path)  # row 10
    _refused(
        _run("rightsize", str(h), "--recipe", "krr"),
        documented_exit("history-damaged"),
        "not a number",
    )
    path.unlink()
    path.mkdir()  # row 17
    _refused(
        _run("rightsize", str(h), "--recipe", "krr"),
        documented_exit("history-damaged"),
        "is not a file",
    )
    path.rmdir()
    path.symlink_to("/etc/passwd")  # row 18: the target's text is never shown
    line = _refused(
        _run("rightsize", str(h), "--recipe", "krr"), documented_exit("history-damaged"), str(path)
    )
    assert "root:" not in line


# -- stored forecasts: rows 13-16 -------------------------------------------------------------


def _forecast(h: Path, pools: object, **extra: object) -> None:
    write_forecast(h, "2026-09", {"history_end": "2026-09-30", "pools": pools, **extra})


POINT = {"date": "2026-10-01", "mean": 1.0, "lo80": 0.5, "hi80": 1.5, "lo95": 0.2, "hi95": 2.0}


@pytest.mark.parametrize(
    ("pools", "says"),
    [
        ("oops", "pools of type str, not an object"),  # row 14
        (
            {"general": {"requested_cpu_cores": {"series": [{**POINT, "date": "not-a-date"}]}}},
            ".series[0].date that is not a day",
        ),
        (
            {
                "general": {
                    "requested_cpu_cores": {
                        "series": [{k: v for k, v in POINT.items() if k != "hi95"}]
                    }
                }
            },
            "without hi95",
        ),
        (
            {"general": {"requested_cpu_cores": {"series": [{**POINT, "mean": "1"}]}}},
            ".mean of type str, not a number",
        ),
        ({"general": {"requested_cpu_cores": {"series": "x"}}}, "series of type str"),
        ({"general": [1, 2]}, "of type list, not an object"),
    ],
)
def test_a_stored_forecast_of_the_wrong_shape_is_one_line(
    h: Path, tmp_path: Path, pools: object, says: str
) -> None:
    _forecast(h, pools)
    line = _refused(
        _monthly(h, tmp_path / "m"),
        documented_exit("history-forecast-shape"),
        "forecasts/2026-09.json",
    )
    assert says in line and "delete that file" in line
    assert not (tmp_path / "m").exists()


def test_a_truncated_or_foreign_forecast_is_one_line(h: Path, tmp_path: Path) -> None:
    """Row 13; and a forecast copied from another month is refused, not scored against this one."""
    path = h / "forecasts" / "2026-09.json"
    _forecast(h, {"general": {"requested_cpu_cores": {"series": [POINT] * 200}}})
    text = path.read_text()
    path.write_text(text[:5000])
    _refused(
        _monthly(h, tmp_path / "m"), documented_exit("history-damaged"), str(path), "not valid JSON"
    )
    path.write_text("[1, 2, 3]")
    _refused(
        _monthly(h, tmp_path / "m"),
        documented_exit("history-damaged"),
        "does not hold a JSON object",
    )
    path.write_text(json.dumps({**json.loads(text), "month": "2026-08"}))
    _refused(
        _monthly(h, tmp_path / "m"),
        documented_exit("history-forecast-shape"),
        "forecast of '2026-08'",
    )


def test_a_forecast_without_history_end_is_scored(h: Path, tmp_path: Path) -> None:
    """Row 16: the back-test does not need ``history_end``; the review completes and scores."""
    write_forecast(h, "2026-09", {"pools": {"general": {"requested_cpu_cores": {
        "method": "linear", "series": [{**POINT, "date": f"2026-10-{d:02d}", "mean": 40.0}
                                       for d in range(1, 32)]}}}})  # fmt: skip
    run = _monthly(h, tmp_path / "m")
    assert run.exit_code == 0, run.output
    backtest = json.loads((tmp_path / "m" / "report.json").read_text())["backtest"]
    # the truth requests 40 cores every day: a forecast of exactly 40 has no error
    assert backtest["days_scored"] == 31 and backtest["rows"][0]["mean_abs_error"] == 0.0
