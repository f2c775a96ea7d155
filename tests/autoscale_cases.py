"""Expands the shorthand of ``tests/data/autoscaler/*.yaml`` into ``analyzer autoscale`` scenarios
and runs them through the real CLI (click's runner, in process).

A node ``{cpu: millicores, memory: bytes (-1: not set), gpus, labels, annotations, taints}`` is
a v1 Node with that allocatable (and ``pods: 110``); a pod ``{cpu, memory (-1: no request),
owner: [kind, name, apiVersion], namespace, labels, annotations, deletedSecondsAgo,
initContainers, volumes, priority, restartPolicy, grace (seconds), phase, gpus, node}`` is a v1 Pod with one container, as upstream's
``BuildTestNode`` / ``BuildTestPod`` build them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from analyzer.cli import main

DATA = Path(__file__).resolve().parent / "data" / "autoscaler"


def data(name: str) -> dict[str, Any]:
    """One data file."""
    loaded = yaml.safe_load((DATA / name).read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _requests(facts: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if facts.get("cpu", -1) >= 0:
        out["cpu"] = f"{facts['cpu']}m"
    if facts.get("memory", -1) >= 0:
        out["memory"] = str(facts["memory"])
    if facts.get("gpus"):
        out["nvidia.com/gpu"] = str(facts["gpus"])
    return out


def node(name: str, facts: dict[str, Any]) -> dict[str, Any]:
    """A v1 Node from the shorthand."""
    alloc = _requests(facts)
    alloc["pods"] = "110"
    meta: dict[str, Any] = {"name": name}
    for key in ("labels", "annotations"):
        if key in facts:
            meta[key] = facts[key]
    return {
        "kind": "Node",
        "metadata": meta,
        "spec": {"taints": facts.get("taints", [])},
        "status": {"allocatable": alloc},
    }


def pod(name: str, facts: dict[str, Any], now: str, node_name: str) -> dict[str, Any]:
    """A v1 Pod from the shorthand, bound to ``node_name``."""
    meta: dict[str, Any] = {"name": name, "namespace": facts.get("namespace", "default")}
    for key in ("labels", "annotations"):
        if key in facts:
            meta[key] = facts[key]
    if "owner" in facts:
        kind, owner, api = facts["owner"]
        meta["ownerReferences"] = [
            {"kind": kind, "name": owner, "apiVersion": api, "controller": True}
        ]
    if "createdSecondsAgo" in facts:
        stamp = datetime.fromisoformat(now.replace("Z", "+00:00")).astimezone(UTC)
        created = stamp - timedelta(seconds=facts["createdSecondsAgo"])
        meta["creationTimestamp"] = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    if "deletedSecondsAgo" in facts:
        stamp = datetime.fromisoformat(now.replace("Z", "+00:00")).astimezone(UTC)
        deleted = stamp - timedelta(seconds=facts["deletedSecondsAgo"])
        meta["deletionTimestamp"] = deleted.strftime("%Y-%m-%dT%H:%M:%SZ")
    spec: dict[str, Any] = {
        "nodeName": node_name,
        "containers": [{"name": "c", "resources": {"requests": _requests(facts)}}],
    }
    if "initContainers" in facts:
        spec["initContainers"] = [
            {
                "name": f"init{i}",
                "resources": {"requests": _requests(c)},
                **({"restartPolicy": c["restartPolicy"]} if "restartPolicy" in c else {}),
            }
            for i, c in enumerate(facts["initContainers"])
        ]
    for key in ("volumes", "priority", "restartPolicy"):
        if key in facts:
            spec[key] = facts[key]
    if "grace" in facts:
        spec["terminationGracePeriodSeconds"] = facts["grace"]
    status = {"phase": facts["phase"]} if "phase" in facts else {}
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def run(tmp: Path, scenario: dict[str, Any], *args: str) -> dict[str, Any]:
    """Write the scenario and run ``analyzer autoscale`` on it; the parsed JSON."""
    path = tmp / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False), encoding="utf-8")
    result = CliRunner().invoke(main, ["autoscale", str(path), *args])
    assert result.exit_code == 0, result.output
    loaded = json.loads(result.stdout)
    assert isinstance(loaded, dict)
    return loaded


SPARE = {"cpu": 4000, "memory": 2**32,
         "annotations": {"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}}  # fmt: skip


def beside_spare(
    version: str, now: str, pods: dict[str, dict[str, Any]], objects: list[Any] | None
) -> dict[str, Any]:
    """A cluster-autoscaler scenario at ``version`` (a Kubernetes minor, or a CA release
    "1.x.y": its minor and ``clusterAutoscalerVersion``): ``pods`` on node "node" (1000m,
    1 GiB) next to "spare" (scale-down-disabled, 4000m: never a candidate, always a
    destination)."""
    release = version if version.count(".") == 2 else None
    scenario: dict[str, Any] = {
        "autoscaler": "cluster-autoscaler",
        "kubernetesVersion": version.rsplit(".", 1)[0] if release else version,
        "now": now,
        "nodes": [node("node", {"cpu": 1000, "memory": 2**30}), node("spare", SPARE)],
        "pods": [pod(name, facts, now, "node") for name, facts in pods.items()],
    }
    if objects is not None:
        scenario["objects"] = objects
    if release is not None:
        scenario["clusterAutoscalerVersion"] = release
    return scenario


def by_name(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The result's nodes by name."""
    return {n["name"]: n for n in result["nodes"]}


def seeded_autoscaled(seed: int, raw: Any = None) -> tuple[Any, Any, Any]:
    """A generated cluster (24 nodes, half a day at a 5-minute step, seed ``seed``) prepared for
    a replay under cluster-autoscaler with the flags ``raw`` and each pool's minSize 0, so that
    CA removes and adds nodes: (the autoscaled input, its node groups, the settings).

    Unless ``raw`` sets it, ``blocking-system-pod-distruption-timeout`` is none: the clusters'
    kube-system pods (coredns) block their nodes all along, as up to CA 1.32, so that the
    shortcuts for nodes blocked by a pod are exercised on them (the 1.33+ timeout has its own
    tests: ``tests/test_replay_autoscaler_system_pods.py``, and ``bench/ca_differential.py``)."""
    import dataclasses

    from analyzer.replay.autoscale_setup import GroupBounds, parse_settings, with_node_groups
    from analyzer.replay.input import prepare
    from analyzer.sources import SyntheticSpec, generate

    raw = {"blocking-system-pod-distruption-timeout": None, **(raw or {})}
    cluster = generate(SyntheticSpec(seed=seed, nodes=24, days=0.5, step=300))
    pools = set(cluster.snapshot.nodes["pool"].fillna("default").astype(str))
    settings = dataclasses.replace(
        parse_settings(raw), groups={p or "default": GroupBounds(min_size=0) for p in pools}
    )
    auto, groups = with_node_groups(prepare(cluster.snapshot), settings)
    return auto, groups, settings


# timings for the seeded clusters (``seeded_autoscaled``): short ones with a 7-second scan (instants
# off the loop's grid, nodes unneeded and deleted within the half day) and a short recheck
SHORT_TIMINGS = {
    "scale-down-unneeded-time": "2m",
    "scale-down-delay-after-add": "3m",
    "unremovable-node-recheck-timeout": "2m",
    "scan-interval": "7s",
}
RECHECK_TIMINGS = {"unremovable-node-recheck-timeout": "1m", "scan-interval": "7s"}


def seeded_cases(short: dict[str, str]) -> list[tuple[int, str, dict[str, str] | None]]:
    """(seed, strategy, flags) of the seeded clusters: both strategies with CA's default
    timings, ``short`` ones and a short recheck."""
    return [
        (1, "kube-default", None),
        (2, "most-allocated", None),
        (3, "kube-default", short),
        (5, "most-allocated", short),
        (2, "kube-default", RECHECK_TIMINGS),
        (4, "most-allocated", RECHECK_TIMINGS),
    ]


def replay_seeded(seed: int, strategy: str, raw: Any) -> Any:
    """The replay of ``seeded_autoscaled(seed, raw)`` under cluster-autoscaler with ``strategy``."""
    from analyzer.replay.engine import Strategy, replay
    from analyzer.scheduling.strategies import load_strategy

    auto, groups, settings = seeded_autoscaled(seed, raw)
    return replay(
        auto, Strategy(strategy, load_strategy(strategy)), seed, autoscaler=(groups, settings)
    )


def assert_same_replay(fast: Any, plain: Any) -> None:
    """Two replays under cluster-autoscaler equal: every record of the autoscaler (presence,
    scale-ups, removals, evictions, every (time, reasons) entry, the counters), every pod's
    node, placement time and wait, the refusals and the evictions."""
    import numpy as np

    assert fast.autoscaler == plain.autoscaler
    assert np.array_equal(fast.node, plain.node)
    assert np.array_equal(fast.placed_at, plain.placed_at)
    assert np.array_equal(fast.wait, plain.wait)
    assert fast.refusals == plain.refusals and fast.evicted == plain.evicted


def random_ask(rng: Any, state: Any, case: int) -> Any:
    """A pod's demand for the first-fit walks' random states: random cpu and memory; every
    third case exactly one node's free room (the comparison's boundary); every fiftieth also
    a resource no node offers (it fits nowhere)."""
    from analyzer.scheduling.state import make_demand

    ask = {"cpu": int(rng.integers(1, 2500)), "memory": int(rng.integers(1, 3 * 2**30))}
    if case % 3 == 0:
        free = state.allocatable - state.requested
        k = int(rng.integers(0, state.node_count))
        cpu, memory = state.index_of("cpu"), state.index_of("memory")
        assert cpu is not None and memory is not None
        ask = {"cpu": max(1, int(free[k, cpu])), "memory": max(1, int(free[k, memory]))}
    if case % 50 == 0:
        ask["example.com/fpga"] = 1
    return make_demand(state.resources, ask, ask, name="p", namespace="d")


def after_each_pass(
    seed: int,
    strategy: str,
    raw: Any,
    levers: dict[tuple[Any, str], Any],
    monkeypatch: Any,
    *,
    loop_state: bool = True,
) -> tuple[list[tuple[Any, ...]], list[tuple[int, int, int]], Any]:
    """The seeded cluster (``seeded_autoscaled``) replayed under cluster-autoscaler with the
    module attributes ``levers`` set (``{(module, name): value}``): the loop's state after every
    pass, run or stood (its reasons and the summary's, in order, the deadlines in order, the
    unneeded nodes, both generations of the hints, ``last_pass``), the (over the threshold,
    blocked, no place for a first pod) counts of each pass that stood at a deadline
    (``autoscale_expiry.expire``), and the result. The candidates limit is compared only where
    it stopped the pass: only then is it read (``stands``), and a pass that stands keeps the
    limit of the last pass run, computed from the unneeded count before that pass (a pass run
    now would compute it from that pass's count; both let it find what it found). ``loop_state``
    False leaves out what only says which of the loop's paths answered: ``dirty``."""
    from analyzer.replay import (
        autoscale_expiry,
        autoscale_loop,
        autoscale_scaledown,
        autoscale_settle,
    )
    from analyzer.replay.engine import Strategy, replay
    from analyzer.scheduling.strategies import load_strategy

    auto, groups, settings = seeded_autoscaled(seed, raw)
    seen: list[tuple[Any, ...]] = []
    fired: list[tuple[int, int, int]] = []
    update, skipped_at = autoscale_scaledown.update_unneeded, autoscale_settle.skipped_at
    expire = autoscale_expiry.expire

    def state(ca: Any, now: int, run: bool) -> None:
        summary = ca.sims.summary
        limit, stopped, added = ca.last_pass
        head: tuple[Any, ...] = ((limit if stopped else None, stopped, added),)
        if loop_state:
            head = (ca.dirty if run else None, *head)
        seen.append((
            now, *head, ca.hints_stable, ca.last_unneeded, list(ca.outcomes), dict(ca.unneeded),
            list(ca.recheck.deadlines.items()), dict(ca.hints.current), dict(ca.hints.old),
            list(ca.record.reasons[-1][1].items()),
            list(summary.reasons.items()) if summary is not None else None,
            summary.blocked if summary is not None and loop_state else None,
        ))  # fmt: skip

    def update_then(ca: Any, now: int) -> None:
        update(ca, now)
        state(ca, now, True)

    def skipped_at_then(ca: Any, run: int) -> None:
        skipped_at(ca, run)
        state(ca, run, False)

    def counted(
        ca: Any, over: list[int], blocked: list[int], limit: int, now: int, inert: Any = ()
    ) -> None:
        fired.append((len(over), len(blocked), len(inert)))
        expire(ca, over, blocked, limit, now, inert)

    with monkeypatch.context() as m:
        m.setattr(autoscale_loop, "update_unneeded", update_then)
        m.setattr(autoscale_loop, "skipped_at", skipped_at_then)
        m.setattr(autoscale_settle, "skipped_at", skipped_at_then)
        m.setattr(autoscale_expiry, "expire", counted)
        for (module, name), value in levers.items():
            m.setattr(module, name, value)
        result = replay(auto, Strategy(strategy, load_strategy(strategy)), seed,
                        autoscaler=(groups, settings))  # fmt: skip
    return seen, fired, result


def same_after_each_pass(fast: list[Any], full: list[Any]) -> None:
    """Two ``after_each_pass`` state lists are equal pass by pass (the first differing pass's
    index in the failure)."""
    assert len(fast) == len(full)
    for i, (x, y) in enumerate(zip(fast, full, strict=True)):
        assert x == y, i
