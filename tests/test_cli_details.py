"""CLI details a new user trips over (issue 14): messages in the user's syntax, clear warnings.

Every test drives the real CLI through click's CliRunner and asserts the exit code and the
one line the user reads.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner, Result
from h4_snapshots import build

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot

HOUR_STEPS_IN_7D = 7 * 24
ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _error_line(result: Result, code: int) -> str:
    """The one stderr line of a failed run (no traceback, nothing else)."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("analyzer: error: "), lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def week_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One node at a constant 1000 millicores, hourly samples over exactly 7 days."""
    snap = build(
        nodes=[{"node": "n1"}],
        node_usage={"n1": [1000.0] * HOUR_STEPS_IN_7D},
        step="1h",
    )
    path = tmp_path_factory.mktemp("week") / "snap"
    write_snapshot(snap, path)
    return path


# --- 1. durations are named the way the user typed them ---------------------------------------


@pytest.mark.parametrize("typed", ["0m", "0s", "0h0m"])
def test_zero_duration_is_named_as_typed(week_snapshot: Path, typed: str) -> None:
    line = _error_line(_run("aggregate", str(week_snapshot), "--durations", typed), 2)
    assert f"'{typed}'" in line and "positive" in line, line
    assert "0:00:00" not in line


@pytest.mark.parametrize("typed", ["5m,,1h", "5m,", ",5m", "5m, ,1h"])
def test_empty_duration_item_is_an_error(week_snapshot: Path, typed: str) -> None:
    line = _error_line(_run("aggregate", str(week_snapshot), "--durations", typed), 2)
    assert "--durations" in line and "empty item" in line, line


def test_zero_usage_window_is_named_as_typed(week_snapshot: Path) -> None:
    line = _error_line(_run("violations", str(week_snapshot), "--usage-window", "0m"), 2)
    assert "--usage-window: '0m' is not a positive duration" in line, line


# --- 2. a window longer than the data ----------------------------------------------------------


def test_window_longer_than_data_warns_and_computes(week_snapshot: Path) -> None:
    result = _run("aggregate", str(week_snapshot), "--durations", "1h,10d,30d", "--format", "csv")
    assert result.exit_code == 0, result.stderr
    warnings = result.stderr.splitlines()
    # 1h fits inside the data; 10d and 30d reach back before its first sample.
    assert len(warnings) == 2, warnings
    long10, long30 = warnings
    for line, typed in ((long10, "10d"), (long30, "30d")):
        assert line.startswith(f"analyzer: warning: --durations {typed}: "), line
        assert "longer than the data (7d from 2026-11-01T00:00:00Z to 2026-11-08T00:00:00Z)" in line
    # 30d: 168 hourly samples cover 7 of 30 days, under half → left empty (cold-start rule).
    assert "left empty" in long30
    frame = pd.read_csv(io.StringIO(result.stdout))
    by_window = frame[(frame["resource"] == "cpu") & (frame["stat"] == "avg")].set_index("duration")
    assert bool(by_window.loc["30d", "missing"]) and pd.isna(by_window.loc["30d", "value"])
    # 10d: 7 of 10 days covered → computed from the 168 samples there are (all 1000 m).
    assert not bool(by_window.loc["10d", "missing"])
    assert by_window.loc["10d", "samples"] == HOUR_STEPS_IN_7D
    assert by_window.loc["10d", "value"] == 1000.0
    assert by_window.loc["1h", "samples"] == 1


# --- 3. --date and other time options name the accepted forms ----------------------------------


@pytest.mark.parametrize("typed", ["2026/11/07", "7 Nov 2026", "last-week", "2026-11-7"])
def test_bad_date_names_accepted_forms(week_snapshot: Path, tmp_path: Path, typed: str) -> None:
    out = tmp_path / "reports"
    result = _run("report", "nightly", str(week_snapshot), "--out", str(out), "--date", typed)
    line = _error_line(result, 2)
    assert f"--date: '{typed}' is not a day" in line, line
    assert "YYYY-MM-DD" in line and "'yesterday'" in line, line
    assert "up to and including 24:00" in line, line  # which part of the day is covered
    assert not out.exists()


def test_date_outside_data_names_the_days_with_data(week_snapshot: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    result = _run(
        "report", "nightly", str(week_snapshot), "--out", str(out), "--date", "2026-11-08"
    )
    line = _error_line(result, 2)
    # Hourly samples from 01:00 on Nov 1 to 00:00 on Nov 8: the 00:00 sample closes Nov 7.
    assert "UTC days with data are 2026-11-01 to 2026-11-07, both included" in line, line
    assert not out.exists()


def test_date_yesterday_is_accepted(week_snapshot: Path, tmp_path: Path) -> None:
    before = (pd.Timestamp.now(tz="UTC") - pd.Timedelta(days=1)).date()
    out = tmp_path / "reports"
    result = _run("report", "nightly", str(week_snapshot), "--out", str(out), "--date", "yesterday")
    after = (pd.Timestamp.now(tz="UTC") - pd.Timedelta(days=1)).date()
    line = _error_line(result, 2)  # the snapshot is of November 2026's first week
    assert any(f"--date: {day} has no usage data" in line for day in {before, after}), line


def test_date_last_day_with_data_is_reported(week_snapshot: Path, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    result = _run(
        "report", "nightly", str(week_snapshot), "--out", str(out), "--date", "2026-11-07"
    )
    assert result.exit_code == 0, result.output
    assert (out / "2026-11-07" / "report.html").is_file()


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("aggregate", "{snap}", "--at", "2026-11-07 noon"), "--at"),
        (("generate", "--out", "{tmp}/g", "--start", "yesterday"), "--start"),
        # nothing is contacted: the range is checked first (port 9 is the discard port)
        (
            ("collect", "--prometheus", "http://127.0.0.1:9", "--out", "{tmp}/g", "--end", "8 Nov"),
            "--end",
        ),
    ],
)
def test_bad_time_names_accepted_forms(
    week_snapshot: Path, tmp_path: Path, args: tuple[str, ...], option: str
) -> None:
    filled = [a.format(snap=week_snapshot, tmp=tmp_path) for a in args]
    line = _error_line(_run(*filled), 2)
    assert f"{option}: " in line and "is not a time" in line, line
    assert "RFC 3339" in line and "YYYY-MM-DD" in line and "unix seconds" in line, line
    # whether the end day is included, where it matters
    assert ("excludes that day" in line) == (option == "--end"), line
    assert not (tmp_path / "g").exists()


# --- 8. generate estimates the OpenMetrics size first and refuses above --max-bytes ------------

_ESTIMATE = re.compile(r"^openmetrics .*: estimated .* \((\d+) series, (\d+) samples\)$", re.M)
_WRITTEN = re.compile(r"^openmetrics .*: (\d+) series, (\d+) samples, (\d+) bytes", re.M)
_REFUSED = re.compile(r"about \S+ \S+ \((\d+) bytes\), above --max-bytes (\S+) \((\d+) bytes\)")
SMALL = ("--nodes", "3", "--days", "0.25", "--step", "5m")


@pytest.mark.parametrize(
    "extra",
    [
        (),
        ("--constant-step", "5m", "--node-exporter-cpus", "1"),
        ("--ha-replicas", "2", "--instance-convention", "host-ip", "--node-labels"),
        ("--exclude-metric", "node_cpu_seconds_total", "--no-ksm-honor-labels"),
    ],
)
def test_generate_estimate_is_close_to_the_written_size(
    tmp_path: Path, extra: tuple[str, ...]
) -> None:
    om = tmp_path / "cluster.om"
    result = _run(
        "generate", "--out", str(tmp_path / "snap"), "--openmetrics", str(om), *SMALL, *extra
    )
    assert result.exit_code == 0, result.output
    estimated = _ESTIMATE.search(result.stdout)
    written = _WRITTEN.search(result.stdout)
    assert estimated and written, result.stdout
    assert result.stdout.index("estimated") < result.stdout.index("snapshot ")  # printed first
    # Series and samples are counted exactly; only value text is sampled.
    assert estimated.groups() == written.groups()[:2]
    real = om.stat().st_size
    assert int(written.group(3)) == real
    refused = _run(
        "generate", "--out", str(tmp_path / "again"), "--openmetrics", str(tmp_path / "again.om"),
        *SMALL, *extra, "--max-bytes", "1",
    )  # fmt: skip
    match = _REFUSED.search(_error_line(refused, 2))
    assert match, refused.stderr
    assert 0.95 < int(match.group(1)) / real < 1.05


def test_generate_refuses_above_max_bytes_and_writes_nothing(tmp_path: Path) -> None:
    out, om = tmp_path / "snap", tmp_path / "cluster.om"
    result = _run(
        "generate", "--out", str(out), "--openmetrics", str(om), *SMALL, "--max-bytes", "1M"
    )
    line = _error_line(result, 2)
    match = _REFUSED.search(line)
    assert match, line
    assert match.group(2) == "1M" and int(match.group(3)) == 10**6
    assert int(match.group(1)) > 10**6
    assert "raise --max-bytes" in line and "nothing was written" in line
    assert list(tmp_path.iterdir()) == []  # no snapshot, no OpenMetrics, no temp file


def test_readme_generate_example_is_modest(tmp_path: Path) -> None:
    """The README's generate line, pointed at tmp_path, estimates well under 2 GB (the default)."""
    (line,) = [
        part.strip()
        for part in (ROOT / "README.md").read_text().replace("\n", " ").split("`")
        if part.startswith("analyzer generate ")
    ]
    args = shlex.split(line)[1:]
    args = [str(tmp_path / a) if a in ("snap/", "cluster.om") else a for a in args]
    result = _run(*args, "--max-bytes", "1")
    match = _REFUSED.search(_error_line(result, 2))
    assert match, result.stderr
    assert int(match.group(1)) < 300 * 10**6
    assert list(tmp_path.iterdir()) == []


# --- 6. inspect without --table summarises the snapshot ----------------------------------------


@pytest.fixture(scope="module")
def gappy_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two nodes in two pools over 4 hourly grid points; n2 misses two of them.

    Pods: a DaemonSet pod on n1 still running, a pod on n2 finished at 02:00, one never
    scheduled. meta.json carries one warning.
    """
    start = pd.Timestamp("2026-11-01T00:00:00Z")
    snap = build(
        nodes=[{"node": "n1", "pool": "general"}, {"node": "n2", "pool": "gpu"}],
        node_usage={"n1": [500.0, 600.0, 700.0, 800.0], "n2": [100.0, None, None, 400.0]},
        pods=[
            {"node": "n1", "owner_kind": "DaemonSet"},
            {"node": "n2", "finished": start + pd.Timedelta(hours=2)},
            {"node": None, "scheduled": None},
        ],
        step="1h",
    )
    snap.meta.warnings.append("query node_memory_available: 3 series without a node label")
    path = tmp_path_factory.mktemp("gappy") / "snap"
    write_snapshot(snap, path)
    return path


def test_inspect_without_table_prints_a_summary(gappy_snapshot: Path) -> None:
    result = _run("inspect", str(gappy_snapshot))
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert (
        "range:       2026-11-01T00:00:00+00:00 to 2026-11-01T04:00:00+00:00 (4h), step 1h" in text
    )
    assert "nodes:       2 in 2 pool(s): general 1, gpu 1" in text
    assert "pods:        3 (2 scheduled, 1 running at the end, 1 DaemonSet/static)" in text
    assert "usage rows:  6 node samples, 0 pod samples" in text
    # n1 has 4 of 4 grid points, n2 2 of 4: mean 75 %, lowest 50 %.
    assert "node cpu samples at 75.00 % of the 4 grid points (mean over nodes)" in text
    assert "lowest node 50.00 %, 0 node(s) without usage" in text
    assert (
        "warnings:    1\n    - query node_memory_available: 3 series without a node label" in text
    )
    assert "written by:  analyzer test (schema 1)" in text
    assert "read by:     analyzer " in text


def test_inspect_summary_json_holds_possible_values(
    gappy_snapshot: Path, week_snapshot: Path
) -> None:
    for path in (gappy_snapshot, week_snapshot):
        result = _run("inspect", str(path), "--format", "json")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        cover = data["coverage"]
        assert 0 <= cover["min_pct"] <= cover["mean_pct"] <= 100
        assert 0 <= cover["nodes_without_usage"] <= data["nodes"]
        assert sum(data["pools"].values()) == data["nodes"]
        assert 0 <= data["pods_running_at_end"] <= data["pods_scheduled"] <= data["pods"]
        assert 0 <= data["pods_pinned"] <= data["pods_scheduled"]
    # the week snapshot: 168 hourly samples of 168 grid points
    assert cover == {
        "grid_points": 168,
        "mean_pct": 100.0,
        "min_pct": 100.0,
        "nodes_without_usage": 0,
    }


def test_inspect_table_still_works_and_csv_needs_a_table(gappy_snapshot: Path) -> None:
    result = _run("inspect", str(gappy_snapshot), "--table", "nodes", "--format", "csv")
    assert result.exit_code == 0, result.output
    assert pd.read_csv(io.StringIO(result.stdout))["node"].tolist() == ["n1", "n2"]
    line = _error_line(_run("inspect", str(gappy_snapshot), "--format", "csv"), 2)
    assert "--format csv: needs --table" in line, line


# --- 7. the README's score example runs as written ---------------------------------------------


def _readme_lines(prefix: str) -> list[str]:
    """Command lines of README.md's code blocks that start with ``prefix``."""
    return [
        line.strip()
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.strip().startswith(prefix)
    ]


def test_readme_score_example_runs_as_written() -> None:
    (line,) = _readme_lines("analyzer score examples/")
    argv = shlex.split(line)
    assert (ROOT / argv[2]).is_file()
    done = subprocess.run(
        [sys.executable, "-m", "analyzer", *argv[1:]],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout
    # The numbers worked by hand in the scenario's comments.
    assert "node node-a  total 425  (feasible)" in text
    assert "node node-b  total 412  (feasible)" in text
    assert "node node-c  total 387  (INFEASIBLE: Insufficient memory)" in text
    assert "selected (tie set): node-a; chosen: node-a" in text
    fit = re.findall(r"NodeResourcesFit\s+\(node score\)\s+(\d+)", text)
    balanced = re.findall(r"NodeResourcesBalancedAllocation\s+\(node score\)\s+(\d+)", text)
    assert fit[:2] == ["50", "37"] and balanced[:2] == ["75", "75"]


@pytest.mark.parametrize(
    ("scenario", "extra", "expected"),
    [
        # The Kubernetes "Resource Bin Packing" page, on today's 0-100 scale and on the page's own
        # legacy 0-10 scale.
        ("score-binpacking-doc.yaml", (), {"node1": 60, "node2": 69}),
        ("score-binpacking-doc.yaml", ("--kubernetes-version", "1.16"), {"node1": 5, "node2": 7}),
        # Koordinator's unit test "score load node".
        ("score-loadaware.yaml", (), {"test-node-1": 72}),
    ],
)
def test_shipped_score_examples_give_their_documented_scores(
    scenario: str, extra: tuple[str, ...], expected: dict[str, int]
) -> None:
    result = _run("score", str(ROOT / "examples" / scenario), *extra)
    assert result.exit_code == 0, result.output
    nodes = json.loads(result.stdout)["nodes"]
    assert {n["name"]: n["total"] for n in nodes} == expected
    assert all(n["feasible"] for n in nodes)


# --- 5. queries list wraps, never cuts ---------------------------------------------------------


@pytest.mark.parametrize("columns", [80, 60])
def test_queries_list_wraps_without_cutting_words(columns: int) -> None:
    from analyzer.prom.profile import load_profile

    result = CliRunner().invoke(main, ["queries", "list"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()[1:]  # after the "# folder" line
    profile = load_profile(None)
    # Every description appears whole: the wrapped lines below its query join back to it.
    blocks: dict[str, list[str]] = {}
    current = ""
    for line in lines:
        if line.startswith("    "):
            blocks[current].append(line.strip())
        else:
            current = line.split()[0]
            blocks[current] = []
    assert list(blocks) == list(profile)
    for name, spec in profile.items():
        assert " ".join(blocks[name]) == " ".join(spec.description.split()), name
        for line in blocks[name]:
            # wrapped to the width, unless one word alone is longer than the line
            assert len(line) + 4 <= columns or " " not in line, line


# --- 4. trace tables: headers with units, every column explained in --help ---------------------


def test_alibaba_table_headers_have_units_and_help_explains_them() -> None:
    args = ["trace", "alibaba-gpu", "--policy", "BestFit", "--seeds", "1", "--tune", "1.1"]
    result = _run(*args, "--workers", "1")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = next(line for line in lines if line.startswith("policy"))
    columns = ["seeds", "alloc% @100", "alloc% @110", "alloc% @130", "frag% @100", "1st fail %"]
    assert header.split()[0] == "policy"
    for column in columns:
        assert column in header, header
    row = next(line for line in lines if line.startswith("BestFit")).split()
    assert row[1] == "1"  # one seed
    # tune 1.1: arrivals reach 110 % of GPU capacity, never 130 %
    alloc100, alloc110 = (float(cell.split("±")[0]) for cell in row[2:4])
    assert 0 < alloc100 <= alloc110 <= 100 and row[4] == "-"
    assert 0 <= float(row[5]) <= 100  # frag ratio, % of idle GPU capacity
    assert row[6] == "none" or 0 < float(row[6]) <= 110  # arrived % at the first failure
    # The legend under the table and --help both explain every column.
    legend = result.stdout[result.stdout.index("Columns:") :]
    help_text = _run("trace", "alibaba-gpu", "--help").stdout
    for column in ["seeds", "alloc% @X", "frag% @100", "1st fail %"]:
        assert f"  {column}  " in legend, column
        assert f"  {column}  " in help_text, column


def test_m3_table_rows_have_units_and_help_explains_them() -> None:
    result = _run("trace", "bytedance-m3", "--policy", "MostAllocated", "--seeds", "42")
    assert result.exit_code == 0, result.output
    help_text = " ".join(_run("trace", "bytedance-m3", "--help").stdout.split())
    rows = {
        line[:40].strip(): line[40:].split()
        for line in result.stdout.splitlines()[1:]
        if "(" in line[:40] and not line.startswith(("(", " "))
    }
    assert len(rows) == 8, rows
    for label in rows:
        assert label.endswith(")"), label  # the unit, in parentheses
    assert rows["containers placed (count)"][0] == "3485"  # production places every container
    assert rows["machines used (count)"][0] == "96"
    for label, values in rows.items():
        if "%" in label:
            assert all(0 <= float(v) <= 100 for v in values), (label, values)
    for phrase in ("containers placed / failed (count)", "machines used (count)",
                   "stranded CPU (% of cluster CPU)", "stranded memory (% of cluster memory)",
                   "headroom (median containers)", "busiest machine"):  # fmt: skip
        assert phrase in help_text, phrase


# --- help reads well: nothing cut, every option of these commands explained --------------------

MY_COMMANDS = {
    ("aggregate",), ("violations",), ("fragmentation",), ("generate",), ("inspect",),
    ("score",), ("strategies",), ("trace", "alibaba-gpu"), ("trace", "bytedance-m3"),
    ("queries", "list"), ("queries", "show"),
}  # fmt: skip


def _command_paths() -> list[tuple[str, ...]]:
    import click

    from analyzer.cli.base import _all_commands

    def walk(group: click.Group, path: tuple[str, ...]) -> list[tuple[str, ...]]:
        out = []
        for name, command in sorted(_all_commands(group).items()):
            out.append((*path, name))
            if isinstance(command, click.Group):
                out += walk(command, (*path, name))
        return out

    return [(), *walk(main, ())]


@pytest.mark.parametrize("path", _command_paths(), ids=lambda p: " ".join(p) or "analyzer")
def test_help_fits_80_columns_without_cutting_words(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*path, "--help"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    for line in result.stdout.splitlines():
        assert len(line) <= 80 or " " not in line.strip(), line
        assert not re.search(r"\w-$", line), f"word split at a hyphen: {line!r}"
        if not line.startswith("Usage:"):  # "[ARGS]..." is click's usage syntax
            assert not line.endswith("..."), f"cut: {line!r}"  # a truncated command summary
    if "Commands:" in result.stdout:
        commands = result.stdout.split("Commands:", 1)[1]
        assert "..." not in commands


@pytest.mark.parametrize("path", sorted(MY_COMMANDS), ids=" ".join)
def test_every_option_is_explained(path: tuple[str, ...]) -> None:
    import click

    command: click.Command = main
    ctx = click.Context(main)
    for name in path:
        assert isinstance(command, click.Group)
        found = command.get_command(ctx, name)
        assert found is not None
        command = found
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{' '.join(path)} {param.opts[0]} has no help"


def test_help_keeps_hyphenated_names_whole() -> None:
    text = CliRunner().invoke(main, ["trace", "alibaba-gpu", "--help"], env={"COLUMNS": "80"})
    flat = text.stdout
    for name in ("kube-default", "most-allocated", "rtcr-binpack"):
        assert name in flat, name


# --- more messages in the user's syntax ---------------------------------------------------------


def test_aggregated_window_longer_than_data_warns(week_snapshot: Path) -> None:
    data = "longer than the data (7d from 2026-11-01T00:00:00Z to 2026-11-08T00:00:00Z)"
    never = _run("violations", str(week_snapshot), "--aggregated", "p95:30d")
    assert never.exit_code == 0, never.output
    (line,) = never.stderr.splitlines()
    assert line.startswith("analyzer: warning: --aggregated p95:30d: ") and data in line, line
    assert "cannot find a breach" in line  # 7 days never cover half of 30
    late = _run("violations", str(week_snapshot), "--aggregated", "p95:10d")
    (line,) = late.stderr.splitlines()
    # half of 10 days is covered from 5 days after the data starts
    assert data in line and "checked only from 2026-11-06T00:00:00Z on" in line, line
    inside = _run("violations", str(week_snapshot), "--aggregated", "p95:1d")
    assert inside.exit_code == 0 and inside.stderr == ""


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (("--constant-step", "90s"), "--constant-step: '90s' must be a multiple of --step '1m'"),
        (("--constant-step", "0m"), "--constant-step: '0m' is not a positive duration"),
        (("--max-bytes", "500m"), "--max-bytes: '500m' is not a whole positive number of bytes"),
        (("--max-bytes", "0"), "--max-bytes: '0' is not a whole positive number of bytes"),
    ],
)
def test_generate_option_messages_name_the_value_as_typed(
    tmp_path: Path, args: tuple[str, ...], text: str
) -> None:
    out = tmp_path / "snap"
    line = _error_line(_run("generate", "--out", str(out), *SMALL[:4], *args), 2)
    assert text in line, line
    assert list(tmp_path.iterdir()) == []


def test_at_outside_the_data_warns(week_snapshot: Path) -> None:
    before = _run("aggregate", str(week_snapshot), "--at", "2026-10-01", "--format", "csv")
    assert before.exit_code == 0, before.output
    (line,) = before.stderr.splitlines()  # one line, not one per window
    assert "--at 2026-10-01T00:00:00Z is not after the data's start" in line, line
    assert pd.read_csv(io.StringIO(before.stdout))["missing"].all()
    after = _run("aggregate", str(week_snapshot), "--at", "2026-11-09", "--durations", "1h,2d")
    lines = after.stderr.splitlines()
    assert len(lines) == 1 and "--at 2026-11-09T00:00:00Z is after the data's end" in lines[0]
