"""``analyzer score`` with pods an earlier preemption nominated to a node (``nominated_pods``).

Upstream's rules, each checked through the command on a hand-sized scenario whose answer is
worked out in the test:

- ``RunFilterPluginsWithNominatedPods`` / ``addNominatedPods`` (framework/runtime/framework.go):
  a pending pod nominated to a node counts there, in the filters only, for pods of lower or
  equal priority; the filters run with and then without it, and both must pass.
- ``evaluateNominatedNode`` (schedule_one.go): the incoming pod's own nominated node is tried
  alone first and, when it passes the filters, is where the pod goes (PreferNominatedNode,
  on by default from 1.22).
- ``PodEligibleToPreemptOthers`` (default_preemption.go): the five cases of upstream's
  ``TestPodEligibleToPreemptOthers``, and ``SelectVictimsOnNode`` counting nominated pods.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from analyzer.cli import main


def _node(name: str, cpu: str = "4", pods: str = "110", **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": pods}},
    }


def _pod(
    name: str,
    cpu: str,
    *,
    node: str = "",
    nominated: str = "",
    priority: int | None = None,
    labels: dict[str, str] | None = None,
    uid: str = "",
    **extra: Any,
) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
        "status": {},
    }
    if uid:
        pod["metadata"]["uid"] = uid
    if node:
        pod["spec"]["nodeName"] = node
        pod["status"]["phase"] = "Running"
    if nominated:
        pod["status"]["nominatedNodeName"] = nominated
        pod["status"]["phase"] = "Pending"
    if priority is not None:
        pod["spec"]["priority"] = priority
    for key, value in extra.items():
        pod.setdefault(key.split(".")[0], {})[key.split(".")[1]] = value
    return pod


def _score(tmp_path: Path, scenario: dict[str, Any], *args: str) -> dict[str, Any]:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    result = CliRunner().invoke(main, ["score", str(path), *args])
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.output)
    return out


def _by_name(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["name"]: n for n in out["nodes"]}


def _crowded(incoming_priority: int, nominee_priority: int) -> dict[str, Any]:
    """n1 (4 cpu) holds 1 cpu and has a 2-cpu pod nominated to it; n2 (4 cpu) holds 3 cpu. The
    incoming pod asks 2 cpu: n1 fits it without the nominee (1 + 2 ≤ 4) but not with it
    (1 + 2 + 2 > 4); n2 never (3 + 2 > 4)."""
    return {
        "nodes": [_node("n1"), _node("n2")],
        "pods": [
            _pod("running-1", "1", node="n1"),
            _pod("running-2", "3", node="n2"),
            _pod("preemptor", "2", nominated="n1", priority=nominee_priority, uid="u-pre"),
        ],
        "pod": _pod("incoming", "2", priority=incoming_priority, uid="u-in"),
    }


def test_a_nominated_pod_of_higher_or_equal_priority_takes_its_room(tmp_path: Path) -> None:
    for incoming, nominee in ((100, 100), (100, 1000)):
        out = _score(tmp_path, _crowded(incoming, nominee))
        n1 = _by_name(out)["n1"]
        assert not n1["feasible"], (incoming, nominee)
        assert n1["status"] == "Unschedulable"
        assert any("Insufficient cpu" in r for r in n1["reasons"])
        assert out["selected"] == [] and out["chosen"] is None
        assert any("preemptor" in note and "count it there" in note for note in out["notes"])


def test_a_nominated_pod_of_lower_priority_does_not_count(tmp_path: Path) -> None:
    out = _score(tmp_path, _crowded(1000, 100))
    assert _by_name(out)["n1"]["feasible"]
    assert out["chosen"] == "n1"
    assert any("preemptor" in note and "not counted" in note for note in out["notes"])


def test_the_incoming_pod_does_not_count_its_own_nomination(tmp_path: Path) -> None:
    # the incoming pod is itself the nominee (same UID, listed among the pods as well)
    scenario = _crowded(100, 100)
    scenario["pod"] = scenario["pods"][2]
    out = _score(tmp_path, scenario)
    assert _by_name(out)["n1"]["feasible"]
    assert out["chosen"] == "n1"


def test_a_pod_of_another_scheduler_is_not_in_this_queue(tmp_path: Path) -> None:
    scenario = _crowded(100, 1000)
    scenario["pods"][2]["spec"]["schedulerName"] = "some-other-scheduler"
    out = _score(tmp_path, scenario)
    assert _by_name(out)["n1"]["feasible"]


def test_a_nominated_pod_counts_only_on_its_node_and_not_in_the_scores(tmp_path: Path) -> None:
    # room everywhere: n1 and n2 both fit the incoming pod with or without the nominee, and
    # LeastAllocated scores them as if the nominee were not there (n1 1 cpu, n2 1 cpu: a tie)
    scenario = {
        "nodes": [_node("n1", cpu="8"), _node("n2", cpu="8")],
        "pods": [
            _pod("running-1", "1", node="n1"),
            _pod("running-2", "1", node="n2"),
            _pod("preemptor", "4", nominated="n1", priority=1000),
        ],
        "pod": _pod("incoming", "1", priority=0),
    }
    out = _score(tmp_path, scenario)
    nodes = _by_name(out)
    assert nodes["n1"]["feasible"] and nodes["n2"]["feasible"]
    assert nodes["n1"]["total"] == nodes["n2"]["total"]
    assert sorted(out["selected"]) == ["n1", "n2"]


def _toward_the_nominee(kind: str) -> dict[str, Any]:
    """``_crowded`` with room for everyone (16-cpu nodes), the nominee labelled app=db, and the
    incoming pod given a required ``kind`` (podAffinity / podAntiAffinity) term to app=db by
    hostname."""
    scenario = _crowded(100, 1000)
    scenario["nodes"] = [_node("n1", cpu="16"), _node("n2", cpu="16")]
    scenario["pods"][2]["metadata"]["labels"] = {"app": "db"}
    term = {
        "labelSelector": {"matchLabels": {"app": "db"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    scenario["pod"]["spec"]["affinity"] = {
        kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    }
    return scenario


def test_pod_affinity_to_a_nominated_pod_alone_is_not_met(tmp_path: Path) -> None:
    # the second run (without nominated pods) decides: the only pod the incoming pod's required
    # affinity can match is the nominee, so n1 fails although the first run passes
    out = _score(tmp_path, _toward_the_nominee("podAffinity"))
    n1 = _by_name(out)["n1"]
    assert not n1["feasible"]
    assert any("affinity" in r for r in n1["reasons"])


def test_anti_affinity_to_a_nominated_pod_refuses_its_node_only(tmp_path: Path) -> None:
    # the first run (with the nominee) refuses n1; n2 has no nominee and stays feasible
    out = _score(tmp_path, _toward_the_nominee("podAntiAffinity"))
    nodes = _by_name(out)
    assert not nodes["n1"]["feasible"]
    assert any("anti-affinity" in r for r in nodes["n1"]["reasons"])
    assert nodes["n2"]["feasible"] and out["chosen"] == "n2"


def _preferring() -> dict[str, Any]:
    """n1 is empty (LeastAllocated prefers it), n2 holds 2 of 4 cpu; the incoming pod (1 cpu)
    fits both and is nominated to n2."""
    return {
        "nodes": [_node("n1"), _node("n2")],
        "pods": [_pod("running-2", "2", node="n2")],
        "pod": _pod("incoming", "1", nominated="n2"),
    }


def test_the_nominated_node_is_tried_first_from_1_22(tmp_path: Path) -> None:
    out = _score(tmp_path, _preferring())
    assert out["triedNominatedNode"] == {"name": "n2", "feasible": True}
    assert out["selected"] == ["n2"] and out["chosen"] == "n2"
    nodes = _by_name(out)
    assert nodes["n1"]["feasible"] and nodes["n1"]["scored"] is False
    assert nodes["n1"]["total"] is None and nodes["n2"]["scored"] is True
    # before PreferNominatedNode (1.21: alpha, off) the pod is scored over every node
    old = _score(tmp_path, _preferring(), "--kubernetes-version", "1.21")
    assert "triedNominatedNode" not in old
    assert old["chosen"] == "n1"
    assert _by_name(old)["n1"]["total"] > _by_name(old)["n2"]["total"]
    gate_off = _preferring() | {"featureGates": {"PreferNominatedNode": False}}
    assert _score(tmp_path, gate_off)["chosen"] == "n1"


def test_a_nominated_node_that_no_longer_fits_falls_back_to_every_node(tmp_path: Path) -> None:
    scenario = _preferring()
    scenario["pod"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    out = _score(tmp_path, scenario)
    assert out["triedNominatedNode"] == {"name": "n2", "feasible": False}
    assert out["chosen"] == "n1"
    assert all("scored" not in n for n in out["nodes"])


# upstream's TestPodEligibleToPreemptOthers, through PostFilter: one node that the incoming pod
# does not fit (so DefaultPreemption runs), a low-priority pod on it


def _eligibility(
    *, nominated: bool, terminating: bool, condition: bool, node_status: str | None = None
) -> dict[str, Any]:
    low = _pod("p1", "3", node="node1", priority=100, uid="p1")
    if terminating:
        low["metadata"]["deletionTimestamp"] = "2026-11-01T00:00:00Z"
    if condition:
        low["status"]["conditions"] = [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ]
    scenario: dict[str, Any] = {
        "nodes": [_node("node1")],
        "pods": [low],
        "pod": _pod("p", "2", priority=1000, uid="p", nominated="node1" if nominated else ""),
        "now": "2026-11-01T00:00:10Z",
    }
    if node_status is not None:
        scenario["postFilter"] = {"filteredNodesStatuses": {"node1": node_status}}
    return scenario


NOT_ELIGIBLE = "preemption: not eligible due to a terminating pod on the nominated node."


def test_pod_eligible_to_preempt_others_upstream_cases(tmp_path: Path) -> None:
    # "Pod with nominated node": its node UnschedulableAndUnresolvable, so eligible although a
    # lower-priority pod terminates there (then nothing to preempt on an unresolvable node)
    out = _score(
        tmp_path,
        _eligibility(
            nominated=True,
            terminating=True,
            condition=True,
            node_status="UnschedulableAndUnresolvable",
        ),
    )
    assert out["preemption"]["status"] == "Unschedulable"
    assert out["preemption"].get("message") != NOT_ELIGIBLE
    # "Pod without nominated node": eligible, preempts p1
    out = _score(tmp_path, _eligibility(nominated=False, terminating=False, condition=False))
    assert out["preemption"]["nominatedNode"] == "node1"
    assert out["preemption"]["victims"] == ["default/p1"]
    # "Pod with 'PreemptNever' preemption policy"
    never = _eligibility(nominated=False, terminating=False, condition=False)
    never["pod"]["spec"]["preemptionPolicy"] = "Never"
    out = _score(tmp_path, never)
    assert out["preemption"]["message"] == "preemption: not eligible due to preemptionPolicy=Never."
    # "preemption victim pod terminating, as indicated by the dedicated DisruptionTarget condition"
    out = _score(tmp_path, _eligibility(nominated=True, terminating=True, condition=True))
    assert out["preemption"]["nominatedNode"] is None
    assert out["preemption"]["message"] == NOT_ELIGIBLE
    # "non-victim Pods terminating": no DisruptionTarget condition, so eligible (1.26+)
    out = _score(tmp_path, _eligibility(nominated=True, terminating=True, condition=False))
    assert out["preemption"]["nominatedNode"] == "node1"


def test_before_pod_disruption_conditions_any_terminating_pod_makes_it_wait(
    tmp_path: Path,
) -> None:
    scenario = _eligibility(nominated=True, terminating=True, condition=False)
    out = _score(tmp_path, scenario, "--kubernetes-version", "1.25")
    assert out["preemption"]["message"] == NOT_ELIGIBLE
    # a terminating pod of higher priority is no victim of this pod: it does not wait for it
    scenario["pods"][0]["spec"]["priority"] = 5000
    out = _score(tmp_path, scenario, "--kubernetes-version", "1.25")
    assert out["preemption"].get("message") != NOT_ELIGIBLE


def test_the_dry_run_counts_nominated_pods(tmp_path: Path) -> None:
    # node1 and node2 each hold a low-priority 3-cpu pod (4 cpu nodes); the incoming pod (2 cpu,
    # priority 1000) fits neither. Evicting either victim would do, but a pod of priority 2000
    # is nominated to node1 with 3 cpu: node1 with its victim gone and the nominee counted would
    # hold 3 + 2 = 5 > 4 cpu, so the incoming pod does not fit there; node2 is the only candidate.
    scenario = {
        "nodes": [_node("node1"), _node("node2")],
        "pods": [
            _pod("v1", "3", node="node1", priority=10),
            _pod("v2", "3", node="node2", priority=10),
            _pod("big", "3", nominated="node1", priority=2000),
        ],
        "pod": _pod("p", "2", priority=1000),
    }
    out = _score(tmp_path, scenario)
    assert [c["node"] for c in out["preemption"]["candidates"]] == ["node2"]
    assert out["preemption"]["nominatedNode"] == "node2"
    assert out["preemption"]["victims"] == ["default/v2"]
    # without the nominee both nodes are candidates
    scenario["pods"] = scenario["pods"][:2]
    out = _score(tmp_path, scenario)
    assert sorted(c["node"] for c in out["preemption"]["candidates"]) == ["node1", "node2"]


def test_explain_names_the_nominated_pods_a_node_counts(tmp_path: Path) -> None:
    # n1 is refused for cpu while its score rows (requested 1 + 2 of 4 cpu) show room: the
    # explanation says which nominated pod the filters counted, so the line and the table agree
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(_crowded(100, 100)))
    result = CliRunner().invoke(main, ["score", str(path), "--explain"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    at = lines.index(next(line for line in lines if line.startswith("node n1 ")))
    assert "INFEASIBLE: Insufficient cpu" in lines[at]
    assert "default/preemptor (cpu 2000m" in lines[at + 1]
    n2 = next(line for line in lines if line.startswith("node n2 "))
    assert "nominated" not in lines[lines.index(n2) + 1]


def test_the_worked_example(tmp_path: Path) -> None:
    # examples/score-nominated.yaml works the numbers out in its comments
    example = Path(__file__).parent.parent / "examples" / "score-nominated.yaml"
    doc = yaml.safe_load(example.read_text())
    out = _score(tmp_path, doc)
    nodes = _by_name(out)
    assert not nodes["node-a"]["feasible"] and nodes["node-a"]["reasons"] == ["Insufficient cpu"]
    assert nodes["node-b"]["feasible"] and out["chosen"] == "node-b"
    assert nodes["node-a"]["scores"]["NodeResourcesFit"] == 37
    assert nodes["node-b"]["scores"]["NodeResourcesFit"] == 25
    del doc["pods"][2]["status"]  # no nomination: a pending pod the scheduler ignores
    out = _score(tmp_path, doc)
    assert out["chosen"] == "node-a" and _by_name(out)["node-a"]["feasible"]


def test_a_pod_listed_twice_is_held_once_where_its_last_entry_says(tmp_path: Path) -> None:
    # upstream's nominator deletes a pod (by UID) before adding it again (AddNominatedPod): one
    # pod listed twice holds room once, on the node of its later entry. n1 and n2 (4 cpu) hold
    # 1 cpu each; the incoming pod asks 2 cpu
    moved = {
        "nodes": [_node("n1"), _node("n2")],
        "pods": [
            _pod("running-1", "1", node="n1"),
            _pod("running-2", "1", node="n2"),
            _pod("preemptor", "2", nominated="n1", priority=100, uid="u-pre"),
            _pod("preemptor", "2", nominated="n2", priority=100, uid="u-pre"),
        ],
        "pod": _pod("incoming", "2", priority=100, uid="u-in"),
    }
    nodes = _by_name(_score(tmp_path, moved))
    # n1: 1 + 2 ≤ 4 (the nominee is on n2 now); n2: 1 + 2 + 2 > 4
    assert nodes["n1"]["feasible"] and not nodes["n2"]["feasible"]
    # the same pod twice on n1 with 1 cpu (no UID: the same namespace/name): 1 + 1 + 2 ≤ 4;
    # counted twice it would be 5
    twice = {
        "nodes": [_node("n1")],
        "pods": [
            _pod("running-1", "1", node="n1"),
            _pod("preemptor", "1", nominated="n1", priority=100),
            _pod("preemptor", "1", nominated="n1", priority=100),
        ],
        "pod": _pod("incoming", "2", priority=100, uid="u-in"),
    }
    assert _by_name(_score(tmp_path, twice))["n1"]["feasible"]


def test_a_locked_gate_overridden_is_applied_with_a_note(tmp_path: Path) -> None:
    # PreferNominatedNode is GA and locked to true from 1.24: kube-scheduler refuses
    # --feature-gates=PreferNominatedNode=false there, upstream's unit tests set the flag
    # directly. The override still applies (the vectors rely on it) and the output says so;
    # before the lock (1.23) it is an ordinary override, without the note
    gate_off = _preferring() | {"featureGates": {"PreferNominatedNode": False}}
    late = _score(tmp_path, gate_off, "--kubernetes-version", "1.30")
    assert late["chosen"] == "n1" and "triedNominatedNode" not in late
    assert any("PreferNominatedNode is locked to true from 1.24" in n for n in late["notes"])
    early = _score(tmp_path, gate_off, "--kubernetes-version", "1.23")
    assert early["chosen"] == "n1"
    assert not any("locked" in n for n in early["notes"])
    same = _preferring() | {"featureGates": {"PreferNominatedNode": True}}
    assert not any("locked" in n for n in _score(tmp_path, same)["notes"])


def test_a_preemption_ends_the_lower_nominations_on_its_node(tmp_path: Path) -> None:
    # prepareCandidate (framework/preemption/preemption.go) clears the nominatedNodeName of the
    # pods of lower priority nominated to the node it nominates. n1 (4 cpu) runs victim
    # (priority 0, 3 cpu); low-1 (priority 10) waits nominated to n1, low-2 (priority 10) to n2,
    # which big (priority 1000) fills. The incoming pod (priority 100, 3 cpu) fits nowhere (1
    # cpu free on n1: low-1 does not count for it), evicts victim on n1: low-1 loses its
    # nomination, low-2 (another node) keeps its own
    scenario = {
        "nodes": [_node("n1"), _node("n2")],
        "pods": [
            _pod("victim", "3", node="n1", priority=0),
            _pod("big", "4", node="n2", priority=1000),
            _pod("low-1", "1", nominated="n1", priority=10),
            _pod("low-2", "1", nominated="n2", priority=10),
        ],
        "pod": _pod("incoming", "3", priority=100, uid="u-in"),
    }
    block = _score(tmp_path, scenario)["preemption"]
    assert block["nominatedNode"] == "n1" and block["victims"] == ["default/victim"]
    assert block["clearedNominations"] == ["default/low-1"]
    # low-1 at the incoming pod's own priority keeps its nomination (it counts in the dry run:
    # 1 + 3 ≤ 4 once victim is gone, so n1 is still nominated)
    scenario["pods"][2]["spec"]["priority"] = 100
    block = _score(tmp_path, scenario)["preemption"]
    assert block["nominatedNode"] == "n1" and "clearedNominations" not in block
    path = tmp_path / "explain.yaml"
    scenario["pods"][2]["spec"]["priority"] = 10
    path.write_text(yaml.safe_dump(scenario))
    explained = CliRunner().invoke(main, ["score", str(path), "--explain"])
    assert "default/low-1, nominated to n1 with a lower priority, loses its nomination" in (
        explained.output
    )
