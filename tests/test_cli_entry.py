"""The process entry (``analyzer.cli.entry.run``): ``main``'s exit code, all output flushed, and
no interpreter teardown (where native thread pools once aborted a finished run, exit -6)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from reliability_doc import documented_exit

from analyzer.cli.entry import exit_code

# a finished run's exit handlers (``atexit``) and native teardown are skipped: a handler
# registered before ``run`` never prints
PROBE = (
    "import atexit, sys\n"
    "atexit.register(lambda: print('TEARDOWN', file=sys.stderr, flush=True))\n"
    "from analyzer.cli.entry import run\n"
    "run(sys.argv[1:])\n"
)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120
    )


def test_a_finished_run_skips_the_teardown_and_keeps_exit_0() -> None:
    proc = _run("--version")
    assert proc.returncode == documented_exit("teardown-abort") == 0, proc.stderr
    assert "TEARDOWN" not in proc.stderr
    assert proc.stdout.startswith("analyzer, version ")


def test_the_whole_output_reaches_a_pipe() -> None:
    # stdout to a pipe is block-buffered: without the flush before os._exit, the help (several
    # KB) would be cut or lost. The reference is click's own exit, with the interpreter's teardown
    proc = _run("--help")
    plain = subprocess.run(
        [sys.executable, "-c", "import sys; from analyzer.cli import main; main(sys.argv[1:])",
         "--help"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == plain.returncode == 0, proc.stderr
    assert len(plain.stdout) > 2000
    assert proc.stdout == plain.stdout


def test_a_usage_error_keeps_its_code_and_its_line() -> None:
    proc = _run("no-such-command")
    assert proc.returncode == 2
    assert "TEARDOWN" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "no-such-command" in proc.stderr


def test_python_m_analyzer_enters_through_run() -> None:
    # ``analyzer/__main__.py`` run as ``python -m analyzer`` does: through ``run``, the handler
    # never prints (with ``main()`` there, click's sys.exit would run it)
    probe = (
        "import atexit, runpy, sys\n"
        "atexit.register(lambda: print('TEARDOWN', file=sys.stderr, flush=True))\n"
        "sys.argv = ['analyzer', '--version']\n"
        "runpy.run_module('analyzer', run_name='__main__', alter_sys=True)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("analyzer, version "), proc.stderr
    assert "TEARDOWN" not in proc.stderr


@pytest.mark.parametrize(
    ("code", "status"), [(None, 0), (0, 0), (3, 3), (141, 141), (256, 0), (-1, 255), ("boom", 1)]
)
def test_exit_code_is_the_status_sys_exit_gives(code: object, status: int) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.exit({code!r})"], capture_output=True, timeout=30
    )
    assert proc.returncode == status  # what Python itself does
    assert exit_code(code) == status
