"""percentageOfNodesToScore: upstream's numFeasibleNodesToFind table, the node tree's order, the
rotating start index, and the configuration fields (global and per profile) with their checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.replay.node_tree import NodeSampler, NodeTree
from analyzer.scheduling.config import parse_kube_scheduler_configuration
from analyzer.scheduling.node_sampling import (
    found_nodes,
    num_feasible_nodes_to_find,
    round_robin,
    zone_key,
)
from analyzer.scheduling.strategies import document_profile

VECTORS = yaml.safe_load(
    (Path(__file__).parent / "data" / "vectors" / "num-feasible-nodes-vectors.yaml").read_text(
        encoding="utf-8"
    )
)
CASES = VECTORS["num_feasible_nodes_to_find"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_upstream_num_feasible_nodes_to_find(case: dict[str, Any]) -> None:
    assert (
        num_feasible_nodes_to_find(case["nodes"], case["profile"], case["global"]) == (case["want"])
    )


def test_adaptive_formula_at_the_documented_sizes() -> None:
    # 50 - n/125 %, at least 5 %, at least 100 nodes (research/scheduler-fidelity.md's table)
    got = {n: num_feasible_nodes_to_find(n) for n in (99, 100, 200, 2000, 5000, 5625, 10000)}
    assert got == {99: 99, 100: 100, 200: 100, 2000: 680, 5000: 500, 5625: 281, 10000: 500}


def test_upstream_fair_evaluation_rotates_the_start_index() -> None:
    """TestFairEvaluationForNodes: 500 feasible nodes, 30 %: 150 found per cycle and the start
    index at (i+1)*150 % 500 after cycle i, over more than two rounds."""
    fair = VECTORS["fair_evaluation"]
    n = fair["nodes"]
    names = [str(i) for i in range(n)]
    sampler = NodeSampler(fair["global"], [{} for _ in names], names)
    sampler.begin(np.ones(n, dtype=bool))
    assert sampler.wanted == fair["nodes_to_find"]
    for i in range(2 * (n // sampler.wanted + 1)):
        found = sampler.rows(np.ones(n, dtype=bool))
        assert len(found) == fair["nodes_to_find"]
        assert sampler.start == (i + 1) * fair["nodes_to_find"] % n


def test_found_nodes_wraps_and_counts_the_infeasible_it_examined() -> None:
    feasible = np.array([1, 0, 0, 1, 1, 0, 1, 0], dtype=bool)  # feasible at 0, 3, 4, 6
    # from 4, two wanted: 4 and 6; processed 4, 5, 6 = 3
    positions, processed = found_nodes(feasible, 4, 2)
    assert positions.tolist() == [4, 6] and processed == 3
    # from 5, three wanted: 6, then wrap to 0, 3; processed 5, 6, 7, 0, 1, 2, 3 = 7
    positions, processed = found_nodes(feasible, 5, 3)
    assert positions.tolist() == [6, 0, 3] and processed == 7
    # fewer feasible than wanted: all of them, every node processed (the index stays put)
    positions, processed = found_nodes(feasible, 2, 9)
    assert positions.tolist() == [3, 4, 6, 0] and processed == 8


def test_node_tree_is_zones_round_robin_in_insertion_order() -> None:
    a, b = {"topology.kubernetes.io/zone": "a"}, {"topology.kubernetes.io/zone": "b"}
    labels = [a, a, a, b, {}, b]
    tree = NodeTree(labels)
    for node in (0, 3, 1, 2, 4, 5):  # zone a first, then b, then the "" zone
        tree.add(node)
    assert tree.order().tolist() == [0, 3, 4, 1, 5, 2]
    tree.remove(3)  # b keeps its place, now [5]
    assert tree.order().tolist() == [0, 5, 4, 1, 2]
    tree.remove(5)  # b is empty: gone; a node of b added later comes after the "" zone
    tree.add(3)
    assert tree.order().tolist() == [0, 4, 3, 1, 2]


def test_zone_key_is_region_and_zone_with_the_beta_labels_as_fallback() -> None:
    assert zone_key({}) == ""
    assert zone_key({"topology.kubernetes.io/zone": "z"}) == ":\x00:z"
    beta = {
        "failure-domain.beta.kubernetes.io/region": "r",
        "failure-domain.beta.kubernetes.io/zone": "z",
    }
    assert zone_key(beta) == "r:\x00:z"
    both = {**beta, "topology.kubernetes.io/zone": "y"}
    assert zone_key(both) == "r:\x00:y"  # the GA label wins


def test_sampler_initial_list_is_by_name_and_joins_are_appended() -> None:
    names = ["n-c", "n-a", "n-b", "n-0"]
    sampler = NodeSampler(0, [{} for _ in names], names)
    active = np.array([True, True, True, False])
    sampler.begin(active)
    assert sampler.tree.order().tolist() == [1, 2, 0]  # n-a, n-b, n-c
    sampler.membership(3, True)  # n-0 joins later: last, although its name sorts first
    assert sampler.tree.order().tolist() == [1, 2, 0, 3]
    assert not sampler.active  # 4 nodes: all of them are wanted


def _doc(global_value: Any = None, profile_value: Any = None) -> dict[str, Any]:
    profile: dict[str, Any] = {"schedulerName": "default-scheduler"}
    if profile_value is not None:
        profile["percentageOfNodesToScore"] = profile_value
    doc: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile, {"schedulerName": "other"}],
    }
    if global_value is not None:
        doc["percentageOfNodesToScore"] = global_value
    return doc


def test_configuration_profile_value_wins_over_the_global_one() -> None:
    config = parse_kube_scheduler_configuration(_doc(30, 40))
    assert [p.percentage_of_nodes_to_score for p in config.profiles] == [40, 30]
    unset = parse_kube_scheduler_configuration(_doc())
    assert [p.percentage_of_nodes_to_score for p in unset.profiles] == [0, 0]  # adaptive
    assert document_profile(_doc(100), "all").percentage_of_nodes_to_score == 100


@pytest.mark.parametrize(
    ("global_value", "profile_value", "field", "bad"),
    [
        (101, None, "scheduler.percentageOfNodesToScore", "101"),
        (None, -1, "scheduler.profiles[0].percentageOfNodesToScore", "-1"),
        ("50%", None, "scheduler.percentageOfNodesToScore", "50%"),
    ],
)
def test_out_of_range_percentage_is_one_line_naming_the_field(
    tmp_path: Path, global_value: Any, profile_value: Any, field: str, bad: str
) -> None:
    scenario = {
        "scheduler": _doc(global_value, profile_value),
        "nodes": [{"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1"}}}],
        "pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}},
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    result = CliRunner().invoke(main, ["score", str(path)])
    assert result.exit_code == documented_exit("sampling-percentage-out-of-range")
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and bad in lines[0], result.stderr
    assert "0..100" in lines[0] or "[0-100]" in lines[0]
    assert "Traceback" not in result.output


def test_score_scenario_scores_only_the_nodes_a_scheduler_finds(tmp_path: Path) -> None:
    """150 nodes in 3 zones (names out of order in the file), every fifth too small for the pod:
    a fresh scheduler walks the tree (by name, zones round robin) from index 0, stops at the
    100th feasible node, and scores only those; the rest are listed unscored."""
    nodes = []
    for i in range(150):
        cpu = "1" if i % 5 == 0 else "8"
        nodes.append(
            {
                "metadata": {"name": f"node-{(i * 7) % 150:03d}",
                             "labels": {"topology.kubernetes.io/zone": f"z{i % 3}"}},
                "status": {"allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"}},
            }
        )  # fmt: skip
    scenario = {
        "nodes": nodes,
        "pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": "2", "memory": "1Gi"}}}]}},
    }  # fmt: skip
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    result = CliRunner().invoke(main, ["score", str(path)])
    assert result.exit_code == 0, result.output
    payload = yaml.safe_load(result.stdout)
    # the tree, written out here: names sorted, zones in order of first appearance, round robin
    by_name = sorted(nodes, key=lambda n: n["metadata"]["name"])
    zones: dict[str, list[dict[str, Any]]] = {}
    for node in by_name:
        zones.setdefault(node["metadata"]["labels"]["topology.kubernetes.io/zone"], []).append(node)
    tree = [z[i]["metadata"]["name"] for i in range(50) for z in zones.values()]
    fits = {n["metadata"]["name"] for n in nodes if n["status"]["allocatable"]["cpu"] == "8"}
    found = [name for name in tree if name in fits][:100]
    examined = tree.index(found[-1]) + 1
    assert payload["sampling"] == {"percentageOfNodesToScore": 0, "nodes": 150,
                                   "feasibleNodesToFind": 100, "feasible": 120,
                                   "examined": examined, "scored": 100}  # fmt: skip
    listed = {n["name"]: n for n in payload["nodes"]}
    assert {name for name, n in listed.items() if n["scored"]} == set(found)
    unscored = fits - set(found)
    assert len(unscored) == 20
    assert all(listed[n]["feasible"] and listed[n]["total"] is None for n in unscored)
    assert payload["chosen"] in found
    explained = CliRunner().invoke(main, ["score", str(path), "--explain"])
    assert f"{examined} examined from index 0, 100 scored" in explained.stdout


def _plain_round_robin(zones: list[list[int]]) -> list[int]:
    out = []
    for depth in range(max((len(z) for z in zones), default=0)):
        out.extend(z[depth] for z in zones if depth < len(z))
    return out


def test_node_tree_order_is_the_plain_round_robin_after_random_joins_and_leaves() -> None:
    # the order is one sort by (place in zone, zone); against the node-by-node walk of the
    # zones after every join or leave (zones of very different sizes, zones emptied and re-made)
    rng = np.random.default_rng(5)
    zones = ["a", "b", "c", "d", ""]
    labels = [
        {"topology.kubernetes.io/zone": z} if z else {}
        for z in rng.choice(zones, size=400, p=[0.5, 0.3, 0.1, 0.05, 0.05]).tolist()
    ]
    tree = NodeTree(labels)
    for _ in range(1_500):
        node = int(rng.integers(400))
        if node in tree.members and rng.random() < 0.5:
            tree.remove(node)
        else:
            tree.add(node)
        assert tree.order().tolist() == _plain_round_robin(list(tree.zones.values()))
    assert round_robin([]) == [] and round_robin([[], [3]]) == [3]
