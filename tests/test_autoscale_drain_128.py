"""``analyzer autoscale`` at ``kubernetesVersion: "1.28"`` on cluster-autoscaler's legacy drain
tests (tag cluster-autoscaler-1.28.0): utils/drain/drain_test.go ``TestDrain`` and
``TestIsPodLongTerminating``, simulator/drain_test.go ``TestGetPodsToMove``, through the real CLI.

The cases are facts in ``tests/data/autoscaler/drain_128.yaml`` (its header says how each
upstream assertion maps to the output, what was adapted and what was not transcribed); every
expected value is upstream's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from autoscale_cases import beside_spare, by_name, data, run

DRAIN = data("drain_128.yaml")


def _drain_cases() -> list[dict[str, Any]]:
    """TestDrain: each shared test with skipNodesWithCustomControllerPods true, then false (as
    upstream's loop builds ``allTests``), then the extra ones; the registry always holds ds, job
    and ss, and the case's rcs and replicaSets."""
    section = DRAIN["TestDrain"]
    runs = [(t, flag) for t in section["sharedTests"] for flag in (True, False)]
    runs += [(t, t["skipNodesWithCustomControllerPods"]) for t in section["extraTests"]]
    cases = []
    for test, flag in runs:
        desc = test["description"]
        if "skipNodesWithCustomControllerPods" not in test:
            desc = f"{desc} with skipNodesWithCustomControllerPods:{str(flag).lower()}"
        cases.append({
            "id": f"TestDrain/{desc}",
            "section": "TestDrain",
            "pods": test["pods"],
            "objects": test.get("rcs", []) + test.get("replicaSets", []) + section["always"],
            "pdbs": test.get("pdbs", []),
            "options": {**section["options"], "skip-nodes-with-custom-controller-pods": flag},
            "blocking": test["expectBlockingPod"] if test["expectFatal"] else None,
            "moved": test["expectPods"],
            "ds": test["expectDaemonSetPods"],
        })  # fmt: skip
    return cases


def _move_cases() -> list[dict[str, Any]]:
    """TestGetPodsToMove (nil listers: objects only for the "extra" adaptation)."""
    section = DRAIN["TestGetPodsToMove"]
    return [
        {
            "id": f"TestGetPodsToMove/{case['desc']}",
            "section": "TestGetPodsToMove",
            "pods": case["pods"],
            "objects": case.get("extra", []),
            "pdbs": case.get("pdbs", []),
            "options": section["options"],
            "blocking": case.get("wantBlocking") if case.get("wantErr") else None,
            "moved": case.get("wantPods", []),
            "ds": case.get("wantDs", []),
        }
        for case in DRAIN["TestGetPodsToMove"]["cases"]
    ]


CASES = _drain_cases() + _move_cases()


def _fixture(section: str, name: str) -> dict[str, Any]:
    return dict(DRAIN[section]["pods"][name])


def _key(facts: dict[str, Any]) -> str:
    """``namespace/name`` of a pod, as the output names pods."""
    return f"{facts.get('namespace', 'default')}/{facts['name']}"


def _scenario(
    options: dict[str, Any], pods: list[dict[str, Any]], objects: list[dict[str, Any]]
) -> dict[str, Any]:
    """The pods (shorthand with ``name``) on "node", next to "spare", under ``options``."""
    facts = {p["name"]: {k: v for k, v in p.items() if k != "name"} for p in pods}
    scenario = beside_spare(DRAIN["kubernetesVersion"], DRAIN["now"], facts, objects or None)
    scenario["options"] = options
    return scenario


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_drain_128_matches_upstream(tmp_path: Path, case: dict[str, Any]) -> None:
    """TestDrain's expectFatal / expectBlockingPod / expectPods / expectDaemonSetPods, and
    TestGetPodsToMove's wantErr / wantBlocking / wantPods / wantDs."""
    section = DRAIN[case["section"]]
    objects = [section["objects"][n] for n in case["objects"]]
    objects += [{"kind": "PodDisruptionBudget", **section["pdbs"][n]} for n in case["pdbs"]]
    pods = [_fixture(case["section"], p) for p in case["pods"]]
    result = run(tmp_path, _scenario(case["options"], pods, objects))
    got = by_name(result)["node"]
    assert got["candidate"], "the node must be simulated"  # utilisation 0: a candidate
    blocking = case["blocking"]
    if blocking is not None:
        want = {
            "pod": _key(_fixture(case["section"], blocking["pod"])),
            "reason": blocking["reason"],
        }
        assert got["blockingPod"] == want
        assert got["unremovableReason"] == "BlockedByPod"
        assert not got["removable"]
        return
    assert got["blockingPod"] is None
    # a Succeeded or Failed pod never reaches GetPodsToMove in CA 1.28's loop: its
    # NewScheduledAndUnschedulablePodLister (utils/kubernetes/listers.go) selects it out, so where
    # the direct call lists it in expectPods (terminal: exempt) the loop has no such pod
    gone = {
        p
        for p in case["pods"]
        if _fixture(case["section"], p).get("phase") in ("Succeeded", "Failed")
    }
    for fixture in gone:
        assert any(_key(_fixture(case["section"], fixture)) in n for n in result["notes"])
    moved = sorted(_key(_fixture(case["section"], p)) for p in case["moved"] if p not in gone)
    assert sorted(got["destinations"]) == moved
    assert set(got["destinations"].values()) <= {"spare"}
    for fixture in case["ds"]:  # DaemonSet pods are evicted, not moved
        assert _key(_fixture(case["section"], fixture)) not in got["destinations"]
    assert got["removable"]
    assert got["unremovableReason"] is None
    assert got["empty"] is (not moved)


LONG = DRAIN["TestIsPodLongTerminating"]


@pytest.mark.parametrize("case", LONG["tests"], ids=lambda c: c["name"])
def test_is_pod_long_terminating_128_matches_upstream(tmp_path: Path, case: dict[str, Any]) -> None:
    """IsPodLongTerminating's ``want``: true, the pod counts as gone (the node empty); false, it
    is moved."""
    facts = {**LONG["pod"], **{k: case[k] for k in ("deletedSecondsAgo", "grace") if k in case}}
    result = run(tmp_path, _scenario(LONG["options"], [facts], []))
    got = by_name(result)["node"]
    assert got["candidate"]
    assert got["blockingPod"] is None
    assert got["removable"]
    assert got["destinations"] == ({} if case["want"] else {_key(facts): "spare"})
    assert got["empty"] is case["want"]
