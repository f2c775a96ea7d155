"""``report fleet`` makes the history store's per-file checks (docs/reliability.md "fleetcheck").

A day file with an impossible quantity, rows of another day, another cluster's stamp or a newer
schema version would otherwise flow straight into the page through DuckDB: each ends the run in
one line naming the file and the fix (exit 2), nothing written. The fleet is two tiny clusters
written by the store's own writers; each test damages one copy of one pools file.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.sources.fleet_history import FleetSpec, write_fleet

SPEC = FleetSpec(clusters=2, nodes=4, pools=1, days=3, seed=5)
COLUMN = "cpu_allocatable_mean_millicores"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    write_fleet(root, SPEC)
    return root


def _pools(root: Path, cluster: str) -> list[Path]:
    return sorted((root / f"cluster={cluster}" / "history" / "pools").glob("*.parquet"))


def _rewrite(path: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    table = pq.read_table(path)
    pq.write_table(change(table).replace_schema_metadata(table.schema.metadata), path)


def _set(value: float) -> Callable[[pa.Table], pa.Table]:
    def change(table: pa.Table) -> pa.Table:
        index = table.schema.get_field_index(COLUMN)
        return table.set_column(index, COLUMN, pa.array([value] * table.num_rows, pa.float64()))

    return change


def _next_day(table: pa.Table) -> pa.Table:
    index = table.schema.get_field_index("day")
    later = pc.add(table.column("day"), pa.scalar(86_400 * 10**9, pa.duration("ns")))
    return table.set_column(index, "day", later.cast(table.schema.field("day").type))


def _newer(table: pa.Table) -> pa.Table:
    metadata = dict(table.schema.metadata or {})
    metadata[b"analyzer.history.schema_version"] = b"2"
    return table.replace_schema_metadata(metadata)


def test_the_clean_fleet_passes(fleet: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["report", "fleet", str(fleet), "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("fault", "change", "words"),
    [
        ("fleet-file-bounds", _set(-5.0), (COLUMN, "is negative")),
        ("fleet-file-bounds", _set(float("nan")), (COLUMN, "is not finite")),
        ("fleet-file-bounds", _set(2e18), (COLUMN, "is over 1e+18")),
        ("fleet-file-day", _next_day, ("not of the day its name says", "--force")),
        ("fleet-file-version", None, ("schema version 2", "upgrade analyzer")),
        ("fleet-file-cluster", None, ("'cluster-00'", "'cluster-01'", "move that file")),
    ],
    ids=["negative", "nan", "over", "day", "version", "cluster"],
)
def test_a_bad_day_file_is_named(
    fleet: Path,
    tmp_path: Path,
    fault: str,
    change: Callable[[pa.Table], pa.Table] | None,
    words: tuple[str, ...],
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(fleet, copy)
    bad = _pools(copy, "cluster-01")[1]
    if fault == "fleet-file-cluster":  # a file copied in from another cluster's history
        shutil.copyfile(_pools(copy, "cluster-00")[1], bad)
    else:
        assert change is not None or fault == "fleet-file-version"
        table = pq.read_table(bad)
        changed = _newer(table) if change is None else change(table)
        if change is None:
            pq.write_table(changed, bad)
        else:
            pq.write_table(changed.replace_schema_metadata(table.schema.metadata), bad)
    out = tmp_path / "o"
    result = CliRunner().invoke(main, ["report", "fleet", str(copy), "--out", str(out)])
    codes = {  # each id spelled out: tests/test_reliability_doc.py looks for the literal calls
        "fleet-file-bounds": documented_exit("fleet-file-bounds"),
        "fleet-file-day": documented_exit("fleet-file-day"),
        "fleet-file-version": documented_exit("fleet-file-version"),
        "fleet-file-cluster": documented_exit("fleet-file-cluster"),
    }
    assert result.exit_code == codes[fault], result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, lines
    assert bad.name in lines[0] and "cluster=cluster-01" in lines[0], lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    assert not out.exists()
