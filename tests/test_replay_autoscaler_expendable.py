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

import pandas as pd
import pytest
from reliability_doc import documented_exit
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


def _never_row(tmp_path: Path, version: str, release: str | None) -> dict[str, object]:
    """The burst pod at priority -20 through a PriorityClass whose preemptionPolicy is Never,
    replayed for Kubernetes ``version`` with CA ``release`` (None: the minor's newest)."""
    pods = [
        P("p0", "a", cpu=3000, memory=GI),
        P("p1", "b", cpu=3000, memory=GI),
        P("burst", "a", cpu=3000, memory=GI, start=30, end=90),
    ]
    snap = with_priorities(build([N("a"), N("b")], pods, minutes=120), {"burst": -20})
    classes = ["low" if str(u) == "burst" else "" for u in snap.pods["uid"]]
    snap.pods["priority_class"] = pd.Series(classes, dtype="string")
    snap.objects["PriorityClass"] = [
        {"name": "low", "value": -20, "globalDefault": False, "preemptionPolicy": "Never"}
    ]
    snap.pods["owner_name"] = "web-5d9f"
    write_snapshot(snap, tmp_path / "snap")
    pin = "" if release is None else f"  cluster-autoscaler-version: {release}\n"
    config = f"autoscaler:\n{pin}  node-groups: {{pool: {{maxSize: 5}}}}\n"
    run = _whatif(tmp_path, tmp_path / "snap", config, "--autoscaler", "cluster-autoscaler",
                  "--kubernetes-version", version)  # fmt: skip
    return _row(run)


@pytest.mark.parametrize(
    ("version", "release", "added"),
    [("1.31", "1.31.2", 1), ("1.33", "1.33.0", 1), ("1.31", "1.31.3", 0), ("1.31", None, 0),
     ("1.34", None, 0), ("1.29", None, 0)],
)  # fmt: skip
def test_a_pod_that_never_preempts_was_not_expendable_in_some_releases(
    tmp_path: Path, version: str, release: str | None, added: int
) -> None:
    """``IsExpendablePod`` in CA 1.30.0 to 1.33.0 also asked for a preemptionPolicy other than
    Never (6632bab4c8); the revert reached 1.30.5, 1.31.3, 1.32.2, 1.33.1 and 1.34. Such a pod
    (here through its PriorityClass) asks for a node where the condition holds."""
    row = _never_row(tmp_path, version, release)
    assert row["nodes_added"] == added, row


def test_a_release_of_another_minor_is_one_line(tmp_path: Path) -> None:
    pods = [P("p0", "a", cpu=1000, memory=GI)]
    snap = build([N("a")], pods, minutes=60)
    snap.pods["owner_name"] = "web-5d9f"
    write_snapshot(snap, tmp_path / "snap")
    config = "autoscaler:\n  cluster-autoscaler-version: 1.32.5\n"
    run = _whatif(tmp_path, tmp_path / "snap", config, "--autoscaler", "cluster-autoscaler",
                  "--kubernetes-version", "1.33")  # fmt: skip
    assert run.exit_code == documented_exit("autoscale-ca-release"), run.output
    lines = run.output.strip().splitlines()
    assert len(lines) == 1 and "autoscaler.cluster-autoscaler-version: 1.32.5" in lines[0]
