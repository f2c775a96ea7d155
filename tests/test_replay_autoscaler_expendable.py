"""Expendable pods in the replay under cluster-autoscaler: a pending pod whose priority is below
``expendable-pods-priority-cutoff`` (default -10) asks for no scale-up, as upstream's
``filterOutExpendable`` pod-list processor drops it before the scale-up
(``core/podlistprocessor/filter_out_expendable.go``, ``core/utils/expendable.go``:
``priority < cutoff``, strictly).

Two nodes ``a`` and ``b`` (3000m of their 4000m cpu taken each) and a 3000m ``burst`` pod
from minute 30 to 90 that fits neither: a scale-up for it unless it is expendable.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_fixtures import GI, N, P, build
from test_replay_autoscaler import _row, _whatif
from test_replay_preemption import with_priorities

from analyzer.core.snapshot import write_snapshot


def _burst_row(tmp_path: Path, priority: int, cutoff: int | None) -> dict[str, object]:
    pods = [
        P("p0", "a", cpu=3000, memory=GI),
        P("p1", "b", cpu=3000, memory=GI),
        P("burst", "a", cpu=3000, memory=GI, start=30, end=90),
    ]
    snap = with_priorities(build([N("a"), N("b")], pods, minutes=120), {"burst": priority})
    snap.pods["owner_name"] = "web-5d9f"
    write_snapshot(snap, tmp_path / "snap")
    flag = "" if cutoff is None else f"  expendable-pods-priority-cutoff: {cutoff}\n"
    config = f"autoscaler:\n{flag}  node-groups: {{pool: {{maxSize: 5}}}}\n"
    run = _whatif(tmp_path, tmp_path / "snap", config, "--autoscaler", "cluster-autoscaler")
    return _row(run)


@pytest.mark.parametrize(
    ("priority", "cutoff", "added"),
    [(-20, None, 0), (-11, None, 0), (-10, None, 1), (0, None, 1), (-20, -30, 1), (-5, 0, 0)],
)
def test_an_expendable_pod_asks_for_no_node(
    tmp_path: Path, priority: int, cutoff: int | None, added: int
) -> None:
    row = _burst_row(tmp_path, priority, cutoff)
    assert row["nodes_added"] == added and row["scale_ups"] == added
    notes = " ".join(str(n) for n in row["notes"])  # type: ignore[attr-defined]
    assert ("expendable-pods-priority-cutoff" in notes) == (added == 0)
