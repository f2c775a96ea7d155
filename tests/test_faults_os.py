"""A write the machine refuses (disk full, file too large) ends in one line, not a traceback.

The file-size limit (``RLIMIT_FSIZE``) makes the kernel refuse a write past a size with EFBIG,
the same path a full disk takes (ENOSPC) without needing privileges or a small filesystem: the
child ignores SIGXFSZ so that the write fails instead of killing the process.
"""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
from pathlib import Path

from reliability_doc import documented_exit

LIMIT_BYTES = 64 * 1024


def _limited() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT_BYTES, LIMIT_BYTES))


def test_a_refused_write_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "snap"
    openmetrics = tmp_path / "cluster.om"
    args = ["generate", "--out", str(out), "--nodes", "3", "--days", "1", "--step", "5m"]
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", *args, "--openmetrics", str(openmetrics)],
        capture_output=True,
        text=True,
        preexec_fn=_limited,
        timeout=300,
        check=False,
    )
    assert proc.returncode == documented_exit("os-write-refused"), proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert "Traceback" not in proc.stderr
    assert len(lines) == 1 and lines[0].startswith("analyzer: error: "), lines
    assert "File too large" in lines[0] and "errno 27" in lines[0]
    assert "check the free space, file size limits and permissions" in lines[0]
    # Whatever the write was, no partial file or temporary folder of ours is left beside it.
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == []
    assert not openmetrics.exists()
