"""Shared fixtures: a real Prometheus (v2.42 from Debian) backfilled from OpenMetrics text.

Recipe (research/prometheus.md §3.7): ``promtool tsdb create-blocks-from openmetrics
--max-block-duration=720h`` (long blocks: one parse instead of one per 2 h), copy the blocks into
a fresh data dir, start ``prometheus`` on 127.0.0.1 port 0 with an empty scrape config and 100y
retention (retention counts from the newest block; nothing is scraped, so old fixture blocks
survive), read the port from the "Listening on" log line, wait for ``/-/ready``.

``prometheus_from_openmetrics(path, *extra_args)`` is a session-scoped factory any test can use;
servers for the same file and arguments are shared and all are stopped at the end of the session.
Without the binaries the tests skip, except under CI (``CI=true``), where they fail loudly.

``default_demo`` runs ``analyzer demo`` at its default size once per session (the slowest single
step of the suite, ~3 min); every test that only reads the demo's outputs shares that one run.

Under pytest-xdist (``.ci/run`` passes ``-n 2 --dist loadgroup``) each test module is one group, so
a module's own module-scoped fixtures still run once; the tests that read ``default_demo`` form one
group across their files, so the demo runs on one worker only. See tests/README.md.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from processes import stop_process

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
_LISTENING = re.compile(r'msg="Listening on" address=([0-9.]+):(\d+)')


@dataclass
class PrometheusServer:
    """A running test server."""

    url: str
    data_dir: Path
    log: Path
    process: subprocess.Popen[bytes]


def _binaries_available() -> bool:
    return Path(PROMETHEUS).is_file() and Path(PROMTOOL).is_file()


def require_prometheus() -> None:
    """Skip (or fail under CI) when prometheus/promtool are not installed."""
    if _binaries_available():
        return
    message = (
        f"prometheus/promtool not installed ({PROMETHEUS}, {PROMTOOL}); apt-get install prometheus"
    )
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def backfill(openmetrics: Path, blocks: Path) -> None:
    """Turn an OpenMetrics file into TSDB blocks; raise with promtool's output on failure."""
    proc = subprocess.run(
        [
            PROMTOOL,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            "--max-block-duration=720h",
            str(openmetrics),
            str(blocks),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"promtool failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")


def _link_or_copy(source: str, target: str) -> None:
    """A hard link of a block file (no second copy on disk: a block's files are immutable, and
    Prometheus replaces a file by writing a new one and renaming it, never in place); a copy
    where linking fails (another file system)."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def start_prometheus(
    blocks: Path, workdir: Path, extra_args: tuple[str, ...] = ()
) -> PrometheusServer:
    """Start prometheus on a copy of ``blocks`` and wait until it is ready."""
    data = workdir / "data"
    shutil.copytree(blocks, data, copy_function=_link_or_copy)
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 15s\n")  # no scrape_configs
    log = workdir / "prometheus.log"
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                "--storage.tsdb.retention.time=100y",
                "--web.listen-address=127.0.0.1:0",
                *extra_args,
            ],
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    url = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"prometheus exited ({process.returncode}): {log.read_text()[-2000:]}"
            )
        if url is None:
            match = _LISTENING.search(log.read_text(errors="replace"))
            if match:
                url = f"http://{match.group(1)}:{match.group(2)}"
        if url is not None:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return PrometheusServer(url, data, log, process)
            except OSError:
                pass
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"prometheus did not become ready in 60 s: {log.read_text()[-2000:]}")


def stop_prometheus(server: PrometheusServer) -> None:
    """Stop the server we started (by its own process handle)."""
    stop_process(server.process)


@pytest.fixture(scope="session")
def prometheus_from_openmetrics(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., PrometheusServer]]:
    """Factory: ``prometheus_from_openmetrics(path, *extra_args, keep=False) -> PrometheusServer``.

    Servers are shared per file and arguments. The OpenMetrics file is promtool's input only: once
    backfilled, a file under the session's temporary folder is deleted unless ``keep`` (a caller
    that reads it again, e.g. to import it elsewhere, passes ``keep=True`` and deletes it itself).
    Those files are the suite's bulk (17 of them are 150-410 MB, 5.5 GB in all) and a CI disk ran
    out under them; the blocks, a tenth of the size, are kept.
    """
    servers: dict[tuple[str, tuple[str, ...]], PrometheusServer] = {}
    blocks_cache: dict[str, Path] = {}
    basetemp = tmp_path_factory.getbasetemp().resolve()

    def factory(path: Path, *extra_args: str, keep: bool = False) -> PrometheusServer:
        require_prometheus()
        source = Path(path).resolve()
        key = (str(source), tuple(extra_args))
        if key not in servers:
            if key[0] not in blocks_cache:
                blocks = tmp_path_factory.mktemp("blocks")
                backfill(source, blocks)
                blocks_cache[key[0]] = blocks
                if not keep and source.is_relative_to(basetemp):
                    source.unlink()
            workdir = tmp_path_factory.mktemp("prometheus")
            servers[key] = start_prometheus(blocks_cache[key[0]], workdir, tuple(extra_args))
        return servers[key]

    try:
        yield factory
    finally:
        for server in servers.values():
            stop_prometheus(server)


@pytest.fixture(scope="session")
def small_prometheus(
    prometheus_from_openmetrics: Callable[..., PrometheusServer],
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[..., PrometheusServer]:
    """Factory: a server holding tests/small_cluster.py written with ``write_small_cluster(**options)``."""
    import small_cluster

    written: set[str] = set()

    def factory(**options: object) -> PrometheusServer:
        require_prometheus()
        name = "-".join(f"{k}={v}" for k, v in sorted(options.items())) or "default"
        path = tmp_path_factory.getbasetemp() / f"small-{name}.om"
        if name not in written:  # the file itself is gone once backfilled
            small_cluster.write_small_cluster(path, **options)  # type: ignore[arg-type]
            written.add(name)
        return prometheus_from_openmetrics(path)

    return factory


@dataclass(frozen=True)
class DemoRun:
    """One finished ``analyzer demo`` at its default size: its folder and what it printed."""

    out: Path
    output: str


@pytest.fixture(scope="session")
def default_demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """``analyzer demo --out DIR`` with every other option at its default, run once per session.

    Tests only read the folder (a test that needs to change a demo output copies it first), so one
    run serves the demo's CLI tests (tests/test_demo.py) and its page checks (test_demo_pages.py).
    """
    from click.testing import CliRunner

    from analyzer.cli import main

    out = tmp_path_factory.mktemp("demo") / "demo-out"
    run = CliRunner().invoke(main, ["demo", "--out", str(out)], catch_exceptions=False)
    assert run.exit_code == 0, run.output
    return DemoRun(out, run.output)


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """A long text parameter (a 200,000-character nested YAML) is named by its length and a
    digest: pytest puts a test's id in the environment of every child process
    (PYTEST_CURRENT_TEST), and one variable over 128 KiB makes every exec fail with E2BIG."""
    if isinstance(val, (str, bytes)) and len(val) > 80:
        data = val.encode() if isinstance(val, str) else val
        return f"{argname}-{len(val)}-{hashlib.sha256(data).hexdigest()[:10]}"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup``, give every test an xdist group: its module, or "demo".

    xdist's own hook (which runs after this one, see ``tryfirst``) sends each group to one worker.
    A module per group keeps module-scoped fixtures to one run each, as without xdist; every test
    that reads ``default_demo`` joins the "demo" group so that the session's demo runs once.
    """
    # xdist's workers run with dist "no" and say "loadgroup" in option.loadgroup instead (only the
    # controller keeps dist == "loadgroup"); the groups must be set where the items are collected
    loadgroup = getattr(config.option, "dist", "no") == "loadgroup"
    if not (loadgroup or getattr(config.option, "loadgroup", False)):
        return
    for item in items:
        if any(True for _ in item.iter_markers("xdist_group")):
            continue  # a test module may name its own group
        fixtures = getattr(item, "fixturenames", ())
        group = "demo" if "default_demo" in fixtures else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))
