"""DefaultPreemption's random candidate offset (``GetOffsetAndNumCandidates``, 1.20+).

Upstream draws ``offset = rand.Int31n(len(potential nodes))`` and dry-runs the potential nodes
``(offset + i) % n`` until ``numCandidates = min(max(n · pct / 100, abs), n)`` candidates are
found (at least one without PDB violations). Upstream's TestDryRunPreemption cases pin the
offsets Go's generator seeded with 4 gives (written in the test's comments: 4, then 1, then 3);
they are transcribed here with those offsets as data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.replay.preemption import ReplayPreemption
from analyzer.scheduling import ClusterState, make_demand
from analyzer.scheduling.framework import UNSCHEDULABLE
from analyzer.scheduling.plugins.defaultpreemption import (
    BoundPod,
    PreemptionArgs,
    dry_run,
    offset_and_count,
    preempt,
    rotated,
)
from analyzer.scheduling.strategies import document_profile
from analyzer.scheduling.versions import parse_version

MID, HIGH, VERY_HIGH = 100, 1000, 10000  # upstream's midPriority < highPriority < veryHigh
GI = 2**30


def cluster(priorities: list[int], cpu: int = 5000) -> tuple[ClusterState, list[BoundPod]]:
    """One node per priority, each running one 3-core pod of that priority (upstream's largeRes
    on a veryLargeRes node: an incoming 3-core pod fits only once the pod is gone)."""
    names = [f"node{i + 1}" for i in range(len(priorities))]
    state = ClusterState.from_nodes(
        names, [{"cpu": cpu, "memory": 8 * GI, "pods": 110}] * len(names)
    )
    bound = []
    for i, priority in enumerate(priorities):
        demand = make_demand(state.resources, {"cpu": 3000}, {"cpu": 3000, "memory": 0},
                             name=f"p{i + 1}", namespace="default", priority=priority)  # fmt: skip
        state.bind(i, demand)
        bound.append(BoundPod(i, f"p{i + 1}", "default", priority, demand, {}, i))
    return state, bound


def incoming(state: ClusterState) -> Any:
    return make_demand(state.resources, {"cpu": 3000}, {"cpu": 3000, "memory": 0},
                       name="p", namespace="default", priority=HIGH)  # fmt: skip


def candidates(state: ClusterState, bound: list[BoundPod], offset: int, args: PreemptionArgs) -> list[str]:  # fmt: skip
    from analyzer.scheduling import load_strategy

    filters = load_strategy("kube-default").filters
    by_node: dict[int, list[BoundPod]] = {}
    for b in bound:
        by_node.setdefault(b.node, []).append(b)
    nodes = rotated(list(range(state.node_count)), offset)
    found, _ = dry_run(filters, state, incoming(state), HIGH, nodes, by_node, [], args)
    return sorted(state.node_names[c.node] for c in found)


UPSTREAM_ARGS = PreemptionArgs(min_candidate_nodes_percentage=40, min_candidate_nodes_absolute=1)


def test_upstream_dry_run_cases_with_their_offsets() -> None:
    # "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2":
    # offset 4 => node5 (yes), node1 (yes)
    state, bound = cluster([MID] * 5)
    assert offset_and_count(UPSTREAM_ARGS, 5, None)[1] == 2  # 5 × 40 / 100 = 2 ≥ 1
    assert candidates(state, bound, 4, UPSTREAM_ARGS) == ["node1", "node5"]
    # "some nodes are not possible candidates": p2 and p5 outrank the pod;
    # offset 4 => node5 (no), node1 (yes), node2 (no), node3 (yes)
    state, bound = cluster([MID, VERY_HIGH, MID, MID, VERY_HIGH])
    assert candidates(state, bound, 4, UPSTREAM_ARGS) == ["node1", "node3"]
    # "preemption offset across multiple scheduling cycles and wrap around": offsets 4, 1, 3
    state, bound = cluster([MID] * 5)
    assert candidates(state, bound, 4, UPSTREAM_ARGS) == ["node1", "node5"]
    assert candidates(state, bound, 1, UPSTREAM_ARGS) == ["node2", "node3"]
    assert candidates(state, bound, 3, UPSTREAM_ARGS) == ["node4", "node5"]


def test_offsets_vary_with_the_seed_and_candidates_are_a_wrapped_run() -> None:
    # 12 potential nodes, 3 candidates wanted: each seed's candidates are 3 consecutive nodes
    # (wrapping past node12 to node1) starting where its offset points; seeds differ
    state, bound = cluster([MID] * 12)
    args = PreemptionArgs(min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=3)
    filters = document_profile(_config(3), "t").filters
    statuses = dict.fromkeys(range(12), UNSCHEDULABLE)
    seen = set()
    for seed in range(8):
        result = preempt(filters, state, incoming(state), HIGH, "PreemptLowerPriority",
                         statuses, bound, (), args, 0.0, np.random.default_rng(seed))  # fmt: skip
        nodes = sorted(c.node for c in result.candidates)
        assert len(nodes) == 3
        start = next(n for n in nodes if (n - 1) % 12 not in nodes)  # the run's first node
        assert {(start + i) % 12 for i in range(3)} == set(nodes)
        assert start == int(np.random.default_rng(seed).integers(12))  # Int31n(12) from the seed
        again = preempt(filters, state, incoming(state), HIGH, "PreemptLowerPriority",
                        statuses, bound, (), args, 0.0, np.random.default_rng(seed))  # fmt: skip
        assert [c.node for c in again.candidates] == [c.node for c in result.candidates]
        seen.add(tuple(nodes))
    assert len(seen) > 3


def test_all_candidates_wanted_the_offset_does_not_matter() -> None:
    # numCandidates ≥ n (the default absolute 100 over 6 nodes): every node is dry-run whatever
    # the offset, so the same node and victims win (node3's pod has the lowest priority)
    state, bound = cluster([MID + 5, MID + 4, MID, MID + 3, MID + 2, MID + 1])
    filters = document_profile(_config(100), "t").filters
    statuses = dict.fromkeys(range(6), UNSCHEDULABLE)
    for seed in range(6):
        result = preempt(filters, state, incoming(state), HIGH, "PreemptLowerPriority",
                         statuses, bound, (), PreemptionArgs(), 0.0, np.random.default_rng(seed))  # fmt: skip
        assert len(result.candidates) == 6
        assert result.nominated == 2 and [v.name for v in result.victims] == ["p3"]
    # before 1.20 there was no sampling: every node, from the first, whatever the args
    assert offset_and_count(UPSTREAM_ARGS, 5, np.random.default_rng(1), sampling=False) == (0, 5)
    assert (
        not parse_version("1.19").preemption_sampling and parse_version("1.20").preemption_sampling
    )


def _config(absolute: int) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"pluginConfig": [{"name": "DefaultPreemption", "args": {
            "minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": absolute}}]}],
    }  # fmt: skip


def test_replay_preemption_draws_the_core_offset() -> None:
    # the replay's dry run (numpy pre-check, one-node copies) with a seeded generator nominates
    # what the core's preempt nominates with the same generator, over 12 nodes / 3 candidates
    profile = document_profile(_config(3), "t")
    for seed in range(5):
        state, bound = cluster([MID + (i * 7) % 5 for i in range(12)])
        demands = [b.demand for b in bound] + [incoming(state)]
        priorities = [b.priority for b in bound] + [HIGH]
        on_node = [{i} for i in range(12)]
        active = np.ones(12, dtype=bool)
        pre = ReplayPreemption.for_profile(profile, state, active, demands, priorities, on_node,
                                           rng=np.random.default_rng(seed))  # fmt: skip
        assert pre is not None
        for i in range(12):
            pre.bound(i, i, i)
        got = pre.attempt(12, 0)
        statuses = dict.fromkeys(range(12), UNSCHEDULABLE)
        want = preempt(profile.filters, state, demands[-1], HIGH, "PreemptLowerPriority",
                       statuses, bound, (), profile.post_filters[0].args, 0.0,
                       np.random.default_rng(seed))  # fmt: skip
        assert got is not None and got[0] == want.nominated
        assert [f"p{v + 1}" for v in got[1]] == [v.name for v in want.victims]


def _scenario() -> dict[str, Any]:
    nodes = [{"metadata": {"name": f"node{i}"},
              "status": {"allocatable": {"cpu": "5", "memory": "8Gi", "pods": "110"}}}
             for i in range(1, 9)]  # fmt: skip
    pods = [{"metadata": {"name": f"p{i}", "namespace": "default"},
             "spec": {"nodeName": f"node{i}", "priority": MID,
                      "containers": [{"name": "c", "resources": {"requests": {"cpu": "3"}}}]}}
            for i in range(1, 9)]  # fmt: skip
    pod = {"metadata": {"name": "p"}, "spec": {"priority": HIGH, "containers": [
        {"name": "c", "resources": {"requests": {"cpu": "3"}}}]}}  # fmt: skip
    return {"scheduler": _config(2), "nodes": nodes, "pods": pods, "pod": pod}


def _score(tmp_path: Path, *extra: str) -> list[str]:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(_scenario()))
    result = CliRunner().invoke(main, ["score", str(path), *extra])
    assert result.exit_code == 0, result.output
    return sorted(c["node"] for c in json.loads(result.stdout)["preemption"]["candidates"])


def test_score_is_deterministic_unless_a_seed_is_given(tmp_path: Path) -> None:
    # without --seed the candidates are gathered from the first potential node (offset 0);
    # with --seed from the offset that seed draws over the 8 potential nodes
    assert _score(tmp_path) == ["node1", "node2"] == _score(tmp_path)
    offset = int(np.random.default_rng(5).integers(8))
    expected = sorted(f"node{(offset + i) % 8 + 1}" for i in range(2))
    assert _score(tmp_path, "--seed", "5") == expected
