"""Facts every ``analyzer autoscale`` answer must keep, on seeded random clusters (3 seeds, 12
nodes): a removed node is removable; no pod moves to a removed node or to its own node; after
the moves no destination holds more cpu or memory requests than it has; utilisation is a finite
ratio ≥ 0 here (no DaemonSet allowances); the removal order lists empty nodes first."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from autoscale_cases import by_name, node, pod, run

NOW = "2026-11-01T12:00:00Z"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_answers_keep_their_invariants(tmp_path: Path, seed: int) -> None:
    """The invariants above, on one random cluster."""
    rng = random.Random(seed)
    nodes = {f"n{i}": {"cpu": 4000, "memory": 8 * 2**30} for i in range(12)}
    pods: dict[str, dict[str, object]] = {}
    for name in nodes:
        room = 4000  # the cluster starts within its capacity
        for j in range(rng.randint(0, 4)):
            cpu = rng.randint(100, 1500)
            if cpu > room:
                break
            room -= cpu
            pods[f"{name}-p{j}"] = {
                "cpu": cpu,
                "memory": rng.randint(1, 2048) * 2**20,
                "owner": ["ReplicaSet", "rs", "apps/v1"],
                "node": name,
            }
    scenario = {
        "autoscaler": "cluster-autoscaler",
        "now": NOW,
        "options": {"max-drain-parallelism": 5},
        "nodes": [node(n, f) for n, f in nodes.items()],
        "pods": [pod(p, f, NOW, str(f["node"])) for p, f in pods.items()],
    }
    result = run(tmp_path, scenario)
    got = by_name(result)
    removed = set(result["removed"])
    assert removed <= {n for n, d in got.items() if d["removable"]}
    load = {n: [0, 0] for n in nodes}
    for facts in pods.values():
        load[str(facts["node"])][0] += int(str(facts["cpu"]))
        load[str(facts["node"])][1] += int(str(facts["memory"]))
    removable = {n for n, d in got.items() if d["removable"]}
    for name, decision in got.items():
        assert decision["utilization"] is not None and decision["utilization"] >= 0
        assert name not in decision["destinations"].values()
    # a pod moved onto a node simulated later moves again with it: follow each pod to its end
    for key, facts in pods.items():
        origin = end = str(facts["node"])
        seen = {end}
        while f"default/{key}" in got[end]["destinations"]:
            end = got[end]["destinations"][f"default/{key}"]
            assert end not in seen  # never back to a node it left
            seen.add(end)
        assert end == origin or end not in removable
        for k, resource in enumerate(("cpu", "memory")):
            load[end][k] += int(str(facts[resource]))
            load[origin][k] -= int(str(facts[resource]))
    for name, (cpu, memory) in load.items():
        if name not in removable:
            assert cpu <= nodes[name]["cpu"] and memory <= nodes[name]["memory"], name
    empties = [n for n in result["removed"] if got[n]["empty"]]
    assert result["removed"][: len(empties)] == empties
