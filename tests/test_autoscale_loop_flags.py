"""``analyzer autoscale``'s ``options`` with cluster-autoscaler flags that only its loop reads
over time (``analyzer.autoscaler.options.LOOP_FLAGS``: the timers, scale-up, drains): a
scenario that carries them, as a flag set pasted from a CA Deployment does, is answered with a
note for each, and the answer is the one without them (no single instant's scale-down decision
reads them). A flag that is neither modelled nor such a loop flag (a misspelling) is still
refused in one line: a flag the decision silently did not honour would be worse.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner
from reliability_doc import documented_exit

from analyzer.cli import main

NODES = [
    {"metadata": {"name": n}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}
    for n in ("a", "b")
]
POD = {
    "metadata": {
        "name": "p",
        "namespace": "default",
        "ownerReferences": [
            {"kind": "ReplicaSet", "name": "rs", "apiVersion": "apps/v1", "controller": True}
        ],
    },
    "spec": {
        "nodeName": "a",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
    },
}


def _run(tmp_path: Path, options: dict, groups: list | None = None) -> tuple[int, str]:
    doc = {"autoscaler": "cluster-autoscaler", "options": options, "nodes": NODES, "pods": [POD]}
    if groups is not None:
        doc["nodeGroups"] = groups
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    run = CliRunner().invoke(main, ["autoscale", str(path)])
    return run.exit_code, run.output


def test_loop_flags_are_noted_and_change_nothing(tmp_path: Path) -> None:
    code, plain_out = _run(tmp_path, {"scale-down-utilization-threshold": 0.3})
    assert code == 0, plain_out
    loop = {
        "scale-down-utilization-threshold": 0.3,
        "scale-down-unneeded-time": "1m",
        "scale-down-delay-after-add": "0s",
        "scan-interval": "5s",
        "expander": "least-waste",
    }
    code, out = _run(tmp_path, loop)
    assert code == 0, out
    with_loop, without = json.loads(out), json.loads(plain_out)
    # a at 25 % cpu (under 0.3, its pod fits b), b empty: the same answer either way
    assert with_loop["removed"] == without["removed"] and with_loop["nodes"] == without["nodes"]
    noted = [n for n in with_loop["notes"] if "read by cluster-autoscaler's loop" in n]
    assert len(noted) == 4
    assert any(".options.scale-down-unneeded-time:" in n for n in noted)
    assert not any("utilization-threshold" in n for n in noted)  # that one is read


def test_a_node_groups_loop_option_is_noted(tmp_path: Path) -> None:
    groups = [{"name": "g", "nodes": ["a", "b"], "options": {"scale-down-unneeded-time": "2m"}}]
    code, out = _run(tmp_path, {}, groups)
    assert code == 0, out
    notes = json.loads(out)["notes"]
    assert any("nodeGroups[0].options.scale-down-unneeded-time: read by" in n for n in notes)


def test_a_misspelled_flag_is_still_refused(tmp_path: Path) -> None:
    code, out = _run(tmp_path, {"scale-down-unneded-time": "1m"})
    assert code == documented_exit("autoscale-unknown-option"), out
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "scale-down-unneded-time: not a modelled" in lines[0]
