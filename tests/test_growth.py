"""``analyzer whatif --growth`` on hand-built clusters whose answers are worked out by hand.

The cluster: 4 nodes of 4 cores / 16 GiB in one pool, 8 pods of 1 core / 1 GiB of one
Deployment ("web") in namespace default for an hour. Memory never binds (at most 24 GiB of
64), and 1-core pods on 4-core nodes cannot fragment, so any scheduler fits exactly 16 pods and
N+1 (16 − 4 cores − requested ≥ 0) holds while 12 pods or fewer run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from reliability_doc import documented_exit
from replay_fixtures import GI, N, P, build

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    snap = build([N(f"n{i}") for i in range(4)], [P(f"web-{i}", f"n{i % 4}") for i in range(8)])
    snap.pods["owner_name"] = "web-5d9f"
    snap.pods["workload_kind"], snap.pods["workload_name"] = "Deployment", "web"
    return write_snapshot(snap, tmp_path_factory.mktemp("growth") / "snap")


def _run(tmp: Path, snap: Path, config: str, *args: str) -> tuple[int, str]:
    (tmp / "growth.yaml").write_text(config)
    run = CliRunner().invoke(
        main,
        ["--config", str(tmp / "growth.yaml"), "whatif", str(snap), "--growth",
         "--growth-days", "1", *args],
    )  # fmt: skip
    return run.exit_code, run.output


def test_two_more_replicas_a_month(snapshot: Path, tmp_path: Path) -> None:
    """Month k runs 8 + 2k pods: 18 > 16 first in month 5; 14 > 12 (N+1) first in month 3.
    Nodes to add: ceil((8 + 2k) / 4) − 4 = 1 in months 5 and 6, 2 in months 7 and 8."""
    config = "growth:\n  - {namespace: default, replicas: '+2'}\n"
    code, out = _run(tmp_path, snapshot, config, "--months", "8", "--out", str(tmp_path / "o"))
    assert code == 0, out
    data = json.loads((tmp_path / "o" / "growth.json").read_text())
    assert data["first_wait_month"] == 5
    assert data["first_n_plus_1_break"] == {"pool": 3}
    months = {m["month"]: m for m in data["months"]}
    assert [months[k]["pods"] for k in range(9)] == [8 + 2 * k for k in range(9)]
    assert [months[k]["pools"][0]["nodes_to_add"] for k in range(9)] == [0] * 5 + [1, 1, 2, 2]
    # the pods beyond 16 wait: 2 in month 5, 8 in month 8
    assert [months[k]["waiting_pods"] for k in range(9)] == [0] * 5 + [2, 4, 6, 8]
    for k in range(9):
        pool = months[k]["pools"][0]
        assert pool["capacity_cpu_cores"] == 16 and pool["capacity_memory_gib"] == 64
        assert pool["requested_peak_cpu_cores"] == 8 + 2 * k  # placed + waiting, 1 core each
        assert pool["n_plus_1"] is (8 + 2 * k <= 12)
    assert "the first pod waits in month 5" in out and "N+1 breaks in month 3" in out
    csv = (tmp_path / "o" / "growth.csv").read_text().splitlines()
    assert len(csv) == 1 + 9  # a header, one row per month of the one pool
    html = (tmp_path / "o" / "growth.html").read_text()
    assert data["sentence"] in html


def test_a_percentage_is_rounded_per_workload(snapshot: Path, tmp_path: Path) -> None:
    """+10 % of 8 a month: floor(8 + 0.8 m + 0.5) = 9, 10, 10, 11, 12, 13 (m = 6: over 12, N+1
    breaks), 14, 14, 15, 16, 17 (m = 11: over 16, a pod waits)."""
    config = "growth:\n  - {workload: web, replicas: '+10%'}\n"
    code, out = _run(tmp_path, snapshot, config, "--months", "11", "--format", "json")
    assert code == 0, out
    data = json.loads(out)
    assert [m["pods"] for m in data["months"]] == [8, 9, 10, 10, 11, 12, 13, 14, 14, 15, 16, 17]
    assert data["first_wait_month"] == 11
    assert data["first_n_plus_1_break"] == {"pool": 6}


def test_manifest_pods_from_month_two(snapshot: Path, tmp_path: Path) -> None:
    """9 pods of 1 core from month 2: 17 pods > 16, so month 2 waits and needs 1 more node."""
    (tmp_path / "api.yaml").write_text(
        "kind: Deployment\nmetadata: {name: api, namespace: shop}\nspec:\n  replicas: 3\n"
        "  template:\n    spec:\n      containers:\n      - name: c\n"
        "        resources: {requests: {cpu: '1', memory: 1Gi}}\n"
    )
    config = "growth:\n  - {manifests: api.yaml, replicas: 9, month: 2}\n"
    code, out = _run(tmp_path, snapshot, config, "--months", "3", "--format", "json")
    assert code == 0, out
    data = json.loads(out)
    assert [m["pods"] for m in data["months"]] == [8, 8, 17, 17]
    assert data["first_wait_month"] == 2
    assert [m["pools"][0]["nodes_to_add"] for m in data["months"]] == [0, 0, 1, 1]
    assert data["months"][2]["pools"][0]["requested_peak_memory_gib"] == 17 * GI / GI


def test_shrinking_never_waits(snapshot: Path, tmp_path: Path) -> None:
    """−1 replica a month from 8: 7, 6, 5 pods; never below 0, nothing waits."""
    code, out = _run(tmp_path, snapshot, "growth:\n  - {namespace: default, replicas: '-1'}\n",
                     "--months", "3", "--format", "json")  # fmt: skip
    assert code == 0, out
    data = json.loads(out)
    assert [m["pods"] for m in data["months"]] == [8, 7, 6, 5]
    assert data["first_wait_month"] is None


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ("growth: {namespace: shop}\n", "--config growth: must be a list"),
        ("growth:\n  - {namespace: shop, replicas: lots}\n", "--config growth[0]: replicas"),
        ("growth:\n  - {namespace: shop, replica: '+1'}\n", "unknown key 'replica'"),
        ("growth:\n  - {replicas: '+1'}\n", "name a namespace, a workload or manifests"),
        ("growth:\n  - {manifests: none.yaml}\n", "manifests none.yaml: no such file"),
        ("growth:\n  - {namespace: a, replicas: '+1', month: 0}\n", "month must be"),
        ("growth: []\n", "--growth: nothing grows"),
    ],
)
def test_bad_growth_config_is_one_line_exit_2(
    snapshot: Path, tmp_path: Path, config: str, named: str
) -> None:
    code, out = _run(tmp_path, snapshot, config, "--out", str(tmp_path / "o"))
    assert code == documented_exit("growth-bad-config"), out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and named in lines[0] and "Traceback" not in out
    assert not (tmp_path / "o").exists()  # refused before anything is written


def test_cluster_autoscaler_adds_the_nodes(snapshot: Path, tmp_path: Path) -> None:
    """Under cluster-autoscaler (maxSize 3 × 4 nodes) the pods beyond 16 wait for its scale-up:
    2 pods of 1 core in month 5 need one more 4-core node, 6 in month 7 two."""
    config = "growth:\n  - {namespace: default, replicas: '+2'}\n"
    code, out = _run(tmp_path, snapshot, config, "--months", "7", "--format", "json",
                     "--autoscaler", "cluster-autoscaler")  # fmt: skip
    assert code == 0, out
    data = json.loads(out)
    assert data["autoscaler"] == "cluster-autoscaler"
    assert data["first_wait_month"] == 5  # waiting for the new node to be ready
    assert [m["pools"][0]["nodes_to_add"] for m in data["months"]] == [0] * 5 + [1, 1, 2]
    assert "kube-default and cluster-autoscaler" in data["sentence"]


def test_rates_fitted_from_a_history(snapshot: Path, tmp_path: Path) -> None:
    """A history where namespace default's web grows by 0.4 replicas a month on its last-day
    level of 8 (a straight line, 30 days): rate 0.05 a month, so month m runs
    floor(8 + 0.4 m + 0.5) = 8, 8, 9, 9, 10, 10, 10, 11, 11 pods; all fit (≤ 12: N+1 holds)."""
    from datetime import date

    from monthly_history import PoolTruth, WorkloadTruth, line, write_history

    per_day = 0.4 / 30.4375
    write_history(tmp_path / "history", date(2026, 10, 1), 30, [PoolTruth("pool")],
                  [WorkloadTruth("web", "pool", namespace="default",
                                 replicas=line(8 - 29 * per_day, per_day))])  # fmt: skip
    code, out = _run(tmp_path, snapshot, "{}\n", "--months", "8", "--format", "json",
                     "--history", str(tmp_path / "history"))  # fmt: skip
    assert code == 0, out
    data = json.loads(out)
    assert [m["pods"] for m in data["months"]] == [8, 8, 9, 9, 10, 10, 10, 11, 11]
    assert data["first_wait_month"] is None and data["first_n_plus_1_break"] == {"pool": None}
    assert data["changes"] == ["history: default +5.0 % per month from month 1"]


def test_months_replayed_ahead_in_a_pool_give_the_same_answers(snapshot: Path) -> None:
    """``run_growth(workers=2)`` (the demo's) replays the months in two processes first and
    replays a month whose pods wait again in order, with its search: the hand-worked answers of
    ``test_two_more_replicas_a_month`` hold either way, and so does the replay count (9 months
    + the searches' extra replays, counted once)."""
    from analyzer.core.snapshot import read_snapshot
    from analyzer.whatif.compare import resolve_strategy
    from analyzer.whatif.growth import run_growth
    from analyzer.whatif.growth_plan import Change, GrowthPlan

    plan = GrowthPlan((Change("growth[0]", "default", count=2),), 8)
    result = run_growth(
        read_snapshot(snapshot), plan, resolve_strategy("kube-default"), days=1, workers=2
    ).to_dict()
    months = {m["month"]: m for m in result["months"]}
    assert [months[k]["pods"] for k in range(9)] == [8 + 2 * k for k in range(9)]
    assert [months[k]["pools"][0]["nodes_to_add"] for k in range(9)] == [0] * 5 + [1, 1, 2, 2]
    assert [months[k]["waiting_pods"] for k in range(9)] == [0] * 5 + [2, 4, 6, 8]
    # the sequential run (workers=1) is the reference: the same count of replays, every figure
    replays = int(result["notes"][-1].split()[0])
    sequential = run_growth(
        read_snapshot(snapshot), plan, resolve_strategy("kube-default"), days=1
    ).to_dict()
    assert replays == int(sequential["notes"][-1].split()[0])
    assert result == sequential
