"""``analyzer score SCENARIO.yaml`` and ``analyzer strategies``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from analyzer.cli.base import main
from analyzer.scheduling.framework import ExplainRow
from analyzer.scheduling.scenario import Scenario, load_scenario, result_json
from analyzer.scheduling.state import PodDemand
from analyzer.scheduling.strategies import available_strategies

_FILE = click.Path(dir_okay=False, path_type=Path)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}%"
    return str(value)


def explain_text(scenario: Scenario, result: dict[str, object]) -> str:
    """A readable table: per node and plugin, each resource's inputs and raw score."""
    lines = [
        f"profile {scenario.profile.name}  kubernetesVersion {scenario.version} "
        f"({scenario.version_source})  "
        f"weights {json.dumps(result['weights'])}"
    ]
    sampling = result.get("sampling")
    if isinstance(sampling, dict):  # percentageOfNodesToScore: only the nodes found are scored
        lines.append(
            f"percentageOfNodesToScore: {sampling['nodes']} nodes, "
            f"{sampling['feasibleNodesToFind']} feasible nodes to find; {sampling['examined']} "
            f"examined from index 0, {sampling['scored']} scored"
        )
    tried = result.get("triedNominatedNode")
    if isinstance(tried, dict):  # the pod's nominated node, tried alone first
        lines.append(
            f"nominated node {tried['name']} tried first: "
            + (
                "passes the filters, so the pod goes there and no other node is scored"
                if tried["feasible"]
                else "refused, so every node is examined"
            )
        )
    unscored = (
        "not scored (the nominated node passed first)"
        if isinstance(tried, dict) and tried["feasible"]
        else "not scored (not among the K found)"
    )
    header = ("plugin", "resource", "requested", "allocatable", "utilisation", "score", "note")
    nodes = result["nodes"]
    assert isinstance(nodes, list)
    for i, node in zip(scenario.shown(), nodes, strict=True):
        # UnschedulableAndUnresolvable is marked; plain Unschedulable reads as before
        unresolvable = node["status"] == "UnschedulableAndUnresolvable"
        status = (
            "feasible"
            if node["feasible"]
            else ("INFEASIBLE, unresolvable: " if unresolvable else "INFEASIBLE: ")
            + "; ".join(node["reasons"])
        )
        lines.append("")
        total = node["total"] if node["total"] is not None else unscored
        lines.append(f"node {node['name']}  total {total}  ({status})")
        held = scenario.nominated.get(i)
        if held:  # nominated pods: in this node's filters (both runs), never in its scores
            lines.append(
                "  the filters also count the pods nominated here (the table's scores do not): "
                + ", ".join(_nominee(scenario, d) for d in held)
            )
        rows: list[ExplainRow] = scenario.profile.explain(
            scenario.state, scenario.pod, i, scenario.now
        )
        table = [header] + [
            (
                r.plugin,
                r.resource,
                _cell(r.requested),
                _cell(r.allocatable),
                _cell(r.utilisation),
                _cell(r.score),
                r.note,
            )
            for r in rows
        ]
        table += [
            (name, "(node score)", "", "", "", str(score), "")
            for name, score in node["scores"].items()
        ]
        widths = [max(len(row[c]) for row in table) for c in range(len(header))]
        for row in table:
            lines.append(
                "  " + "  ".join(cell.ljust(widths[c]) for c, cell in enumerate(row)).rstrip()
            )
    lines.append("")
    selected = result["selected"]
    assert isinstance(selected, list)
    lines.append(f"selected (tie set): {', '.join(selected) or 'none'}; chosen: {result['chosen']}")
    lines.extend(preemption_lines(result.get("preemption")))
    for note in scenario.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _nominee(scenario: Scenario, demand: PodDemand) -> str:
    """``namespace/name (cpu …m, memory … B)`` of a nominated pod."""
    resources = scenario.state.resources
    parts = [
        f"{r} {int(demand.requests[resources.index(r)])}{'m' if r == 'cpu' else ' B'}"
        for r in ("cpu", "memory")
        if r in resources
    ]
    return f"{demand.namespace}/{demand.name} ({', '.join(parts)})"


def preemption_lines(block: object) -> list[str]:
    """DefaultPreemption's outcome for ``--explain``: each candidate, then the nomination."""
    if not isinstance(block, dict):
        return []
    lines = []
    for c in block["candidates"]:
        lines.append(
            f"preemption candidate {c['node']}: evict {', '.join(c['victims'])} "
            f"({c['numPDBViolations']} PDB violation(s))"
        )
    if block["nominatedNode"] is None:
        lines.append(f"preemption: no node ({block.get('message', '')})")
    else:
        lines.append(
            f"preemption: nominated {block['nominatedNode']}, victims {', '.join(block['victims'])}"
        )
        for key in block.get("clearedNominations", []):
            lines.append(
                f"preemption: {key}, nominated to {block['nominatedNode']} with a lower priority, "
                "loses its nomination (prepareCandidate)"
            )
    return lines


@main.command()
@click.argument("scenario", required=False, type=_FILE)
@click.option("--explain", is_flag=True, help="Print a per-resource table instead of JSON.")
@click.option("--seed", type=int, default=0, show_default=True, help="Tie-break seed.")
@click.option("--nodes", "nodes_file", type=_FILE, help="kubectl List of Nodes.")
@click.option("--pods", "pods_file", type=_FILE, help="kubectl List of bound Pods.")
@click.option("--pod", "pod_file", type=_FILE, help="The incoming Pod.")
@click.option("--node-metrics", "metrics_file", type=_FILE, help="kubectl List of NodeMetrics.")
@click.option(
    "--objects",
    "objects_file",
    type=_FILE,
    help="kubectl List of Services, ReplicaSets, StatefulSets, PDBs, Namespaces, PriorityClasses.",
)
@click.option(
    "--config", "config_file", type=_FILE, help="KubeSchedulerConfiguration or Policy file."
)
@click.option("--kubernetes-version", "version", help="Override kubernetesVersion (e.g. 1.16).")
def score(
    scenario: Path | None,
    explain: bool,
    seed: int,
    nodes_file: Path | None,
    pods_file: Path | None,
    pod_file: Path | None,
    metrics_file: Path | None,
    objects_file: Path | None,
    config_file: Path | None,
    version: str | None,
) -> None:
    """Score one pod against every node, exactly as the scheduler would.

    Prints JSON: for every node (only the scenario's candidateNodes when it lists them) {name,
    feasible, status, reasons, scores, total} — scores after NormalizeScore, status Success,
    Unschedulable or UnschedulableAndUnresolvable — the tie set of best feasible nodes as
    "selected" and the seeded choice as "chosen". When the pod
    fits nowhere and the profile has DefaultPreemption: "preemption" {nominatedNode, victims,
    candidates, status, and clearedNominations: the pods of lower priority nominated to that
    node, whose nominations the preemption ends}; candidates are gathered from the first
    potential node, or from an offset drawn from --seed when it is given, as kube-scheduler
    draws it at random.
    Pending pods nominated to a node by an earlier preemption (status.nominatedNodeName) count
    there in the filters of pods of lower or equal priority; a pod with a nominated node tries
    it first ("triedNominatedNode").
    """
    loaded = load_scenario(
        scenario,
        nodes=nodes_file,
        pods=pods_file,
        pod=pod_file,
        config=config_file,
        node_metrics=metrics_file,
        version=version,
        objects=objects_file,
    )
    evaluation = loaded.evaluate()
    # DefaultPreemption's random candidate offset: drawn only when --seed is given (else 0, so
    # a scenario's answer does not move between runs)
    given = click.get_current_context().get_parameter_source("seed")
    explicit = given is not None and given.name != "DEFAULT"
    result = result_json(loaded, evaluation, seed, seed if explicit else None)
    if explain:
        click.echo(explain_text(loaded, result))
    else:
        click.echo(json.dumps(result, indent=1))


@main.command()
def strategies() -> None:
    """List the named scheduling strategies (any KubeSchedulerConfiguration file works too)."""
    presets = available_strategies()
    width = max(len("<file.yaml>"), *(len(s.name) for s in presets))
    for strategy in presets:
        click.echo(f"{strategy.name:{width}s} {strategy.description}")
    click.echo(f"{'<file.yaml>':{width}s} any KubeSchedulerConfiguration v1 or legacy Policy file")
