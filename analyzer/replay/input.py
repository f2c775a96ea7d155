"""Replay input: a snapshot as arrays and the time-ordered event list (``analyzer.replay.engine``).

Built once per snapshot and shared by every strategy and seed: nodes with their join/leave times,
pods with arrival, queue timestamp (created) and departure (finished, else last seen when that is
before the end of the data), the pod demands on the scheduling core's resource axis, and the events
sorted by (time, kind: departure < node leaving < node joining < arrival, index). Times are int64
nanoseconds since the epoch; ``NEVER`` stands for "not within the data".

Two ways to read arrivals (``prepare(..., arrivals=...)``, docs/scheduling.md):

- ``"scheduled"`` (the default): a pod arrives when it was scheduled (else created, first seen),
  so the data's waits and preemptions reach the replay as what they were — a preemptor arrives
  once its victims were gone, and the victims end when they did;
- ``"created"``: every pod arrives when it entered the queue, ``OFFER_DELAY`` after its creation
  (never after its observed scheduled time), and a pod the data says was preempted
  (``pods.end_reason``) does not end at its observed time: it runs until the replay preempts it
  (then it is deleted, not queued again: its controller's replacement is a pod of the data,
  ``ReplayInput.replaced``) or to the end. The preemptions then come from the replay itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analyzer.core.errors import InputError
from analyzer.core.pod_intervals import pinned_pods
from analyzer.core.snapshot import Snapshot
from analyzer.core.snapshot_schema import END_PREEMPTED, resources_in
from analyzer.core.structured import parse_json_text
from analyzer.replay.topology import TOPOLOGY_MARK, InertIndex, in_play, objects_of
from analyzer.scheduling.constraint_types import constraints_from_json, taints_from_json
from analyzer.scheduling.fields import integer, listing
from analyzer.scheduling.gpu.devices import workload_of
from analyzer.scheduling.gpu.fragments import TargetWorkload
from analyzer.scheduling.gpu.requests import GPU_SPEC_LABEL, pod_gpu_demand
from analyzer.scheduling.host_ports import host_ports_from_json
from analyzer.scheduling.plugins.imagelocality import node_images_from_json, pod_images_from_json
from analyzer.scheduling.pod_cells import (
    controller_from_owner,
    labels_from_cell,
    topology_from_cells,
)
from analyzer.scheduling.pod_index import PodIndex
from analyzer.scheduling.priority_class import PriorityClass
from analyzer.scheduling.state import ClusterState, PodDemand
from analyzer.usage.koord import koord_priority_class

NEVER = np.iinfo(np.int64).max
DEPART, NODE_LEAVE, NODE_JOIN, ARRIVE = 0, 1, 2, 3
MINUTE = 60 * 1_000_000_000
PREEMPT, NEVER_PREEMPT = "PreemptLowerPriority", "Never"  # PriorityClass preemptionPolicy
FALLBACK_COLUMNS = 1000  # grid points of a snapshot without a step (no usage samples)
ARRIVALS = ("scheduled", "created")  # how ``prepare`` reads arrivals (module docstring)
# arrivals="created": a pod's first scheduling attempt, one second after its creation (the data's
# times are whole seconds; the synthetic generator offers a new pod to its scheduler then too)
OFFER_DELAY = 1_000_000_000

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


def _ns(series: pd.Series) -> Int64Array:
    """Nanoseconds since the epoch; NaT becomes ``NEVER``."""
    values = pd.to_datetime(series, utc=True)
    out = values.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    out[values.isna().to_numpy()] = NEVER
    result: Int64Array = out.astype(np.int64)
    return result


@dataclass
class ReplayInput:
    """Everything a replay needs from a snapshot, as arrays (built once, shared by strategies)."""

    snapshot: Snapshot
    start: int
    end: int
    step: int
    node_names: tuple[str, ...]
    node_join: Int64Array  # ns; nodes with join <= start are present from the start
    node_leave: Int64Array  # ns; NEVER = still there at the end
    pod_uids: list[str]
    arrival: Int64Array
    departure: Int64Array  # NEVER = still running at the end
    real_node: Int64Array  # -1 = never bound in reality
    pinned: BoolArray
    demands: list[PodDemand]
    shape_keys: list[bytes]
    template: ClusterState  # empty state (nothing bound): allocatable, resource axis
    # when each pod entered the scheduling queue (created, else its arrival): PrioritySort's
    # timestamp (``analyzer.scheduling.queue_order``); None: the arrival
    queued: Int64Array | None = None
    instant: int = 0  # pods that depart when (or before) they arrive: placed and removed at once
    arrivals: str = ARRIVALS[0]  # how arrivals were read (module docstring)
    # arrivals="created": pods whose controller's replacement is in the data (preempted in it);
    # the replay deletes them when it preempts them instead of queueing them again. None: none
    replaced: BoolArray | None = None
    # arrivals="scheduled": the data's nominations (``pods.nominated``, the generator's), each
    # (start ns, preemptor row, node index, end ns) by start, with the rows of the pods the data
    # says were preempted (``pods.end_reason``); the replay holds the preemptor's room on that
    # node while its victims terminate there (``engine``). None: none in the data
    nominations: tuple[list[tuple[int, int, int, int]], BoolArray] | None = None
    topology: bool = True  # PodTopologySpread / InterPodAffinity may act on a pod (``in_play``)
    events: tuple[Int64Array, Int64Array, Int64Array] = field(
        default_factory=lambda: (np.zeros(0, np.int64),) * 3
    )
    # (slot, pod): ``pod``'s requests held on ``slot`` in the replay's state (``hold_baseline``),
    # whether or not the slot is present: an autoscaler's spare node's DaemonSet and static
    # pods, copies of those of a node of its shape (``autoscale_setup.daemon_overhead``), there
    # from its creation
    baseline: tuple[tuple[int, int], ...] = ()
    _gpu_workload: TargetWorkload | None = field(default=None, repr=False)

    @property
    def pod_count(self) -> int:
        """Number of pods in the snapshot."""
        return len(self.pod_uids)

    def gpu_workload(self) -> TargetWorkload:
        """FGD's target workload: the GPU demand shapes of the pods the strategies place (every
        pod but DaemonSet/static ones), most common first until >= 95 % of them (built once)."""
        if self._gpu_workload is None:
            demands = [
                pod_gpu_demand(d.request_map, d.labels, f"pod {d.namespace}/{d.name}")
                for d, pinned in zip(self.demands, self.pinned.tolist(), strict=True)
                if not pinned
            ]
            self._gpu_workload = workload_of(demands)
        return self._gpu_workload

    def fresh_state(self) -> ClusterState:
        """A copy of the empty cluster state to replay into (tracking placed pods' labels and
        terms, ``attach_pod_index``)."""
        t = self.template
        state = ClusterState(
            resources=t.resources,
            node_names=t.node_names,
            allocatable=t.allocatable.copy(),
            requested=np.zeros_like(t.requested),
            nonzero_requested=np.zeros_like(t.nonzero_requested),
            pod_count=np.zeros_like(t.pod_count),
            allowed_pods=t.allowed_pods.copy(),
            node_labels=t.node_labels,
            node_annotations=t.node_annotations,
            node_taints=list(t.node_taints),  # a copy: node-state intervals change it in place
            node_unschedulable=list(t.node_unschedulable),
            objects=t.objects,
            node_images=t.node_images,
        )
        # nothing bound yet: every placed pod is tracked (spread, affinity), unless no pod can
        # ever meet those plugins (``topology.in_play``): then an index that stays empty
        state.pod_index = PodIndex(t.node_count) if self.topology else InertIndex(t.node_count)
        return state

    def hold_baseline(self, state: ClusterState) -> None:
        """Account the ``baseline`` pods on their slots of ``state`` (after its GPU devices are
        attached: a pod's GPUs best-fit as a pinned pod's): requests, pod count, host ports and
        GPUs, not the topology index."""
        for slot, pod in self.baseline:
            demand = self.demands[pod]
            state.requested[slot] += demand.requests
            state.nonzero_requested[slot] += demand.nonzero
            state.pod_count[slot] += 1
            if state.devices is not None:
                state.devices.bind(slot, demand, None)
            if demand.host_ports:
                state.ports.add(slot, demand.host_ports)


def _node_state(snapshot: Snapshot, pod_resources: list[str]) -> ClusterState:
    nodes = snapshot.nodes
    names = [str(n) for n in nodes["node"]]
    alloc_res = resources_in(nodes, "allocatable")
    columns = {r: nodes[f"allocatable:{r}"].to_numpy(dtype=np.int64) for r in alloc_res}
    allocatable: list[dict[str, int]] = []
    for i in range(len(names)):
        entry = {r: int(columns[r][i]) for r in alloc_res}
        # a snapshot without allocatable:pods has no pod-count limit (kubelet default is 110,
        # but the data did not say so)
        entry.setdefault("pods", 1 << 40)
        allocatable.append(entry)
    return ClusterState.from_nodes(
        names,
        allocatable,
        extra_resources=pod_resources,
        annotations=[labels_from_cell(a) for a in nodes["annotations"]],
        labels=[labels_from_cell(a) for a in nodes["labels"]],
        taints=[taints_from_json(t) for t in _column(nodes, "taints", "[]")],
        images=node_images_from_json(_column(nodes, "images", "[]"), "nodes.images"),
    )


def _column(frame: pd.DataFrame, name: str, default: str) -> list[str]:
    """A JSON text column as strings (``default`` where missing or NA: older snapshots)."""
    if name not in frame.columns:
        return [default] * len(frame)
    return [str(v) for v in frame[name].fillna(default)]


def nominated_spans(cell: str, where: str) -> list[tuple[str, int, int]]:
    """A ``pods.nominated`` cell: ``[[node, start, end], ...]`` (unix seconds; "[]": none),
    read by the project's JSON reader (depth-bounded); anything else an ``InputError`` naming
    ``where``."""
    if not cell or cell == "[]":
        return []
    spans = []
    for i, item in enumerate(listing(parse_json_text(cell, where), where)):
        if not isinstance(item, list) or len(item) != 3:
            raise InputError(f"{where}[{i}]: expected [node, start, end] (unix seconds)")
        node = item[0]
        if not isinstance(node, str):
            raise InputError(f"{where}[{i}][0]: the node's name is not a string")
        start, end = integer(item[1], f"{where}[{i}][1]"), integer(item[2], f"{where}[{i}][2]")
        spans.append((node, start, end))
    return spans


def _nominations(
    pods: pd.DataFrame, node_names: tuple[str, ...]
) -> tuple[list[tuple[int, int, int, int]], BoolArray] | None:
    """``ReplayInput.nominations`` from ``pods.nominated`` (None: no pod has one). A node the
    snapshot does not list is skipped; a malformed cell is an input error naming the pod."""
    texts = _column(pods, "nominated", "[]")
    if all(t == "[]" for t in texts):
        return None
    index = {name: i for i, name in enumerate(node_names)}
    found = []
    for row, cell in enumerate(texts):
        where = f"pods.nominated of pod {pods['uid'].iloc[row]}" if cell != "[]" else ""
        for name, start, end in nominated_spans(cell, where):
            node = index.get(name)
            if node is not None and start < end:
                found.append((start * 10**9, row, node, end * 10**9))
    found.sort()
    marked = np.array([r == END_PREEMPTED for r in _column(pods, "end_reason", "")], dtype=bool)
    return (found, marked) if found else None


def _demands(pods: pd.DataFrame, state: ClusterState) -> tuple[list[PodDemand], list[bytes]]:
    """One ``PodDemand`` per pod (requests on the state's axis) and a key per distinct shape."""
    count = len(pods)
    axis = state.resources

    def matrix(kind: str) -> Int64Array:
        out = np.zeros((count, len(axis)), dtype=np.int64)
        for j, r in enumerate(axis):
            col = f"{kind}:{r}"
            if col in pods.columns:
                out[:, j] = pods[col].to_numpy(dtype=np.int64)
        return out

    requests, limits = matrix("requests"), matrix("limits")
    nonzero = np.stack(
        [pods[f"nonzero_requests:{r}"].to_numpy(dtype=np.int64) for r in ("cpu", "memory")],
        axis=1,
    )
    klass = koord_priority_class(pods).fillna("").astype(str).to_numpy()
    qos = pods["qos_class"].fillna("").astype(str).to_numpy()
    names = pods["name"].fillna("").astype(str).to_numpy()
    namespaces = pods["namespace"].fillna("").astype(str).to_numpy()
    priority = pods["priority"].astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan)
    policies = preemption_policies(pods, state.objects.priority_classes)
    daemonset = (pods["owner_kind"].fillna("") == "DaemonSet").to_numpy()
    # few distinct (tolerations, nodeSelector) texts: parse each once, share the object
    texts = list(
        zip(
            _column(pods, "tolerations", "[]"),
            _column(pods, "node_selector", "{}"),
            _column(pods, "affinity", "{}"),  # its required node affinity (collect --kube-objects)
            strict=True,
        )
    )
    parsed = {t: constraints_from_json(*t) for t in dict.fromkeys(texts)}
    label_texts = _column(pods, "labels", "{}")
    labels = {t: labels_from_cell(t) for t in dict.fromkeys(label_texts)}
    # PodTopologySpread / InterPodAffinity inputs (analyzer.replay.topology): the spread and pod
    # affinity cells, parsed once per distinct (cells, namespace, labels)
    cells = list(
        zip(
            _column(pods, "affinity", "{}"),
            _column(pods, "topology_spread", "[]"),
            namespaces.tolist(),
            label_texts,
            strict=True,
        )
    )
    topology = {
        c: topology_from_cells(c[0], c[1], c[2], labels[c[3]], "pods") for c in dict.fromkeys(cells)
    }
    owners = list(
        zip(_column(pods, "owner_kind", ""), _column(pods, "owner_name", ""), strict=True)
    )
    controllers = {o: controller_from_owner(*o) for o in dict.fromkeys(owners)}
    uids = pods["uid"].astype(str).tolist()
    # ImageLocality: the container images, parsed once per distinct cell (not in the shape key:
    # the score cache keeps ImageLocality per image set, and images change no filter)
    image_texts = _column(pods, "container_images", "{}")
    images = {
        t: pod_images_from_json(t, "pods.container_images") for t in dict.fromkeys(image_texts)
    }
    # NodePorts: the host ports, parsed once per distinct cell ("[]" for nearly every pod)
    port_texts = _column(pods, "host_ports", "[]")
    ports = {t: host_ports_from_json(t, "pods.host_ports") for t in dict.fromkeys(port_texts)}
    # with terms anywhere, pods of one shape may differ in what the topology plugins do: the
    # shape key then also holds namespace, labels, owner and terms (pending-queue groups)
    terms = any(spread or affinity is not None for spread, affinity in topology.values())
    topology_on = terms or in_play(state.objects, [])
    demands: list[PodDemand] = []
    keys: list[bytes] = []
    for i in range(count):
        req_row, lim_row = requests[i], limits[i]
        demands.append(
            PodDemand(
                name=names[i],
                namespace=namespaces[i],
                requests=req_row,
                nonzero=nonzero[i],
                limits=lim_row,
                request_map={r: int(v) for r, v in zip(axis, req_row, strict=True) if v},
                limit_map={r: int(v) for r, v in zip(axis, lim_row, strict=True) if v},
                daemonset=bool(daemonset[i]),
                priority=None if np.isnan(priority[i]) else int(priority[i]),
                preemption_policy=policies[i],
                koord_class=str(klass[i]),
                qos=str(qos[i]) or "BestEffort",
                constraints=parsed[texts[i]],
                labels=labels[label_texts[i]],
                spread=topology[cells[i]][0],
                affinity=topology[cells[i]][1],
                controller=controllers[owners[i]],
                uid=uids[i],
                images=images[image_texts[i]][0],
                init_images=images[image_texts[i]][1],
                host_ports=ports[port_texts[i]],
            )
        )
        key = (
            req_row.tobytes()
            + nonzero[i].tobytes()
            + lim_row.tobytes()
            + f"|{klass[i]}|{qos[i]}|{int(daemonset[i])}|{texts[i][0]}|{texts[i][1]}".encode()
            + f"|{demands[-1].priority}".encode()  # PrioritySort and preemption read it
        )
        if policies[i] == NEVER_PREEMPT:  # the pods of a group preempt alike
            key += b"|Never"
        node_terms = parsed[texts[i]]  # required and preferred node affinity: plan, scores
        if node_terms.required_terms is not None or node_terms.preferred_terms:
            key += f"|{texts[i][2]}".encode()
        spec = labels[label_texts[i]].get(GPU_SPEC_LABEL)
        if spec:
            key += f"|{GPU_SPEC_LABEL}={spec}".encode()
        if demands[-1].host_ports:  # NodePorts filters on them: a shape of its own
            key += f"|ports={port_texts[i]}".encode()
        if topology_on:  # last, after TOPOLOGY_MARK: the score cache's entries ignore it
            key += TOPOLOGY_MARK + "|{}|{}|{}|{}|{}".format(*cells[i], owners[i]).encode()
        keys.append(key)
    return demands, keys


def preemption_policies(pods: pd.DataFrame, classes: Mapping[str, PriorityClass]) -> list[str]:
    """Each pod's ``preemptionPolicy``: its PriorityClass's (the Priority admission plugin copies
    it into the pod), the ``globalDefault`` class's for a pod without a class, else
    ``PreemptLowerPriority`` (no class objects in the snapshot: older ones, or no --kube-objects)."""
    default = next((c for c in classes.values() if c.global_default), None)
    fallback = default.preemption_policy if default is not None else PREEMPT
    names = _column(pods, "priority_class", "")
    by_name = {n: classes[n].preemption_policy if n in classes else (PREEMPT if n else fallback)
               for n in dict.fromkeys(names)}  # fmt: skip
    return [by_name[n] for n in names]


def _fallback_step(start: int, end: int) -> int:
    """The evaluation grid of a snapshot without usage samples (step 0, e.g. built from a trace):
    whole minutes, at least one, at most ``FALLBACK_COLUMNS`` grid points over the data."""
    minutes = -(-max(end - start, 0) // (FALLBACK_COLUMNS * MINUTE))
    return max(1, minutes) * MINUTE


def prepare(snapshot: Snapshot, arrivals: str = ARRIVALS[0]) -> ReplayInput:
    """Arrays and the time-ordered event list of ``snapshot`` (shared by every strategy);
    ``arrivals``: one of ``ARRIVALS`` (module docstring)."""
    if arrivals not in ARRIVALS:
        raise ValueError(f"arrivals must be one of {', '.join(ARRIVALS)}, not {arrivals!r}")
    start = int(snapshot.start.value)
    end = int(snapshot.end.value)
    step = int(snapshot.meta.step_seconds) * 1_000_000_000 or _fallback_step(start, end)
    nodes, pods = snapshot.nodes, snapshot.pods
    node_names = tuple(str(n) for n in nodes["node"])
    join = _ns(nodes["first_seen"])
    join[join == NEVER] = start
    leave = _ns(nodes["last_seen"])
    leave[leave + step >= end] = NEVER  # seen until the end of the data: did not leave
    position = {name: i for i, name in enumerate(node_names)}
    real_node = np.array(
        [-1 if pd.isna(n) else position.get(str(n), -1) for n in pods["node"]], dtype=np.int64
    )
    scheduled, created = _ns(pods["scheduled"]), _ns(pods["created"])
    arrival = scheduled
    if arrivals == "created":
        offered = np.where(created == NEVER, NEVER, created + OFFER_DELAY)
        arrival = np.minimum(offered, scheduled)  # NEVER stands in for "unknown" in both
    for column in ("created", "first_seen"):
        fallback = _ns(pods[column])
        arrival = np.where(arrival == NEVER, fallback, arrival)
    arrival[arrival == NEVER] = start
    queued = np.where((created == NEVER) | (created > arrival), arrival, created)
    finished = _ns(pods["finished"])
    last_seen = _ns(pods["last_seen"])
    last_seen[last_seen + step >= end] = NEVER
    departure = np.where(finished != NEVER, finished, last_seen)
    replaced = None
    if arrivals == "created":
        replaced = np.array([r == END_PREEMPTED for r in _column(pods, "end_reason", "")], bool)
        departure[replaced] = NEVER  # it ends only if the replay preempts it
    nominations = None if arrivals == "created" else _nominations(pods, node_names)
    pod_resources = sorted(set(resources_in(pods, "requests")))
    template = _node_state(snapshot, pod_resources)
    template.objects = objects_of(snapshot)
    demands, keys = _demands(pods, template)
    inp = ReplayInput(
        snapshot=snapshot,
        start=start,
        end=end,
        step=step,
        node_names=node_names,
        node_join=join,
        node_leave=leave,
        pod_uids=[str(u) for u in pods["uid"]],
        arrival=arrival,
        departure=departure,
        real_node=real_node,
        pinned=pinned_pods(pods).to_numpy(dtype=bool),
        demands=demands,
        shape_keys=keys,
        template=template,
        queued=queued,
        arrivals=arrivals,
        replaced=replaced,
        nominations=nominations,
    )
    inp.events, inp.instant = _events(inp)
    inp.topology = in_play(template.objects, demands)
    return inp


def rebuild_events(inp: ReplayInput) -> tuple[Int64Array, Int64Array, Int64Array]:
    """The event list of ``inp`` after its node joins/leaves were changed (a node that never
    joins has ``node_join`` ``NEVER``)."""
    return _events(inp)[0]


def _events(inp: ReplayInput) -> tuple[tuple[Int64Array, Int64Array, Int64Array], int]:
    """Sorted (time, kind, index) arrays, and how many pods depart when or before they arrive.

    Such instant pods get an arrival only: the replay places them and removes them at once, so
    their usage samples still land on a node (``observed`` stays exact).
    """
    pods = np.arange(inp.pod_count)
    instant = inp.departure <= inp.arrival
    leaving = np.flatnonzero(inp.node_leave != NEVER)
    joining = np.flatnonzero((inp.node_join > inp.start) & (inp.node_join != NEVER))
    departing = np.flatnonzero((inp.departure != NEVER) & ~instant)
    times = np.concatenate(
        [
            inp.departure[departing],
            inp.node_leave[leaving],
            inp.node_join[joining],
            inp.arrival[pods],
        ]
    )
    kinds = np.concatenate(
        [
            np.full(len(departing), DEPART),
            np.full(len(leaving), NODE_LEAVE),
            np.full(len(joining), NODE_JOIN),
            np.full(len(pods), ARRIVE),
        ]
    ).astype(np.int64)
    index = np.concatenate([departing, leaving, joining, pods]).astype(np.int64)
    order = np.lexsort((index, kinds, times))
    return (times[order], kinds[order], index[order]), int(instant.sum())
