"""The contract every analyzer run keeps on any input, checked on a real process.

Issue 31's rule for hostile input: every run ends with exit 0, 2 or 3 (or another documented
code the caller allows), at most one stderr line and no traceback, within a time and memory
bound, and leaves nothing half-written. ``run_cli`` runs ``python -m analyzer`` as a child
process (so a resource bomb cannot take the test process with it) and measures its wall time
and peak resident memory (``os.wait4``'s rusage of that one child); ``assert_contract`` checks
the rules. Property-based tests feed it generated inputs; fault tests feed it the campaign's.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

# A temporary sibling left by an interrupted atomic write (core/atomic.py names them so).
_TEMP_NAME = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$|^\..+\.old-\d+$")


@dataclass(frozen=True)
class Outcome:
    """How one run ended."""

    args: tuple[str, ...]
    exit_code: int
    stdout: str
    stderr: str
    seconds: float
    peak_rss_mb: float
    timed_out: bool

    @property
    def stderr_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


# Forks ``python ARGS`` from a small interpreter, waits for it, writes its wait status and peak
# RSS (kB) to the file argv[1], and exits like it (so signals and codes read as usual).
_LAUNCHER = """
import json, os, sys
side, args = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, *args])
_, status, usage = os.wait4(pid, 0)
with open(side, "w") as out:
    json.dump({"status": status, "maxrss_kb": usage.ru_maxrss}, out)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_cli(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    stdin: bytes | None = None,
) -> Outcome:
    """Run ``analyzer ARGS`` in a child process; kill it (and say so) past ``timeout`` seconds.

    The peak resident set is analyzer's own: Linux keeps ``ru_maxrss`` across ``exec``, so a
    child forked straight from this (large) test process would start at its size. A small
    launcher (``_LAUNCHER``) forks analyzer from itself, reaps it with ``os.wait4`` and writes
    its status and peak to a side file.
    """
    child_env = dict(os.environ if env is None else env)
    side = Path(tempfile.mkstemp(prefix="cli-contract-", suffix=".json")[1])
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-c", _LAUNCHER, str(side), "-m", "analyzer", *args],
        cwd=cwd,
        env=child_env,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    chunks: dict[str, bytes] = {}

    def drain(name: str, pipe: IO[bytes]) -> None:
        chunks[name] = pipe.read()
        pipe.close()

    assert process.stdout is not None and process.stderr is not None
    readers = [
        threading.Thread(target=drain, args=("out", process.stdout), daemon=True),
        threading.Thread(target=drain, args=("err", process.stderr), daemon=True),
    ]
    for reader in readers:
        reader.start()
    if stdin is not None and process.stdin is not None:
        with contextlib.suppress(BrokenPipeError):
            process.stdin.write(stdin)
        process.stdin.close()
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        process.wait()
    finally:
        timer.cancel()
    for reader in readers:
        reader.join()
    try:
        child = json.loads(side.read_text() or "null")
    finally:
        side.unlink(missing_ok=True)
    if child is None:  # the launcher itself was killed (timeout): analyzer went with it
        child = {"status": None, "maxrss_kb": 0}
    exit_code = (
        process.returncode
        if child["status"] is None
        else os.waitstatus_to_exitcode(child["status"])
    )
    return Outcome(
        args=tuple(args),
        exit_code=exit_code,
        stdout=chunks.get("out", b"").decode("utf-8", "replace"),
        stderr=chunks.get("err", b"").decode("utf-8", "replace"),
        seconds=time.monotonic() - started,
        peak_rss_mb=child["maxrss_kb"] / 1024,  # kilobytes on Linux
        timed_out=killed.is_set(),
    )


def temp_leftovers(folders: Iterable[Path]) -> list[Path]:
    """Temporary files or folders of an atomic write left under ``folders`` (recursively)."""
    found: list[Path] = []
    for folder in folders:
        if not folder.exists():
            continue
        for path in [folder, *folder.rglob("*")]:
            if _TEMP_NAME.match(path.name):
                found.append(path)
    return found


def assert_contract(
    outcome: Outcome,
    *,
    allowed_exits: Iterable[int] = (0, 2, 3),
    max_seconds: float = 5.0,
    max_rss_mb: float = 500.0,
    watched: Iterable[Path] = (),
    absent_unless_ok: Iterable[Path] = (),
) -> None:
    """The rules of a clean end: code, one stderr line, no traceback, bounds, nothing half-written.

    ``watched`` folders must hold no temporary leftover; ``absent_unless_ok`` outputs must not
    exist after a run that failed (exit other than 0 and 3).
    """
    what = f"analyzer {' '.join(outcome.args)[:300]}"
    assert not outcome.timed_out, f"{what}: still running after {outcome.seconds:.1f} s"
    assert outcome.exit_code in set(allowed_exits), (
        f"{what}: exit {outcome.exit_code}; stderr: {outcome.stderr[-2000:]}"
    )
    assert "Traceback (most recent call last)" not in outcome.stderr, (
        f"{what}: traceback: {outcome.stderr[-2000:]}"
    )
    assert len(outcome.stderr_lines) <= 1, (
        f"{what}: stderr has {len(outcome.stderr_lines)} lines: {outcome.stderr[-2000:]}"
    )
    assert outcome.seconds <= max_seconds, f"{what}: took {outcome.seconds:.1f} s"
    assert outcome.peak_rss_mb <= max_rss_mb, f"{what}: peak RSS {outcome.peak_rss_mb:.0f} MB"
    leftovers = temp_leftovers(list(watched))
    assert not leftovers, f"{what}: left temporary files {leftovers}"
    if outcome.exit_code not in (0, 3):
        for path in absent_unless_ok:
            assert not path.exists(), (
                f"{what}: failed with exit {outcome.exit_code} but wrote {path}"
            )
