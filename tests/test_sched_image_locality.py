"""ImageLocality: upstream's score cases, its version switches, a plain reference loop, replays.

Upstream (pkg/scheduler/framework/plugins/imagelocality): per container whose normalised image
the node lists, ``int64(float64(size) × NumNodes / totalNumNodes)``; the sum is clamped to
[23 MiB, 1000 MiB × containers] and scaled to ``100 × (sum − 23 MiB) / (max − 23 MiB)``. The
cases below are upstream's TestImageLocalityPriority (current version: init containers counted,
threshold per container), each worked out by hand in its comment (MB = MiB).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.replay.scoring import ScoreCache
from analyzer.scheduling import ClusterState, load_strategy, make_demand
from analyzer.scheduling.plugins.imagelocality import ImageLocality, normalized_image_name
from analyzer.scheduling.scenario import build_scenario
from analyzer.scheduling.versions import parse_version
from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.notes import constraint_notes

MB = 1024 * 1024
ONLY = {
    "profiles": [
        {
            "plugins": {
                "multiPoint": {"enabled": [{"name": "ImageLocality"}], "disabled": [{"name": "*"}]}
            }
        }
    ]
}


def node(name: str, images: list[tuple[list[str], int]]) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "images": [{"names": names, "sizeBytes": size * MB} for names, size in images],
        },
    }


def pod(images: list[str], init: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": f"c{i}", "image": c} for i, c in enumerate(images)],
            "initContainers": [{"name": f"i{i}", "image": c} for i, c in enumerate(init)],
        },
    }


N_40_300_2000 = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
    (["gcr.io/2000:latest"], 2000),
]
N_250_10 = [(["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10)]
N_600_40_900 = [(["gcr.io/600:latest"], 600), (["gcr.io/40:latest"], 40), (["gcr.io/900:latest"], 900)]  # fmt: skip
N_300_600_900 = [(["gcr.io/300:latest"], 300), (["gcr.io/600:latest"], 600), (["gcr.io/900:latest"], 900)]  # fmt: skip
N_4000_30 = [(["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30)]
N_20_30_40 = [(["gcr.io/20:latest"], 20), (["gcr.io/30:latest"], 30), (["gcr.io/40:latest"], 40)]

CASES = [
    # 40 is on node1 only: 40/2 = 20 MB < 23 → 0; 250 on node2 only: 250/2 = 125 MB,
    # 100 × (125 − 23) / (2 × 1000 − 23) = 10200 / 1977 = 5.2 → 5
    ("spread on two nodes", pod(["gcr.io/40", "gcr.io/250"]), [N_40_300_2000, N_250_10], [0, 5]),
    # node1 has both: (40 + 300)/2 = 170 MB → 100 × 147 / 1977 = 7.4 → 7; node2 neither → 0
    ("both on one node", pod(["gcr.io/40", "gcr.io/300"]), [N_40_300_2000, N_250_10], [7, 0]),
    # 4000/2 = 2000 MB ≥ the 2000 MB cap → 100; 10/2 = 5 MB → 0
    ("above the cap", pod(["gcr.io/10", "gcr.io/4000"]), [N_4000_30, N_250_10], [100, 0]),
    # a third node without images: 4000/3 = 1333.33 MB → 100 × 1310.33 / 1977 = 66.3 → 66
    ("3 nodes", pod(["gcr.io/10", "gcr.io/4000"]), [N_4000_30, N_250_10, []], [66, 0, 0]),
    # 600 and 900 are on 2 of 3 nodes, 300 on 1: node1 (600 + 900) × 2/3 = 1000 MB →
    # 100 × 977 / 2977 = 32.8 → 32; node2 300/3 + 1000 = 1100 MB → 100 × 1077 / 2977 = 36.2 → 36
    (
        "three large images",
        pod(["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
        [N_600_40_900, N_300_600_900, []],
        [32, 36, 0],
    ),
    # 30 on both nodes (30 × 2/2 = 30 MB), 40 on node1 only (20 MB): 50 MB → 100 × 27 / 1977 = 1.4
    # → 1; node2: 30 MB → 100 × 7 / 1977 = 0.35 → 0
    ("small images", pod(["gcr.io/30", "gcr.io/40"]), [N_20_30_40, N_4000_30], [1, 0]),
    # the init container's 300 (on node1 only: 150 MB) counts and makes 2 containers:
    # 100 × 127 / 1977 = 6.4 → 6; node2 has 30 only: 15 MB < 23 → 0
    (
        "init containers",
        pod(["gcr.io/30"], ("gcr.io/300",)),
        [N_40_300_2000, N_20_30_40],
        [6, 0],
    ),
]


def scores(doc: dict[str, Any]) -> list[int]:
    evaluation = build_scenario(doc).evaluate()
    return [int(v) for v in evaluation.scores["ImageLocality"]]


@pytest.mark.parametrize(
    ("name", "incoming", "nodes", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_upstream_cases(
    name: str, incoming: dict[str, Any], nodes: list[Any], expected: list[int]
) -> None:
    doc = {
        "scheduler": ONLY,
        "nodes": [node(f"node{i + 1}", images) for i, images in enumerate(nodes)],
        "pod": incoming,
    }
    assert scores(doc) == expected


def test_normalized_image_name() -> None:
    # upstream's TestNormalizedImageName
    assert normalized_image_name("root") == "root:latest"
    assert normalized_image_name("gcr.io:5000/root") == "gcr.io:5000/root:latest"
    assert normalized_image_name("root:tag") == "root:tag"
    digest = "root@sha256:" + "ab" * 32
    assert normalized_image_name(digest) == digest


def test_version_switches() -> None:
    two = [node("node1", N_40_300_2000), node("node2", N_250_10)]
    doc = {"scheduler": ONLY, "nodes": two, "pod": pod(["gcr.io/40", "gcr.io/250"])}
    # 1.19–1.29: the cap is 1000 MB per app container; init containers are not read. The init
    # case above: only gcr.io/30 (not on node1; node2 of that case lists it) counts
    init = {
        "scheduler": ONLY,
        "nodes": [node("node1", N_40_300_2000), node("node2", N_20_30_40)],
        "pod": pod(["gcr.io/30"], ("gcr.io/300",)),
    }
    assert scores({**init, "kubernetesVersion": "1.29"}) == [0, 0]
    assert scores({**init, "kubernetesVersion": "1.30"}) == [6, 0]
    # 1.17/1.18: a fixed 1000 MB cap (upstream's 2020 test): 125 MB → 100 × 102 / 977 = 10.4
    # → 10 on node2
    assert scores({**doc, "kubernetesVersion": "1.18"}) == [0, 10]
    assert scores({**doc, "kubernetesVersion": "1.19"}) == [0, 5]
    # ≤ 1.16: MaxPriority 10: 10 × 102 / 977 = 1.04 → 1
    assert scores({**doc, "kubernetesVersion": "1.16"}) == [0, 1]


def test_no_image_data_scores_zero_everywhere() -> None:
    bare = {"metadata": {"name": "a"}, "status": {"allocatable": {"cpu": "1", "memory": "1Gi"}}}
    doc = {"scheduler": ONLY, "nodes": [bare, {**bare, "metadata": {"name": "b"}}]}
    assert scores({**doc, "pod": pod(["gcr.io/40"])}) == [0, 0]


def test_bad_image_lists_name_the_field() -> None:
    doc = {"scheduler": ONLY, "pod": pod(["x"])}
    broken = node("n", [])
    broken["status"]["images"] = [{"names": ["x:latest"], "sizeBytes": "big"}]
    with pytest.raises(InputError, match=r"nodes\[0\]\.status\.images\[0\]\.sizeBytes"):
        build_scenario({**doc, "nodes": [broken]})
    with pytest.raises(InputError, match="takes no arguments"):
        build_scenario(
            {
                **doc,
                "nodes": [node("n", [])],
                "scheduler": {
                    **ONLY,
                    "profiles": [
                        {
                            **ONLY["profiles"][0],
                            "pluginConfig": [{"name": "ImageLocality", "args": {"weight": 3}}],
                        }
                    ],
                },
            }
        )


def reference(
    nodes: list[dict[str, int]], images: list[str], present: list[bool], top: int = 100
) -> list[int]:
    """Upstream's Score per node, written as its loops (no numpy), on the present nodes' counts."""
    total = sum(present)
    out = []
    for own in nodes:
        summed = 0
        for image in images:
            name = image if image.rfind(":") > image.rfind("/") else image + ":latest"
            if name in own:
                holders = sum(1 for n, p in zip(nodes, present, strict=True) if p and name in n)
                summed += int(float(own[name]) * (holders / total))
        high = 1000 * MB * len(images)
        clamped = min(max(summed, 23 * MB), high)
        out.append(top * (clamped - 23 * MB) // (high - 23 * MB))
    return out


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_vectorised_equals_reference_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    catalog = [f"reg.io/app{i}" for i in range(8)] + ["redis", "reg.io:5000/db:7"]
    count = 25
    node_images = []
    for _ in range(count):
        chosen = rng.choice(len(catalog), size=int(rng.integers(0, 6)), replace=False)
        own = {}
        for k in chosen:
            name = normalized_image_name(catalog[int(k)])
            # sizes not multiples of MB: the float truncation is exercised
            own[name] = int(rng.integers(1, 1500 * MB))
        node_images.append(own)
    state = ClusterState.from_nodes(
        [f"n{i}" for i in range(count)],
        [{"cpu": 1000, "memory": 2**30, "pods": 10}] * count,
        images=node_images,
    )
    plugin = ImageLocality(None, parse_version("1.36"))
    for trial in range(40):
        present = rng.random(count) < 0.8
        present[0] = True
        state.present = present if trial % 2 else None
        images = [catalog[int(k)] for k in rng.integers(0, len(catalog), int(rng.integers(1, 4)))]
        demand = make_demand(
            ("cpu", "memory"), {}, {}, name="p", namespace="t", images=tuple(images)
        )
        seen = [True] * count if state.present is None else present.tolist()
        assert plugin.score(state, demand, 0.0).tolist() == reference(node_images, images, seen)


def with_images(snapshot: Any, sizes: dict[str, int]) -> Any:
    """The snapshot with each workload's image on the nodes its pods really ran on."""
    pods, nodes = snapshot.pods.copy(), snapshot.nodes.copy()
    image = [f"reg.io/{w}:1" for w in pods["workload_name"].fillna("none")]
    pods["container_images"] = [
        json.dumps({"containers": [i], "initContainers": []}) for i in image
    ]
    held: dict[str, dict[str, int]] = {str(n): {} for n in nodes["node"]}
    for name, where in zip(image, pods["node"], strict=True):
        if isinstance(where, str) and where in held:
            held[where][name] = sizes.get(name, 400 * MB)
    nodes["images"] = [
        json.dumps([{"names": [k], "sizeBytes": v} for k, v in sorted(held[str(n)].items())])
        for n in nodes["node"]
    ]
    return replace(snapshot, pods=pods, nodes=nodes)


@pytest.fixture(scope="module")
def churned() -> Any:
    # pods come and go (churn), and two nodes join late and one leaves early: ImageLocality's
    # spread moves with the present nodes
    spec = SyntheticSpec(seed=7, nodes=12, days=1, step=300, churn=0.8, gpu_pool=False)
    snapshot = generate(spec).snapshot
    nodes = snapshot.nodes.copy()
    start = snapshot.start
    nodes.loc[[9, 10], "first_seen"] = start + pd.Timedelta(hours=6)
    nodes.loc[11, "last_seen"] = start + pd.Timedelta(hours=14)
    return replace(snapshot, nodes=nodes)


def _without_images(profile: Any) -> Any:
    return replace(
        profile, scorers=[w for w in profile.scorers if w.plugin.name != "ImageLocality"]
    )


def test_replay_without_image_data_places_as_before(churned: Any) -> None:
    # no node lists images: ImageLocality scores 0 everywhere, so kube-default places every pod
    # where the same profile without the plugin does (today's placements), and the notes say so
    inp = prepare(churned)
    kube = load_strategy("kube-default")
    with_plugin = replay(inp, Strategy("kube-default", kube), seed=2)
    without = replay(inp, Strategy("bare", _without_images(kube)), seed=2)
    assert np.array_equal(with_plugin.node, without.node)
    assert np.array_equal(with_plugin.placed_at, without.placed_at)
    notes = constraint_notes(churned, [Strategy("kube-default", kube)])
    assert any(n.startswith("ImageLocality: no image data") for n in notes)


def test_replay_with_image_data_matches_the_core_and_moves_pods(churned: Any) -> None:
    # the cached fixed scores (recomputed when nodes join or leave) choose exactly what
    # Profile.evaluate over the present nodes chooses, pod for pod; and the images matter
    snapshot = with_images(churned, {})
    inp = prepare(snapshot)
    assert inp.template.node_images and any(d.images for d in inp.demands)
    assert (inp.node_join > inp.start).any() or (inp.node_leave < inp.end).any()
    kube = Strategy("kube-default", load_strategy("kube-default"))
    fast = replay(inp, kube, seed=4)
    slow = replay(inp, kube, seed=4, rescore_all=True)
    assert np.array_equal(fast.node, slow.node)
    assert np.array_equal(fast.placed_at, slow.placed_at)
    for name in fast.segments:
        assert np.array_equal(fast.segments[name], slow.segments[name])
    bare = replay(inp, Strategy("bare", _without_images(kube.profile)), seed=4)
    assert int((bare.node != fast.node).sum()) > 0
    notes = constraint_notes(snapshot, [kube])
    assert any(n.startswith("ImageLocality (kube-default)") for n in notes)


def test_cache_follows_nodes_joining_and_leaving() -> None:
    # 4 empty equal nodes; a 900 MB image on n0 and n1. With all 4 present: 900 × 2/4 = 450 MB
    # → 100 × 427 / 977 = 43 on n0/n1. After n2 and n3 leave: 900 × 2/2 = 900 MB →
    # 100 × 877 / 977 = 89. The cache must see the change (the core reads state.present)
    big = {"reg.io/app:1": 900 * MB}
    state = ClusterState.from_nodes(
        [f"n{i}" for i in range(4)],
        [{"cpu": 4000, "memory": 8 * 2**30, "pods": 10}] * 4,
        images=[big, big, {}, {}],
    )
    active = np.ones(4, dtype=bool)
    state.present = active
    profile = load_strategy("kube-default")
    cache = ScoreCache(profile, state, active)
    demand = make_demand(
        ("cpu", "memory"), {"cpu": 100}, {"cpu": 100}, name="p", namespace="t",
        images=("reg.io/app:1",),
    )  # fmt: skip
    plugin = next(w.plugin for w in profile.scorers if w.plugin.name == "ImageLocality")
    assert plugin.score(state, demand, 0.0).tolist() == [43, 43, 0, 0]
    rng = np.random.default_rng(0)
    assert cache.choose(b"k", demand, 0.0, rng) in (0, 1)
    active[[2, 3]] = False
    cache.touch(2)
    cache.touch(3)
    assert plugin.score(state, demand, 0.0).tolist() == [89, 89, 0, 0]
    cache.choose(b"k", demand, 0.0, rng)
    members, fixed = cache.fixed[(demand.images, demand.init_images)]
    assert members == 2 and fixed is not None and fixed.tolist() == [89, 89, 0, 0]


def test_cli_explain_shows_the_sum(tmp_path: Path) -> None:
    doc = {
        "scheduler": ONLY,
        "nodes": [node("node1", N_40_300_2000), node("node2", N_250_10)],
        "pod": pod(["gcr.io/40", "gcr.io/300"]),
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(main, ["score", str(path)])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [n["scores"]["ImageLocality"] for n in out["nodes"]] == [7, 0]
    explained = CliRunner().invoke(main, ["score", str(path), "--explain"])
    assert explained.exit_code == 0, explained.output
    # node1: 40 MB × 1/2 = 20971520 B and 300 MB × 1/2 = 157286400 B; sum 178257920 B
    assert "178257920" in explained.stdout
    assert "gcr.io/300:latest" in explained.stdout


def test_legacy_policy_priority() -> None:
    # a 1.16 Policy naming ImageLocalityPriority (weight 2) scores it on the 0–10 scale:
    # node2 holds gcr.io/250 (125 MB after the spread): 10 × 102 / 977 = 1.04 → 1, × 2 = 2
    policy = {"kind": "Policy", "priorities": [{"name": "ImageLocalityPriority", "weight": 2}]}
    doc = {
        "kubernetesVersion": "1.16",
        "scheduler": policy,
        "nodes": [node("node1", N_40_300_2000), node("node2", N_250_10)],
        "pod": pod(["gcr.io/40", "gcr.io/250"]),
    }
    evaluation = build_scenario(doc).evaluate()
    assert evaluation.scores["ImageLocalityPriority"].tolist() == [0, 1]
    assert evaluation.total.tolist() == [0, 2]


def test_example_scenario() -> None:
    # examples/score-image-locality.yaml works the numbers out in its comments
    example = Path(__file__).parent.parent / "examples" / "score-image-locality.yaml"
    result = CliRunner().invoke(main, ["score", str(example)])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert {n["name"]: n["scores"]["ImageLocality"] for n in out["nodes"]} == {
        "node-a": 32,
        "node-b": 36,
        "node-c": 0,
    }
    assert out["chosen"] == "node-b"


def test_collect_kube_objects_gives_node_and_pod_images() -> None:
    # a Node object with status.images and a ReplicaSet template with container images: the
    # snapshot's nodes.images and pods.container_images take them (field source "objects"); a pod
    # whose images the metrics gave keeps them ("metrics"); a node without an object has none
    from analyzer.collect.enrich import enrich_snapshot
    from analyzer.collect.kube_objects import KubeObjects, add_object
    from analyzer.core.snapshot import SnapshotMeta, make_snapshot
    from analyzer.core.snapshot_schema import empty_table

    pods = pd.DataFrame(
        {
            "uid": ["u1", "u2"],
            "namespace": ["shop", "shop"],
            "name": ["web-5d9f8-aaaaa", "web-5d9f8-bbbbb"],
            "owner_kind": ["ReplicaSet", "ReplicaSet"],
            "owner_name": ["web-5d9f8", "web-5d9f8"],
            "workload_kind": ["Deployment", "Deployment"],
            "workload_name": ["web", "web"],
            "priority_class": ["", ""],
            "container_images": ["{}", '{"containers": ["web:2"], "initContainers": []}'],
        }
    )
    for col in (
        "requests:cpu",
        "requests:memory",
        "nonzero_requests:cpu",
        "nonzero_requests:memory",
    ):
        pods[col] = 0
    nodes = pd.DataFrame({"node": ["n1", "n2"], "allocatable:cpu": 1, "allocatable:memory": 1})
    meta = SnapshotMeta("http://prom", "2026-11-01T00:00:00Z", "2026-11-02T00:00:00Z", 60,
                        "2026-11-02T00:00:00Z", "test")  # fmt: skip
    snapshot = make_snapshot(meta, nodes, pods, empty_table("node_usage"), empty_table("pod_usage"))
    objects = KubeObjects()
    template = {
        "spec": {
            "containers": [{"name": "web", "image": "web:1"}, {"name": "log", "image": "fluent"}],
            "initContainers": [{"name": "init", "image": "busybox"}],
        }
    }
    status = {"images": [{"names": ["web:1", "reg/web@sha256:ab"], "sizeBytes": 300 * MB}]}
    for i, obj in enumerate(
        [
            {
                "kind": "ReplicaSet",
                "metadata": {"name": "web-5d9f8", "namespace": "shop"},
                "spec": {"template": template},
            },
            {"kind": "Node", "metadata": {"name": "n1"}, "status": status},
        ]
    ):
        add_object(objects, obj, f"items[{i}]")
    got, _ = enrich_snapshot(snapshot, objects)
    rows = {r["uid"]: r for r in got.pods.to_dict("records")}
    assert json.loads(rows["u1"]["container_images"]) == {
        "containers": ["web:1", "fluent"],
        "initContainers": ["busybox"],
    }
    assert json.loads(rows["u1"]["field_sources"])["container_images"] == "objects"
    assert json.loads(rows["u2"]["container_images"])["containers"] == ["web:2"]
    assert json.loads(rows["u2"]["field_sources"])["container_images"] == "metrics"
    node_rows = {r["node"]: r for r in got.nodes.to_dict("records")}
    assert json.loads(node_rows["n1"]["images"]) == [
        {"names": ["web:1", "reg/web@sha256:ab"], "sizeBytes": 300 * MB}
    ]
    assert node_rows["n2"]["images"] == "[]"
    assert got.meta.extra["field_sources"]["nodes"]["images"] == {"objects": 1, "none": 1}
    # and the replay reads both: u1's images, n1's image index
    inp = prepare(got)
    assert inp.demands[0].images == ("web:1", "fluent") and inp.demands[0].init_images == (
        "busybox",
    )
    assert inp.template.node_images == [{"web:1": 300 * MB, "reg/web@sha256:ab": 300 * MB}, {}]


def test_collect_metrics_take_image_spec() -> None:
    # kube_pod_container_info's image_spec (the spec image) wins over image (the runtime's)
    from analyzer.collect.pods import _Pod, _spec
    from analyzer.scheduling.plugins.imagelocality import pod_images_json

    pod = _Pod("u")
    pod.containers = {"a": {}, "b": {}}
    pod.init_containers = {"i": {}}
    pod.images = {"a": "nginx:1.25", "i": "busybox"}
    spec = _spec(pod)
    cell = pod_images_json(
        [pod.images.get(c.name, "") for c in spec.containers],
        [pod.images.get(c.name, "") for c in spec.init_containers],
    )
    assert json.loads(cell) == {"containers": ["nginx:1.25", ""], "initContainers": ["busybox"]}
