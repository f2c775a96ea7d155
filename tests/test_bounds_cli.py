"""Bounded work, one-line messages naming the option typed, quiet ends (issue 31 items 5 and 7).

Every run goes through the real CLI in a child process (``cli_contract.run_cli``) except the
folder-swap race, which needs two writers at one instant and is forced in-process by wrapping
``os.rename``/``os.replace`` (the OS call, not our code).
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from cli_contract import assert_contract, run_cli, temp_leftovers
from monthly_history import PoolTruth, WorkloadTruth, write_history
from reliability_doc import documented_exit

from analyzer.core import atomic

SNAPSHOT_ARGS = ("--nodes", "3", "--days", "0.25", "--step", "5m")


@pytest.fixture(scope="module")
def snap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bounds") / "snap"
    done = run_cli(["generate", "--out", str(out), *SNAPSHOT_ARGS], timeout=120)
    assert done.exit_code == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bounds-history") / "history"
    workloads = [WorkloadTruth(f"api-{i}", "a") for i in range(20)]
    write_history(root, date(2026, 9, 1), 30, [PoolTruth("a"), PoolTruth("b")], workloads)
    return root


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


# -- whatif --search: counted and bounded before any replay (case 90) --------------------------


def test_search_grid_too_large_is_refused_at_once(snap: Path, tmp_path: Path) -> None:
    grid = tmp_path / "huge-grid.yaml"  # 3 × 101 × 100 = 30,300 configurations in 2 KB
    thresholds = ", ".join(f"{{cpu: {c}}}" for c in range(101))
    grid.write_text(
        "scoring: [MostAllocated, RequestedToCapacityRatio, LeastAllocated]\n"
        f"loadAwareThresholds: [{thresholds}]\n"
        f"loadAwareWeights: [{', '.join(map(str, range(1, 101)))}]\n"
    )
    out = tmp_path / "search"
    run = run_cli(["whatif", str(snap), "--search", "--search-grid", str(grid), "--out", str(out)])
    # 1.2 s of CPU here; the wall-time bound leaves room for a loaded shared machine (load 12)
    assert_contract(run, allowed_exits=(documented_exit("search-too-many"),), max_seconds=30)
    line = _one_line(run.stderr)
    assert "30,300 configurations + 1 baseline × 1 seed = 30,301 replays" in line
    assert "more than --max-configurations 250" in line
    assert "pass --max-configurations 30301" in line
    assert run.stdout == "" and not out.exists()


def test_search_bound_counts_seeds_and_the_option_raises_it(snap: Path) -> None:
    # The default grid: 8 configurations + kube-default = 9 replays per seed.
    run = run_cli(["whatif", str(snap), "--search", "--seeds", "3", "--max-configurations", "26"])
    assert run.exit_code == documented_exit("search-too-many")
    assert "= 27 replays, more than --max-configurations 26" in _one_line(run.stderr)


def test_search_says_what_it_replays_before_the_table(snap: Path, tmp_path: Path) -> None:
    grid = tmp_path / "one.yaml"
    grid.write_text("scoring: [MostAllocated, LeastAllocated]\nloadAwareThresholds: [null]\n")
    run = run_cli(["whatif", str(snap), "--search", "--search-grid", str(grid), "--workers", "1"],
                  timeout=120)  # fmt: skip
    assert run.exit_code == 0 and run.stderr == "", run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("search: 2 configurations + 1 baseline × 1 seed = 3 replays")
    # one process replays observed, kube-default, then the grid in order: the estimate comes
    # after the first grid configuration, 3 of 4 replays, for the 1 left
    assert lines[1].startswith("search: 3 of 4 replays done in ")
    assert "(1 replays on 1 worker, at the time this first grid configuration took)" in lines[1]
    assert lines[2].split()[0] == "configuration"  # then the table


# -- every count and duration bounded where it is read (case 62 and siblings) -----------------


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("rightsize", "{history}", "--recipe", "krr", "--days", "1000000000"), "--days"),
        (("rightsize", "{history}", "--recipe", "krr", "--min-days", "10" * 30), "--min-days"),
        (
            (
                "history",
                "backfill",
                "--prometheus",
                "http://127.0.0.1:9",
                "--since",
                "99999999d",
                "--out",
                "{tmp}/bf",
            ),
            "--since",
        ),
        (
            (
                "collect",
                "--prometheus",
                "http://127.0.0.1:9",
                "--since",
                "1d",
                "--step",
                "99999999999999999d",
                "--out",
                "{tmp}/c",
            ),
            "--step",
        ),
        (("violations", "{snap}", "--usage-window", "9999999999999d"), "--usage-window"),
        (("generate", "--out", "{tmp}/g", "--days", "inf"), "--days"),
        (("generate", "--out", "{tmp}/g", "--days", "1e9"), "--days"),
        (("demo", "--out", "{tmp}/d", "--history-days", "1000000000"), "--history-days"),
        (("whatif", "{snap}", "--strategy", "most-allocated", "--seeds", "10" * 6), "--seeds"),
    ],
)
def test_huge_counts_are_one_line_naming_the_option(
    args: tuple[str, ...], option: str, snap: Path, history: Path, tmp_path: Path
) -> None:
    given = [a.format(history=history, snap=snap, tmp=tmp_path) for a in args]
    run = run_cli(given)
    assert_contract(run, allowed_exits=(documented_exit("count-too-large"),), watched=[tmp_path],
                    max_seconds=30)  # fmt: skip
    line = _one_line(run.stderr)
    assert line.startswith(f"analyzer: error: {option}: "), line
    assert "100 years" in line or "finite" in line or "at most" in line
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_usage_window_longer_than_the_data_is_refused(snap: Path) -> None:
    # 100 years passes the duration bound but not the data's 6 hours: before, a rolling average
    # of 36500d ran for minutes (and gigabytes) over a 6-hour snapshot.
    run = run_cli(["violations", str(snap), "--usage-window", "36500d"])
    assert_contract(run, allowed_exits=(documented_exit("count-too-large"),), max_seconds=30)
    line = _one_line(run.stderr)
    assert "--usage-window: 36500d is longer than the snapshot's data (6h); give at most 6h" in line


def test_click_usage_errors_are_one_line(history: Path) -> None:
    run = run_cli(["rightsize", str(history), "--recipe", "krr", "--format", "xml"])
    assert run.exit_code == documented_exit("usage-one-line")
    line = _one_line(run.stderr)
    assert "Invalid value for '--format': 'xml' is not one of 'csv', 'yaml'" in line
    assert "analyzer rightsize --help')" in line  # as it was run: analyzer, python -m analyzer
    typo = run_cli(["rightsize", str(history), "--recipe", "krr", "--dayz", "3"])
    assert typo.exit_code == 2 and "No such option '--dayz'" in _one_line(typo.stderr)


# -- messages name the option typed (cases 84, 118) --------------------------------------------


def test_whatif_rightsize_recipe_errors_name_rightsize(snap: Path) -> None:
    run = run_cli(["whatif", str(snap), "--strategy", "most-allocated", "--rightsize",
                   "percentile:42"])  # fmt: skip
    assert run.exit_code == documented_exit("option-named")
    line = _one_line(run.stderr)
    assert "--rightsize: percentile:42 is not kept for cpu" in line and "--recipe" not in line


def test_backfill_step_longer_than_the_day_names_step(tmp_path: Path) -> None:
    out = tmp_path / "bf"
    run = run_cli(["history", "backfill", "--prometheus", "http://127.0.0.1:9", "--since", "1d",
                   "--until", "2026-11-01", "--step", "2d", "--out", str(out)])  # fmt: skip
    assert run.exit_code == documented_exit("option-named")
    line = _one_line(run.stderr)
    assert "--step: 2d leaves no whole step inside the day 2026-11-01" in line
    assert "--start/--end" not in line and not out.exists()


def test_collect_since_empty_range_names_since(tmp_path: Path) -> None:
    run = run_cli(["collect", "--prometheus", "http://127.0.0.1:9", "--since", "1d", "--step",
                   "2d", "--out", str(tmp_path / "c")])  # fmt: skip
    assert run.exit_code == documented_exit("option-named")
    assert "--step: 2d leaves no whole step inside --since (1d)" in _one_line(run.stderr)


# -- one line, whatever the library text (cases 78, 3) -----------------------------------------


def test_a_multi_line_library_message_is_one_line(
    snap: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whatever a reader lets through (a library text ending in a newline, a name holding a line
    # break or a terminal escape), the one printer of errors writes one line: its parts joined,
    # every other non-printable escaped.
    from click.testing import CliRunner

    from analyzer.cli import main
    from analyzer.core import workloads
    from analyzer.core.errors import InputError

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise InputError("first line\nsecond line\u2028third\r\n\x1b[31mred\u202e")

    monkeypatch.setattr(workloads, "read_recommendations", refuse)
    recs = tmp_path / "recs.csv"
    recs.write_text("x\n")
    run = CliRunner().invoke(main, ["whatif", str(snap), "--recommendations", str(recs)])
    assert run.exit_code == 2
    assert run.stderr == "analyzer: error: first line second line third \\x1b[31mred\\u202e\n"


# -- a closed stdout is quiet (case 83) --------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("whatif", "{snap}", "--strategy", "most-allocated"),
        ("inspect", "{snap}", "--table", "pod_usage"),
        ("queries", "list"),
    ],
)
def test_closed_stdout_exits_141_silently(args: tuple[str, ...], snap: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: EPIPE on every write
    process = subprocess.run(
        [sys.executable, "-m", "analyzer", *[a.format(snap=snap) for a in args]],
        stdout=write_end,
        stderr=subprocess.PIPE,
        timeout=120,
        check=False,
    )
    os.close(write_end)
    assert process.returncode == documented_exit("stdout-closed"), process.stderr
    assert process.stderr == b""


def test_head_dash_1_on_a_long_listing_is_quiet(snap: Path) -> None:
    command = f"'{sys.executable}' -m analyzer inspect '{snap}' --table pod_usage | head -1"
    shell = subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], capture_output=True,
                           timeout=120, check=False)  # fmt: skip
    assert shell.stdout.count(b"\n") == 1 and shell.stderr == b""
    assert shell.returncode in (0, documented_exit("stdout-closed"))


# -- OS write errors name the file (cases 59, 69) ----------------------------------------------


def _limited(size: int) -> object:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return apply


def _run_limited(args: list[str], size: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "analyzer", *args], capture_output=True,
                          text=True, preexec_fn=_limited(size), timeout=120, check=False)  # type: ignore[arg-type]  # fmt: skip


def test_file_size_limit_on_rightsize_out_names_the_file(history: Path, tmp_path: Path) -> None:
    out = tmp_path / "rs.csv"
    proc = _run_limited(["rightsize", str(history), "--recipe", "krr", "--out", str(out)], 100)
    assert proc.returncode == documented_exit("os-write-refused"), proc.stderr
    line = _one_line(proc.stderr)
    assert f"File too large on {out} (errno 27)" in line
    assert list(tmp_path.iterdir()) == []


def test_file_size_limit_in_the_monthly_folder_names_the_file(
    history: Path, tmp_path: Path
) -> None:
    out = tmp_path / "m"
    proc = _run_limited(["report", "monthly", str(history), "--out", str(out)], 20_000)
    assert proc.returncode == documented_exit("os-write-refused"), proc.stderr
    line = _one_line(proc.stderr)
    assert f"File too large on {out}/" in line and ".tmp" not in line, line
    assert not out.exists() and temp_leftovers([tmp_path]) == []


# -- the folder swap with a second writer at the same instant ---------------------------------


def _write(target: Path, text: str) -> None:
    with atomic.atomic_directory(target) as tmp:
        (tmp / "f.txt").write_text(text)


@pytest.mark.parametrize("moment", ["before-ours", "before-aside"])
def test_swap_race_leaves_one_whole_folder(
    moment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second writer swaps its folder in at the instant between our renames: 'before-ours'
    (after we moved the old folder aside, before ours goes in: rename(2) then refuses ours,
    ENOTEMPTY) or 'before-aside' (it moves the target away under us: ENOENT)."""
    target = tmp_path / "out"
    _write(target, "old")
    real = os.replace
    fired = []

    def racing(src: object, dst: object) -> None:
        ours_in = Path(str(dst)) == target and Path(str(src)).name.startswith(".out.")
        aside = Path(str(src)) == target
        if not fired and ((moment == "before-ours" and ours_in) or
                          (moment == "before-aside" and aside)):  # fmt: skip
            fired.append(True)
            _write(target, "other")  # the other writer, whole, right now
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", racing)
    _write(target, "ours")
    monkeypatch.setattr(os, "replace", real)
    assert fired
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # nothing aside, no temporary
    assert (target / "f.txt").read_text() == "ours"  # the last writer wins, whole
    assert documented_exit("swap-race") == 0


# -- no library warning on stderr: long names in every chart (case 103) -------------------------


def test_a_10000_character_pool_name_leaves_stderr_empty(snap: Path, tmp_path: Path) -> None:
    """Every chart shortens long names (``report.charts.fit_labels``); the children run with
    matplotlib's and pandas' warnings turned into errors, so a new one fails here, not in cron."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    long = tmp_path / "snap-long"
    shutil.copytree(snap, long)
    table = pq.read_table(long / "nodes.parquet")
    nodes = table.to_pandas()
    nodes["pool"] = nodes["pool"].where(nodes.index % 2 == 1, "P" * 10_000)
    frame = pa.Table.from_pandas(nodes, schema=table.schema, preserve_index=False)
    pq.write_table(frame.replace_schema_metadata(table.schema.metadata), long / "nodes.parquet")
    env = {**os.environ, "PYTHONWARNINGS": "error::UserWarning,error::RuntimeWarning"}
    reports = tmp_path / "rep"
    runs = [
        ["report", "nightly", str(long), "--out", str(reports), "--date", "2026-11-01"],
        ["report", "monthly", str(reports), "--month", "2026-11", "--out", str(tmp_path / "m")],
        [
            "report",
            "whatif",
            str(long),
            "--strategy",
            "most-allocated",
            "--out",
            str(tmp_path / "w"),
        ],
    ]
    for args in runs:
        run = run_cli(args, env=env, timeout=300)
        assert run.exit_code == 0 and run.stderr == "", (args, run.stderr[-2000:])
    assert "P" * 10_000 in (reports / "2026-11-01" / "report.json").read_text()  # kept whole


def test_search_refuses_what_it_cannot_do_before_any_replay(snap: Path, tmp_path: Path) -> None:
    """Cases 92 and 93: --search with --rightsize or --arrivals created, and an --out that is
    not a what-if report analyzer wrote (a symlink to /etc, a user's folder), end in one line,
    exit 2, before any replay; nothing is written through the link or into the folder."""
    rightsize = run_cli(["whatif", str(snap), "--search", "--rightsize", "krr"])
    assert rightsize.exit_code == 2
    assert "--rightsize: not with --search yet" in _one_line(rightsize.stderr)
    arrivals = run_cli(["whatif", str(snap), "--search", "--arrivals", "created"])
    assert arrivals.exit_code == 2 and "--arrivals: only for" in _one_line(arrivals.stderr)
    link = tmp_path / "etc-link"
    link.symlink_to("/etc")
    user = tmp_path / "userdir"
    user.mkdir()
    (user / "important.txt").write_text("keep")
    for out in (link, user):
        run = run_cli(["whatif", str(snap), "--search", "--out", str(out)])
        assert run.exit_code == documented_exit("out-not-ours"), run.stderr
        assert "is not a what-if report analyzer wrote" in _one_line(run.stderr)
        assert run.stdout == ""  # refused before the plan line: no replay started
    assert link.is_symlink() and str(link.readlink()) == "/etc"
    assert [p.name for p in user.iterdir()] == ["important.txt"]


def test_real_disk_full_names_the_file(history: Path, tmp_path: Path) -> None:
    """Case 125's fault (ENOSPC, not a size limit) on a real 1 MiB tmpfs filled to 16 KiB free:
    the line names the file of the review being written; nothing is left on the small disk.
    Needs root to mount (CI runs as root); skipped, saying so, elsewhere."""
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(tiny)],
                             capture_output=True, check=False)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode()[:200]}")
    try:
        filler = tiny / "filler"
        free = os.statvfs(tiny).f_bavail * os.statvfs(tiny).f_frsize
        filler.write_bytes(b"\0" * (free - 16 * 1024))
        out = tiny / "m"
        run = run_cli(["report", "monthly", str(history), "--out", str(out)], timeout=120)
        assert run.exit_code == documented_exit("os-write-refused"), run.stderr
        line = _one_line(run.stderr)
        assert f"No space left on device on {out}/" in line and "(errno 28)" in line, line
        assert ".tmp" not in line
        assert sorted(p.name for p in tiny.iterdir()) == ["filler"]  # nothing half-written
    finally:
        subprocess.run(["umount", str(tiny)], check=False)


@pytest.mark.parametrize("brk", ["\n", "\r\n", "\r", "\x85", "\u2028", "\u2029", "\x0b", "\x0c",
                                 "\x1c", "\x1d", "\x1e"])  # fmt: skip
def test_one_line_joins_every_line_break_and_escapes_controls(brk: str) -> None:
    from analyzer.cli.base import one_line

    text = one_line(f"thrift: Exceeded depth limit{brk}); delete that file{brk}\x1b[31mred{brk}")
    assert text == "thrift: Exceeded depth limit ); delete that file \\x1b[31mred"
    assert len(text.splitlines()) == 1
