"""TaintToleration and NodeAffinity scores, PrioritySort and DefaultPreemption against the shared
upstream vectors (``tests/data/vectors/kube-plugins-vectors.yaml``, transcribed from the
kubernetes/kubernetes unit tests; the expectations are upstream's asserted values).

Every case runs through ``analyzer score``: the DefaultPreemption phases (dry run, select
candidate, post filter, preempt) with the Filter statuses the upstream test passes, given as the
scenario's ``postFilter``; the dry run's candidates and the chosen node are the ``preemption``
block's ``candidates`` and ``nominatedNode``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from sched_vectors import load

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.scheduling.constraint_types import Taint, Toleration, parse_pod_constraints
from analyzer.scheduling.objects import parse_pod
from analyzer.scheduling.pdb import parse_pdb
from analyzer.scheduling.plugins.defaultpreemption import (
    UNSCHEDULABLE,
    PreemptionArgs,
    dry_run,
    parse_preemption_args,
    preempt,
)
from analyzer.scheduling.plugins.queuesort import (
    less,
    queue_order,
    resolve_preemption_policy,
    resolve_priority,
)
from analyzer.scheduling.preemption_scenario import bound_pods
from analyzer.scheduling.priority_class import parse_priority_class
from analyzer.scheduling.scenario import build_scenario

VECTORS = load("kube-plugins-vectors.yaml")
API = "kubescheduler.config.k8s.io/v1"


def _cases(plugin: str, phase: str | None = None) -> list[dict[str, Any]]:
    return [
        c
        for c in VECTORS["cases"]
        if c["plugin"] == plugin and (phase is None or c["phase"] == phase)
    ]


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [str(c["id"]) for c in cases]


def _node(obj: dict[str, Any]) -> dict[str, Any]:
    """The vector's Node; score vectors omit status, where st.MakeNode() gives pods 32."""
    node = copy.deepcopy(obj)
    node.setdefault("status", {}).setdefault("allocatable", {"pods": "32"})
    return node


def _profile(
    filters: list[str],
    scores: list[str],
    args: dict[str, dict[str, Any]],
    post_filter: bool = False,
) -> dict[str, Any]:
    """Only the plugins under test (like upstream's test framework)."""
    plugins: dict[str, Any] = {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "filter": {"enabled": [{"name": n} for n in filters]},
        "score": {"enabled": [{"name": n, "weight": 1} for n in scores]},
    }
    if post_filter:
        plugins["postFilter"] = {"enabled": [{"name": "DefaultPreemption"}]}
    return {
        "apiVersion": API,
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "plugins": plugins,
                "pluginConfig": [{"name": k, "args": v} for k, v in args.items()],
            }
        ],
    }


def score_scenario(case: dict[str, Any]) -> dict[str, Any]:
    """An ``analyzer score`` scenario running only the score plugin of ``case``."""
    assert case["candidate_nodes"] == [n["metadata"]["name"] for n in case["nodes"]]
    plugin = case["plugin"]
    args = {plugin: case["args"]} if case.get("args") else {}
    return {
        "scheduler": _profile([], [plugin], args),
        "nodes": [_node(n) for n in case["nodes"]],
        "pods": case.get("existing_pods") or [],
        "pod": case["pod"],
    }


def run_score(
    tmp_path: Path, scenario: dict[str, Any], *extra: str
) -> tuple[int, dict[str, Any] | None, str]:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    result = CliRunner().invoke(main, ["score", str(path), *extra])
    payload = json.loads(result.stdout) if result.exit_code == 0 and not extra else None
    return result.exit_code, payload, result.stdout + result.stderr


SCORE_CASES = _cases("TaintToleration") + _cases("NodeAffinity")


@pytest.mark.parametrize("case", SCORE_CASES, ids=_ids(SCORE_CASES))
def test_score_vector_through_cli(case: dict[str, Any], tmp_path: Path) -> None:
    code, payload, output = run_score(tmp_path, score_scenario(case))
    assert code == 0, output
    assert payload is not None
    scores = {n["name"]: n["scores"] for n in payload["nodes"]}
    # a NodeAffinity pod without preferred terms (and no addedAffinity) is a PreScore Skip: the
    # plugin adds nothing, which the upstream test sees as 0 on every node
    got = {name: scores[name].get(case["plugin"], 0) for name in case["expected"]}
    assert got == case["expected"]


def test_node_affinity_skip_leaves_the_plugin_out(tmp_path: Path) -> None:
    case = next(c for c in SCORE_CASES if c["id"].endswith("nodeaffinity-is-nil"))
    code, payload, output = run_score(tmp_path, score_scenario(case))
    assert code == 0, output
    assert payload is not None
    assert all("NodeAffinity" not in n["scores"] for n in payload["nodes"])


def test_explain_names_the_terms_and_taints(tmp_path: Path) -> None:
    case = next(
        c for c in SCORE_CASES if c["id"] == "na-score-added-affinity-and-pod-has-default-affinity"
    )
    code, _, output = run_score(tmp_path, score_scenario(case), "--explain")
    assert code == 0, output
    # node3 matches the pod's term (weight 2) and the added term (weight 3): raw 5 → 100
    assert "pod term 0 (w2)" in output and "addedAffinity term 0 (w3)" in output
    case = next(c for c in SCORE_CASES if c["id"].startswith("tt-score-the-more"))
    code, _, output = run_score(tmp_path, score_scenario(case), "--explain")
    assert code == 0, output
    assert "intolerable taints (cpu-type=arm64, disk-type=ssd)" in output


def test_toleration_comparison_operators() -> None:
    sla = Taint("sla", "950", "PreferNoSchedule")
    assert Toleration("sla", "Gt", "900").tolerates(sla)  # 950 > 900
    assert not Toleration("sla", "Gt", "950").tolerates(sla)  # strictly greater
    assert Toleration("sla", "Lt", "951").tolerates(sla)
    assert not Toleration("sla", "Lt", "9x").tolerates(sla)  # unparsable: no match, no error
    assert not Toleration("sla", "Gt", "1").tolerates(Taint("sla", " 5", "PreferNoSchedule"))
    spec = {"tolerations": [{"key": "sla", "operator": "Gt", "value": "5"}]}
    assert parse_pod_constraints(spec, "pod.spec").tolerations[0].operator == "Gt"


def test_preferred_term_weight_out_of_range_is_an_input_error() -> None:
    term = {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}
    spec = {
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [term]}}
    }
    with pytest.raises(
        InputError, match=r"preferredDuringSchedulingIgnoredDuringExecution\[0\]\.weight"
    ):
        parse_pod_constraints(spec, "pod.spec")


def test_normalised_scores_stay_in_range_for_refused_nodes(tmp_path: Path) -> None:
    # node b is refused (nodeSelector) and has the most intolerable taints: normalised over the
    # feasible nodes its score would be negative upstream never computes it; shown clipped to 0
    prefer = [{"key": f"k{i}", "value": "v", "effect": "PreferNoSchedule"} for i in range(3)]
    nodes = [
        {"metadata": {"name": "a", "labels": {"pool": "x"}}, "spec": {"taints": prefer[:1]}},
        {"metadata": {"name": "b"}, "spec": {"taints": prefer}},
    ]
    scenario = {
        "scheduler": _profile(["NodeAffinity"], ["TaintToleration"], {}),
        "nodes": [_node(n) for n in nodes],
        "pod": {"metadata": {"name": "p"}, "spec": {"nodeSelector": {"pool": "x"}}},
    }
    code, payload, output = run_score(tmp_path, scenario)
    assert code == 0, output
    assert payload is not None
    scores = {n["name"]: n["scores"]["TaintToleration"] for n in payload["nodes"]}
    assert scores == {"a": 0, "b": 0}  # a: 100 − 100·1/1; b: 100 − 300 clipped


# ---------------------------------------------------------------- PrioritySort


def _stamp(text: str | None) -> float:
    from analyzer.scheduling.objects import time_ns

    value = time_ns(text, "queue_timestamp")
    return 0.0 if value is None else float(value)  # Go's zero time.Time for unset


@pytest.mark.parametrize("case", _cases("PrioritySort"), ids=_ids(_cases("PrioritySort")))
def test_priority_sort_less(case: dict[str, Any]) -> None:
    p1 = parse_pod(case["p1"]["pod"], "p1")
    p2 = parse_pod(case["p2"]["pod"], "p2")
    got = less(
        resolve_priority(p1),
        _stamp(case["p1"]["queue_timestamp"]),
        resolve_priority(p2),
        _stamp(case["p2"]["queue_timestamp"]),
    )
    assert got is case["expected"]["less"]


def test_queue_order_priority_then_arrival() -> None:
    # priorities 0, 100, 100, -5 arriving at 1, 3, 2, 0: the two 100s first (earlier arrival
    # first), then 0, then -5 although it arrived first
    assert queue_order([0, 100, 100, -5], [1.0, 3.0, 2.0, 0.0]) == [2, 1, 0, 3]


def test_priority_class_resolution() -> None:
    classes = {
        "high": parse_priority_class(
            {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000,
             "preemptionPolicy": "Never"}, "pc")
    }  # fmt: skip
    default = parse_priority_class(
        {"kind": "PriorityClass", "metadata": {"name": "d"}, "value": 7, "globalDefault": True},
        "pc",
    )
    by_class = parse_pod({"metadata": {"name": "a"}, "spec": {"priorityClassName": "high"}}, "p")
    assert resolve_priority(by_class, classes) == 1000
    assert resolve_preemption_policy(by_class, classes) == "Never"
    explicit = parse_pod({"metadata": {"name": "b"}, "spec": {"priority": 3}}, "p")
    assert resolve_priority(explicit, {**classes, "d": default}) == 3  # spec.priority wins
    bare = parse_pod({"metadata": {"name": "c"}, "spec": {}}, "p")
    assert resolve_priority(bare, {"d": default}) == 7  # the globalDefault class
    assert resolve_priority(bare, {}) == 0
    critical = parse_pod(
        {"metadata": {"name": "s"}, "spec": {"priorityClassName": "system-node-critical"}}, "p"
    )
    assert resolve_priority(critical) == 2000001000
    unknown = parse_pod({"metadata": {"name": "u"}, "spec": {"priorityClassName": "nope"}}, "p")
    with pytest.raises(InputError, match="priorityClassName 'nope'"):
        resolve_priority(unknown, classes)


# ---------------------------------------------------------------- DefaultPreemption


def preemption_scenario(case: dict[str, Any], statuses: bool = False) -> dict[str, Any]:
    """The case as an ``analyzer score`` scenario: its filter plugins + DefaultPreemption (a
    copy: tests may edit it). ``statuses``: with the case's Filter statuses as ``postFilter``
    (every phase's shape: upstream's tests call PostFilter / DryRunPreemption with them)."""
    scenario: dict[str, Any] = {
        "scheduler": _profile(
            case["filter_plugins"], [], {"DefaultPreemption": case["args"]}, True
        ),
        "nodes": [_node(n) for n in case["nodes"]],
        "pods": case["existing_pods"],
        "pod": case["pod"],
        "objects": case.get("pdbs") or [],
    }
    if statuses:
        given = case.get("filtered_node_statuses")
        if given is None:  # dry run, select candidate, preempt: every node Unschedulable
            scenario["postFilter"] = {"absentNodesStatus": case["all_nodes_status"]}
        else:
            scenario["postFilter"] = {
                "filteredNodesStatuses": given,
                "absentNodesStatus": case["absent_node_status"],
            }
    return copy.deepcopy(scenario)


def _block(case: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """The ``preemption`` block ``analyzer score`` prints for the case (with its statuses)."""
    code, payload, output = run_score(tmp_path, preemption_scenario(case, statuses=True))
    assert code == 0, output
    assert payload is not None
    block: dict[str, Any] = payload["preemption"]
    return block


def _runnable(phase: str) -> list[Any]:
    return [pytest.param(c, id=c["id"]) for c in _cases("DefaultPreemption", phase)]


def _default(names: list[str]) -> list[str]:
    """Pod keys of the vectors' names: pods without a namespace are in "default" (the vectors'
    encoding), sorted as the upstream tests sort them."""
    return sorted(f"default/{n}" for n in names)


@pytest.mark.parametrize("case", _runnable("dry_run_preemption"))
def test_dry_run_preemption_through_cli(case: dict[str, Any], tmp_path: Path) -> None:
    block = _block(case, tmp_path)
    got = {
        c["node"]: {"victims": sorted(c["victims"]), "numPDBViolations": c["numPDBViolations"]}
        for c in block["candidates"]
    }
    expected = {
        node: {"victims": _default(c["victims"]), "numPDBViolations": c["numPDBViolations"]}
        for node, c in case["expected"]["candidates"].items()
    }
    assert got == expected


@pytest.mark.parametrize("case", _runnable("select_candidate"))
def test_select_candidate_through_cli(case: dict[str, Any], tmp_path: Path) -> None:
    block = _block(case, tmp_path)
    assert block["status"] == "Success"
    assert block["nominatedNode"] in case["expected"]["chosen_node_any_of"]


@pytest.mark.parametrize("case", _runnable("post_filter"))
def test_post_filter_through_cli(case: dict[str, Any], tmp_path: Path) -> None:
    block = _block(case, tmp_path)
    expected = case["expected"]
    assert (block["nominatedNode"] or "") == expected["nominated_node"]
    assert block["status"] == expected["status_code"]
    if "status_message" in expected:
        assert block["message"] == expected["status_message"]


@pytest.mark.parametrize("case", _runnable("preempt"))
def test_preempt_through_cli(case: dict[str, Any], tmp_path: Path) -> None:
    block = _block(case, tmp_path)
    assert block["nominatedNode"] == case["expected"]["nominated_node"]
    assert sorted(block["victims"]) == _default(case["expected"]["victims"])


def test_dry_run_leaves_the_state_as_it_was() -> None:
    case = _cases("DefaultPreemption", "dry_run_preemption")[0]
    scenario = build_scenario(preemption_scenario(case, statuses=True))
    state = scenario.state
    before = (state.requested.copy(), state.pod_count.copy())
    incoming = scenario.incoming
    assert incoming is not None
    candidates, _ = dry_run(
        scenario.profile.filters,
        state,
        scenario.pod,
        resolve_priority(incoming),
        list(range(state.node_count)),
        {},
        [],
        PreemptionArgs(),
    )
    assert candidates == []  # no pods given: nothing to evict anywhere
    result = preempt(
        scenario.profile.filters,
        state,
        scenario.pod,
        resolve_priority(incoming),
        resolve_preemption_policy(incoming),
        dict.fromkeys(range(state.node_count), UNSCHEDULABLE),
        bound_pods(state, scenario.bound),
        scenario.budgets,
    )
    assert result.nominated is not None  # the case's pods were evicted and restored
    assert np.array_equal(state.requested, before[0])
    assert np.array_equal(state.pod_count, before[1])


def test_post_filter_statuses_are_checked(tmp_path: Path) -> None:
    case = _cases("DefaultPreemption", "post_filter")[0]
    scenario = preemption_scenario(case, statuses=True)
    scenario["postFilter"]["filteredNodesStatuses"] = {"nodeX": "Unschedulable"}
    code, _, output = run_score(tmp_path, scenario)
    assert code == 2 and "postFilter.filteredNodesStatuses.nodeX" in output
    scenario["postFilter"] = {"absentNodesStatus": "Success"}
    code, _, output = run_score(tmp_path, scenario)
    assert code == 2 and "postFilter.absentNodesStatus: 'Success'" in output


def _natural_statuses(case: dict[str, Any]) -> bool:
    """Cases the CLI can run without ``postFilter``: the given statuses are what the filters
    produce."""
    given = case.get("filtered_node_statuses") or {}
    return all(v == UNSCHEDULABLE for v in given.values()) and len(given) in (0, len(case["nodes"]))


CLI_CASES = [
    c
    for c in _cases("DefaultPreemption")
    if c["phase"] in ("post_filter", "preempt") and _natural_statuses(c)
]


@pytest.mark.parametrize("case", CLI_CASES, ids=_ids(CLI_CASES))
def test_preemption_from_the_filter_pass(case: dict[str, Any], tmp_path: Path) -> None:
    """Without ``postFilter`` the statuses come from the filters, and give upstream's result."""
    code, payload, output = run_score(tmp_path, preemption_scenario(case))
    assert code == 0, output
    assert payload is not None
    assert not any(n["feasible"] for n in payload["nodes"])
    block = payload["preemption"]
    expected = case["expected"]
    if case["phase"] == "post_filter":
        assert (block["nominatedNode"] or "") == expected["nominated_node"]
        assert block["status"] == expected["status_code"]
        if "status_message" in expected:
            assert block["message"] == expected["status_message"]
    else:
        assert block["nominatedNode"] == expected["nominated_node"]
        assert sorted(block["victims"]) == _default(expected["victims"])


def test_no_preemption_block_when_the_pod_fits(tmp_path: Path) -> None:
    case = next(c for c in _cases("DefaultPreemption", "preempt") if c["id"].endswith("logic"))
    scenario = preemption_scenario(case)
    scenario["pod"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1m"}
    code, payload, output = run_score(tmp_path, scenario)
    assert code == 0, output
    assert payload is not None and "preemption" not in payload


def test_preemption_args_validation() -> None:
    assert parse_preemption_args(None, "a") == PreemptionArgs(10, 100)
    with pytest.raises(InputError, match="minCandidateNodesPercentage: Invalid value: 101"):
        parse_preemption_args({"minCandidateNodesPercentage": 101}, "a")
    with pytest.raises(InputError, match="cannot be both zero"):
        parse_preemption_args(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}, "a"
        )
    # 1000 nodes: 10 % = 100 = the absolute floor; 5000 nodes: 500; 30 nodes: all 30
    args = PreemptionArgs()
    assert [args.candidates_wanted(n) for n in (30, 1000, 5000)] == [30, 100, 500]


def test_explain_shows_the_preemption(tmp_path: Path) -> None:
    case = next(c for c in _cases("DefaultPreemption", "preempt") if c["id"].endswith("logic"))
    code, _, output = run_score(tmp_path, preemption_scenario(case), "--explain")
    assert code == 0, output
    # node1's two priority-0 pods beat node3's one priority-100 pod (lower highest priority)
    assert "preemption candidate node3: evict default/p3.1 (0 PDB violation(s))" in output
    assert "preemption: nominated node1, victims default/p1.1, default/p1.2" in output


def test_pdb_selectors() -> None:
    pdb = parse_pdb(
        {
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {
                "selector": {
                    "matchLabels": {"app": "web"},
                    "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}],
                }
            },
            "status": {"disruptionsAllowed": 1},
        },
        "pdb",
    )
    assert pdb.selects("shop", {"app": "web"})
    assert not pdb.selects("shop", {"app": "web", "tier": "db"})
    assert not pdb.selects("other", {"app": "web"})  # budgets are per namespace
    empty = parse_pdb({"metadata": {"name": "e"}, "spec": {"selector": {}}}, "pdb")
    assert not empty.selects("default", {"app": "web"})  # an empty selector selects nothing
    with pytest.raises(InputError, match=r"pdb\.spec\.selector\.matchExpressions\[0\]\.operator"):
        parse_pdb(
            {"spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}}, "pdb"
        )


def test_what_if_notes_name_strategies_that_ignore_prefer_no_schedule() -> None:
    from types import SimpleNamespace

    import pandas as pd

    from analyzer.replay.engine import Strategy
    from analyzer.scheduling import load_strategy
    from analyzer.whatif.notes import constraint_notes

    prefer = json.dumps([{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}])
    nodes = pd.DataFrame({"taints": [prefer, "[]", prefer]})
    pods = pd.DataFrame({"node_selector": ["{}"], "tolerations": ["[]"]})
    meta = SimpleNamespace(extra={}, source="prometheus")  # collected without --kube-objects
    snapshot = SimpleNamespace(nodes=nodes, pods=pods, meta=meta)
    strategies = [
        Strategy("kube-default", load_strategy("kube-default")),
        Strategy("bestfit", load_strategy("bestfit")),  # a GPU preset: its policy only
    ]
    notes = constraint_notes(snapshot, strategies)  # type: ignore[arg-type]
    line = next(n for n in notes if "PreferNoSchedule" in n)
    assert line.startswith("bestfit: 2 nodes carry PreferNoSchedule taints")
    nodes["taints"] = "[]"
    assert not any("PreferNoSchedule" in n for n in constraint_notes(snapshot, strategies))  # type: ignore[arg-type]


def test_preferred_terms_match_fields_and_empty_terms() -> None:
    from analyzer.scheduling.constraint_types import parse_preferred_terms

    terms = parse_preferred_terms(
        [
            {
                "weight": 5,
                "preference": {
                    "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]
                },
            },
            {"weight": 7, "preference": {}},  # no expression, no field: matches no node
        ],
        "terms",
    )
    assert [t.matches({}, "b") for t in terms] == [True, False]
    assert not terms[0].matches({}, "a")
    with pytest.raises(InputError, match=r"matchFields\[0\]\.key"):
        parse_preferred_terms(
            [{"weight": 1, "preference": {"matchFields": [{"key": "x", "operator": "Exists"}]}}],
            "terms",
        )
