"""Fault injection, files half: secrets, corrupted snapshots, output folders, CSV, charts, signals.

Every test drives the real CLI (click's CliRunner, or a subprocess where a signal, stderr or
another user matters) into one fault of docs/reliability.md and checks the documented exit code
and the one line that names the thing and the fix, with no traceback.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner, Result
from http_stub import Reply, Stub, serve
from reliability_doc import documented_exit

import analyzer
from analyzer.cli import main
from analyzer.core.snapshot import read_snapshot, write_snapshot

ROOT = Path(analyzer.__file__).resolve().parents[1]  # the analyzer under test, for subprocesses
SECRET = "eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.Zm9vYmFy-SECRET"


def one_error_line(result: Result) -> str:
    """The run's stderr is exactly one ``analyzer: error:`` line (no traceback); return it."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("analyzer: error: "), lines[0]
    assert "Traceback" not in result.output
    return lines[0]


def invoke(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, args, env=env)


@pytest.fixture
def stub() -> Iterator[Stub]:
    """A loopback HTTP server that records requests: a refused input must send none."""
    with serve(lambda _r: Reply(500, b"should not be asked")) as server:
        yield server


@pytest.fixture(scope="module")
def small_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-node, 1-day synthetic snapshot, written by the real CLI."""
    folder = tmp_path_factory.mktemp("snap") / "snap"
    result = invoke(
        ["generate", "--out", str(folder), "--nodes", "4", "--days", "1", "--step", "5m"]
    )
    assert result.exit_code == 0, result.output
    return folder


def copy_snapshot(source: Path, target: Path) -> Path:
    target.mkdir(parents=True)
    for path in source.iterdir():
        (target / path.name).write_bytes(path.read_bytes())
    return target


# --- 4, 5: secrets --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exit_code", "args", "env", "option"),
    [
        (documented_exit("secret-token-env-value"), ["--token-env", SECRET], {}, "--token-env"),
        (documented_exit("secret-token-file-value"), ["--token-file", SECRET], {}, "--token-file"),
        (
            documented_exit("secret-password-env-value"),
            ["--basic-auth-user", "alice", "--basic-auth-password-env", SECRET],
            {},
            "--basic-auth-password-env",
        ),
    ],
)
def test_secret_given_where_a_name_belongs_is_never_echoed(
    stub: Stub, exit_code: int, args: list[str], env: dict[str, str], option: str
) -> None:
    result = invoke(["check", "--prometheus", stub.url, *args], env=env)
    assert result.exit_code == exit_code == 2
    line = one_error_line(result)
    assert line.startswith(f"analyzer: error: {option}:")
    assert "not shown" in line
    assert SECRET not in result.output and "SECRET" not in result.output
    assert stub.requests == []


def test_secret_in_config_file_name_keys_is_never_echoed(stub: Stub, tmp_path: Path) -> None:
    for key in ("token_env", "token-file", "basic_auth_password_env"):
        config = tmp_path / f"{key}.yaml"
        extra = "basic_auth_user: alice\n" if key.startswith("basic") else ""
        config.write_text(f"prometheus: {stub.url}\n{key}: '{SECRET}'\n{extra}")
        result = invoke(["--config", str(config), "check"])
        assert result.exit_code == documented_exit("secret-config-value")
        line = one_error_line(result)
        assert "not shown" in line, line
        assert SECRET not in result.output
    assert stub.requests == []


def test_valid_name_of_an_unset_variable_is_not_echoed_either(stub: Stub) -> None:
    # A token can look like a name (letters, digits, underscores): the name is never printed.
    result = invoke(["check", "--prometheus", stub.url, "--token-env", "ghp_Secret0123"])
    assert result.exit_code == 2
    assert "ghp_Secret0123" not in one_error_line(result)
    assert stub.requests == []


def test_authorization_header_in_clear_is_refused(stub: Stub, tmp_path: Path) -> None:
    header = f"Authorization=Bearer {SECRET}"
    cli = invoke(["check", "--prometheus", stub.url, "--header", header])
    config = tmp_path / "analyzer.yaml"
    config.write_text(f"prometheus: {stub.url}\nheader: ['{header}']\n")
    from_file = invoke(["--config", str(config), "check"])
    for result in (cli, from_file):
        assert result.exit_code == documented_exit("secret-header-clear")
        line = one_error_line(result)
        assert "--header" in line and "'header' in the config file" in line
        assert "--token-file" in line and "--token-env" in line  # what to use instead
        assert SECRET not in result.output
    assert stub.requests == []


def test_url_with_user_and_password_is_refused(stub: Stub, tmp_path: Path) -> None:
    url = stub.url.replace("http://", "http://alice:hunter2@")
    cli = invoke(["check", "--prometheus", url])
    config = tmp_path / "analyzer.yaml"
    config.write_text(f"prometheus: {url}\n")
    from_file = invoke(["--config", str(config), "check"])
    for result in (cli, from_file):
        assert result.exit_code == documented_exit("secret-url-userinfo")
        line = one_error_line(result)
        assert "--prometheus" in line and "--basic-auth-password-env" in line
        assert "hunter2" not in result.output and "alice" not in result.output
    assert stub.requests == []


# --- 7: corrupted snapshots -----------------------------------------------------------------


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _wrong_schema(path: Path) -> None:
    pd.DataFrame({"host": ["n1"], "time": [1.0], "value": [0.5]}).to_parquet(path)


def _wrong_column_type(path: Path) -> None:
    frame = pd.read_parquet(path)
    frame["cpu"] = "lots"
    frame.to_parquet(path)


@pytest.mark.parametrize(
    ("exit_code", "file", "damage", "expected"),
    [
        (documented_exit("snap-truncated-parquet"), "nodes.parquet", _truncate, "not a readable parquet"),
        (documented_exit("snap-empty-parquet"), "pod_usage.parquet", lambda p: p.write_bytes(b""), "not a readable parquet"),
        (documented_exit("snap-wrong-schema"), "node_usage.parquet", _wrong_schema, "lacks column(s) node, timestamp, cpu, memory"),
        (documented_exit("snap-column-type"), "node_usage.parquet", _wrong_column_type, "column cpu is"),
        (documented_exit("snap-meta-not-object"), "meta.json", lambda p: p.write_text("[1, 2]"), "holds a JSON list, not an object"),
        (documented_exit("snap-meta-field-type"), "meta.json", lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "step_seconds": "60"})), "field 'step_seconds' is a str, expected int"),
    ],
)  # fmt: skip
def test_corrupted_snapshot_is_one_line_naming_the_file(
    small_snapshot: Path, tmp_path: Path, exit_code: int, file: str, damage: object, expected: str
) -> None:
    snap = copy_snapshot(small_snapshot, tmp_path / "snap")
    damage(snap / file)  # type: ignore[operator]
    for command in (["inspect", str(snap)], ["aggregate", str(snap)], ["violations", str(snap)]):
        result = invoke(command)
        assert result.exit_code == exit_code == 2, (command, result.output)
        line = one_error_line(result)
        assert str(snap / file) in line or (file.endswith(".parquet") and file[:-8] in line), line
        assert expected in line, line


# --- 8, 9: output folders -------------------------------------------------------------------


def test_unwritable_out_fails_before_fetching(stub: Stub, tmp_path: Path) -> None:
    if os.geteuid() == 0:  # root writes through permission bits: use a folder the kernel refuses
        locked, reason = Path("/sys"), "operation not permitted"
    else:
        locked, reason = tmp_path / "locked", "permission denied"
        locked.mkdir()
        locked.chmod(0o555)
    result = invoke(["collect", "--prometheus", stub.url, "--since", "1h", "--out", str(locked / "snap")])  # fmt: skip
    assert result.exit_code == documented_exit("out-unwritable"), result.output
    assert one_error_line(result) == (
        f"analyzer: error: --out {locked / 'snap'}: cannot write to {locked} ({reason}); "
        "give a folder you can write to"
    )
    assert stub.requests == []  # refused before the fetch
    assert not (locked / "snap").exists()
    for trace in ("alibaba-gpu", "bytedance-m3"):  # refused before the replay, not after it
        result = invoke(["trace", trace, "--report", str(locked / "rep")])
        assert result.exit_code == documented_exit("out-unwritable")
        assert f"--report {locked / 'rep'}: cannot write to {locked} ({reason})" in one_error_line(
            result
        )


def _user_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "thesis.tex").write_text("a user's work")
    return path


def test_out_that_is_not_ours_is_refused_by_every_command(
    stub: Stub, small_snapshot: Path, tmp_path: Path
) -> None:
    cases = {
        "collect": ["collect", "--prometheus", stub.url, "--since", "1h", "--out"],
        "generate": ["generate", "--nodes", "2", "--days", "1", "--out"],
        "nightly": ["report", "nightly", str(small_snapshot), "--out"],
        "save-snapshot": [
            "report",
            "nightly",
            "--prometheus",
            stub.url,
            "--out",
            str(tmp_path / "fresh"),
            "--save-snapshot",
        ],
        "demo": ["demo", "--nodes", "3", "--days", "1", "--out"],
    }
    for name, args in cases.items():
        folder = _user_folder(tmp_path / name)
        result = invoke([*args, str(folder)])
        assert result.exit_code == documented_exit("out-not-ours"), (name, result.output)
        line = one_error_line(result)
        assert str(folder) in line and "thesis.tex" in line and "new or empty folder" in line
        assert (folder / "thesis.tex").read_text() == "a user's work"
        assert sorted(p.name for p in folder.iterdir()) == ["thesis.tex"]
    whatif = _user_folder(tmp_path / "whatif")
    result = invoke(["report", "whatif", str(small_snapshot), "--out", str(whatif)])
    assert result.exit_code == documented_exit("out-not-ours")
    assert "thesis.tex" in one_error_line(result)
    assert (whatif / "thesis.tex").is_file()
    assert stub.requests == []


def test_day_folder_with_a_foreign_file_is_not_replaced(
    small_snapshot: Path, tmp_path: Path
) -> None:
    out = tmp_path / "reports"
    first = invoke(["report", "nightly", str(small_snapshot), "--out", str(out)])
    assert first.exit_code == 0, first.output
    (day,) = [p for p in out.iterdir() if re.fullmatch(r"\d{4}-\d{2}-\d{2}", p.name)]
    (day / "notes.txt").write_text("mine")
    again = invoke(["report", "nightly", str(small_snapshot), "--out", str(out)])
    assert again.exit_code == documented_exit("out-run-folder-foreign")
    assert "notes.txt" in one_error_line(again)
    assert (day / "notes.txt").read_text() == "mine"


def test_our_own_outputs_are_still_replaced(small_snapshot: Path, tmp_path: Path) -> None:
    """The rule refuses foreign folders only: re-running into our own output works."""
    snap = tmp_path / "snap"
    for _ in range(2):
        assert (
            invoke(["generate", "--nodes", "2", "--days", "1", "--out", str(snap)]).exit_code == 0
        )
    out = tmp_path / "reports"
    (out / "lost+found").mkdir(parents=True)  # OUT at the root of a mounted volume (a PVC)
    for _ in range(2):
        result = invoke(["report", "nightly", str(small_snapshot), "--out", str(out)])
        assert result.exit_code == 0, result.output
    assert read_snapshot(snap).nodes["node"].size == 2
    assert (out / "lost+found").is_dir()


# --- 13: CSV formula injection --------------------------------------------------------------

FORMULA = '=HYPERLINK("http://evil.example","x")'


@pytest.fixture(scope="module")
def formula_snapshot(small_snapshot: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small snapshot with one node named like a formula (a cluster can hold any text)."""
    snap = read_snapshot(small_snapshot)
    old = str(snap.nodes["node"].iloc[0])

    def rename(column: pd.Series) -> pd.Series:
        values = column.astype(object)
        return values.where(values != old, FORMULA).astype(column.dtype)

    renamed = dataclasses.replace(
        snap,
        nodes=snap.nodes.assign(node=rename(snap.nodes["node"])),
        pods=snap.pods.assign(node=rename(snap.pods["node"]), namespace="@team"),
        node_usage=snap.node_usage.assign(node=rename(snap.node_usage["node"])),
    )
    return write_snapshot(renamed, tmp_path_factory.mktemp("formula") / "snap")


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def _assert_safe(text: str, where: str) -> None:
    for cell in _cells(text):
        if cell[:1] in ("=", "+", "-", "@"):
            float(cell)  # only a number may begin like a formula: raises ValueError otherwise
    assert f"'{FORMULA}" in _cells(text), where


def test_csv_outputs_neutralise_formulas(formula_snapshot: Path, tmp_path: Path) -> None:
    snap = str(formula_snapshot)
    outputs = {
        "inspect": invoke(["inspect", snap, "--table", "nodes", "--format", "csv"]),
        "aggregate": invoke(["aggregate", snap, "--format", "csv"]),
        "violations": invoke(["violations", snap, "--format", "csv", "--cpu", "1"]),
    }
    for name, result in outputs.items():
        assert result.exit_code == 0, (name, result.output)
        _assert_safe(result.stdout, name)
    pods = invoke(["inspect", snap, "--table", "pods", "--format", "csv"])
    assert "'@team" in _cells(pods.stdout) and "@team" not in _cells(pods.stdout)
    out = tmp_path / "reports"
    nightly = invoke(["report", "nightly", snap, "--out", str(out), "--cpu", "1"])
    assert nightly.exit_code == 0, nightly.output
    whatif = invoke(
        ["report", "whatif", snap, "--out", str(out / "whatif"), "--strategy", "kube-default"]
    )
    assert whatif.exit_code == 0, whatif.output
    files = sorted(out.glob("*/*.csv"))
    assert any(p.parent.name == "whatif" for p in files) and len(files) > 3
    with_node = [p for p in files if FORMULA[1:10] in p.read_text()]
    assert with_node, "no report CSV names the node"
    for path in with_node:
        _assert_safe(path.read_text(), str(path))
    for path in files:
        for cell in _cells(path.read_text()):
            assert not (cell[:1] in "=+-@" and cell[:1] and not _is_number(cell)), (path, cell)


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_csv_helper_keeps_numbers_numbers() -> None:
    from analyzer.core.csvsafe import csv_text

    frame = pd.DataFrame(
        {"name": ["-cmd", "+x", "@y", "=z", "plain", "-3", "+1.5e3", "\tq"], "delta": [-1.5] * 8}
    )
    rows = list(csv.DictReader(io.StringIO(csv_text(frame))))
    assert [r["name"] for r in rows] == [
        "'-cmd",
        "'+x",
        "'@y",
        "'=z",
        "plain",
        "-3",
        "+1.5e3",
        "'\tq",
    ]
    assert {r["delta"] for r in rows} == {"-1.5"}  # a negative number is not text


# --- 14: no warnings on stderr from charts --------------------------------------------------


def test_long_node_name_puts_nothing_on_stderr(small_snapshot: Path, tmp_path: Path) -> None:
    snap = read_snapshot(small_snapshot)
    long_name = "node-" + "a" * 240 + ".example"
    old = str(snap.nodes["node"].iloc[0])

    def rename(column: pd.Series) -> pd.Series:
        values = column.astype(object)
        return values.where(values != old, long_name).astype(column.dtype)

    renamed = dataclasses.replace(
        snap,
        nodes=snap.nodes.assign(node=rename(snap.nodes["node"])),
        pods=snap.pods.assign(node=rename(snap.pods["node"])),
        node_usage=snap.node_usage.assign(node=rename(snap.node_usage["node"])),
    )
    path = write_snapshot(renamed, tmp_path / "snap")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "analyzer",
            "report",
            "nightly",
            str(path),
            "--out",
            str(tmp_path / "reports"),
            "--cpu",
            "1",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # cron mails every byte of stderr
    report = json.loads(next((tmp_path / "reports").glob("*/report.json")).read_text())
    assert long_name in json.dumps(report)  # the numbers keep the full name


# --- 15: signals and stale temporary folders ------------------------------------------------

# The real CLI in a subprocess whose parquet writes pause (after writing) until released, so the
# signal is sure to arrive while the snapshot's temporary folder exists.
_SLOW_WRITE = """
import sys, time
from pathlib import Path
import pandas as pd
ready, release = Path(sys.argv[1]), Path(sys.argv[2])
original = pd.DataFrame.to_parquet
def slow(self, path, *args, **kwargs):
    original(self, path, *args, **kwargs)
    ready.touch()
    while not release.exists():
        time.sleep(0.01)
pd.DataFrame.to_parquet = slow
from analyzer.cli import main
main(sys.argv[3:], prog_name="analyzer")
"""


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_mid_write_leaves_no_temp_folder(tmp_path: Path, signum: int, code: int) -> None:
    ready, release, out = tmp_path / "ready", tmp_path / "release", tmp_path / "snap"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _SLOW_WRITE,
            str(ready),
            str(release),
            "generate",
            "--nodes",
            "2",
            "--days",
            "1",
            "--step",
            "5m",
            "--out",
            str(out),
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        for _ in range(6000):  # wait (at most a minute) for the first table to be written
            if ready.exists() or proc.poll() is not None:
                break
            time.sleep(0.01)
        assert ready.exists(), "the write never started"
        assert [p.name for p in tmp_path.glob(".snap.*.tmp")], "no temporary folder mid-write"
        proc.send_signal(signum)
        release.touch()
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code == 128 + signum
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("analyzer: error: "), stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ready", "release"]  # nothing left


def test_sigterm_during_a_fetch_ends_the_run_at_once(tmp_path: Path) -> None:
    """Outside a write there is nothing to clean: the run must not wait for its fetch threads."""
    release = threading.Event()

    def hang(_request: object) -> Reply:
        release.wait(120)
        return Reply(503, b"late")

    with serve(hang) as server:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "analyzer",
                "collect",
                "--prometheus",
                server.url,
                "--since",
                "1h",
                "--out",
                str(tmp_path / "snap"),
            ],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        try:
            for _ in range(6000):  # wait (at most a minute) for the first request to arrive
                if server.requests or proc.poll() is not None:
                    break
                time.sleep(0.01)
            assert server.requests, "the fetch never started"
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=60)  # the server still hangs meanwhile
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 143
    assert stderr.strip().splitlines() == [
        "analyzer: error: stopped by SIGTERM; no output was being written"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_next_run_removes_only_our_stale_temp_folders(tmp_path: Path) -> None:
    old = time.time() - 2 * 3600
    stale = tmp_path / ".snap.k2j4h5g6.tmp"
    stale_old = tmp_path / ".snap.old-4242"
    fresh = tmp_path / ".snap.a1b2c3d4.tmp"  # may belong to a run still writing
    foreign = tmp_path / ".snap.backup"  # not our pattern
    other = tmp_path / ".other.k2j4h5g6.tmp"  # our pattern, another target
    for folder in (stale, stale_old, fresh, foreign, other):
        folder.mkdir()
        (folder / "f").write_text("x")
    for folder in (stale, stale_old, foreign, other):
        os.utime(folder, (old, old))
    result = invoke(["generate", "--nodes", "2", "--days", "1", "--out", str(tmp_path / "snap")])
    assert result.exit_code == 0, result.output
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([fresh.name, foreign.name, other.name, "snap"])


def test_next_report_removes_stale_temp_files_of_its_history(
    small_snapshot: Path, tmp_path: Path
) -> None:
    out = tmp_path / "reports"
    assert invoke(["report", "nightly", str(small_snapshot), "--out", str(out)]).exit_code == 0
    summary = out / "history" / "summary"
    (day_file,) = summary.glob("*.json")
    stale = summary / f".{day_file.name}.x1y2z3w4.tmp"  # a write killed by SIGKILL
    fresh = summary / f".{day_file.name}.q9r8s7t6.tmp"
    for path in (stale, fresh):
        path.write_text("{")
    old = time.time() - 2 * 3600
    os.utime(stale, (old, old))
    assert invoke(["report", "nightly", str(small_snapshot), "--out", str(out)]).exit_code == 0
    assert sorted(p.name for p in summary.iterdir()) == sorted([day_file.name, fresh.name])


# --- 19: millicores against exact ground truth ----------------------------------------------


def test_millicore_aggregates_match_exact_truncation(tmp_path: Path) -> None:
    """Node CPU is a sum of per-mode rates (cores) × 1000 in float64, a few ulps off the exact
    value; NodeMetric must truncate the exact value (Go's int64), never drop a millicore."""
    from decimal import Decimal
    from fractions import Fraction

    import numpy as np
    from h4_snapshots import build

    rng = np.random.default_rng(7)
    modes = {  # node → 10 samples → user/system/softirq cores, as Prometheus prints them
        f"n{i}": [[f"{c:.3f}" for c in rng.uniform(0.1, 1.3, 3)] for _ in range(10)]
        for i in range(60)
    }
    exact = {
        node: [
            sum((Fraction(Decimal(m)) for m in sample), Fraction(0)) * 1000 for sample in samples
        ]
        for node, samples in modes.items()
    }
    usage = {
        node: [sum(float(m) for m in sample) * 1000 for sample in samples]
        for node, samples in modes.items()
    }
    noisy = sum(int(v) != int(e) for n in usage for v, e in zip(usage[n], exact[n], strict=True))
    assert noisy > 0  # the data does hold the noise this test is about
    path = write_snapshot(
        build(nodes=[{"node": n} for n in modes], node_usage=usage), tmp_path / "s"
    )
    result = invoke(["aggregate", str(path), "--durations", "10m", "--format", "json"])
    assert result.exit_code == 0, result.output
    items = {item["metadata"]["name"]: item for item in json.loads(result.stdout)["items"]}
    for node, values in exact.items():
        (window,) = items[node]["status"]["nodeMetric"]["aggregatedNodeUsages"]
        got = {stat: window["usage"][stat]["resources"]["cpu"] for stat in window["usage"]}
        ranked = sorted(values)  # nearest rank: index int(n × p) − 1 of 10 samples
        want = {"avg": sum(values, Fraction(0)) / len(values), "p50": ranked[4]}
        want |= {"p90": ranked[8], "p95": ranked[8], "p99": ranked[8]}
        assert got == {stat: f"{int(value)}m" for stat, value in want.items()}, node
