"""The Containerfile builds, and the image runs ``analyzer demo`` the way a cluster would run it.

No container registry can be reached from CI, so the test makes its own base image: a Debian
bookworm root filesystem with Debian's python3 and python3-venv (``mmdebstrap --variant=minbase``,
documentation left out as in the official slim images), imported with ``podman import``. It
builds the Containerfile on it (``--build-arg BASE=...``; the wheel stage reaches PyPI), then runs
the demo with no network, a read-only root filesystem, a tmpfs on /tmp, a host folder as the /data
volume and every capability dropped, as the image's own non-root user, and checks what it wrote.

Podman is run as root with ``--runtime runc --cgroup-manager cgroupfs`` and a ``containers.conf``
(CONTAINERS_CONF, in the test's own folder) that sets no default ulimits: the sandbox these tests
run in refuses crun and podman's default ulimits. Where podman cannot run a container at all the
test skips with podman's own message; missing binaries fail under CI (``.ci/run`` installs them).

The base image is kept in podman's store under a tag derived from its recipe, and its tarball under
``$ANALYZER_CI_CACHE`` (default ``~/.cache/analyzer-ci``), so a second run skips mmdebstrap.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.container, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
UID = 10001  # the Containerfile's fixed UID (deploy/ sets the same runAsUser)
# 662 MB before DuckDB became a dependency (`report fleet`, e92a6e2); duckdb 2.0.1's one
# extension module is 66 MB: 738 MB measured 2026-11-29 (docs/deploy.md). The budget leaves ~60 MB.
MAX_IMAGE_BYTES = 800 * 10**6
DEBIAN_MIRROR = "http://deb.debian.org/debian"
MMDEBSTRAP = (
    "mmdebstrap",
    "--variant=minbase",
    "--include=python3,python3-venv",
    # what the official slim images leave out too: documentation, manual pages, translations
    "--dpkgopt=path-exclude=/usr/share/doc/*",
    "--dpkgopt=path-include=/usr/share/doc/*/copyright",
    "--dpkgopt=path-exclude=/usr/share/man/*",
    "--dpkgopt=path-exclude=/usr/share/locale/*",
    "bookworm",
)
# The sandbox refuses podman's default ulimits; see the module docstring.
CONTAINERS_CONF = '[containers]\ndefault_ulimits = []\n\n[engine]\nevents_logger = "file"\n'
PODMAN_FLAGS = ("--runtime", "runc", "--cgroup-manager", "cgroupfs")
IMAGE = "localhost/analyzer:ci-test"
# Where podman itself mounts or creates files in every container (listed by `podman diff`).
PODMAN_MOUNT_POINTS = {
    "/etc", "/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/run", "/run/.containerenv",
    "/tmp", "/data", "/dev", "/proc", "/sys",
}  # fmt: skip


@dataclass(frozen=True)
class Podman:
    """How to call podman here: the environment naming our containers.conf."""

    env: dict[str, str]

    def run(self, *args: str, timeout: float = 600, check: bool = True) -> str:
        """``podman ARGS`` with the sandbox's flags; its stdout, or the test fails with its output."""
        proc = subprocess.run(
            ["podman", *PODMAN_FLAGS, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            pytest.fail(
                f"podman {' '.join(args[:2])} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
            )
        return proc.stdout


def _require(binary: str, package: str) -> None:
    if shutil.which(binary):
        return
    message = f"{binary} not installed (apt-get install {package}); .ci/run installs it"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Podman:
    """Podman able to run a container here, or a skip that says why not."""
    _require("podman", "podman")
    _require("runc", "runc")
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    conf.write_text(CONTAINERS_CONF)
    env = {**os.environ, "CONTAINERS_CONF": str(conf)}
    if os.geteuid() != 0:
        pytest.skip("podman is run as root here (rootless podman needs subuid ranges); not root")
    probe = subprocess.run(
        ["podman", *PODMAN_FLAGS, "info", "--format", "{{.Host.OCIRuntime.Name}}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if probe.returncode != 0:
        reason = (probe.stderr.strip().splitlines() or ["no message"])[-1]
        pytest.skip(f"podman cannot run here: {reason}")
    return Podman(env)


def _cache_dir() -> Path:
    default = Path.home() / ".cache" / "analyzer-ci"
    return Path(os.environ.get("ANALYZER_CI_CACHE", default))


@pytest.fixture(scope="module")
def base_image(podman: Podman) -> str:
    """A Debian bookworm image with Debian's python3, made here (no registry is reachable)."""
    recipe = hashlib.sha256(" ".join(MMDEBSTRAP).encode()).hexdigest()[:12]
    tag = f"localhost/analyzer-ci-base:bookworm-{recipe}"
    if (
        subprocess.run(["podman", "image", "exists", tag], env=podman.env, check=False).returncode
        == 0
    ):
        return tag
    _require("mmdebstrap", "mmdebstrap")
    tarball = _cache_dir() / f"debian-bookworm-python3-{recipe}.tar"
    if not tarball.is_file():
        tarball.parent.mkdir(parents=True, exist_ok=True)
        partial = tarball.with_suffix(".partial.tar")
        proc = subprocess.run(
            [*MMDEBSTRAP, str(partial), DEBIAN_MIRROR],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        if proc.returncode != 0:
            partial.unlink(missing_ok=True)
            pytest.fail(f"mmdebstrap exited {proc.returncode}:\n{proc.stderr[-3000:]}")
        partial.replace(tarball)  # only a complete tarball is ever cached
    podman.run("import", str(tarball), tag)
    return tag


def _pip_build_args() -> list[str]:
    """Hand the host's pip CA bundle and index to the wheel stage, when the host has them set."""
    args: list[str] = []
    # the host's trust (which holds any TLS-inspecting proxy's CA), else its system bundle
    system = "/etc/ssl/certs/ca-certificates.crt"
    cert = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE") or system
    if Path(cert).is_file():
        args += ["--volume", f"{cert}:{cert}:ro", "--build-arg", f"PIP_CERT={cert}"]
    for name in ("PIP_INDEX_URL",):
        if os.environ.get(name, "").startswith("http"):
            args += ["--build-arg", f"{name}={os.environ[name]}"]
    return args


@dataclass(frozen=True)
class Built:
    """The image under test and what building it cost."""

    tag: str
    seconds: float


@pytest.fixture(scope="module")
def image(podman: Podman, base_image: str) -> Iterator[Built]:
    """The Containerfile built on the Debian base (the wheel stage reaches PyPI)."""
    start = time.monotonic()
    podman.run(
        "build",
        # the wheel stage needs PyPI; podman's own network plugins are not installed here
        "--network",
        "host",
        *_pip_build_args(),
        "--build-arg",
        f"BASE={base_image}",
        "--tag",
        IMAGE,
        "--file",
        str(ROOT / "Containerfile"),
        str(ROOT),
        timeout=1200,
    )
    yield Built(IMAGE, time.monotonic() - start)


def _inspect(podman: Podman, tag: str) -> dict[str, object]:
    [data] = json.loads(podman.run("image", "inspect", tag))
    assert isinstance(data, dict)
    return data


def test_image_is_small_and_declares_how_it_runs(podman: Podman, image: Built) -> None:
    data = _inspect(podman, image.tag)
    size = int(str(data["Size"]))
    print(f"image {image.tag}: {size / 1e6:.0f} MB, built in {image.seconds:.0f} s")
    assert size < MAX_IMAGE_BYTES, (
        f"image is {size / 1e6:.0f} MB, over {MAX_IMAGE_BYTES / 1e6:.0f} MB"
    )
    config = data["Config"]
    assert isinstance(config, dict)
    assert config["User"] == f"{UID}:{UID}"  # numeric: kubelet can verify runAsNonRoot
    assert config["Entrypoint"] == ["analyzer"]
    assert list(config["Volumes"]) == ["/data"]
    env = dict(item.split("=", 1) for item in config["Env"])
    # every cache a library might write lands on the tmpfs, never on the read-only root
    for name in ("HOME", "MPLCONFIGDIR", "XDG_CACHE_HOME"):
        assert env[name].startswith("/tmp"), (name, env[name])


def test_nothing_to_build_or_install_with_is_left_in_the_image(
    podman: Podman, image: Built
) -> None:
    script = (
        "import importlib.util as u, shutil, site, os;"
        "print(shutil.which('pip'), shutil.which('gcc'), shutil.which('cc'),"
        " u.find_spec('pip') is not None, os.path.exists('/root/.cache/pip'),"
        " [p for p in site.getsitepackages() if os.path.isdir(os.path.join(p, 'pandas', 'tests'))],"
        " os.listdir('/tmp'))"
    )
    out = podman.run(
        "run", "--rm", "--network", "none", "--entrypoint", "python3", image.tag, "-c", script
    )
    # no pip, no compiler, no pip cache, no test suites, and nothing left in the image's /tmp
    assert out.split() == ["None", "None", "None", "False", "False", "[]", "[]"], out


@dataclass(frozen=True)
class DemoRun:
    """``analyzer demo`` run inside the image: its output, what it left in the container's layer."""

    proc: subprocess.CompletedProcess[str]
    data: Path
    layer_changes: list[str]
    seconds: float


# The whole pipeline on a smaller cluster than the demo's default (200 nodes × 7 days, run
# natively by tests/test_demo.py): every stage and page still runs inside the image (snapshot,
# nightly days, a complete month of history for the monthly review, what-if and search), in about
# a third of the time, which keeps .ci/run well inside its budget.
DEMO_NODES, DEMO_DAYS = 60, 3
DEMO_SIZE = ("--nodes", str(DEMO_NODES), "--days", str(DEMO_DAYS), "--history-days", "45")


@pytest.fixture(scope="module")
def demo(podman: Podman, image: Built, tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """The demo as a CronJob pod runs it: offline, read-only root, tmpfs /tmp, no capabilities."""
    data = tmp_path_factory.mktemp("volume") / "data"
    data.mkdir()
    os.chown(data, UID, UID)  # what fsGroup does for the PersistentVolumeClaim in a cluster
    name = f"analyzer-ci-demo-{os.getpid()}"
    podman.run("rm", "--force", name, check=False)
    start = time.monotonic()
    proc = subprocess.run(
        ["podman", *PODMAN_FLAGS, "run", "--name", name,
         "--network", "none", "--read-only", "--tmpfs", "/tmp:rw,size=1g,mode=1777",
         "--volume", f"{data}:/data", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
         image.tag, "demo", "--out", "/data/demo", *DEMO_SIZE],
        env=podman.env, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - start
    try:
        # the container's own layer after the run: nothing may have been written outside the
        # volume and the tmpfs (a read-only root makes that an error, the diff makes it visible)
        changes = [
            line
            for line in podman.run("diff", name).splitlines()
            # podman's own mount points for the files it bind-mounts (hosts, resolv.conf, ...)
            if line.split()[-1] not in PODMAN_MOUNT_POINTS
        ]
    finally:
        podman.run("rm", "--force", name, check=False)
    print(f"demo inside the image: {seconds:.0f} s")
    return DemoRun(proc, data, changes, seconds)


def test_demo_runs_read_only_offline_as_non_root(demo: DemoRun) -> None:
    proc = demo.proc
    assert proc.returncode == 0, f"demo exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    assert demo.layer_changes == []
    out = demo.data / "demo"
    assert "/data/demo/reports/index.html" in proc.stdout  # it printed where the reports are
    # written by the image's user, not root
    assert {p.stat().st_uid for p in out.rglob("*")} == {UID}
    pages = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html"))
    assert {"reports/index.html", "whatif/report.html", "monthly/report.html"} <= set(pages)
    days = [p for p in pages if re.fullmatch(r"reports/\d{4}-\d{2}-\d{2}/report\.html", p)]
    assert len(days) == DEMO_DAYS  # one nightly report per day of the snapshot
    for page in pages:
        html = (out / page).read_text(encoding="utf-8")
        # a complete page: the end tag was written (atomic writes) and the charts are embedded
        assert html.rstrip().endswith("</html>"), page
    latest = sorted(days)[-1]
    report = json.loads((out / latest).with_name("report.json").read_text())
    assert report["summary"]["nodes"]["value"] == DEMO_NODES
    assert "data:image/png;base64," in (out / latest).read_text()  # matplotlib drew, from /tmp
    review = json.loads((out / "monthly" / "report.json").read_text())
    assert {p["name"] for p in review["pools"]} == {"compute", "general", "gpu", "memory"}


def test_the_report_server_of_deploy_serves_the_volume_read_only(
    podman: Podman, image: Built, demo: DemoRun
) -> None:
    """deploy/overlays/full/web.yaml's command, in the image, read-only, serves the reports."""
    assert demo.proc.returncode == 0
    [deployment] = [
        d
        for d in yaml.safe_load_all((ROOT / "deploy/overlays/full/web.yaml").read_text())
        if d["kind"] == "Deployment"
    ]
    command = deployment["spec"]["template"]["spec"]["containers"][0]["command"]
    with socket.socket() as probe:  # a free port on the host (the server shares its network)
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    command = [port if word == "8080" else word for word in command]
    name = f"analyzer-ci-web-{os.getpid()}"
    podman.run(
        "run", "--detach", "--name", name, "--network", "host", "--read-only",
        "--tmpfs", "/tmp", "--volume", f"{demo.data}:/data:ro", "--cap-drop", "ALL",
        "--entrypoint", command[0], image.tag, *command[1:],
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/demo/reports/index.html"
        body = b""
        for _ in range(100):  # the server needs a moment to start
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    body = response.read()
                break
            except OSError:
                time.sleep(0.2)
        assert body == (demo.data / "demo" / "reports" / "index.html").read_bytes()
    finally:
        podman.run("rm", "--force", name, check=False)


def test_the_monthly_jobs_shell_finds_last_month(podman: Podman, image: Built) -> None:
    """The monthly CronJob's script needs /bin/sh and GNU date in the image; it names last month."""
    [cronjob] = yaml.safe_load_all((ROOT / "deploy/overlays/full/cronjob-monthly.yaml").read_text())
    script = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["command"]
    [month_line] = [line for line in script[2].splitlines() if line.startswith("month=")]
    out = podman.run(
        "run", "--rm", "--network", "none", "--read-only", "--entrypoint", "/bin/sh",
        image.tag, "-ec", f'{month_line}\necho "$month"',
    )  # fmt: skip
    today = datetime.now(UTC).date()
    last_month = today.replace(day=1) - timedelta(days=1)
    assert out.strip() == last_month.strftime("%Y-%m")
