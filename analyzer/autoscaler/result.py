"""The ``analyzer autoscale`` JSON (issue 25's shape) and its ``--explain``/table text."""

from __future__ import annotations

import math
from typing import Any

from analyzer.autoscaler.planner import Plan
from analyzer.autoscaler.scenario import AutoscaleScenario, options_json


def finite(value: float, what: str, notes: list[str]) -> float | None:
    """``value``, or None with a note when it is NaN or infinite (JSON has no such numbers)."""
    if math.isfinite(value):
        return value
    notes.append(
        f"{what} is {value} (upstream's float division by a zero allocatable left "
        "after DaemonSet/mirror pods); shown as null"
    )
    return None


def ca_json(scenario: AutoscaleScenario, plan: Plan) -> dict[str, Any]:
    """Per node: utilisation, candidate, removable, reasons, destinations; the nodes removed."""
    nodes = []
    for decision in plan.nodes:
        info = decision.eligibility.utilization
        outcome = decision.outcome
        group = scenario.cluster.groups.get(decision.name)
        blocking = None
        if outcome is not None and outcome.blocking_pod:
            blocking = {"pod": outcome.blocking_pod, "reason": outcome.blocking_reason}
        nodes.append(
            {
                "name": decision.name,
                "nodeGroup": None if group is None else group.name,
                "utilization": finite(
                    info.utilization, f"node {decision.name} utilization", scenario.notes
                ),
                "utilizationResource": info.resource or None,
                "utilizationByResource": {
                    k: finite(v, f"node {decision.name} {k} utilization", scenario.notes)
                    for k, v in info.by_resource.items()
                },
                "candidate": decision.candidate,
                "removable": decision.removable,
                "unremovableReason": decision.reason or None,
                "blockingPod": blocking,
                "destinations": {} if outcome is None else dict(outcome.destinations),
                "empty": outcome is not None and outcome.removable and not outcome.moved,
                # pods CA 1.36+ leaves to finish (``safe-to-evict: on-completion``): the node
                # is not deleted while they run (``BlockedByOnCompletionPod``)
                "onCompletionPods": []
                if outcome is None
                else [p.key for p in outcome.on_completion],
            }
        )
        if info.error and decision.reason == "UnexpectedError":
            scenario.notes.append(
                f"node {decision.name}: {info.error}: cluster-autoscaler cannot calculate its "
                "utilization (UnexpectedError since 1.32; shown as 0)"
            )
        elif info.error:
            scenario.notes.append(
                f"node {decision.name}: {info.error}; utilization read as 0 "
                "as cluster-autoscaler before 1.32 does"
            )
    return {
        "autoscaler": scenario.autoscaler,
        "kubernetesVersion": str(scenario.version),
        # the CA release whose rules applied (``autoscaler.release``: given, else the newest)
        "clusterAutoscalerVersion": ".".join(map(str, scenario.options.rules_version)),
        "options": options_json(scenario.options),
        "deletionsInProgress": dict(zip(("empty", "drain"), scenario.in_progress, strict=True)),
        "nodes": nodes,
        "removed": plan.removed,
        "removedEmpty": plan.empty,
        "removedDrained": plan.drained,
        "notes": scenario.notes,
    }


def _percent(value: Any) -> str:
    return "-" if value is None else f"{100 * float(value):.1f}%"


def table_text(result: dict[str, Any]) -> str:
    """One line per node: utilisation, candidate, removable and why; then the removal order."""
    header = ("node", "group", "util", "cpu", "memory", "candidate", "removable", "reason")
    rows = [header]
    for node in result["nodes"]:
        reason = node["unremovableReason"] or ""
        if node.get("blockingPod"):
            reason += f" ({node['blockingPod']['pod']}: {node['blockingPod']['reason']})"
        elif node.get("onCompletionPods") and reason:
            reason += f" ({', '.join(node['onCompletionPods'])})"
        by = node.get("utilizationByResource") or {}
        rows.append(
            (
                node["name"],
                node.get("nodeGroup") or "-",
                _percent(node.get("utilization")),
                _percent(by.get("cpu")),
                _percent(by.get("memory")),
                "yes" if node.get("candidate") else "no",
                "yes" if node.get("removable") else "no",
                reason,
            )
        )
    widths = [max(len(str(r[c])) for r in rows) for c in range(len(header))]
    lines = [
        "  ".join(str(cell).ljust(widths[c]) for c, cell in enumerate(r)).rstrip() for r in rows
    ]
    lines.append("")
    lines.append(f"removed now, in order: {', '.join(result['removed']) or 'none'}")
    if result.get("clusterAutoscalerVersion"):
        lines.append(
            f"rules of cluster-autoscaler {result['clusterAutoscalerVersion']} (Kubernetes "
            f"{result['kubernetesVersion']}; clusterAutoscalerVersion picks another release)"
        )
    going = result.get("deletionsInProgress") or {}
    if any(going.values()):
        options = result.get("options") or {}
        lines.append(
            f"deletions in progress: {going.get('empty', 0)} empty, {going.get('drain', 0)} "
            f"drained; taken from the budgets (max-scale-down-parallelism "
            f"{options.get('max-scale-down-parallelism')}, max-drain-parallelism "
            f"{options.get('max-drain-parallelism')})"
        )
    for note in result.get("notes", []):
        lines.append(f"note: {note}")
    return "\n".join(lines)


def _columns(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return ["  ".join(cell.ljust(widths[c]) for c, cell in enumerate(r)).rstrip() for r in rows]


def karpenter_text(result: dict[str, Any]) -> str:
    """One line per node (candidate, disruption cost, why not), then the decision."""
    rows: list[tuple[str, ...]] = [("node", "util", "candidate", "cost", "removed", "why not")]
    for node in result["nodes"]:
        rows.append(
            (
                node["name"],
                _percent(node.get("utilization")),
                "yes" if node["candidate"] else "no",
                f"{node['disruptionCost']:g}",
                "yes" if node["removable"] else "no",
                node.get("notCandidateReason") or "",
            )
        )
    decision = result["decision"]
    lines = _columns(rows)
    lines.append("")
    shape = decision.get("replacement")
    replaced = f", replaced by {shape['instanceType']} ({shape['price']:g}/h)" if shape else ""
    nodes = ", ".join(decision["nodes"]) or "no node"
    lines.append(f"decision: {decision['type']}: {nodes}{replaced} ({decision['reason']})")
    lines.extend(f"note: {note}" for note in result.get("notes", []))
    return "\n".join(lines)


def explain_text(result: dict[str, Any]) -> str:
    """The table, then each removable node's pods and where the simulation re-placed them."""
    lines = [table_text(result), ""]
    for node in result["nodes"]:
        if node["destinations"]:
            moved = ", ".join(f"{pod} -> {dest}" for pod, dest in node["destinations"].items())
            lines.append(f"{node['name']}: {moved}")
        elif node.get("empty"):
            lines.append(f"{node['name']}: empty (no pod to move)")
    return "\n".join(lines).rstrip()
