"""The snapshot contract: schema coercion, validation, atomic write and clear load errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from analyzer.core.errors import InputError
from analyzer.core.pod_intervals import pinned_pods
from analyzer.core.snapshot import SnapshotMeta, make_snapshot, read_snapshot, write_snapshot
from analyzer.core.snapshot_schema import SCHEMA_VERSION, resource_map

T0 = pd.Timestamp("2026-11-01T00:00:00Z")


def tiny_snapshot() -> object:
    meta = SnapshotMeta(
        source="test",
        start=T0.isoformat(),
        end=(T0 + pd.Timedelta("1h")).isoformat(),
        step_seconds=60,
        collected_at=T0.isoformat(),
        analyzer_version="test",
    )
    nodes = pd.DataFrame(
        {
            "node": ["n1", "n2"],
            "allocatable:cpu": [4000, 8000],
            "allocatable:memory": [2**33, 2**34],
            "allocatable:nvidia.com/gpu": [0, 2],
        }
    )
    pods = pd.DataFrame(
        {
            "uid": ["u1", "u2"],
            "namespace": ["default", "kube-system"],
            "name": ["web-1", "ds-x"],
            "node": ["n1", None],
            "owner_kind": ["ReplicaSet", "DaemonSet"],
            "created": [T0, T0],
            "requests:cpu": [100, 0],
            "requests:memory": [2**20, 0],
            "nonzero_requests:cpu": [100, 100],
            "nonzero_requests:memory": [2**20, 200 * 2**20],
        }
    )
    usage = pd.DataFrame({"node": ["n1"], "timestamp": [T0], "cpu": [1.5], "memory": [10.0]})
    pod_usage = pd.DataFrame({"uid": ["u1"], "timestamp": [T0], "cpu": [1.0], "memory": [5.0]})
    return make_snapshot(meta, nodes, pods, usage, pod_usage)


def test_round_trip_keeps_exact_integers_and_types(tmp_path: Path) -> None:
    snap = tiny_snapshot()
    write_snapshot(snap, tmp_path / "snap")  # type: ignore[arg-type]
    back = read_snapshot(tmp_path / "snap")
    assert back.nodes["allocatable:memory"].tolist() == [2**33, 2**34]
    assert back.nodes["allocatable:memory"].dtype == "int64"
    assert resource_map(back.nodes.iloc[1], "allocatable") == {
        "cpu": 8000,
        "memory": 2**34,
        "nvidia.com/gpu": 2,
    }
    assert back.pods["node"].isna().tolist() == [False, True]
    assert str(back.pods["created"].dtype) == "datetime64[ns, UTC]"
    assert back.pods["finished"].isna().all()  # absent column becomes NaT, not an error
    assert back.meta.schema_version == SCHEMA_VERSION


def test_pinned_pods_are_daemonset_and_static() -> None:
    pods = pd.DataFrame({"owner_kind": ["DaemonSet", "Node", "ReplicaSet", None]})
    assert pinned_pods(pods).tolist() == [True, True, False, False]


def test_not_a_snapshot_is_a_clear_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a snapshot"):
        read_snapshot(tmp_path)


def test_schema_version_mismatch_says_what_to_do(tmp_path: Path) -> None:
    write_snapshot(tiny_snapshot(), tmp_path / "s")  # type: ignore[arg-type]
    meta = json.loads((tmp_path / "s" / "meta.json").read_text())
    meta["schema_version"] = 999
    (tmp_path / "s" / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match=r"schema 999.*re-collect"):
        read_snapshot(tmp_path / "s")


def test_duplicate_uid_is_refused() -> None:
    meta = SnapshotMeta("t", T0.isoformat(), T0.isoformat(), 60, T0.isoformat(), "t")
    nodes = pd.DataFrame({"node": ["n"], "allocatable:cpu": [1], "allocatable:memory": [1]})
    pods = pd.DataFrame(
        {
            "uid": ["same", "same"],
            "requests:cpu": [0, 0],
            "requests:memory": [0, 0],
            "nonzero_requests:cpu": [0, 0],
            "nonzero_requests:memory": [0, 0],
        }
    )
    empty = pd.DataFrame({"node": [], "timestamp": [], "cpu": [], "memory": []})
    with pytest.raises(InputError, match="duplicate uid 'same'"):
        make_snapshot(meta, nodes, pods, empty, empty.rename(columns={"node": "uid"}))


def test_failed_write_leaves_old_snapshot_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "snap"
    write_snapshot(tiny_snapshot(), target)  # type: ignore[arg-type]
    before = sorted(p.name for p in target.iterdir())
    broken = tiny_snapshot()
    broken.pods = "not a frame"  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        write_snapshot(broken, target)  # type: ignore[arg-type]
    assert sorted(p.name for p in target.iterdir()) == before
    assert [p.name for p in tmp_path.iterdir()] == ["snap"]
