"""The wheel ships queries/ and templates/ and works when installed into a fresh venv.

Builds the wheel from this checkout (``python -m build --wheel --no-isolation``: offline, with the
hatchling already installed), installs it with ``--no-deps`` into a new venv whose dependencies come
from the test venv's site-packages (a ``.pth`` line, so no network), then runs the installed
``analyzer`` console script on a command that reads query files from the installed package.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def _run(*args: str | Path, cwd: Path | None = None) -> str:
    # Without PYTHONPATH: a checkout on it would shadow the installed wheel in the fresh venv.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env, check=False
    )
    assert proc.returncode == 0, f"{args}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
    return proc.stdout


def test_installed_wheel_reads_its_bundled_queries(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _run(
        sys.executable,
        "-m",
        "build",
        "--wheel",
        "--no-isolation",
        "--outdir",
        dist,
        ROOT,
        cwd=tmp_path,
    )
    [wheel] = dist.glob("analyzer-*.whl")
    fresh = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=False).create(fresh)
    python = fresh / "bin" / "python"
    site = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    )
    # Dependencies from the test venv (offline); its editable analyzer is not activated by this line.
    (site / "_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "--no-deps",
        "--no-index",
        "-q",
        wheel,
    )
    where = _run(
        python,
        "-c",
        "import analyzer.core.paths as p; print(p.__file__); print(p.queries_dir())",
        cwd=tmp_path,
    )
    module_file, folder = where.split()
    assert module_file.startswith(str(site)), "analyzer must come from the installed wheel"
    assert folder == str(site / "analyzer" / "_data" / "queries")
    listing = _run(fresh / "bin" / "analyzer", "queries", "list", cwd=tmp_path)
    assert f"# {folder}" in listing
    assert "node_cpu_busy" in listing and "pod_container_requests" in listing
    shown = _run(fresh / "bin" / "analyzer", "queries", "show", "node_cpu_busy", cwd=tmp_path)
    assert shown == (ROOT / "queries" / "node_cpu_busy.promql").read_text()
    assert (site / "analyzer" / "_data" / "templates").is_dir()
