"""``analyzer autoscale``'s Karpenter ``nodePool:`` given as a whole NodePool object, as ``kubectl
get nodepool NAME -o yaml`` prints it (``analyzer.autoscaler.nodepool.parse_node_pool``).

Its ``disruption`` and ``template`` are under ``spec``; read beside it only, a pasted NodePool's
settings were dropped without a word (until 2026-12-02) and the decision was Karpenter's
defaults'. Two nodes of the pool, ``a`` with one 100 m pod, ``b`` with a 2-core pod: under the
default policy (WhenEmptyOrUnderutilized) Karpenter deletes ``a`` (its pod fits ``b``); under
``WhenEmpty`` nothing is empty, so nothing goes.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner
from reliability_doc import documented_exit

from analyzer.cli import main

LABELS = {
    "karpenter.sh/nodepool": "default",
    "karpenter.sh/initialized": "true",
    "node.kubernetes.io/instance-type": "m5.xlarge",
    "karpenter.sh/capacity-type": "on-demand",
    "topology.kubernetes.io/zone": "eu-west-1a",
}
SHAPES = [{"name": "m5.xlarge", "cpu": "4", "memory": "16Gi", "pods": "110", "price": 0.192}]


def _pod(name: str, node: str, cpu: str) -> dict:
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "ownerReferences": [
                {"kind": "ReplicaSet", "name": "rs", "apiVersion": "apps/v1", "controller": True}
            ],
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def _scenario(node_pool: dict) -> dict:
    alloc = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    return {
        "autoscaler": "karpenter",
        "nodes": [
            {"metadata": {"name": n, "labels": LABELS}, "status": {"allocatable": alloc}}
            for n in ("a", "b")
        ],
        "pods": [_pod("p", "a", "100m"), _pod("q", "b", "2")],
        "nodePool": node_pool,
    }


def _run(tmp_path: Path, node_pool: dict) -> tuple[int, str]:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(_scenario(node_pool)))
    run = CliRunner().invoke(main, ["autoscale", str(path)])
    return run.exit_code, run.output


def _object(spec: dict) -> dict:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": spec,
        "instanceTypes": SHAPES,
    }


def test_the_defaults_delete_the_underused_node(tmp_path: Path) -> None:
    code, out = _run(tmp_path, {"instanceTypes": SHAPES})
    assert code == 0, out
    assert json.loads(out)["removed"] == ["a"]


def test_a_whole_node_pool_object_is_read_from_its_spec(tmp_path: Path) -> None:
    spec = {"disruption": {"consolidationPolicy": "WhenEmpty"}, "limits": {"cpu": "100"}}
    code, out = _run(tmp_path, _object(spec))
    assert code == 0, out
    found = json.loads(out)
    assert found["removed"] == []  # WhenEmpty, and no node is empty
    assert "WhenEmpty" in found["decision"]["reason"]
    # a field of the object the decision does not read is said, not dropped unseen
    assert any("nodePool.spec.limits: not modelled" in note for note in found["notes"])
    # the same settings given flat give the same decision
    flat = {"disruption": {"consolidationPolicy": "WhenEmpty"}, "instanceTypes": SHAPES}
    code, out = _run(tmp_path, flat)
    assert code == 0 and json.loads(out)["decision"] == found["decision"]


def test_consolidate_after_never_in_the_object_stops_consolidation(tmp_path: Path) -> None:
    code, out = _run(tmp_path, _object({"disruption": {"consolidateAfter": "Never"}}))
    assert code == 0, out
    found = json.loads(out)
    assert found["removed"] == [] and "Never" in found["decision"]["reason"]


def test_the_template_is_read_from_the_objects_spec(tmp_path: Path) -> None:
    # a node template whose requirement no pod's node would meet is still parsed there: a bad
    # operator in it is refused, naming the field under spec
    template = {"spec": {"requirements": [{"key": "x", "operator": "Sometimes", "values": []}]}}
    code, out = _run(tmp_path, _object({"template": template}))
    assert code == documented_exit("autoscale-node-pool"), out
    assert "nodePool.spec.template.spec.requirements[0]" in out


def test_disruption_both_in_spec_and_beside_it_is_refused(tmp_path: Path) -> None:
    pool = _object({"disruption": {"consolidationPolicy": "WhenEmpty"}})
    pool["disruption"] = {"consolidationPolicy": "WhenEmptyOrUnderutilized"}
    code, out = _run(tmp_path, pool)
    assert code == documented_exit("autoscale-node-pool-object"), out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "nodePool.disruption" in lines[0] and "spec" in lines[0]


def test_another_kind_is_refused(tmp_path: Path) -> None:
    pool = _object({})
    pool["kind"] = "NodeClaim"
    code, out = _run(tmp_path, pool)
    assert code == documented_exit("autoscale-node-pool-object"), out
    assert "nodePool.kind: 'NodeClaim' is not NodePool" in out
