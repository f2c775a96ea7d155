"""The campaign's `rightsize` and `whatif --recommendations` option cases that held (rows 60, 61,
67, 68, 81), kept held through the real CLI: each refusal is one stderr line naming the option,
exit 2 (an OS refusal of the output file: exit 1), and nothing is written through a symlink."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from monthly_history import PoolTruth, WorkloadTruth, write_history
from reliability_doc import documented_exit
from test_joint import RIGHTSIZED, three_half_empty

from analyzer.cli import main
from analyzer.core.csvsafe import csv_text
from analyzer.core.snapshot import write_snapshot


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rs") / "history"
    write_history(
        root, date(2026, 10, 1), 3, [PoolTruth("general")], [WorkloadTruth("api", "general")]
    )
    return root


def _line(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    return lines[0]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--recipe", "cpu=percentile:97"], "--recipe: percentile:97 is not kept for cpu"),  # 60
        (["--recipe", "krr", "--days", "0"], "--days"),  # 61
        (["--recipe", "krr", "--min-days", "-3"], "--min-days"),
        (["--recipe", "krr", "--min-samples", "-5"], "--min-samples"),
        (["--recipe", "cpu=percentile:95,headroom:1e308"], "--recipe: headroom:1e308"),
    ],
)
def test_rightsize_options_are_refused_in_one_line(
    history: Path, tmp_path: Path, args: list[str], named: str
) -> None:
    out = tmp_path / "rs.csv"
    run = CliRunner().invoke(main, ["rightsize", str(history), *args, "--out", str(out)])
    assert run.exit_code == 2, run.output
    assert named in _line(run)
    assert not out.exists()


def test_rightsize_out_refused_by_the_system_is_one_line(history: Path) -> None:
    # row 67: /proc refuses the temporary file; nothing is left there
    run = CliRunner().invoke(
        main, ["rightsize", str(history), "--recipe", "krr", "--out", "/proc/rs.csv"]
    )
    assert run.exit_code == documented_exit("os-write-refused"), run.output
    assert "/proc" in _line(run)
    assert not Path("/proc/rs.csv").exists()


def test_rightsize_out_symlink_is_replaced_not_written_through(
    history: Path, tmp_path: Path
) -> None:
    # row 68: the link is replaced by the output file; its target keeps its content
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n")
    link = tmp_path / "rs-link.csv"
    link.symlink_to(victim)
    run = CliRunner().invoke(
        main, ["rightsize", str(history), "--recipe", "krr", "--out", str(link)]
    )
    assert run.exit_code == 0, run.output
    assert victim.read_text() == "keep\n"
    assert not link.is_symlink() and link.read_text().startswith("namespace,owner_kind,owner_name")


def test_whatif_recommendations_option_combinations_are_refused(tmp_path: Path) -> None:
    # row 81: --blocked alone, --arrivals created with --recommendations, three strategies, an
    # unknown preset: exit 2, one line naming the option
    snap = write_snapshot(three_half_empty(), tmp_path / "snap")
    recs = tmp_path / "recs.csv"
    recs.write_text(csv_text(RIGHTSIZED), encoding="utf-8")
    base = ["whatif", str(snap)]
    with_recs = [*base, "--recommendations", str(recs), "--workers", "1"]
    cases = [
        ([*base, "--blocked"], "--blocked: only with --recommendations"),
        ([*with_recs, "--arrivals", "created"], "--arrivals:"),
        ([*with_recs, *("--strategy", "kube-default") * 3], "--strategy: with --recommendations"),
        ([*with_recs, "--strategy", "no-such-preset"], "--strategy: unknown strategy"),
    ]
    for args, named in cases:
        run = CliRunner().invoke(main, args)
        assert run.exit_code == 2, (args, run.output)
        assert named in _line(run), args
