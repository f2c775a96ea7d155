"""cluster-autoscaler's view of the replay's live state (``analyzer.replay.autoscale_loop``).

CA reads the replay's nodes and pods through objects of its own (``analyzer.autoscaler``): a
``CANode`` per slot, a ``CAPod`` per replay pod (made once, when a pass first reads its node,
by ``pods.RunningPods``), each node's pods in pod order, each slot's node group and the groups'
sizes, and the per-slot facts its utilisation screen reads (cpu and memory allocatable, GPU and
scale-down-disabled nodes). Kept across passes while what they are made of is the same: a node's
pods while its version (binds and unbinds, ``touch``) is, the groups' sizes while no node joins
or is removed and no provisioning starts or ends.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import numpy as np

from analyzer.autoscaler.cluster import CANode, Cluster, NodeGroup
from analyzer.autoscaler.drainability import system_pods_age
from analyzer.autoscaler.options import CAOptions
from analyzer.autoscaler.pods import MIRROR_ANNOTATION, CAPod, RunningPods
from analyzer.autoscaler.utilization import GPU_RESOURCE, is_gpu_node
from analyzer.replay.autoscale_record import AutoscalerRecord
from analyzer.replay.autoscale_screen import under
from analyzer.replay.autoscale_setup import SECOND, NodeGroups
from analyzer.replay.input import ReplayInput
from analyzer.scheduling.state import ClusterState, PodDemand

# a replay pod's annotations: a static pod's mirror (controlled by its Node) or none (read only)
MIRRORED = {MIRROR_ANNOTATION: "replay"}
NO_ANNOTATIONS: dict[str, str] = {}


def running_ca_pod(running: RunningPods, d: PodDemand) -> CAPod:
    """The CA pod of the replay's running pod ``d``, made by ``running``: its requests in one
    container, its controller as its owner, a Node-controlled (static) pod a mirror."""
    kind = "" if d.controller is None else d.controller.kind
    return running.make(
        d.name,
        d.namespace,
        d.request_map,
        d.labels,
        MIRRORED if kind == "Node" else NO_ANNOTATIONS,
        (kind,) if kind else (),
        d.controller,
        d.uid,
    )


class ReplayView:
    """CA's nodes, pods and groups over one replay's live state (module docstring)."""

    # set by the loop (``ClusterAutoscaler``) and read here: what it recorded (joins, removals,
    # additions), the slots being provisioned, and whether it takes the fast path
    record: AutoscalerRecord
    provisioning: dict[int, int]
    reuse: bool

    def __init__(
        self,
        inp: ReplayInput,
        groups: NodeGroups,
        options: CAOptions,
        state: ClusterState,
        active: np.ndarray[Any, Any],
        on_node: list[set[int]],
    ) -> None:
        self.inp, self.groups, self.options = inp, groups, options
        self.state, self.active, self.on_node = state, active, on_node
        self.pods: dict[int, CAPod] = {}
        self.running = RunningPods()  # how ``ca_pod`` makes them
        # every pod's creation: the data's (``ReplayInput.queued``, else its arrival), or, for a
        # pod CA evicted, when its controller created it again (upstream's new pod's; ``recreate``)
        created = inp.queued if inp.queued is not None else inp.arrival
        self.created = np.array(created, dtype=np.int64)
        self.retired: list[CAPod] = []  # CA pods ``recreate`` replaced (their ids stay taken)
        # a kube-system pod's creation matters (CA 1.33+: no PodDisruptionBudget covering it,
        # it is drainable once created longer ago than the timeout; ``drainability``)
        self.system_ages = system_pods_age(options)
        self.demand_by_id: dict[int, Any] = {}  # each CA pod object's demand, by ``id``
        # spare slots' DaemonSet and static pods (``ReplayInput.baseline``): slot -> data pods
        # whose copies they are, and their CA pods (``daemon_pods``)
        self.daemons: dict[int, list[int]] = {}
        for slot, pod in inp.baseline:
            self.daemons.setdefault(slot, []).append(pod)
        self.daemon_made: dict[int, list[CAPod]] = {}
        self.kinds = [
            NodeGroup(name, groups.min_size[g], groups.max_size[g])
            for g, name in enumerate(groups.names)
        ]
        self.membership: tuple[Any, dict[str, NodeGroup], dict[str, int]] = (None, {}, {})
        self.position = {name: i for i, name in enumerate(state.node_names)}
        # ``pods_of``: slot -> (its version, its CA pods in pod order, their object ids)
        self.pod_lists: dict[int, tuple[int, list[CAPod], tuple[int, ...]]] = {}
        # per slot, how many times the replay bound or unbound a pod there (``touch``): its pods
        # are the same while this is (every change of ``on_node`` goes through ``touch``)
        self.version = [0] * len(state.node_names)
        self.group_of = np.array(groups.of_node, dtype=np.int64)
        self.nodes = [
            CANode(name, {}, labels=state.node_labels[i] if state.node_labels else {},
                   annotations=state.node_annotations[i] if state.node_annotations else {})
            for i, name in enumerate(state.node_names)
        ]  # fmt: skip
        self.cpu, self.mem = state.index_of("cpu"), state.index_of("memory")
        self.gpu_column = state.index_of(GPU_RESOURCE)
        self.gpu = np.array(
            [
                is_gpu_node({"nvidia.com/gpu": 1} if "nvidia.com/gpu" in state.resources
                            and state.allocatable[i, state.resources.index("nvidia.com/gpu")]
                            else {}, labels)
                for i, labels in enumerate(state.node_labels or [{}] * state.node_count)
            ], dtype=bool,
        )  # fmt: skip
        self.disabled = np.array([n.scale_down_disabled for n in self.nodes], dtype=bool)
        self.special = self.gpu | self.disabled  # judged whatever their utilisation
        # the cpu and memory allocatable as floats, and where they are offered (the screen)
        columns = [self.cpu or 0, self.mem or 0]
        self.capacity = state.allocatable[:, columns].astype(np.float64)
        self.offered = self.capacity > 0
        self.capacity_rows = self.capacity.tolist()  # per slot (cpu, memory) as Python floats
        # per slot, whether its kept verdict (``autoscale_scaledown._judge``) is one a bind on it
        # keeps (``autoscale_steady.steady``), kept with the verdict
        self.keeps = np.zeros(len(state.node_names), dtype=bool)
        # ... and whether that verdict makes it a candidate (no unremovable reason); and the
        # slots whose pods changed since their verdict (``touch``; all at first), judged again
        # when looked at. Each a bytearray (a slot's flag read and set from Python at list
        # speed) and a numpy view of the same bytes (masks over every slot)
        count = len(state.node_names)
        self.candidate_flags = bytearray(count)
        self.candidate = np.frombuffer(self.candidate_flags, dtype=bool)
        self.unjudged_flags = bytearray(b"\x01" * count)
        self.unjudged = np.frombuffer(self.unjudged_flags, dtype=bool)
        # per replay pod, the cpu and memory requests CA takes off its utilisation (``left_out``,
        # made on first read by ``autoscale_screen.taken_off``); None where no option takes any
        ignoring = options.ignore_daemonsets_utilization or options.ignore_mirror_pods_utilization
        self.taken_off: dict[int, tuple[int, int]] | None = {} if ignoring else None

    # whether the screen of one of the nodes given is under a limit (``autoscale_screen.under``,
    # as a method: the screen's arrays are the loop's, ``ClusterAutoscaler``)
    screen_under = under

    def _members_version(self) -> tuple[int, int, int, int]:
        """Changes whenever a node joins or is removed or provisioning starts or ends (the
        group members: present nodes and those being provisioned)."""
        return (len(self.record.presence), len(self.record.removed), len(self.provisioning),
                len(self.record.added))  # fmt: skip

    def sizes(self) -> list[int]:
        """Each group's target size: its present nodes and those being provisioned (kept while
        the members are the same; read only)."""
        version = self._members_version()
        if self._sizes_kept[0] != version:
            count = len(self.groups.names)
            sizes = np.bincount(self.group_of[self.active], minlength=count).tolist()
            for slot in self.provisioning:
                sizes[self.groups.of_node[slot]] += 1
            self._sizes_kept = (version, sizes)
        return self._sizes_kept[1]

    _sizes_kept: tuple[Any, list[int]] = (None, [])

    @functools.cached_property
    def ratio_is_utilization(self) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """Slots whose CA utilisation (``utilization.calculate``) is their screen ratio
        (``autoscale_screen.ratios``) exactly, so that ``_judge`` need not sum their pods:
        neither GPU nor scale-down-disabled (``special``), cpu and memory offered, no group
        options and no pod left out of the utilisation (``ignore-daemonsets-utilization`` and
        ``ignore-mirror-pods-utilization`` false; no replay pod is long terminating). CA divides
        millis as floats: for integers below 2**53 that is the correctly rounded quotient of
        the same two integers, as the ratio is; a slot whose millis may not be is left out
        (the caller also checks the requests)."""
        opts = self.options
        if opts.ignore_daemonsets_utilization or opts.ignore_mirror_pods_utilization:
            return np.zeros(len(self.nodes), dtype=bool)
        if any(kind.options is not None for kind in self.kinds) or not self.reuse:
            return np.zeros(len(self.nodes), dtype=bool)
        exact = (self.capacity * 1000 < 2.0**53).all(axis=1)
        return exact & self.offered.all(axis=1) & ~self.special  # type: ignore[no-any-return]

    @functools.cached_property
    def gpu_by_requests(self) -> np.ndarray[Any, np.dtype[np.bool_]]:
        """GPU nodes whose CA utilisation (``utilization.calculate``: a GPU node's is its GPU
        ratio alone, 0 where it offers no GPU) is their GPU requests over their GPU allocatable
        in millis as floats, so that ``_judge`` need not sum their pods: not scale-down-disabled
        (judged by their annotation), the allocatable's millis below 2**53 (the caller checks
        the requests'), no group options and no pod left out of the utilisation (as
        ``ratio_is_utilization``)."""
        opts = self.options
        if opts.ignore_daemonsets_utilization or opts.ignore_mirror_pods_utilization:
            return np.zeros(len(self.nodes), dtype=bool)
        if any(kind.options is not None for kind in self.kinds) or not self.reuse:
            return np.zeros(len(self.nodes), dtype=bool)
        column = self.gpu_column
        exact = np.ones(len(self.nodes), dtype=bool)
        if column is not None:
            exact = self.state.allocatable[:, column] < 2**53 // 1000
        return self.gpu & ~self.disabled & exact  # type: ignore[no-any-return]

    @functools.cached_property
    def bind_rises(self) -> bool:
        """Whether a bind on a node only raises CA's utilisation of it: no pod's requests are
        taken off the allocatable (``ignore-daemonsets-utilization``,
        ``ignore-mirror-pods-utilization``, globally or in a group's options; both fixed for
        the replay), ``autoscale_steady.steady``."""
        opts = self.options
        return not (
            opts.ignore_daemonsets_utilization
            or opts.ignore_mirror_pods_utilization
            or any(
                k.options is not None and k.options.ignore_daemonsets_utilization
                for k in self.kinds
            )
        )

    @functools.cached_property
    def slot_groups(self) -> dict[str, NodeGroup]:
        """Every slot's group by node name (the groups of the members are read from it)."""
        names, of = self.state.node_names, self.groups.of_node
        return {names[slot]: self.kinds[of[slot]] for slot in range(len(of))}

    def ca_pod(self, pod: int) -> CAPod:
        """The CA pod of replay pod ``pod`` (made once: its object id names it to the caches)."""
        found = self.pods.get(pod)
        if found is None:
            d = self.inp.demands[pod]
            found = running_ca_pod(self.running, d)
            if self.system_ages and d.namespace == "kube-system":
                # (set as the constructor would: the field is read only afterwards)
                vars(found)["creation_time"] = self.born(pod) / SECOND
            self.pods[pod] = found  # kept for the replay: its id stays its own
            self.demand_by_id[id(found)] = d
        return found

    def daemon_pods(self, slot: int) -> list[CAPod]:
        """The CA pods of spare node ``slot``'s DaemonSet and static pods
        (``ReplayInput.baseline``: held in the state's requests, not replay pods), made once:
        each a copy of its data pod, named for the node."""
        found = self.daemon_made.get(slot)
        if found is None:
            found = self.daemon_made[slot] = []
            node = self.state.node_names[slot]
            for pod in self.daemons[slot]:
                d = self.inp.demands[pod]
                copy = dataclasses.replace(d, name=f"{d.name}-{node}", uid=f"{d.uid}-{node}")
                made = running_ca_pod(self.running, copy)
                self.demand_by_id[id(made)] = copy
                found.append(made)
        return found

    def daemon_left_out(self, slot: int) -> tuple[int, int]:
        """``left_out`` summed over spare node ``slot``'s DaemonSet and static pods."""
        cpu = mem = 0
        for pod in self.daemons.get(slot, ()):
            pair = self.left_out(pod)
            cpu += pair[0]
            mem += pair[1]
        return cpu, mem

    def born(self, pod: int) -> int:
        """When ``pod`` was created: its controller's new pod's creation if CA evicted it, else
        the data's (queued, else its arrival)."""
        return int(self.created[pod])

    def recreate(self, pod: int, now: int) -> None:
        """CA evicted ``pod`` at ``now``: its controller makes a new pod (a new object here when
        its creation is read: a kube-system pod's)."""
        self.created[pod] = now
        if self.system_ages and self.inp.demands[pod].namespace == "kube-system":
            old = self.pods.pop(pod, None)
            if old is not None:  # kept: the caches name pods by object id, so none is reused
                self.retired.append(old)

    def left_out(self, pod: int) -> tuple[int, int]:
        """The cpu and memory requests of replay pod ``pod`` (the state's units) that CA's
        utilisation takes off (``utilization.resource_utilization``): a DaemonSet pod's with
        ``ignore-daemonsets-utilization``, a mirror pod's with ``ignore-mirror-pods-utilization``;
        (0, 0) for any other pod."""
        opts, found = self.options, self.ca_pod(pod)
        if not (
            (opts.ignore_daemonsets_utilization and found.daemonset)
            or (opts.ignore_mirror_pods_utilization and found.mirror)
        ):
            return 0, 0
        requests = self.inp.demands[pod].requests
        cpu = 0 if self.cpu is None else int(requests[self.cpu])
        mem = 0 if self.mem is None else int(requests[self.mem])
        return cpu, mem

    def member_groups(self) -> tuple[dict[str, NodeGroup], dict[str, int]]:
        """Each node's group by name (read for members only: present nodes and those being
        provisioned) and each group's size (its members; groups with none left out)."""
        version = self._members_version()
        if self.membership[0] != version:  # the group members change with joins and removals
            names = self.groups.names
            sizes = {names[g]: n for g, n in enumerate(self.sizes()) if n}
            self.membership = (version, self.slot_groups, sizes)
        return self.membership[1], self.membership[2]

    def cluster(self, candidates: list[int]) -> Cluster:
        """CA's view with the pods of ``candidates`` (the nodes whose pods the pass reads)."""
        names = self.state.node_names
        groups, sizes = self.member_groups()
        pods = {names[slot]: self.pods_of(slot) for slot in candidates}
        return Cluster(self.nodes, pods, groups, sizes=sizes)

    def pods_of(self, slot: int) -> list[CAPod]:
        """The CA pods on ``slot`` in pod order, kept while its pods stay (read only: the
        simulator copies the lists it changes)."""
        version = self.version[slot]
        known = self.pod_lists.get(slot)
        if known is None or known[0] != version:
            made = self.pods  # ``ca_pod`` inlined for the pods already made (most)
            pods = [made.get(p) or self.ca_pod(p) for p in sorted(self.on_node[slot])]
            if slot in self.daemons:  # a spare node's DaemonSet and static pods, after them
                pods.extend(self.daemon_pods(slot))
            known = self.pod_lists[slot] = (version, pods, tuple(map(id, pods)))
        return known[1]

    def pod_ids(self, slot: int, pods: list[CAPod]) -> tuple[int, ...]:
        """The object ids of ``pods``, the list a pass holds for ``slot``: kept with the slot's
        list while the pass has not changed it (the same list object)."""
        known = self.pod_lists.get(slot)
        if known is not None and known[1] is pods:
            return known[2]
        return tuple(map(id, pods))
