"""Issue 24's acceptance for node state in time, on a real Prometheus.

A cluster day written by the generator's OpenMetrics writer with ``node_events`` (two cordoned
nodes, cluster-autoscaler taints lasting minutes on a third of the open nodes, one node joining
not ready) and ``kubelet_version="v1.33.4"``, backfilled with promtool: ``analyzer collect``
reads the intervals, ``analyzer whatif --strategy kube-default`` says it replayed 1.33 and notes
the cordons, and its kube-default replay leaves the cordoned nodes without a scheduled pod while
they are cordoned and uses every other node. With the taints applied all day long (the reading
before intervals) the autoscaler-tainted nodes would stay empty: that is checked too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.pod_intervals import pinned_pods
from analyzer.core.snapshot import Snapshot, read_snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import NEVER, prepare
from analyzer.scheduling import load_strategy
from analyzer.sources import SyntheticSpec, generate, write_openmetrics
from analyzer.sources.node_events import CANDIDATE, TO_BE_DELETED

SPEC = SyntheticSpec(
    seed=5, nodes=9, days=1, step=300, pods_per_node=3, node_events=True, kubelet_version="v1.33.4"
)


@pytest.fixture(scope="module")
def collected(
    prometheus_from_openmetrics: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Snapshot, Snapshot, Path]:
    """(ground truth, the snapshot ``analyzer collect`` wrote, its folder)."""
    cluster = generate(SPEC)
    folder = tmp_path_factory.mktemp("node-state")
    # node labels exported (kube_node_labels, opt-in in kube-state-metrics) so the GPU pods'
    # nodeSelector finds their pool, as on the real cluster
    write_openmetrics(cluster, folder / "cluster.om", node_labels=True)
    server = prometheus_from_openmetrics(folder / "cluster.om")
    truth = cluster.snapshot
    out = folder / "snap"
    run = CliRunner().invoke(
        main,
        [
            "collect",
            "--prometheus",
            server.url,
            "--start",
            truth.meta.start,
            "--end",
            truth.meta.end,
            "--step",
            "5m",
            "--out",
            str(out),
        ],
    )
    assert run.exit_code in (0, 3), run.output  # 3: partial (a few queries the writer lacks)
    return truth, read_snapshot(out), out


def _rows(snapshot: Snapshot, kind: str) -> pd.DataFrame:
    assert snapshot.node_state is not None
    return snapshot.node_state[snapshot.node_state["kind"] == kind]


@pytest.mark.prometheus
def test_collect_reads_the_intervals_the_cluster_had(
    collected: tuple[Snapshot, Snapshot, Path],
) -> None:
    truth, snapshot, folder = collected
    assert (folder / "node_state.parquet").is_file()
    assert snapshot.meta.extra["node_state_version"] == 1
    for kind in ("cordon", "not-ready"):
        want = _rows(truth, kind)[["node", "start", "end"]].reset_index(drop=True)
        got = _rows(snapshot, kind)[["node", "start", "end"]].reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want, check_dtype=False)
    taints = _rows(snapshot, "taint")
    scaled = set(taints.loc[taints["key"] == TO_BE_DELETED, "node"])
    open_nodes = [
        n for n, t in zip(truth.nodes["node"], truth.nodes["taints"], strict=False) if t == "[]"
    ]
    # a third of the open nodes other than the two cordoned ones, every third
    assert len(scaled) == len(open_nodes[:-2][::3]) >= 2
    assert set(taints.loc[taints["key"] == CANDIDATE, "node"]) == scaled
    minutes = (taints["end"] - taints["start"]).dt.total_seconds() / 60
    assert minutes.max() <= 10 and minutes.min() >= 5  # minutes, not the day
    # the autoscalers' taints are no property of the node: not in nodes.taints
    assert not any(TO_BE_DELETED in t or CANDIDATE in t for t in snapshot.nodes["taints"])


@pytest.mark.prometheus
def test_whatif_replays_133_and_keeps_cordoned_nodes_empty(
    collected: tuple[Snapshot, Snapshot, Path],
) -> None:
    _, snapshot, folder = collected
    run = CliRunner().invoke(
        main,
        [
            "whatif",
            str(folder),
            "--strategy",
            "kube-default",
            "--workers",
            "1",
            "--format",
            "json",
        ],
    )
    assert run.exit_code == 0, run.output
    page = json.loads(run.output[run.output.index("{") :])
    assert page["kubernetes_version"]["version"] == "1.33"
    assert page["kubernetes_version"]["source"] == "data"
    note = next(n for n in page["notes"] if n.startswith("Node state in time"))
    assert "2 nodes cordoned" in note and "tainted by an autoscaler" in note

    result = replay(prepare(snapshot), Strategy("kube-default", load_strategy("kube-default")))
    names = list(snapshot.nodes["node"])
    movable = ~pinned_pods(snapshot.pods).to_numpy()
    seg = result.segments
    cordons = _rows(snapshot, "cordon")
    assert len(cordons) == 2
    for row in cordons.itertuples():
        node = names.index(row.node)
        lo = row.start.value
        hi = snapshot.end.value if pd.isna(row.end) else row.end.value
        on = (seg["node"] == node) & movable[seg["pod"]]
        ends = np.where(seg["end"] == NEVER, snapshot.end.value, seg["end"])
        overlapping = on & (seg["start"] < hi) & (ends > lo)
        assert not overlapping.any(), f"{row.node} held a scheduled pod while cordoned"
    used = {names[int(n)] for n, p in zip(seg["node"], seg["pod"], strict=False) if movable[int(p)]}
    # every node the ground truth used for a scheduled pod is used by the replay too
    truth_used = {
        str(n)
        for n, m in zip(snapshot.pods["node"], movable, strict=False)
        if m and isinstance(n, str)
    }
    assert truth_used <= used
    assert used >= set(_rows(snapshot, "taint")["node"])  # the autoscaler-tainted nodes too


@pytest.mark.prometheus
def test_taints_applied_all_day_would_have_emptied_the_tainted_nodes(
    collected: tuple[Snapshot, Snapshot, Path],
) -> None:
    # the reading before intervals (every taint seen, for the whole window) on the same data:
    # the nodes the autoscaler tainted for minutes get no scheduled pod at all
    _, snapshot, _ = collected
    taints = _rows(snapshot, "taint")
    hard = taints[taints["key"] == TO_BE_DELETED]  # NoSchedule, minutes long
    static = snapshot.nodes.copy()
    static["taints"] = [
        json.dumps(
            [
                {"key": r.key, "value": r.value, "effect": r.effect}
                for r in hard.itertuples()
                if r.node == n
            ]
        )
        for n in static["node"]
    ]
    old = Snapshot(snapshot.meta, static, snapshot.pods, snapshot.node_usage, snapshot.pod_usage)
    result = replay(prepare(old), Strategy("kube-default", load_strategy("kube-default")))
    names = list(old.nodes["node"])
    movable = ~pinned_pods(old.pods).to_numpy()
    used = {
        names[int(n)]
        for n, p in zip(result.segments["node"], result.segments["pod"], strict=False)
        if movable[int(p)]
    }
    assert not (used & set(hard["node"]))
