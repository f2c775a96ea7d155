"""``--executor dask://HOST:PORT``: the sweeps on a real ``distributed.LocalCluster`` (two worker
processes on 127.0.0.1) give the outputs the local executor gives, byte for byte but for times.

Every sweep kind goes through ``analyzer/core/executor.py``: the what-if's strategies × seeds and
its ``--autoscaler`` rows, the ``--search`` grid, the joint scenarios (``--recommendations``, the
monthly review's replays) and a trace protocol run. A worker reads the snapshot from its path
(the test's tmp folder stands for the shared storage), so what a task carries is small: the test
pickles one the way Dask does and bounds it against the snapshot's own size.
"""

from __future__ import annotations

import json
import pickle
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from monthly_scenarios_case import snapshot as joint_snapshot
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.core.executor import ExecutorSpec, Shared, _call
from analyzer.core.snapshot import read_snapshot, write_snapshot
from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.compare import WhatIfSettings, _run_one, resolve_strategy, shared_inputs

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """``dask://127.0.0.1:PORT`` of a two-process LocalCluster, one thread per worker."""
    with distributed.LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    ) as cluster:
        yield "dask://" + cluster.scheduler_address.removeprefix("tcp://")


@pytest.fixture(scope="module")
def snap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small generated day (6 nodes, 10-minute steps) on disk: what the workers read."""
    spec = SyntheticSpec(seed=3, nodes=6, days=1, step=600, pods_per_node=3, hot_nodes=0.3)
    return write_snapshot(generate(spec).snapshot, tmp_path_factory.mktemp("dask") / "snap")


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_whatif_with_seeds_and_autoscaler_is_identical_on_dask(snap: Path, scheduler: str) -> None:
    args = ["whatif", str(snap), "--strategy", "most-allocated", "--seeds", "2"]
    args += ["--autoscaler", "cluster-autoscaler", "--format", "json"]
    local = _invoke(*args, "--workers", "2")
    remote = _invoke(*args, "--executor", scheduler)
    assert remote == local  # the whole JSON, byte for byte: it carries no time of its own
    data = json.loads(local)
    # the sweep did run: observed + 1 strategy × 2 seeds, and one autoscaled row per seed
    assert [len(s["seeds"]) for s in data["strategies"]] == [1, 2]
    assert len(data["autoscaled"]) == 2


def test_report_whatif_files_are_identical_on_dask(
    snap: Path, scheduler: str, tmp_path: Path
) -> None:
    args = ["report", "whatif", str(snap), "--strategy", "most-allocated", "--seeds", "2"]
    _invoke(*args, "--out", str(tmp_path / "local"), "--workers", "2")
    _invoke(*args, "--out", str(tmp_path / "dask"), "--executor", scheduler)
    names = sorted(p.name for p in (tmp_path / "local").iterdir() if p.suffix in (".json", ".csv"))
    assert "report.json" in names and any(n.endswith(".csv") for n in names)
    for name in names:
        local = (tmp_path / "local" / name).read_bytes()
        remote = (tmp_path / "dask" / name).read_bytes()
        if name == "report.json":  # the one time in the files: when the report was written
            local, remote = (_without_written(x) for x in (local, remote))
        assert remote == local, name


def _without_written(raw: bytes) -> Any:
    data = json.loads(raw)
    data.pop("generated_at", None)
    return data


def test_search_grid_is_identical_on_dask(snap: Path, scheduler: str, tmp_path: Path) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        "scoring: [MostAllocated]\nloadAwareThresholds: [null, {cpu: 65, memory: 95}]\n"
    )
    args = ["whatif", str(snap), "--search", "--search-grid", str(grid), "--format", "json"]
    local_text = _invoke(*args, "--workers", "2")
    remote_text = _invoke(*args, "--executor", scheduler)
    assert _json_tail(remote_text) == _json_tail(local_text)
    assert len(_json_tail(local_text)["rows"]) == 1 + 2 + 2  # observed, 2 baselines, 2 configs


def test_search_under_karpenter_is_identical_on_dask(scheduler: str, tmp_path: Path) -> None:
    # both rounds (the grid on fixed nodes, the finalists under Karpenter) on the executor;
    # half an hour of three nodes (Karpenter polls every 10 s: a day would cost a minute here)
    from replay_fixtures import GI, N, P, build

    small = build(
        [N("a"), N("b"), N("c")],
        [P(f"p{i}", n, cpu=1500, memory=GI) for i, n in enumerate("abc")],
        minutes=30,
    )
    snap = write_snapshot(small, tmp_path / "snap")
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        "scoring: [MostAllocated, LeastAllocated]\n"
        "resourceWeights: [{cpu: 1, memory: 1}, {cpu: 2, memory: 1}]\n"
        "loadAwareThresholds: [null]\n"
    )
    args = ["whatif", str(snap), "--search", "--search-grid", str(grid), "--format", "json",
            "--autoscaler", "karpenter"]  # fmt: skip
    local = _json_tail(_invoke(*args, "--workers", "2"))
    remote = _json_tail(_invoke(*args, "--executor", scheduler))
    assert remote == local
    # kube-default and 3 of the 4 configurations replayed under Karpenter, one left out
    assert len(local["finalists"]) == 4
    assert sum("autoscaled" in r for r in local["rows"][1:]) == 4


def _json_tail(text: str) -> Any:
    """The JSON document of a search's output (after its progress lines, if any)."""
    return json.loads(text[text.index("{") :])


def test_joint_scenarios_are_identical_on_dask(scheduler: str, tmp_path: Path) -> None:
    snap = write_snapshot(joint_snapshot(), tmp_path / "snap")
    recs = tmp_path / "recs.csv"
    recs.write_text(
        "namespace,owner_kind,owner_name,cpu_recommended_millicores,memory_recommended_bytes\n"
        "default,Deployment,web,1500,4294967296\n"
    )
    args = ["whatif", str(snap), "--recommendations", str(recs), "--format", "json"]
    local = _invoke(*args, "--workers", "2")
    remote = _invoke(*args, "--executor", scheduler)
    assert remote == local
    pools = json.loads(local)["pools"]
    assert pools and [s["name"] for s in pools[0]["scenarios"]][:1] == ["today"]


def test_trace_run_is_identical_on_dask(scheduler: str, tmp_path: Path) -> None:
    from analyzer.sources.alibaba import DEFAULT_NODES, DEFAULT_PODS

    # the header and the first 300 pods on the first 100 GPU nodes: a small, fast run
    lines = DEFAULT_PODS.read_text().splitlines(keepends=True)
    pods = tmp_path / "openb_pod_list_default.csv"
    pods.write_text("".join(lines[:301]))
    nodes = tmp_path / "openb_node_list_gpu_node.csv"
    nodes.write_text("".join(DEFAULT_NODES.read_text().splitlines(keepends=True)[:101]))
    args = ["trace", "alibaba-gpu", "--policy", "BestFit", "--seeds", "1-2"]
    args += ["--tune", "0.5", "--pods", str(pods), "--nodes", str(nodes), "--format", "json"]
    local = json.loads(_invoke(*args, "--workers", "2"))
    remote = json.loads(_invoke(*args, "--executor", scheduler))
    assert _without_seconds(remote) == _without_seconds(local)
    assert [r["seed"] for r in local["policies"]["BestFit"]["per_seed"]] == [1, 2]


def _without_seconds(value: Any) -> Any:
    """The run's timings (wall seconds differ from run to run), every other number kept."""
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if "seconds" not in k}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


def test_a_task_pickles_small_and_carries_no_snapshot(snap: Path) -> None:
    settings = WhatIfSettings(strategies=("most-allocated",), executor=ExecutorSpec("h:1"))
    shared = shared_inputs(read_snapshot(snap), settings, snap)
    task = (_call, shared, _run_one, resolve_strategy("most-allocated"), 0, settings)
    size = len(pickle.dumps(task))
    snapshot_size = len(pickle.dumps(read_snapshot(snap)))
    # what Dask sends per task: the loader (a path), the strategy and the settings
    assert size < 16_000 and size * 10 < snapshot_size, (size, snapshot_size)
    # a held value never leaves the caller: a local Shared pickles without it
    held = pickle.loads(pickle.dumps(Shared("k", value=read_snapshot(snap))))
    assert held.value is None and held.key == "k"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_scheduler_is_one_line_naming_it(snap: Path) -> None:
    address = f"127.0.0.1:{_free_port()}"  # nothing listens there
    proc = subprocess.run(
        [sys.executable, "-m", "analyzer", "whatif", str(snap), "--strategy", "most-allocated",
         "--executor", f"dask://{address}"],
        capture_output=True, text=True, timeout=120,
        env={**__import__("os").environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"},
    )  # fmt: skip
    assert proc.returncode == documented_exit("dask-scheduler-unreachable") == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and address in lines[0] and "Traceback" not in proc.stderr


def test_a_scheduler_without_workers_is_one_line_not_a_hang(snap: Path) -> None:
    # a scheduler accepts tasks with no worker to run them: without a bound the sweep never ends
    with distributed.LocalCluster(
        n_workers=0, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0"
    ) as empty:
        address = empty.scheduler_address.removeprefix("tcp://")
        proc = subprocess.run(
            [sys.executable, "-m", "analyzer", "whatif", str(snap), "--strategy", "most-allocated",
             "--executor", f"dask://{address}"],
            capture_output=True, text=True, timeout=120,
            env={**__import__("os").environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"},
        )  # fmt: skip
    assert proc.returncode == documented_exit("dask-no-workers") == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and address in lines[0] and "no worker" in lines[0], proc.stderr


def test_without_the_extra_dask_is_refused_with_the_install_line(snap: Path) -> None:
    # the interpreter as it is without distributed: the import fails as on a plain install
    code = (
        "import sys; sys.modules['distributed'] = None; "
        "from analyzer.cli import main; sys.argv[0] = 'analyzer'; main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "whatif", str(snap), "--strategy", "most-allocated",
         "--executor", "dask://127.0.0.1:8786"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == documented_exit("dask-extra-missing") == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'analyzer[dask]'" in lines[0]


@pytest.mark.parametrize(
    "value", ["dask://nohost", "dask://h:0", "spark://h:7077", "dask://h:port", "dask:///x:1"]
)
def test_a_bad_executor_value_is_one_line_exit_2(snap: Path, value: str) -> None:
    result = CliRunner().invoke(
        main, ["whatif", str(snap), "--strategy", "most-allocated", "--executor", value]
    )
    assert result.exit_code == documented_exit("executor-bad-value") == 2
    assert "--executor" in result.output and "dask://HOST:PORT" in result.output


def test_a_snapshot_changed_in_memory_is_refused_on_dask(snap: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["whatif", str(snap), "--strategy", "most-allocated", "--rightsize", "vpa",
         "--executor", "dask://127.0.0.1:8786"],
    )  # fmt: skip
    assert result.exit_code == documented_exit("dask-snapshot-changed") == 2, result.output
    assert "--rightsize" in result.output and "--executor local" in result.output
