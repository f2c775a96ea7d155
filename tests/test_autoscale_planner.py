"""The scale-down pass around the simulation, through ``analyzer autoscale``: the budgets
(upstream's TestCropNodesToBudgets, tests/data/autoscaler/budgets.yaml), node-group minimums
(``verifyMinSize``), PDB accounting across nodes (``RemainingPdbTracker.RemovePods``), the
empty-first order, ``--format table`` and ``--explain``, and bad scenarios (docs/reliability.md
section "autoscale")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from autoscale_cases import by_name, data, node, pod, run
from cli_contract import run_cli
from click.testing import CliRunner
from reliability_doc import documented_exit

from analyzer.cli import main

BUDGETS = data("budgets.yaml")
NOW = "2026-11-01T12:00:00Z"
SMALL = {"cpu": 1000, "memory": 2000000}
RS_POD = {
    "cpu": 100,
    "memory": 1000,
    "owner": ["ReplicaSet", "rs", "apps/v1"],
    "labels": {"app": "web"},
}
SINK = {
    "cpu": 64000,
    "memory": 2000000000,
    "annotations": {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"},
}


def _scenario(
    empty: dict[str, int], drain: dict[str, int], options: dict[str, Any]
) -> dict[str, Any]:
    nodes, pods, groups = [node("sink", SINK)], [], []
    for kind, counts in (("empty", empty), ("drain", drain)):
        for group, count in counts.items():
            names = [f"{group}-{kind}-{i}" for i in range(count)]
            groups.append({"name": f"{group}-{kind}", "group": group, "nodes": names})
            nodes += [node(n, SMALL) for n in names]
            if kind == "drain":
                pods += [pod(f"p-{n}", RS_POD, NOW, n) for n in names]
    merged: dict[str, list[str]] = {}
    for g in groups:
        merged.setdefault(g["group"], []).extend(g["nodes"])
    return {
        "autoscaler": "cluster-autoscaler",
        "now": NOW,
        "options": options,
        "nodeGroups": [
            {"name": k, "minSize": 0, "maxSize": 100, "nodes": v} for k, v in merged.items()
        ],
        "nodes": nodes,
        "pods": pods,
    }


@pytest.mark.parametrize("case", BUDGETS["cases"], ids=lambda c: c["name"])
def test_budgets_match_upstream(tmp_path: Path, case: dict[str, Any]) -> None:
    """Empty nodes up to the parallelism, drained ones up to what is left of it and of the drain
    parallelism, the first node group first; deletions in progress take from both budgets."""
    scenario = _scenario(case.get("empty", {}), case.get("drain", {}), BUDGETS["options"])
    if "inProgress" in case:
        scenario["deletionsInProgress"] = case["inProgress"]
    result = run(tmp_path, scenario)
    assert result["deletionsInProgress"] == {"empty": 0, "drain": 0, **case.get("inProgress", {})}
    want_empty = [
        f"{g}-empty-{i}" for g, n in case["want"].get("empty", {}).items() for i in range(n)
    ]
    want_drain = [
        f"{g}-drain-{i}" for g, n in case["want"].get("drain", {}).items() for i in range(n)
    ]
    assert result["removedEmpty"] == want_empty
    assert result["removedDrained"] == want_drain
    assert result["removed"] == want_empty + want_drain
    # every node of the case is removable; the budget only says how many go now
    nodes = by_name(result)
    assert all(nodes[n]["removable"] for n in nodes if n != "sink")


def test_the_table_says_which_deletions_took_the_budgets(tmp_path: Path) -> None:
    """Two removable drained nodes, one drain in progress and max-drain-parallelism 2: one goes,
    and the table names the deletion in progress that took the other's place; without one in
    progress, the line is not printed."""
    scenario = _scenario({}, {"ng": 2}, {"max-drain-parallelism": 2})
    scenario["deletionsInProgress"] = {"drain": 1}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    table = CliRunner().invoke(main, ["autoscale", str(path), "--format", "table"])
    assert table.exit_code == 0, table.output
    assert "removed now, in order: ng-drain-0\n" in table.stdout
    assert (
        "deletions in progress: 0 empty, 1 drained; taken from the budgets "
        "(max-scale-down-parallelism 10, max-drain-parallelism 2)"
    ) in table.stdout
    del scenario["deletionsInProgress"]
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    table = CliRunner().invoke(main, ["autoscale", str(path), "--format", "table"])
    assert "removed now, in order: ng-drain-0, ng-drain-1\n" in table.stdout
    assert "deletions in progress" not in table.stdout


def test_node_group_min_size_keeps_the_last_nodes(tmp_path: Path) -> None:
    """verifyMinSize: a group of 3 empty nodes with minSize 2 loses one; the other two are
    NodeGroupMinSizeReached (sizes counted down as nodes are accepted, in order)."""
    scenario = _scenario({"ng": 3}, {}, {})
    scenario["nodeGroups"][0]["minSize"] = 2
    result = run(tmp_path, scenario)
    nodes = by_name(result)
    assert result["removed"] == ["ng-empty-0"]
    assert [nodes[f"ng-empty-{i}"]["unremovableReason"] for i in range(3)] == [
        None,
        "NodeGroupMinSizeReached",
        "NodeGroupMinSizeReached",
    ]
    assert nodes["sink"]["unremovableReason"] == "ScaleDownDisabledAnnotation"
    assert nodes["sink"]["nodeGroup"] is None


def test_a_node_outside_every_group_is_not_autoscaled(tmp_path: Path) -> None:
    """NotAutoscaled: nodeGroups given and the node in none of them."""
    scenario = _scenario({"ng": 1}, {}, {})
    scenario["nodes"].append(node("stray", SMALL))
    nodes = by_name(run(tmp_path, scenario))
    assert nodes["stray"]["unremovableReason"] == "NotAutoscaled"
    assert nodes["stray"]["candidate"] is False


def test_pdb_disruptions_are_spent_across_nodes(tmp_path: Path) -> None:
    """RemovePods: the first drained node takes the PDB's only disruption, so the second node's
    pod of the same budget is NotEnoughPdb; without objects the controllers are not checked."""
    scenario = _scenario({}, {"ng": 2}, {})
    scenario["objects"] = [
        {
            "kind": "ReplicaSet",
            "metadata": {"name": "rs", "namespace": "default"},
            "spec": {"replicas": 2},
        },
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}},
            "status": {"disruptionsAllowed": 1},
        },
    ]
    nodes = by_name(run(tmp_path, scenario))
    assert nodes["ng-drain-0"]["removable"]
    assert nodes["ng-drain-1"]["blockingPod"] == {
        "pod": "default/p-ng-drain-1",
        "reason": "NotEnoughPdb",
    }


def test_empty_nodes_are_simulated_first_and_leave_the_destinations(tmp_path: Path) -> None:
    """EmptySorting puts the empty node first; once removable it is no destination, so the
    drained node's pod goes to the sink, never to the empty node listed before it."""
    scenario = _scenario({}, {"ng": 1}, {})
    scenario["nodes"].insert(0, node("free", SMALL))
    scenario["nodeGroups"][0]["nodes"].append("free")
    result = run(tmp_path, scenario)
    nodes = by_name(result)
    assert nodes["free"]["empty"] and nodes["free"]["removable"]
    assert nodes["ng-drain-0"]["destinations"] == {"default/p-ng-drain-0": "sink"}
    assert result["removed"] == ["free", "ng-drain-0"]


def test_table_and_explain_agree_with_the_json(tmp_path: Path) -> None:
    """--format table: one row per node with its reason; --explain adds where pods went."""
    scenario = _scenario({"ng": 1}, {"ng": 1}, {})
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    table = CliRunner().invoke(main, ["autoscale", str(path), "--format", "table"])
    assert table.exit_code == 0
    lines = table.stdout.splitlines()
    assert lines[0].split() == [
        "node",
        "group",
        "util",
        "cpu",
        "memory",
        "candidate",
        "removable",
        "reason",
    ]
    sink = next(line for line in lines if line.startswith("sink "))
    assert "ScaleDownDisabledAnnotation" in sink and "no " in sink
    assert "removed now, in order: ng-empty-0, ng-drain-0" in table.stdout
    # the release whose rules applied: the default version's newest known (1.36.1)
    assert "rules of cluster-autoscaler 1.36.1 (Kubernetes 1.36;" in table.stdout
    explain = CliRunner().invoke(main, ["autoscale", str(path), "--explain"])
    assert "ng-drain-0: default/p-ng-drain-0 -> sink" in explain.stdout
    assert "ng-empty-0: empty (no pod to move)" in explain.stdout


BAD = [
    (
        "autoscale-scenario-shape",
        documented_exit("autoscale-scenario-shape"),
        "- just a list\n",
        "expected a mapping",
    ),
    (
        "autoscale-unknown-autoscaler",
        documented_exit("autoscale-unknown-autoscaler"),
        "autoscaler: keda\nnodes: []\n",
        "autoscaler: 'keda' is not one of",
    ),
    (
        "autoscale-bad-option",
        documented_exit("autoscale-bad-option"),
        "options: {scale-down-utilization-threshold: 2}\nnodes: []\n",
        "options.scale-down-utilization-threshold: 2 is not a ratio",
    ),
    (
        "autoscale-unknown-option",
        documented_exit("autoscale-unknown-option"),
        "options: {scale-down-delay: 10m}\nnodes: []\n",
        "options.scale-down-delay: not a modelled cluster-autoscaler flag",
    ),
    (
        "autoscale-no-nodes",
        documented_exit("autoscale-no-nodes"),
        "autoscaler: cluster-autoscaler\n",
        "nodes: at least one Node",
    ),
    (
        "autoscale-node-pool",
        documented_exit("autoscale-node-pool"),
        "autoscaler: karpenter\nnodes: [{metadata: {name: a}, status: {allocatable: {cpu: 1}}}]\n"
        "nodePool: {disruption: {consolidationPolicy: Sometimes}}\n",
        "nodePool.disruption.consolidationPolicy: 'Sometimes' is not one of",
    ),
    (
        "autoscale-node-pool-object",
        documented_exit("autoscale-node-pool-object"),
        "autoscaler: karpenter\nnodes: [{metadata: {name: a}, status: {allocatable: {cpu: 1}}}]\n"
        "nodePool: {kind: NodePool, disruption: {consolidateAfter: 0s}, spec: {}}\n",
        "nodePool.disruption: ",
    ),
    (
        "autoscale-node-group",
        documented_exit("autoscale-node-group"),
        "nodes: [{metadata: {name: a}, status: {allocatable: {cpu: 1}}}]\n"
        "nodeGroups: [{name: g, nodes: [b]}]\n",
        "nodeGroups[0].nodes[0]: 'b' is not one of the nodes",
    ),
    (
        "autoscale-deletions-in-progress",
        documented_exit("autoscale-deletions-in-progress"),
        "nodes: [{metadata: {name: a}, status: {allocatable: {cpu: 1}}}]\n"
        "deletionsInProgress: {drain: -1}\n",
        "deletionsInProgress.drain: -1 is below 0",
    ),
    (
        "autoscale-deletions-in-progress",
        documented_exit("autoscale-deletions-in-progress"),
        "nodes: [{metadata: {name: a}, status: {allocatable: {cpu: 1}}}]\n"
        "deletionsInProgress: {drained: 1}\n",
        "deletionsInProgress.drained: not a kind of deletion",
    ),
    (
        "autoscale-ca-release",
        documented_exit("autoscale-ca-release"),
        'kubernetesVersion: "1.33"\nclusterAutoscalerVersion: "1.32.5"\n'
        "nodes: [{metadata: {name: a}, status: {allocatable: {cpu: 1}}}]\n",
        "clusterAutoscalerVersion: 1.32.5 does not go with Kubernetes 1.33",
    ),
    (
        "autoscale-ca-release",
        documented_exit("autoscale-ca-release"),
        'clusterAutoscalerVersion: "1.33"\nnodes: [{metadata: {name: a}, status: {}}]\n',
        "clusterAutoscalerVersion: '1.33' is not a cluster-autoscaler release",
    ),
]


@pytest.mark.parametrize(("fault", "code", "text", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_scenario_is_one_line(
    tmp_path: Path, fault: str, code: int, text: str, message: str
) -> None:
    """Each documented fault: its exit code, one stderr line naming the field, nothing else."""
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["autoscale", str(path)])
    assert result.exit_code == code == 2, fault
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and str(path) in lines[0], result.stderr


def test_missing_scenario_file_in_a_child_process(tmp_path: Path) -> None:
    """The real console entry: a missing file is one line, the documented exit, no traceback."""
    outcome = run_cli(["autoscale", str(tmp_path / "absent.yaml")])
    assert outcome.exit_code == documented_exit("autoscale-missing-file")
    assert "Traceback" not in outcome.stderr
    assert len(outcome.stderr.strip().splitlines()) == 1
    assert "absent.yaml" in outcome.stderr


def test_readme_example_output_is_the_real_output() -> None:
    """README's `analyzer autoscale` example prints exactly what the README shows."""
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    shown = readme.split("The example prints:\n\n```text\n", 1)[1].split("```", 1)[0]
    example = root / "examples" / "autoscale-scenario.yaml"
    result = CliRunner().invoke(main, ["autoscale", str(example), "--format", "table"])
    assert result.exit_code == 0
    assert result.stdout == shown


def test_daemonsets_taking_the_whole_allocatable_give_null_not_nan(tmp_path: Path) -> None:
    """ignore-daemonsets-utilization with DaemonSet pods requesting all of a node's cpu: Go
    divides by zero (NaN for 0/0: never ≥ the threshold, so a candidate; +Inf with other pods:
    NotUnderutilized). JSON has neither: the value is null and a note says why."""
    ds = {"cpu": 1000, "memory": 1000, "owner": ["DaemonSet", "ds", "apps/v1"]}
    scenario = _scenario({"ng": 2}, {}, {"ignore-daemonsets-utilization": True})
    scenario["pods"] = [
        pod("ds-a", ds, NOW, "ng-empty-0"),
        pod("ds-b", ds, NOW, "ng-empty-1"),
        pod("w", {**RS_POD, "cpu": 10}, NOW, "ng-empty-1"),
    ]
    result = run(tmp_path, scenario)
    nodes = by_name(result)
    assert nodes["ng-empty-0"]["utilizationByResource"]["cpu"] is None
    assert nodes["ng-empty-0"]["candidate"] is True  # NaN < threshold is false, so not "not under"
    assert nodes["ng-empty-1"]["utilization"] is None
    assert nodes["ng-empty-1"]["unremovableReason"] == "NotUnderutilized"  # +Inf
    assert any("ng-empty-1 utilization is inf" in note for note in result["notes"])


def test_max_empty_bulk_delete_sets_the_parallelism(tmp_path: Path) -> None:
    """The deprecated max-empty-bulk-delete, given alone, caps the empty nodes deleted at once."""
    result = run(tmp_path, _scenario({"ng": 4}, {}, {"max-empty-bulk-delete": 2}))
    assert result["options"]["max-scale-down-parallelism"] == 2
    assert result["removed"] == ["ng-empty-0", "ng-empty-1"]


def test_gpu_threshold_and_per_group_options(tmp_path: Path) -> None:
    """A GPU node is held to scale-down-gpu-utilization-threshold (isNodeBelowUtilizationThreshold);
    a group's own options override the global flags for its nodes only."""
    gpu_node = {"cpu": 8000, "memory": 2**34, "gpus": 2}
    gpu_pod = {"cpu": 100, "memory": 1000, "gpus": 1, "owner": ["ReplicaSet", "rs", "apps/v1"]}
    scenario = {
        "autoscaler": "cluster-autoscaler",
        "now": NOW,
        "options": {"scale-down-gpu-utilization-threshold": 0.4},
        "nodeGroups": [
            {"name": "gpu", "nodes": ["g"]},
            {"name": "lax", "nodes": ["a"], "options": {"scale-down-utilization-threshold": 0.8}},
            {"name": "strict", "nodes": ["b"]},
        ],
        "nodes": [node("g", gpu_node), node("a", SMALL), node("b", SMALL)],
        "pods": [
            pod("t", gpu_pod, NOW, "g"),
            pod("x", {**RS_POD, "cpu": 600}, NOW, "a"),
            pod("y", {**RS_POD, "cpu": 600}, NOW, "b"),
        ],
    }
    nodes = by_name(run(tmp_path, scenario))
    assert (
        nodes["g"]["utilization"] == 0.5 and nodes["g"]["utilizationResource"] == "nvidia.com/gpu"
    )
    assert nodes["g"]["unremovableReason"] == "NotUnderutilized"  # 0.5 ≥ 0.4
    assert nodes["a"]["candidate"] is True  # 0.6 < the group's 0.8
    assert nodes["b"]["unremovableReason"] == "NotUnderutilized"  # 0.6 ≥ the global 0.5


def test_the_short_empty_walk_answers_as_the_full_one() -> None:
    # ``has_no_pod_to_move`` stops ``pods_to_move``'s walk at the first pod that blocks or is to
    # be moved (``first``): on random pod lists of every drain kind (DaemonSet, mirror,
    # replicated, not replicated, safe-to-evict true/false, terminal), with and without kept
    # verdicts, its answer is the full walk's (no blocking pod and no pod to move), and every
    # verdict it kept is the pod's fresh one. Fails if the walk stopped at a DaemonSet pod or
    # at a pod that is skipped (mutants tried: ``first`` returning at any drainable pod).
    import random

    from analyzer.autoscaler.drainability import PdbTracker, drainable, pods_to_move
    from analyzer.autoscaler.options import CAOptions
    from analyzer.autoscaler.planner import has_no_pod_to_move
    from analyzer.autoscaler.pods import MIRROR_ANNOTATION, SAFE_TO_EVICT, CAPod
    from analyzer.core.resources import Container, PodSpecResources
    from analyzer.scheduling.objects import PodObject
    from analyzer.scheduling.spread_types import OwnerRef

    def one(i: int, kind: str) -> CAPod:
        owner = {
            "ds": OwnerRef("apps/v1", "DaemonSet", "d"),
            "rs": OwnerRef("apps/v1", "ReplicaSet", "r"),
        }
        annotations = {"mirror": {MIRROR_ANNOTATION: "x"}, "safe": {SAFE_TO_EVICT: "true"},
                       "unsafe": {SAFE_TO_EVICT: "false"}}.get(kind, {})  # fmt: skip
        ref = owner.get(kind, owner["rs"] if kind in ("unsafe", "done") else None)
        return CAPod(PodObject(
            name=f"p{i}", namespace="default", spec=PodSpecResources((Container("main", {"cpu": 10}),)),
            annotations=annotations, controller=ref, phase="Failed" if kind == "done" else "Running",
        ), restart_policy="Never" if kind == "done" else "Always")  # fmt: skip

    rng = random.Random(7)
    kinds = ["ds", "mirror", "rs", "bare", "safe", "unsafe", "done"]
    options = CAOptions()
    answers = set()
    for case in range(400):
        pods = [one(i, rng.choice(kinds)) for i in range(rng.randrange(0, 6))]
        full = pods_to_move(pods, options, PdbTracker([]), 0.0)
        expected = full.blocking is None and not full.pods
        verdicts: dict[int, Any] = {}
        assert has_no_pod_to_move(pods, options, 0.0) == expected, case
        assert has_no_pod_to_move(pods, options, 0.0, verdicts) == expected, case
        for pod_, status in verdicts.values():
            assert status == drainable(pod_, options, PdbTracker([]), 0.0)
        answers.add(expected)
    assert answers == {True, False}
