"""``analyzer score`` scenarios: Kubernetes-shaped objects → state, pod, profile → scored nodes.

Scenario (YAML, DESIGN.md "Interfaces")::

    kubernetesVersion: "1.36"     # optional (default 1.36)
    scheduler: {...} | path        # KubeSchedulerConfiguration v1 / Policy, or a preset name
    nodes: [Node, ...]             # status.allocatable (status.images for ImageLocality)
    pods: [Pod, ...]               # bound pods (spec.nodeName); pending ones count only when an
                                   # earlier preemption nominated them (status.nominatedNodeName,
                                   # ``nominated_pods``); terminated ones are ignored
    nodeMetrics: [NodeMetric, ...] # slo.koordinator.sh/v1alpha1, for LoadAwareScheduling
    pod: Pod                       # the incoming pod
    now: "2026-11-01T12:00:00Z"    # default: the newest NodeMetric updateTime, else the clock
    objects: [Service, ReplicaSet, StatefulSet, ReplicationController, PodDisruptionBudget,
              Namespace, PriorityClass, ...]   # what plugins read besides nodes and pods
    candidateNodes: [name, ...]    # only these are filtered, scored and normalised over
    featureGates: {Name: bool}     # overrides the kubernetesVersion defaults
    postFilter:                    # DefaultPreemption with given Filter statuses (unit-test shape)
      filteredNodesStatuses: {name: Unschedulable | UnschedulableAndUnresolvable}
      absentNodesStatus: UnschedulableAndUnresolvable   # the nodes not listed (default)

``nodes``/``pods``/``nodeMetrics``/``objects`` may also be ``kubectl`` List objects (``{kind:
List, items}``). Bound pods keep their labels, namespace, ``deletionTimestamp`` and controller in
``ClusterState.pod_index`` for the spread/affinity plugins; every node and its pods count for
topology domains even when ``candidateNodes`` leaves the node out, as in upstream's score tests.
Everything goes through the same vectorised ``Profile.evaluate`` the replay uses.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from analyzer.core.durations import parse_time
from analyzer.core.errors import InputError
from analyzer.core.structured import describe_value, load_yaml_or_json, plain, preview
from analyzer.scheduling import nominated_pods
from analyzer.scheduling.arith import BoolArray
from analyzer.scheduling.config import build_profile, parse_kube_scheduler_configuration
from analyzer.scheduling.feature_gates import (
    POD_DISRUPTION_CONDITIONS,
    PREFER_NOMINATED_NODE,
    resolve_gates,
)
from analyzer.scheduling.fields import listing
from analyzer.scheduling.framework import Evaluation, Profile
from analyzer.scheduling.kube_objects import parse_objects
from analyzer.scheduling.node_sampling import found_nodes, initial_order, num_feasible_nodes_to_find
from analyzer.scheduling.objects import PodObject, parse_node, parse_pod
from analyzer.scheduling.pdb import DisruptionBudget
from analyzer.scheduling.plugins.loadaware.cache import (
    AssignedPod,
    build_load_inputs,
    parse_node_metric,
)
from analyzer.scheduling.plugins.loadaware.plugin import LoadAwareScheduling
from analyzer.scheduling.plugins.queuesort import resolve_priority
from analyzer.scheduling.preemption_scenario import (
    parse_post_filter,
    preemption_json,
    run_preemption,
)
from analyzer.scheduling.priority_class import PriorityClass
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.scheduling.strategies import STRATEGIES, load_config_document, strategy_config
from analyzer.scheduling.versions import KubeVersion, parse_version

SCENARIO_KEYS = (
    "kubernetesVersion",
    "scheduler",
    "nodes",
    "pods",
    "nodeMetrics",
    "pod",
    "now",
    "objects",
    "candidateNodes",
    "featureGates",
    "postFilter",
)


@dataclass
class Scenario:
    """A loaded scenario, ready to evaluate."""

    version: KubeVersion
    profile: Profile
    state: ClusterState
    pod: PodDemand
    now: float
    notes: list[str] = field(default_factory=list)
    candidates: BoolArray | None = None  # candidateNodes as a mask (None: every node)
    # for DefaultPreemption (``preemption_scenario``): the objects, PDBs and PriorityClasses
    incoming: PodObject | None = None
    bound: list[PodObject] = field(default_factory=list)
    budgets: list[DisruptionBudget] = field(default_factory=list)
    classes: dict[str, PriorityClass] = field(default_factory=dict)
    statuses: dict[int, str] | None = None  # ``postFilter``: Filter status per node index
    # where ``version`` came from: "scenario" (kubernetesVersion), "--kubernetes-version", "default"
    version_source: str = "default"
    # percentageOfNodesToScore (``evaluate``): every node's filter verdict, and what was sampled
    filtered: Evaluation | None = None
    sampling: dict[str, Any] | None = None
    # per node, the pods nominated there that the incoming pod's filters count (``nominated_pods``)
    nominated: dict[int, list[PodDemand]] = field(default_factory=dict)
    nominated_to: int | None = None  # the incoming pod's own nominated node (index), if known
    prefer: bool = False  # PreferNominatedNode: that node is tried alone first
    # ``evaluate``: {"name", "feasible"} of the nominated node tried first (None: not tried)
    tried_nominated: dict[str, Any] | None = None
    disruption_conditions: bool = True  # PodDisruptionConditions (``nominated_pods``)
    # the pods of lower priority nominated to each node, by "namespace/name" (a preemption that
    # nominates the node ends their nominations: ``_preemption``)
    lower_nominees: dict[int, list[str]] = field(default_factory=dict)

    def _evaluate(self, mask: BoolArray | None) -> Evaluation:
        """The profile's evaluation, the nodes' nominated pods in their filters."""
        return nominated_pods.evaluate(
            self.profile, self.state, self.pod, self.now, mask, self.nominated
        )

    def evaluate(self) -> Evaluation:
        """Score the incoming pod against every (candidate) node; above 100 nodes only the
        feasible nodes a freshly started kube-scheduler would find (``node_sampling``: node tree
        from index 0, ``numFeasibleNodesToFind``) are scored and normalised, as upstream. A pod
        with a nominated node tries it alone first: if it passes the filters, it is the only
        feasible node (``evaluateNominatedNode``), the other nodes' verdicts are shown unscored."""
        prefer = self.nominated_to if self.prefer else None
        if prefer is not None and (self.candidates is None or self.candidates[prefer]):
            alone = np.zeros(self.state.node_count, dtype=bool)
            alone[prefer] = True
            first = self._evaluate(alone)
            passed = bool(first.feasible[prefer])
            self.tried_nominated = {"name": self.state.node_names[prefer], "feasible": passed}
            if passed:
                self.filtered = self._evaluate(self.candidates)
                return first
        full = self._evaluate(self.candidates)
        present = [True] * self.state.node_count if self.candidates is None else self.candidates
        order = initial_order(self.state.node_names, self.state.node_labels, list(present))
        percentage = self.profile.percentage_of_nodes_to_score
        wanted = num_feasible_nodes_to_find(len(order), percentage)
        feasible = int(full.feasible.sum())
        if wanted >= len(order) or feasible <= 1:
            return full  # every node examined (or nothing to choose between: not scored)
        tree = np.array(order, dtype=np.int64)
        positions, processed = found_nodes(full.feasible[tree], 0, wanted)
        found = np.zeros(self.state.node_count, dtype=bool)
        found[tree[positions]] = True
        self.filtered = full
        self.sampling = {
            "percentageOfNodesToScore": percentage,
            "nodes": len(order),
            "feasibleNodesToFind": wanted,
            "feasible": feasible,
            "examined": processed,
            "scored": int(found.sum()),
        }
        return self._evaluate(found)

    def shown(self) -> list[int]:
        """Indices of the nodes the result lists: the candidates, else every node."""
        if self.candidates is None:
            return list(range(self.state.node_count))
        return [int(i) for i in np.flatnonzero(self.candidates)]


def read_yaml(path: Path, field_name: str) -> Any:
    """Load a YAML/JSON file through ``core.structured`` (aliases and nesting bounded), with an
    ``InputError`` naming ``field_name`` and the file on failure."""
    return load_yaml_or_json(path, what=field_name)


def _items(raw: Any, where: str) -> list[Any]:
    """A list of objects, or the ``items`` of a ``kind: List`` object."""
    if raw is None:
        return []
    if isinstance(raw, Mapping):
        kind = raw.get("kind")
        if (isinstance(kind, str) and kind.endswith("List")) or "items" in raw:
            return listing(raw.get("items"), f"{where}.items")
        return [raw]
    if not isinstance(raw, list):
        raise InputError(f"{where}: expected a list of objects or a kubectl List")
    return raw


def _scheduler(raw: Any, base: Path, where: str) -> tuple[Any, str]:
    if raw is None:
        return strategy_config("kube-default"), "kube-default"
    if isinstance(raw, str):
        if raw in STRATEGIES:
            return strategy_config(raw), raw
        path = Path(raw) if Path(raw).is_absolute() else base / raw
        if not path.is_file():
            raise InputError(f"{where}: {preview(raw)} is neither a strategy nor a file")
        return parse_kube_scheduler_configuration(
            load_config_document(path, field=where), where, full_defaults=True
        ), raw
    return parse_kube_scheduler_configuration(raw, where, full_defaults=True), "inline"


def build_scenario(doc: Any, base: Path = Path(), where: str = "scenario") -> Scenario:
    """Turn a scenario document into state, pod and profile."""
    if not isinstance(doc, Mapping):
        raise InputError(
            f"{where}: expected a mapping with nodes, pods and pod, not {describe_value(doc)}"
        )
    unknown = sorted(plain(key) for key in doc if key not in SCENARIO_KEYS)
    if unknown:
        raise InputError(f"{where}.{unknown[0]}: unknown key (valid: {', '.join(SCENARIO_KEYS)})")
    version = parse_version(doc.get("kubernetesVersion"), field=f"{where}.kubernetesVersion")
    config, _ = _scheduler(doc.get("scheduler"), base, f"{where}.scheduler")
    nodes = [
        parse_node(n, f"{where}.nodes[{i}]")
        for i, n in enumerate(_items(doc.get("nodes"), f"{where}.nodes"))
    ]
    if not nodes and doc.get("nodes") is None:  # an explicit ``nodes: []`` scores nothing
        raise InputError(f"{where}.nodes: at least one Node is needed")
    names = [n.name for n in nodes]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise InputError(f"{where}.nodes[{i}].metadata.name: duplicate node {preview(name)}")
    if doc.get("pod") is None:
        raise InputError(f"{where}.pod: the incoming Pod is required")
    incoming = parse_pod(doc.get("pod"), f"{where}.pod")
    bound = [
        parse_pod(p, f"{where}.pods[{i}]")
        for i, p in enumerate(_items(doc.get("pods"), f"{where}.pods"))
    ]
    metrics = {}
    for i, m in enumerate(_items(doc.get("nodeMetrics"), f"{where}.nodeMetrics")):
        info = parse_node_metric(m, f"{where}.nodeMetrics[{i}]")
        metrics[info.name] = info
    now = _now(doc.get("now"), metrics.values(), f"{where}.now")
    notes: list[str] = []
    gates, gate_notes = resolve_gates(version, doc.get("featureGates"), f"{where}.featureGates")
    notes.extend(gate_notes)
    objects, object_notes = parse_objects(doc.get("objects"), f"{where}.objects")
    notes.extend(object_notes)
    if config.source == "Policy" and not version.rtcr_ceil_utilisation:
        notes.append(f"the legacy Policy API ended with 1.22; scored with {version} formulas")
    spec = config.profiles[0]
    for candidate in config.profiles:
        if candidate.name == incoming.scheduler_name:
            spec = candidate
            break
    else:
        if len(config.profiles) > 1 or spec.name != incoming.scheduler_name:
            notes.append(
                f"pod schedulerName {preview(incoming.scheduler_name)} has no profile; "
                f"using {preview(spec.name)}"
            )
    for name, args in spec.args.items():
        if hasattr(args, "with_gates"):
            spec.args[name] = args.with_gates(gates)
    profile = build_profile(spec, version)
    notes.extend(profile.notes)
    state = _state(nodes, bound, incoming, notes)
    state.objects = objects
    state.load = _load_inputs(profile, state, metrics, bound, now)
    candidates = _candidates(doc.get("candidateNodes"), names, f"{where}.candidateNodes")
    pod = incoming.demand(state.resources)
    classes = dict(objects.priority_classes)
    queue = nominated_pods.nominees(
        bound, state, classes, [incoming.scheduler_name, *(p.name for p in config.profiles)]
    )
    priority = resolve_priority(incoming, classes)
    key = f"{incoming.namespace}/{incoming.name}"
    counted = nominated_pods.counted_for(queue, priority, key, incoming.uid)
    lower: dict[int, list[str]] = {}  # (a preemption that nominates the node clears these)
    for n in queue:
        if nominated_pods.same_pod(n.key, n.uid, key, incoming.uid):
            continue
        counts = n.priority >= priority  # ``counted_for``'s rule, the pod itself excepted
        if not counts:
            lower.setdefault(n.node, []).append(n.key)
        notes.append(
            f"pod {n.key} waits nominated to {names[n.node]} (priority {n.priority}): "
            + (
                "its filters count it there (addNominatedPods)"
                if counts
                else "not counted, its priority is below the incoming pod's"
            )
        )
    position = {name: i for i, name in enumerate(names)}
    return Scenario(
        version,
        profile,
        state,
        pod,
        now,
        notes,
        candidates,
        incoming,
        bound,
        budgets=list(objects.pdbs),
        classes=classes,
        statuses=parse_post_filter(doc.get("postFilter"), names, f"{where}.postFilter"),
        nominated=counted,
        nominated_to=position.get(incoming.nominated_node_name),
        prefer=gates[PREFER_NOMINATED_NODE],
        disruption_conditions=gates[POD_DISRUPTION_CONDITIONS],
        lower_nominees=lower,
    )


def _candidates(raw: Any, names: list[str], where: str) -> BoolArray | None:
    """``candidateNodes`` as a mask over the nodes (None when absent)."""
    if raw is None:
        return None
    position = {name: i for i, name in enumerate(names)}
    mask = np.zeros(len(names), dtype=bool)
    for i, name in enumerate(listing(raw, where)):
        if not isinstance(name, str) or name not in position:
            raise InputError(f"{where}[{i}]: {preview(name)} is not one of the scenario's nodes")
        mask[position[name]] = True
    return mask


def _now(raw: Any, metrics: Any, where: str) -> float:
    if raw is not None:
        if isinstance(raw, str) and len(raw) > 64:  # parse_time quotes the text it refuses
            raise InputError(f"{where}: {describe_value(raw)} is not a time")
        return parse_time(str(raw), field=where).timestamp()
    times = [m.update_time for m in metrics if m.update_time is not None]
    return max(times) if times else time.time()


def _state(
    nodes: list[Any], bound: list[PodObject], incoming: PodObject, notes: list[str]
) -> ClusterState:
    extra = {
        r
        for pod in (*bound, incoming)
        for c in (*pod.spec.containers, *pod.spec.init_containers)
        for r in c.requests
    }
    state = ClusterState.from_nodes(
        [n.name for n in nodes],
        [n.allocatable for n in nodes],
        extra_resources=extra,
        annotations=[dict(n.annotations) for n in nodes],
        labels=[dict(n.labels) for n in nodes],
        taints=[n.taints for n in nodes],
        images=[n.images for n in nodes],
    )
    state.attach_pod_index()
    position = {name: i for i, name in enumerate(state.node_names)}
    for pod in bound:
        if not pod.node_name or pod.terminated:
            continue
        if pod.node_name not in position:
            notes.append(
                f"pod {pod.namespace}/{pod.name} is bound to unknown node {pod.node_name}; ignored"
            )
            continue
        state.bind(position[pod.node_name], pod.demand(state.resources))
    return state


def _load_inputs(
    profile: Profile, state: ClusterState, metrics: Any, bound: list[PodObject], now: float
) -> Any:
    plugins = [*profile.filters, *(w.plugin for w in profile.scorers)]
    loadaware = next((p for p in plugins if isinstance(p, LoadAwareScheduling)), None)
    if loadaware is None:
        return None
    assigned = [
        AssignedPod(p.node_name, p.demand(state.resources), p.scheduled_time, p.initialized_time)
        for p in bound
        if p.node_name and not p.terminated
    ]
    return build_load_inputs(state.node_names, metrics, assigned, loadaware.args, now)


def load_scenario(
    path: Path | None,
    *,
    nodes: Path | None = None,
    pods: Path | None = None,
    pod: Path | None = None,
    config: Path | None = None,
    node_metrics: Path | None = None,
    version: str | None = None,
    objects: Path | None = None,
) -> Scenario:
    """Load a scenario file and/or separate List files (files given separately win)."""
    doc: dict[str, Any] = {}
    base = Path()
    if path is not None:
        loaded = read_yaml(path, "scenario")
        if not isinstance(loaded, Mapping):
            raise InputError(
                f"scenario {path}: expected a scenario mapping (nodes, pods, pod, ...), "
                f"not {describe_value(loaded)}"
            )
        doc.update(loaded)
        base = Path(path).parent
    for key, file in (
        ("nodes", nodes),
        ("pods", pods),
        ("pod", pod),
        ("nodeMetrics", node_metrics),
        ("objects", objects),
    ):
        if file is not None:
            doc[key] = read_yaml(
                file, f"--{key.lower() if key != 'nodeMetrics' else 'node-metrics'}"
            )
    if config is not None:
        doc["scheduler"] = str(config)
        base = Path()
    source = "scenario" if doc.get("kubernetesVersion") is not None else "default"
    if version is not None:
        doc["kubernetesVersion"] = version
        source = "--kubernetes-version"
    if path is None and nodes is None:
        raise InputError("SCENARIO: give a scenario file or --nodes/--pods/--pod files")
    if isinstance(doc.get("pod"), Mapping) and "items" in doc["pod"]:
        items = doc["pod"]["items"] or []
        if not isinstance(items, list) or len(items) != 1:
            raise InputError("--pod: expected exactly one Pod")
        doc["pod"] = items[0]
    scenario = build_scenario(doc, base, where=str(path) if path else "scenario")
    scenario.version_source = source
    return scenario


def result_json(
    scenario: Scenario, evaluation: Evaluation, seed: int, preemption_seed: int | None = None
) -> dict[str, Any]:
    """The ``analyzer score`` JSON: every node, the tie set, and the seeded choice
    (``preemption_seed``: draw DefaultPreemption's candidate offset from it; None: offset 0)."""
    chosen = scenario.profile.select(evaluation, np.random.default_rng(seed))
    nodes = []
    filtered = scenario.filtered or evaluation  # filter verdicts of every node
    for i in scenario.shown():
        # every node is scored (infeasible ones too, for the table) unless sampling left it out
        scored = scenario.sampling is None or bool(evaluation.feasible[i])
        node: dict[str, Any] = {
            "name": evaluation.node_names[i],
            "feasible": bool(filtered.feasible[i]),
            "status": filtered.status(i),
            "reasons": filtered.reasons(i),
            "scores": {k: int(v[i]) for k, v in evaluation.scores.items()} if scored else {},
            "total": int(evaluation.total[i]) if scored else None,
        }
        if scenario.sampling is not None:
            node["scored"] = scored  # percentageOfNodesToScore: found among the first K
        nodes.append(node)
    tried = scenario.tried_nominated
    if tried is not None and tried["feasible"]:  # the nominated node alone was scored
        for node in nodes:
            node["scored"] = node["name"] == tried["name"]
            if not node["scored"]:
                node["scores"], node["total"] = {}, None
    return {
        "kubernetesVersion": str(scenario.version),
        "kubernetesVersionSource": scenario.version_source,
        "profile": scenario.profile.name,
        "weights": {w.plugin.name: w.weight for w in scenario.profile.scorers},
        "nodes": nodes,
        "selected": [evaluation.node_names[i] for i in evaluation.best()],
        "chosen": None if chosen is None else evaluation.node_names[chosen],
        "seed": seed,
        "notes": scenario.notes,
        **({} if scenario.sampling is None else {"sampling": scenario.sampling}),
        **({} if tried is None else {"triedNominatedNode": tried}),
        **_preemption(scenario, evaluation, preemption_seed),
    }


def _preemption(
    scenario: Scenario, evaluation: Evaluation, seed: int | None = None
) -> dict[str, Any]:
    """The ``preemption`` block when the pod fits nowhere and the profile preempts."""
    incoming = scenario.incoming
    if incoming is None:
        return {}
    node = scenario.nominated_to

    def waits(statuses: Mapping[int, str]) -> bool:
        assert incoming is not None
        return nominated_pods.waits_for_victims(
            incoming,
            resolve_priority(incoming, scenario.classes),
            node,
            None if node is None else statuses.get(node),
            scenario.bound,
            scenario.classes,
            scenario.version,
            scenario.disruption_conditions,
        )

    result = run_preemption(
        scenario.profile,
        scenario.state,
        scenario.pod,
        incoming,
        scenario.bound,
        evaluation,
        scenario.now,
        scenario.budgets,
        scenario.classes,
        scenario.statuses,
        None if seed is None else np.random.default_rng(seed),
        scenario.nominated,
        waits,
    )
    out = preemption_json(result, evaluation.node_names)
    chosen = None if result is None else result.nominated
    if chosen is not None and scenario.lower_nominees.get(chosen):
        # the lower-priority pods nominated there lose their nomination (``prepareCandidate``)
        out["preemption"]["clearedNominations"] = scenario.lower_nominees[chosen]
    return out
