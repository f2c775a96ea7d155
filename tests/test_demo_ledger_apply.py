"""The demo's adoption of last month's advice (``cli/demo_ledger._apply``), on a small history.

Three workloads of 4 replicas each in pool ``general`` (1 core and 2 GiB requested per replica,
the pool's requests 40 cores and 100 GiB every day). The ledger recommends a CPU change of
−0.6, −0.4 and −0.2 cores (memory to 1.5 GiB for each). Ranked by the size of the CPU change, the
first takes its recommendation in full from the 7th of the month, the second (rank 1: every tenth
other one from rank 1) half its CPU change from the 14th, the third nothing. The pool's requests
fall by exactly each change × the replicas, from those days on: the figures below are that
arithmetic, written out.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pandas as pd
from monthly_history import GIB, PoolTruth, WorkloadTruth, const, write_history

from analyzer.cli.demo_ledger import _apply
from analyzer.history.capacity import read_pools, read_workloads
from analyzer.monthly.months import Month

REPLICAS = 4.0
OCT_1 = date(2026, 10, 1)


def _ledger_entry(name: str, cpu_cores: float) -> dict[str, object]:
    return {
        "namespace": "team", "owner_kind": "Deployment", "owner_name": name, "pool": "general",
        "cpu_request_millicores": 1000.0, "cpu_recommended_millicores": cpu_cores * 1000,
        "memory_request_bytes": 2.0 * GIB, "memory_recommended_bytes": 1.5 * GIB,
    }  # fmt: skip


def test_adoptions_change_requests_and_pool_sums_on_their_days(tmp_path: Path) -> None:
    root = tmp_path / "history"
    workloads = [
        WorkloadTruth(f"app{i}", "general", replicas=const(REPLICAS), cpu_request=const(1.0))
        for i in range(3)
    ]
    write_history(root, OCT_1, 20, [PoolTruth("general")], workloads)
    ledger = {"workloads": [_ledger_entry("app2", 0.8), _ledger_entry("app0", 0.4),
                            _ledger_entry("app1", 0.6)]}  # fmt: skip

    applied = _apply(root, Month(2026, 10), date(2026, 10, 18), ledger)

    assert applied == 2  # app0 in full (rank 0), app1 half its CPU change (rank 1); app2 none
    rows = read_workloads(root, OCT_1, date(2026, 10, 20))
    day = pd.to_datetime(rows["day"], utc=True).dt.day
    for name, from_day, cpu, memory in (
        ("app0", 7, 400.0, 1.5 * GIB),
        ("app1", 14, 800.0, 2.0 * GIB),  # half of −400 millicores; the partial ones keep memory
        ("app2", 99, 1000.0, 2.0 * GIB),
    ):
        mine = rows[rows["owner_name"] == name]
        changed = mine[(day[mine.index] >= from_day) & (day[mine.index] <= 18)]
        before = mine[(day[mine.index] < from_day) | (day[mine.index] > 18)]
        assert (changed["cpu_request_millicores"] == cpu).all()
        assert (changed["memory_request_bytes"] == memory).all()
        assert (before["cpu_request_millicores"] == 1000.0).all()  # untouched before, and after
        assert (before["memory_request_bytes"] == 2.0 * GIB).all()  # the last day given
    pools = read_pools(root, OCT_1, date(2026, 10, 20)).set_index(
        pd.to_datetime(read_pools(root, OCT_1, date(2026, 10, 20))["day"], utc=True).dt.day
    )
    cpu_drop = {6: 0.0, 7: 600.0 * REPLICAS, 13: 600.0 * REPLICAS, 14: 800.0 * REPLICAS,
                18: 800.0 * REPLICAS, 19: 0.0}  # fmt: skip
    memory_drop = {6: 0.0, 7: 0.5 * GIB * REPLICAS, 14: 0.5 * GIB * REPLICAS, 19: 0.0}
    for d, drop in cpu_drop.items():
        for stat in ("mean", "peak"):
            assert pools.loc[d, f"cpu_requested_{stat}_millicores"] == 40_000.0 - drop
    for d, drop in memory_drop.items():
        for stat in ("mean", "peak"):
            assert pools.loc[d, f"memory_requested_{stat}_bytes"] == 100.0 * GIB - drop
