"""The replay with percentageOfNodesToScore reproduces a plain loop over kube-scheduler's node
tree, placement for placement, on three clusters above 100 nodes.

The reference (``reference`` below) is written here, independently of ``analyzer.replay``: it
walks the events itself, keeps the node tree as zone lists (initial nodes by name, joins
appended, leaving nodes removed), and for each pod walks the list from the start index, filtering
with ``Profile.evaluate``'s mask, stops at K feasible nodes (upstream's formula, written out
again), advances the index by the nodes it processed, scores only those K (normalised over them:
``Profile.evaluate`` with them as the mask) and picks the highest, ties uniform in ascending row
order with the replay's seeded generator.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest
from replay_fixtures import GI, N, P, build

from analyzer.core.snapshot import Snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import ReplayInput, prepare
from analyzer.scheduling import load_strategy
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.strategies import document_profile, strategy_config
from analyzer.whatif.notes import sampling_notes

ZONE = "topology.kubernetes.io/zone"
SOFT = [{"key": "batch", "value": "yes", "effect": "PreferNoSchedule"}]
HARD = [{"key": "draining", "value": "yes", "effect": "NoSchedule"}]


def cluster(
    seed: int, pools: Sequence[tuple[str, int, int, int]], pods_per_node: float
) -> Snapshot:
    """Pool-ordered node names (``big-000``, ``small-000``), zones round robin (the last pool has
    no zone label), a few nodes joining late, a few ``NoSchedule`` nodes (no pod tolerates them:
    they stay empty) leaving mid-window, every third node of the first pool soft-tainted; pods
    arriving at distinct seconds with random sizes and lifetimes, all of which fit."""
    rng = np.random.default_rng(seed)
    nodes: list[N] = []
    labels: list[str] = []
    taints: list[str] = []
    for p, (pool, count, cpu, memory) in enumerate(pools):
        for i in range(count):
            late = i % 17 == 5
            leaving = i % 23 == 7
            first = 10 + (i % 10) + 0.5 * p if late else None
            last = 35 + (i % 7) + 0.25 * p if leaving else None
            nodes.append(N(f"{pool}-{i:03d}", cpu, memory * GI, first=first, last=last))
            zoned = p < len(pools) - 1
            labels.append(json.dumps({ZONE: f"z{i % 3}"} if zoned else {}))
            taint = HARD if leaving else SOFT if (p == 0 and i % 3 == 0) else []
            taints.append(json.dumps(taint))
    count = int(len(nodes) * pods_per_node)
    starts = np.sort(rng.choice(np.arange(1, 55 * 60), size=count, replace=False)) / 60.0
    pods = []
    for k, start in enumerate(starts.tolist()):
        life = float(rng.integers(5, 40))
        end = start + life + 1 / 120 if rng.random() < 0.6 else None  # half-second offset
        pods.append(
            P(
                f"pod-{k:04d}",
                nodes[k % len(nodes)].name,
                cpu=int(rng.choice([250, 500, 1000, 2000])),
                memory=int(rng.choice([1, 2, 4])) * GI,
                start=start,
                end=end if end is None or end < 60 else None,
            )
        )
    snapshot = build(nodes, pods)
    snapshot.nodes["labels"] = labels
    snapshot.nodes["taints"] = taints
    return snapshot


def wanted(n: int, percentage: int) -> int:
    """numFeasibleNodesToFind, written out again from schedule_one.go."""
    if n < 100:
        return n
    if percentage == 0:
        percentage = max(50 - n // 125, 5)
    return max(n * percentage // 100, 100)


def reference(
    inp: ReplayInput, snapshot: Snapshot, profile: Profile, percentage: int, seed: int
) -> tuple[list[int], int]:
    """Each pod's node (-1: never placed) by the plain loop; and how many choices were made on
    fewer nodes than were feasible (the sampling's reach)."""
    state = inp.fresh_state()
    names = list(inp.node_names)
    row = {name: i for i, name in enumerate(names)}
    zone = [json.loads(text).get(ZONE, "") for text in snapshot.nodes["labels"]]
    active = np.zeros(len(names), dtype=bool)
    zones: dict[str, list[int]] = {}
    t0 = snapshot.start
    events: list[tuple[int, int, int]] = []  # (ns, kind 0 depart/1 leave/2 join/3 arrive, item)
    for _, node in snapshot.nodes.iterrows():
        first = int((node["first_seen"] - t0).value)
        last = int((node["last_seen"] - t0).value)
        if first > 0:
            events.append((first, 2, row[node["node"]]))
        else:
            active[row[node["node"]]] = True
        if last < int((snapshot.end - t0).value):
            events.append((last, 1, row[node["node"]]))
    uid_row = {uid: i for i, uid in enumerate(inp.pod_uids)}
    for _, pod in snapshot.pods.iterrows():
        events.append((int((pod["scheduled"] - t0).value), 3, uid_row[pod["uid"]]))
        if not isinstance(pod["finished"], type(None)) and str(pod["finished"]) != "NaT":
            events.append((int((pod["finished"] - t0).value), 0, uid_row[pod["uid"]]))
    events.sort()
    for node in sorted(np.flatnonzero(active).tolist(), key=lambda r: names[r]):
        zones.setdefault(zone[node], []).append(node)
    rng = np.random.default_rng(seed)
    start = 0
    placed = [-1] * inp.pod_count
    narrowed = 0
    for ns, kind, item in events:
        now = (t0.value + ns) / 1e9
        if kind == 0:
            if placed[item] >= 0:
                state.unbind(placed[item], inp.demands[item])
        elif kind == 1:
            active[item] = False
            zones[zone[item]].remove(item)
            if not zones[zone[item]]:
                del zones[zone[item]]
        elif kind == 2:
            active[item] = True
            zones.setdefault(zone[item], []).append(item)
        else:
            listed: list[int] = []
            lists = list(zones.values())
            for depth in range(max(len(z) for z in lists)):
                for z in lists:
                    if depth < len(z):
                        listed.append(z[depth])
            n = len(listed)
            demand = inp.demands[item]
            feasible = profile.evaluate(state, demand, now, active).feasible
            k = wanted(n, percentage)
            found: list[int] = []
            processed = 0
            for i in range(n):
                node = listed[(start + i) % n]
                processed += 1
                if feasible[node]:
                    found.append(node)
                    if len(found) == k:
                        break
            start = (start + processed) % n
            assert found, f"pod {item} fits nowhere: the reference expects every pod to fit"
            narrowed += len(found) < int(feasible.sum())
            mask = np.zeros(len(names), dtype=bool)
            mask[found] = True
            total = profile.evaluate(state, demand, now, mask).total
            candidates = sorted(found)
            best = max(int(total[c]) for c in candidates)
            ties = [c for c in candidates if int(total[c]) == best]
            choice = ties[0] if len(ties) == 1 else ties[int(rng.integers(len(ties)))]
            state.bind(choice, demand)
            placed[item] = choice
    return placed, narrowed


CLUSTERS = [
    # (seed, pools (name, count, cpu millicores, memory GiB), pods per node, strategy)
    (1, [("big", 40, 16000, 64), ("small", 80, 4000, 16)], 3.0, "most-allocated"),
    (2, [("compute", 90, 32000, 64), ("general", 90, 16000, 64), ("edge", 20, 8000, 32)], 2.0,
     "kube-default"),
    (3, [("general", 150, 16000, 64), ("memory", 150, 8000, 64)], 2.0, "percentage-50"),
]  # fmt: skip


def _profile(strategy: str) -> tuple[Profile, int]:
    if strategy.startswith("percentage-"):
        document = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 100,  # the profile's own value wins (upstream)
            "profiles": [
                {
                    "schedulerName": "default-scheduler",
                    "percentageOfNodesToScore": int(strategy.split("-")[1]),
                    "pluginConfig": [
                        {
                            "name": "NodeResourcesFit",
                            "args": {"scoringStrategy": {"type": "MostAllocated"}},
                        }
                    ],
                }
            ],
        }
        profile = document_profile(document, strategy)
        return profile, profile.percentage_of_nodes_to_score
    assert strategy_config(strategy).profiles[0].percentage_of_nodes_to_score == 0
    return load_strategy(strategy), 0


@pytest.mark.parametrize(("seed", "pools", "density", "strategy"), CLUSTERS)
def test_sampled_replay_reproduces_the_node_tree_loop(
    seed: int, pools: list[tuple[str, int, int, int]], density: float, strategy: str
) -> None:
    snapshot = cluster(seed, pools, density)
    inp = prepare(snapshot)
    profile, percentage = _profile(strategy)
    result = replay(inp, Strategy(strategy, profile), seed=seed)
    expected, narrowed = reference(inp, snapshot, profile, percentage, seed)
    assert not result.waited.any()
    assert result.node.tolist() == expected
    # not vacuous: the sample was smaller than the feasible set for many pods, and scoring
    # every node places pods elsewhere
    assert narrowed > inp.pod_count // 20
    full, _ = reference(inp, snapshot, profile, 100, seed)
    moved = sum(a != b for a, b in zip(full, expected, strict=True))
    assert moved > inp.pod_count // 20


def test_the_reference_path_samples_the_same_way() -> None:
    """``rescore_all`` (``Profile.evaluate`` for every pod, the path of user plugins) places
    like the loop too."""
    seed, pools, density, strategy = CLUSTERS[0]
    snapshot = cluster(seed, pools, density)
    inp = prepare(snapshot)
    profile, percentage = _profile(strategy)
    result = replay(inp, Strategy(strategy, profile), seed=seed, rescore_all=True)
    expected, _ = reference(inp, snapshot, profile, percentage, seed)
    assert result.node.tolist() == expected


def test_percentage_100_scores_every_node() -> None:
    """``percentageOfNodesToScore: 100`` turns the sampling off: the replay is the loop with K =
    every node."""
    seed, pools, density, _ = CLUSTERS[0]
    snapshot = cluster(seed, pools, density)
    inp = prepare(snapshot)
    profile, _ = _profile("percentage-100")
    assert profile.percentage_of_nodes_to_score == 100
    result = replay(inp, Strategy("all", profile), seed=seed)
    expected, narrowed = reference(inp, snapshot, profile, 100, seed)
    assert narrowed == 0
    assert result.node.tolist() == expected


def test_whatif_notes_say_how_many_nodes_each_strategy_scores() -> None:
    big = build([N(f"n-{i:03d}") for i in range(200)], [], minutes=2)
    default, _ = _profile("most-allocated")
    full, _ = _profile("percentage-100")
    notes = sampling_notes(big, [Strategy("most-allocated", default), Strategy("all", full)])
    # 200 nodes: adaptive 50 - 200/125 = 49 % -> 98, at least 100
    assert notes[0].startswith("most-allocated: with up to 200 nodes present, only the first 100 ")
    assert "inferred" in notes[0]
    assert notes[1] == "all: every feasible node is scored (percentageOfNodesToScore: 100)."
    small = build([N(f"n-{i:03d}") for i in range(99)], [], minutes=2)
    assert sampling_notes(small, [Strategy("most-allocated", default)]) == [
        "percentageOfNodesToScore: with 99 nodes (fewer than 100) every feasible node is "
        "scored, as kube-scheduler does."
    ]
