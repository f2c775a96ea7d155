"""A partial kube-state-metrics answer (campaign row 113) is a partial day, not bad input.

A real Prometheus holds the synthetic cluster; a fault proxy in front of it answers the
``kube_pod_info`` and ``kube_node_info`` window queries (``last_over_time(kube_…_info[…])``)
of one day with an empty result, as a kube-state-metrics shard down or a Thanos partial
response does, while every other series (requests, capacity, usage) is served. ``collect``
of that day exits 3 with one line naming what is missing and writes nothing; ``history
backfill`` counts the day as without data (exit 3) and writes the other day.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cli_contract import run_cli
from fault_servers import Answer, passthrough, proxy
from http_stub import Recorded, Reply
from reliability_doc import documented_exit

from analyzer.sources import SyntheticSpec, generate, write_openmetrics

pytestmark = pytest.mark.prometheus

FAULTY = datetime(2026, 11, 1, tzinfo=UTC).timestamp()  # the day 2026-11-01 (00:00, 24:00]
INFO_WINDOWS = ("last_over_time(kube_pod_info[", "last_over_time(kube_node_info[")


@pytest.fixture(scope="module")
def server_url(
    prometheus_from_openmetrics: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> str:
    cluster = generate(SyntheticSpec(seed=5, nodes=6, days=2, step=300))
    path = tmp_path_factory.mktemp("ksm-partial") / "cluster.om"
    write_openmetrics(cluster, path)
    return str(prometheus_from_openmetrics(path).url)


def _touches_faulty_day(request: Recorded) -> bool:
    # A window query is a range query evaluated once per day, starting at the range's end.
    for key in ("time", "start"):
        for value in request.params.get(key, []):
            if FAULTY < float(value) <= FAULTY + 86400:
                return True
    return False


def empty_info_windows(request: Recorded, answer: Answer) -> Reply:
    """The two info window queries of the faulty day answer success with no series."""
    query = " ".join(request.params.get("query", []))
    if (
        answer.status == 200
        and _touches_faulty_day(request)
        and any(w in query for w in INFO_WINDOWS)
    ):
        body = json.loads(answer.body)
        body["data"]["result"] = []
        return Reply(200, json.dumps(body, separators=(",", ":")).encode())
    return passthrough(answer)


@pytest.fixture()
def partial_url(server_url: str) -> Iterator[str]:
    with proxy(server_url, empty_info_windows) as url:
        yield url


def test_collect_of_a_partial_ksm_day_exits_3_in_one_line(partial_url: str, tmp_path: Path) -> None:
    out = tmp_path / "snap"
    run = run_cli([
        "collect", "--prometheus", partial_url, "--start", "2026-11-01T00:00:00Z",
        "--end", "2026-11-02T00:00:00Z", "--step", "5m", "--out", str(out),
    ], timeout=120)  # fmt: skip
    assert run.exit_code == documented_exit("ksm-partial"), run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    # names what is missing and what is there, never "lacks column(s)" (an input error)
    assert "kube_pod_info is empty while pod_container_requests has series" in lines[0]
    assert "lacks column" not in lines[0]
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # no temporary folder left either


def test_backfill_counts_the_partial_day_and_writes_the_next(
    partial_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    run = run_cli([
        "history", "backfill", "--prometheus", partial_url, "--since", "2d",
        "--until", "2026-11-02", "--out", str(out),
    ], timeout=120)  # fmt: skip
    assert run.exit_code == documented_exit("backfill-no-data"), run.stderr
    assert "Traceback" not in run.stderr and run.stderr.strip() == "", run.stderr
    assert "2026-11-01: no data, nothing written (kube-state-metrics answered partially" in (
        run.stdout
    )
    assert "2026-11-02: written in" in run.stdout
    summaries = sorted(p.name for p in (out / "history" / "summary").iterdir())
    assert summaries == ["2026-11-02.json"]  # the day after the faulty one is written


def _limited() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (9000, 9000))


def test_backfill_write_refused_names_the_file_and_the_day(server_url: str, tmp_path: Path) -> None:
    # Campaign row 124: a file size limit below a pools day's size. The line names the file
    # and the day; the run stops there (exit 1), a rerun without the limit completes.
    out = tmp_path / "out"
    args = ["history", "backfill", "--prometheus", server_url, "--since", "2d",
            "--until", "2026-11-02", "--out", str(out)]  # fmt: skip
    proc = subprocess.run([sys.executable, "-m", "analyzer", *args], capture_output=True,
                          text=True, preexec_fn=_limited, timeout=300, check=False)  # fmt: skip
    assert proc.returncode == documented_exit("os-write-refused"), proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "File too large on " in lines[0] and f"{out}/history/" in lines[0]
    assert "while recording the day 2026-11-0" in lines[0]
    assert ".tmp" not in lines[0]
    rerun = run_cli(args, timeout=300)
    assert rerun.exit_code == 0, rerun.stderr
    assert sorted(p.name for p in (out / "history" / "summary").iterdir()) == [
        "2026-11-01.json",
        "2026-11-02.json",
    ]
