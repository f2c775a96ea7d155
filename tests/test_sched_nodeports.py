"""NodePorts: upstream's cases, the port index against a plain loop, and replays with host ports.

Upstream (pkg/scheduler/framework/plugins/nodeports, node_ports_test.go): a port is written
"PROTOCOL/hostIP/port" as the upstream test writes it; each case is one pod on a node (the
node's pod holds ``existing``) and the incoming pod asking for ``wanted``. ``fits`` is upstream's
expected Filter status: True = Success, False = Unschedulable with ErrReason. A pod without host
ports is PreFilter Skip (feasible everywhere).
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from reliability_doc import documented_exit
from replay_fixtures import N, P, build

from analyzer.cli import main
from analyzer.core.errors import InputError
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.scheduling import load_strategy
from analyzer.scheduling.host_ports import (
    PortIndex,
    fits,
    host_port,
    host_ports_from_json,
    host_ports_json,
    pod_host_ports,
)
from analyzer.scheduling.plugins.nodeports import ERR_REASON
from analyzer.scheduling.scenario import build_scenario
from analyzer.sources import SyntheticSpec, generate
from analyzer.whatif.notes import constraint_notes

ONLY = {
    "profiles": [
        {
            "plugins": {
                "multiPoint": {"enabled": [{"name": "NodePorts"}], "disabled": [{"name": "*"}]}
            }
        }
    ]
}

# (name, incoming pod's ports, the node's pod's ports, fits) — TestNodePorts, then TestFits
CASES: list[tuple[str, list[str], list[str], bool]] = [
    ("other port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], True),
    ("same udp port", ["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False),
    ("same tcp port", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False),
    ("different host ip", ["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], True),
    ("different protocol", ["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], True),
    ("second udp port conflict", ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"],
     ["UDP/127.0.0.1/8080"], False),
    ("first tcp port conflict", ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
     ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"], False),
    ("first tcp port conflict due to 0.0.0.0 hostIP", ["TCP/0.0.0.0/8001"],
     ["TCP/127.0.0.1/8001"], False),
    ("TCP hostPort conflict due to 0.0.0.0 hostIP", ["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"],
     ["TCP/127.0.0.1/8001"], False),
    ("second tcp port conflict to 0.0.0.0 hostIP", ["TCP/127.0.0.1/8001"],
     ["TCP/0.0.0.0/8001"], False),
    ("second different protocol", ["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], True),
    ("UDP hostPort conflict due to 0.0.0.0 hostIP", ["UDP/127.0.0.1/8001"],
     ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"], False),
    ("non-conflicting ports", ["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/9090"], True),
    ("multiple non-conflicting ports",
     ["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
     ["TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"], True),
    ("same ports on different protocols", ["TCP/127.0.0.1/80"], ["UDP/127.0.0.1/80"], True),
    ("conflicting ports", ["TCP/127.0.0.1/80"], ["TCP/127.0.0.1/80"], False),
    ("multiple ports, some conflicting",
     ["TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"],
     ["TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"], False),
]  # fmt: skip


def _ports(specs: list[str]) -> list[dict[str, Any]]:
    out = []
    for spec in specs:
        protocol, ip, port = spec.split("/")
        out.append({"protocol": protocol, "hostIP": ip, "hostPort": int(port)})
    return out


def pod(name: str, node: str, ports: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "c", "ports": _ports(ports)}], **spec},
    }


def scenario(incoming: dict[str, Any], existing: list[dict[str, Any]]) -> dict[str, Any]:
    node = {"metadata": {"name": "m1"}, "status": {"allocatable": {"pods": "32"}}}
    return {"scheduler": ONLY, "nodes": [node], "pods": existing, "pod": incoming}


@pytest.mark.parametrize(("name", "wanted", "existing", "ok"), CASES, ids=[c[0] for c in CASES])
def test_upstream_cases(name: str, wanted: list[str], existing: list[str], ok: bool) -> None:
    evaluation = build_scenario(
        scenario(pod("p", "", wanted), [pod("e", "m1", existing)])
    ).evaluate()
    assert bool(evaluation.feasible[0]) is ok
    assert evaluation.reasons(0) == ([] if ok else [ERR_REASON])


def test_prefilter_skip_and_sidecars() -> None:
    # "skip filter": a pod without ports passes a node whose pod holds TCP/0.0.0.0/8001
    holder = pod("e", "m1", ["TCP/0.0.0.0/8001"])
    bare = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}
    assert build_scenario(scenario(bare, [holder])).evaluate().feasible[0]
    # a plain init container's hostPort is not the pod's ("non-sidecar initContainer using
    # hostPort": Skip); a sidecar's (restartPolicy Always) is ("... from sidecar initContainer")
    port = {"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}
    for sidecar, ok in ((False, True), (True, False)):
        init: dict[str, Any] = {"name": "i", "ports": [port]}
        if sidecar:
            init["restartPolicy"] = "Always"
        incoming = {"metadata": {"name": "p"}, "spec": {"containers": [], "initContainers": [init]}}
        assert bool(build_scenario(scenario(incoming, [holder])).evaluate().feasible[0]) is ok


def test_sanitising_and_host_network() -> None:
    # empty protocol = TCP, empty hostIP = 0.0.0.0 (HostPortInfo.sanitize); hostPort 0 asks
    # nothing; a hostNetwork pod's containerPort is its host port (API defaulting)
    spec = {
        "containers": [
            {"name": "a", "ports": [{"hostPort": 80}, {"containerPort": 9000}]},
            {"name": "b", "ports": [{"containerPort": 53, "protocol": "UDP", "hostPort": 0}]},
        ]
    }
    assert pod_host_ports(spec, "spec") == (host_port("TCP", "0.0.0.0", 80),)
    assert pod_host_ports({**spec, "hostNetwork": True}, "spec") == (
        host_port("TCP", "0.0.0.0", 80),
        host_port("TCP", "0.0.0.0", 9000),
        host_port("UDP", "0.0.0.0", 53),
    )
    cell = host_ports_json(pod_host_ports(spec, "spec"))
    assert host_ports_from_json(cell, "x") == (host_port("TCP", "0.0.0.0", 80),)
    assert host_ports_from_json("[]", "x") == () == host_ports_from_json("", "x")
    with pytest.raises(InputError, match=r"^pods\.host_ports\[0\]"):
        host_ports_from_json('[["TCP", "0.0.0.0"]]', "pods.host_ports")
    with pytest.raises(InputError, match=r"hostPort: 70000 is not a port number"):
        pod_host_ports({"containers": [{"ports": [{"hostPort": 70000}]}]}, "spec")


def test_bad_host_port_is_one_line_naming_the_field(tmp_path: Path) -> None:
    doc = scenario(pod("p", "", []), [])
    doc["pod"]["spec"]["containers"][0]["ports"] = [{"hostPort": 70000}]
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    run = CliRunner().invoke(main, ["score", str(path)])
    assert run.exit_code == documented_exit("host-port-invalid")
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.output
    assert "spec.containers[0].ports[0].hostPort: 70000 is not a port number" in lines[0]


def test_index_equals_a_plain_loop() -> None:
    # random binds and unbinds on 6 nodes from a small port alphabet (so conflicts are common):
    # the index's blocked nodes are exactly those where upstream's Fits loop says no
    rng = random.Random(3)
    alphabet = [host_port(pr, ip, po) for pr in ("TCP", "UDP")
                for ip in ("0.0.0.0", "10.0.0.1", "10.0.0.2") for po in (80, 81)]  # fmt: skip
    index, held = PortIndex(), [[] for _ in range(6)]  # type: list[list[Any]]
    for _ in range(400):
        node = rng.randrange(6)
        if held[node] and rng.random() < 0.4:
            ports = held[node].pop(rng.randrange(len(held[node])))
            index.remove(node, ports)
        else:
            ports = tuple(rng.sample(alphabet, rng.randint(1, 2)))
            held[node].append(ports)
            index.add(node, ports)
        wanted = tuple(rng.sample(alphabet, rng.randint(1, 3)))
        expected = {n for n in range(6) if not fits([p for ps in held[n] for p in ps], wanted)}
        assert index.blocked(wanted) == expected
        assert all(index.conflicts(n, wanted) == (n in expected) for n in range(6))
    for node in range(6):  # everything unbound: the index is empty again
        while held[node]:
            index.remove(node, held[node].pop())
    assert index.by_port == {}


def _with_ports(snapshot: Any, cells: dict[str, str]) -> Any:
    pods = snapshot.pods.copy()
    pods["host_ports"] = [cells.get(u, "[]") for u in pods["uid"].astype(str)]
    return replace(snapshot, pods=pods)


def _without_nodeports(profile: Any) -> Any:
    return replace(profile, filters=[f for f in profile.filters if f.name != "NodePorts"])


HTTP = host_ports_json([host_port("TCP", "0.0.0.0", 8080)])


def test_two_host_port_pods_never_share_a_node() -> None:
    # most-allocated packs: without ports both small web pods go onto one node; with the same
    # host port they take two nodes, and on a one-node cluster the second waits with upstream's
    # reason
    nodes = [N("n1"), N("n2")]
    pods = [P("web-1", "n1", cpu=500, start=1), P("web-2", "n1", cpu=500, start=2)]
    packed = load_strategy("most-allocated")
    plain = replay(prepare(build(nodes, pods)), Strategy("m", packed), seed=1)
    assert plain.node[0] == plain.node[1]
    ported = prepare(_with_ports(build(nodes, pods), {"web-1": HTTP, "web-2": HTTP}))
    result = replay(ported, Strategy("m", packed), seed=1)
    assert sorted(result.node.tolist()) == [0, 1]
    slow = replay(ported, Strategy("m", packed), seed=1, rescore_all=True)
    assert np.array_equal(result.node, slow.node)
    alone = prepare(_with_ports(build([N("n1")], pods), {"web-1": HTTP, "web-2": HTTP}))
    waited = replay(alone, Strategy("m", packed), seed=1)
    assert waited.node.tolist() == [0, -1] and bool(waited.pending_at_end[1])
    assert waited.refusals[1].message() == f"0/1 nodes are available: 1 {ERR_REASON}."
    # the what-if notes count the pods with host ports (none without them)
    notes = constraint_notes(
        _with_ports(build(nodes, pods), {"web-1": HTTP}), [Strategy("m", packed)]
    )
    assert [n for n in notes if n.startswith("NodePorts (m): 1 pod of 2 asks for host ports")]
    assert not [n for n in constraint_notes(build(nodes, pods), [Strategy("m", packed)])
                if n.startswith("NodePorts")]  # fmt: skip


@pytest.fixture(scope="module")
def churned() -> Any:
    spec = SyntheticSpec(seed=11, nodes=10, days=1, step=300, churn=0.8, gpu_pool=False)
    return generate(spec).snapshot


def test_replay_without_host_ports_is_unchanged(churned: Any) -> None:
    # no pod has host ports: NodePorts refuses nothing, so every preset places every pod where
    # the same profile without the plugin (main's profile) does
    inp = prepare(churned)
    assert not any(d.host_ports for d in inp.demands)
    for name in ("kube-default", "most-allocated"):
        profile = load_strategy(name)
        assert "NodePorts" in [f.name for f in profile.filters]
        now = replay(inp, Strategy(name, profile), seed=2)
        before = replay(inp, Strategy(name, _without_nodeports(profile)), seed=2)
        assert np.array_equal(now.node, before.node)
        assert np.array_equal(now.placed_at, before.placed_at)
        assert np.array_equal(now.wait, before.wait)


def test_fast_path_equals_full_evaluation_with_host_ports(churned: Any) -> None:
    # a third of the pods ask for one of two host ports: the score cache (port check on the
    # rows it recomputes) chooses exactly what Profile.evaluate over all nodes chooses
    uids = churned.pods["uid"].astype(str).tolist()
    other = host_ports_json([host_port("TCP", "10.0.0.9", 8080)])
    cells = {u: (HTTP if i % 6 == 0 else other) for i, u in enumerate(uids) if i % 3 == 0}
    inp = prepare(_with_ports(churned, cells))
    assert sum(bool(d.host_ports) for d in inp.demands) == len(cells)
    strategy = Strategy("most-allocated", load_strategy("most-allocated"))
    fast = replay(inp, strategy, seed=5)
    slow = replay(inp, strategy, seed=5, rescore_all=True)
    assert np.array_equal(fast.node, slow.node)
    assert np.array_equal(fast.placed_at, slow.placed_at)
    # and the ports did something: some pod was placed elsewhere than without them
    bare = replay(inp, Strategy("bare", _without_nodeports(strategy.profile)), seed=5)
    assert int((bare.node != fast.node).sum()) > 0
    # no two pods holding 0.0.0.0:8080 ever ran on one node at once
    seg = fast.segments
    http = {i for i, u in enumerate(uids) if cells.get(u) == HTTP}
    runs = [(int(n), int(s), int(e)) for p, n, s, e in
            zip(seg["pod"], seg["node"], seg["start"], seg["end"], strict=True) if int(p) in http]  # fmt: skip
    # 30 pods want the port, 10 nodes hold it at most once each: some ran, some waited
    assert runs and bool(fast.waited[sorted(http)].any())
    for i, (n1, s1, e1) in enumerate(runs):  # end NEVER (int64 max): ran to the end
        for n2, s2, e2 in runs[i + 1 :]:
            assert n1 != n2 or e1 <= s2 or e2 <= s1
