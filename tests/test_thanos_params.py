"""``--thanos``: the Thanos Querier's parameters on every query, seen by a recording proxy.

The proxy forwards to a real Prometheus (which ignores parameters it does not know, as Thanos'
own StoreAPI sidecars sit behind a querier) and records what analyzer sent, so the test checks
the requests themselves, not analyzer's account of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import small_cluster as sc
from fault_servers import Answer, passthrough, proxy
from http_stub import Recorded, Reply
from reliability_doc import documented_exit

from analyzer.core.snapshot import read_snapshot
from analyzer.prom.thanos import auto_resolution

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ("/api/v1/query", "/api/v1/query_range")
RANGE = ("--start", str(sc.T0), "--end", str(sc.END), "--step", f"{sc.STEP}s")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANALYZER_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        capture_output=True, text=True, timeout=180, env=env, cwd=ROOT, check=False,
    )  # fmt: skip


def _collect_through_proxy(
    target: str, out: Path, *flags: str
) -> tuple[subprocess.CompletedProcess[str], list[Recorded]]:
    seen: list[Recorded] = []

    def record(request: Recorded, answer: Answer) -> Reply:
        seen.append(request)
        return passthrough(answer)

    with proxy(target, record) as url:
        proc = _run("collect", "--prometheus", url, "--out", str(out), *RANGE, *flags)
    return proc, seen


def _one(request: Recorded, name: str) -> str | None:
    values = request.params.get(name)
    return None if values is None else values[0]


def test_thanos_parameters_reach_the_querier_and_the_snapshot(
    tmp_path: Path, small_prometheus: Callable[..., object]
) -> None:
    target = small_prometheus().url  # type: ignore[attr-defined]
    proc, seen = _collect_through_proxy(target, tmp_path / "snap", "--thanos")
    assert proc.returncode == 0, proc.stderr[-2000:]
    queries = [r for r in seen if r.path in QUERIES]
    assert queries, "collect sent no query"
    for request in queries:
        # strict by default: an answer missing a store would undercount silently
        assert _one(request, "partial_response") == "false", request
        assert _one(request, "dedup") == "true", request
        # each request's level follows from its own step: five points of the level per step
        step = _one(request, "step")
        expected = "0s" if step is None else ("5m" if 1500 <= float(step) < 18000 else "0s")
        expected = "1h" if step is not None and float(step) >= 18000 else expected
        assert _one(request, "max_source_resolution") == expected, request
    # the usage series, read at the collect step (1 minute), come from raw samples only
    steps = {_one(r, "step") for r in queries}
    assert str(sc.STEP) in steps
    usage = [r for r in queries if _one(r, "step") == str(sc.STEP)]
    assert usage and {_one(r, "max_source_resolution") for r in usage} == {"0s"}
    sent = sorted({_one(r, "max_source_resolution") or "" for r in queries})
    others = [r for r in seen if r.path not in QUERIES]
    assert all("max_source_resolution" not in r.params for r in others)
    meta = read_snapshot(tmp_path / "snap").meta.extra["thanos"]
    assert meta == {
        "partial_response": False,
        "dedup": True,
        "max_source_resolution": "auto",
        "resolutions_sent": sent,  # what the proxy saw, in the snapshot's own words
    }
    assert f"max_source_resolution sent: {', '.join(sent)}" in proc.stdout


def test_explicit_thanos_choices_are_sent_as_given(
    tmp_path: Path, small_prometheus: Callable[..., object]
) -> None:
    target = small_prometheus().url  # type: ignore[attr-defined]
    flags = ("--thanos", "--thanos-partial-response", "--thanos-no-dedup",
             "--thanos-max-source-resolution", "1h")  # fmt: skip
    proc, seen = _collect_through_proxy(target, tmp_path / "snap", *flags)
    assert proc.returncode == 0, proc.stderr[-2000:]
    queries = [r for r in seen if r.path in QUERIES]
    assert queries
    assert {_one(r, "partial_response") for r in queries} == {"true"}
    assert {_one(r, "dedup") for r in queries} == {"false"}
    assert {_one(r, "max_source_resolution") for r in queries} == {"1h"}
    assert read_snapshot(tmp_path / "snap").meta.extra["thanos"]["resolutions_sent"] == ["1h"]


def test_without_thanos_no_thanos_parameter_is_sent(
    tmp_path: Path, small_prometheus: Callable[..., object]
) -> None:
    target = small_prometheus().url  # type: ignore[attr-defined]
    proc, seen = _collect_through_proxy(target, tmp_path / "snap")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert seen
    for request in seen:
        assert not {"partial_response", "dedup", "max_source_resolution"} & set(request.params)
    assert "thanos" not in read_snapshot(tmp_path / "snap").meta.extra


@pytest.mark.parametrize(
    "flag", [("--thanos-no-dedup",), ("--thanos-partial-response",),
             ("--thanos-max-source-resolution", "5m")],
)  # fmt: skip
def test_a_thanos_option_without_thanos_is_refused(tmp_path: Path, flag: tuple[str, ...]) -> None:
    out = tmp_path / "snap"
    proc = _run("collect", "--prometheus", "http://127.0.0.1:9", "--out", str(out), *flag)
    assert proc.returncode == documented_exit("thanos-option-alone") == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and flag[0] in lines[0] and "--thanos" in lines[0]
    assert not out.exists()


@pytest.mark.parametrize(
    ("step", "level"),
    [
        (None, "0s"),  # instant queries: window functions over raw samples
        (60, "0s"),
        (24 * 60 + 59, "0s"),  # under five 5-minute points
        (25 * 60, "5m"),  # five 5-minute points in one step
        (4 * 3600 + 3599, "5m"),
        (5 * 3600, "1h"),  # five 1-hour points
        (86400, "1h"),
    ],
)
def test_auto_resolution_needs_five_points_of_a_level_in_one_step(
    step: int | None, level: str
) -> None:
    assert auto_resolution(step) == level


def test_meta_json_is_plain_json(tmp_path: Path, small_prometheus: Callable[..., object]) -> None:
    target = small_prometheus().url  # type: ignore[attr-defined]
    proc, _ = _collect_through_proxy(target, tmp_path / "snap", "--thanos")
    assert proc.returncode == 0
    raw = json.loads((tmp_path / "snap" / "meta.json").read_text(encoding="utf-8"))
    assert raw["extra"]["thanos"]["dedup"] is True
