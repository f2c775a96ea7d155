"""``analyzer whatif --growth --autoscaler karpenter`` (and ``auto``) on test_growth's hand-built
cluster: 4 nodes of 4 cores / 16 GiB in one pool, 8 one-core pods of Deployment web, +2 replicas
a month, so month k runs 8 + 2k pods and the data's nodes hold 16 of them.

Karpenter starts from the data's 4 nodes and only launches nodes for pods left pending, so a pod
waits first in the first month in which 4 nodes do not hold every pod — month 5, as without an
autoscaler (a launched node is Ready after ``provisioning-delay``: the pods wait for it). The
config sets ``consolidateAfter: Never`` so the answer is consolidation-free and computed by hand:
the fewest 4-core nodes for the 2k − 8 pods beyond 16 are ceil((2k − 8) / 4): 1 in months 5 and
6, 2 in months 7 and 8, and that is how many more nodes are present at once than the data's 4.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from reliability_doc import documented_exit
from replay_fixtures import N, P, build

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot

CONFIG = (
    "autoscaler:\n  karpenter:\n    disruption: {consolidateAfter: Never}\n"
    "growth:\n  - {namespace: default, replicas: '+2'}\n"
)
LABELS = '{"karpenter.sh/nodepool": "default"}'


def _snapshot(folder: Path, labels: str) -> Path:
    snap = build([N(f"n{i}") for i in range(4)], [P(f"web-{i}", f"n{i % 4}") for i in range(8)])
    snap.pods["owner_name"] = "web-5d9f"
    snap.pods["workload_kind"], snap.pods["workload_name"] = "Deployment", "web"
    snap.nodes["labels"] = labels
    return write_snapshot(snap, folder / "snap")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("growth-karpenter")
    (tmp / "growth.yaml").write_text(CONFIG)
    _snapshot(tmp, LABELS)
    return tmp


def _run(folder: Path, *args: str, config: str = "growth.yaml") -> tuple[int, str]:
    run = CliRunner().invoke(
        main,
        ["--config", str(folder / config), "whatif", str(folder / "snap"), "--growth",
         "--growth-days", "1", "--months", "8", *args],
    )  # fmt: skip
    return run.exit_code, run.output


def test_karpenter_waits_no_earlier_and_adds_the_nodes(folder: Path) -> None:
    code, out = _run(folder, "--format", "json", "--autoscaler", "none")
    assert code == 0, out
    plain = json.loads(out)
    code, out = _run(folder, "--format", "json", "--autoscaler", "karpenter")
    assert code == 0, out
    data = json.loads(out)
    assert data["autoscaler"] == "karpenter" and "autoscaler_choice" not in data
    assert "kube-default and karpenter" in data["sentence"]
    assert data["first_wait_month"] >= plain["first_wait_month"]
    assert data["first_wait_month"] == 5
    assert [m["pools"][0]["nodes_to_add"] for m in data["months"]] == [0] * 5 + [1, 1, 2, 2]
    # the pods beyond 16 wait for the launched node: 2k − 8 of them from month 5
    assert [m["waiting_pods"] for m in data["months"]] == [0] * 5 + [2, 4, 6, 8]


def test_auto_chooses_karpenter_from_the_node_labels(folder: Path) -> None:
    out_dir = folder / "out"
    code, out = _run(folder, "--autoscaler", "auto", "--out", str(out_dir))
    assert code == 0, out
    why = (
        "--autoscaler auto: karpenter (4 nodes labelled karpenter.sh/nodepool, e.g. n0; 0 nodes "
        "joined and 0 left during the data), so replayed with Karpenter driving the nodes"
    )
    assert out.splitlines()[0] == why  # the terminal says which and why before the table
    data = json.loads((out_dir / "growth.json").read_text())
    assert data["autoscaler"] == "karpenter"
    assert data["autoscaler_choice"] == {"asked": "auto", "chosen": "karpenter", "why": why}
    assert [m["pools"][0]["nodes_to_add"] for m in data["months"]] == [0] * 5 + [1, 1, 2, 2]
    html = (out_dir / "growth.html").read_text()
    assert f'<p class="muted" data-autoscaler-choice>{why}</p>' in html


def test_auto_without_marks_keeps_the_nodes(tmp_path: Path) -> None:
    """Unlabelled nodes that stayed all hour: auto chooses none, the nodes are searched."""
    (tmp_path / "growth.yaml").write_text(CONFIG)
    _snapshot(tmp_path, "{}")
    code, out = _run(tmp_path, "--format", "json", "--autoscaler", "auto", "--months", "5")
    assert code == 0, out
    data = json.loads(out)
    assert data["autoscaler"] == "none" and data["autoscaler_choice"]["chosen"] == "none"
    assert data["months"][5]["pools"][0]["nodes_to_add"] == 1


def test_bad_karpenter_key_is_one_line_before_any_replay(folder: Path) -> None:
    (folder / "bad.yaml").write_text(
        "autoscaler:\n  karpenter:\n    disruption: {consolidationPolicy: Sometimes}\n"
        "growth:\n  - {namespace: default, replicas: '+2'}\n"
    )
    code, out = _run(folder, "--autoscaler", "auto", "--out", str(folder / "bad"),
                     config="bad.yaml")  # fmt: skip
    assert code == documented_exit("karpenter-policy-bad"), out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "consolidationPolicy" in lines[0] and "Traceback" not in out
    assert not (folder / "bad").exists()


# Karpenter's default disruption (consolidateAfter 0s, WhenEmptyOrUnderutilized)
DEFAULT = "growth:\n  - {namespace: default, replicas: '+2'}\n"


def test_default_consolidation_gives_the_same_answer(folder: Path) -> None:
    """With consolidation on, the answer is the ``consolidateAfter: Never`` one (the first test's
    figures). Consolidation's simulation schedules the pending pods too (upstream
    ``SimulateScheduling``): the data's 4 nodes are full (16 one-core pods) and the launched
    nodes hold the 2k − 8 pods beyond them, 4 a node but the last (2 or 4), so no node's pods
    fit on the others (the pending ones take the room first): they would need a new node of the
    pool's one shape, which is not cheaper, and nothing is consolidated. Before, the simulation ignored the
    pending pods and drained n0 onto the node launched for them: month 5 read 0 nodes to add."""
    (folder / "default.yaml").write_text(DEFAULT)
    code, out = _run(folder, "--format", "json", "--autoscaler", "karpenter",
                     config="default.yaml")  # fmt: skip
    assert code == 0, out
    data = json.loads(out)
    assert data["first_wait_month"] == 5
    assert [m["pools"][0]["nodes_to_add"] for m in data["months"]] == [0] * 5 + [1, 1, 2, 2]


def test_no_node_is_swapped_while_pods_wait_for_it(tmp_path: Path) -> None:
    """Month 5's hour replayed on its own: 18 one-core pods on the 4 nodes of 4 cores, so 2 wait
    and Karpenter launches one node for them (the batch closes 1 s after they go pending, Ready
    2 min later). No consolidation happens in the hour: no node removed, no pod evicted, one node
    added, and no pod pending at the end (before the fix: 4 nodes swapped, 16 pods evicted, the 2
    pods pending to the end)."""
    snap = build([N(f"n{i}") for i in range(4)], [P(f"web-{i}", f"n{i % 4}") for i in range(18)])
    snap.pods["owner_name"] = "web-5d9f"
    snap.nodes["labels"] = LABELS
    write_snapshot(snap, tmp_path / "snap")
    (tmp_path / "k.yaml").write_text("autoscaler: {}\n")
    run = CliRunner().invoke(
        main,
        ["--config", str(tmp_path / "k.yaml"), "whatif", str(tmp_path / "snap"), "--strategy",
         "kube-default", "--workers", "1", "--format", "json", "--autoscaler", "karpenter"],
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    (row,) = json.loads(run.output)["autoscaled"]
    assert row["nodes_removed"] == 0 and row["pods_evicted"] == 0
    assert row["nodes_added"] == 1 and row["scale_ups"] == 1 and row["peak_nodes"] == 5
    assert row["pending_pods_at_end"] == 0
