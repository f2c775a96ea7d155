"""The replay's node autoscaler: its settings and the node groups it scales (issue 25 item 2).

``AutoscalerSettings`` is the config file's ``autoscaler:`` section: cluster-autoscaler's flags by
their flag names (the scale-down ones through ``analyzer.autoscaler.options.parse_options``, the
loop's timings here), ``frequent-loops-enabled`` (default: the version's CA's, true from 1.35),
``expander``, ``priorities`` (the priority expander's ConfigMap:
priority → list of node-group name regexes), ``provisioning-delay`` (not a CA flag: how long a
new node takes to become Ready), ``max-graceful-termination`` (how long a drained node may wait
for its evicted pods to terminate) and ``node-groups`` (pool → ``{minSize, maxSize}``).

``with_node_groups`` turns a replay input into one whose node set the autoscaler drives:

- one node group per pool (nodes without a pool: group ``default``), its shape the pool's most
  common node (allocatable, labels, taints), its ``minSize``/``maxSize`` the fewest and most nodes
  of the pool present at once in the data unless set;
- the nodes present at the data's start are the group's initial nodes; the data's later joins and
  leaves are dropped (they were the real autoscaler's work, which the replay's replaces);
- ``maxSize`` spare slots per group, nodes of the group's shape that do not exist until a
  scale-up provisions them (named ``<group>-ca-<n>``); each holds the DaemonSet and static pods
  of the group's shape node (``daemon_overhead``, ``ReplayInput.baseline``): their requests,
  pod count and host ports, as the DaemonSet controller places them on a new node.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analyzer.autoscaler.options import CAOptions, duration_seconds, parse_options
from analyzer.autoscaler.release import release_of
from analyzer.core.errors import InputError
from analyzer.core.structured import plain, preview
from analyzer.replay.input import NEVER, ReplayInput, rebuild_events
from analyzer.scheduling.state import ClusterState
from analyzer.scheduling.versions import KubeVersion, or_default

AUTOSCALERS = ("none", "cluster-autoscaler", "karpenter")
EXPANDERS = ("random", "least-waste", "priority")
SECOND = 1_000_000_000
# the loop's timings: CA flag (or ours) -> default in seconds
TIMINGS = {
    "scan-interval": 10,
    "scale-down-unneeded-time": 600,
    "scale-down-delay-after-add": 600,
    "provisioning-delay": 120,
    "max-graceful-termination": 600,
    # how long a node the removal simulation found unremovable is skipped (RecentlyUnremovable)
    "unremovable-node-recheck-timeout": 300,
}
DEFAULT_GROUP = "default"


@dataclass(frozen=True)
class GroupBounds:
    """A node group's size bounds as set in the config (None: the data's observed range)."""

    min_size: int | None = None
    max_size: int | None = None


@dataclass(frozen=True)
class AutoscalerSettings:
    """The config file's ``autoscaler:`` section (module docstring); defaults are upstream's."""

    options: CAOptions = field(default_factory=CAOptions)
    scan_interval: int = TIMINGS["scan-interval"] * SECOND  # ns, like every replay time
    unneeded_time: int = TIMINGS["scale-down-unneeded-time"] * SECOND
    delay_after_add: int = TIMINGS["scale-down-delay-after-add"] * SECOND
    provisioning_delay: int = TIMINGS["provisioning-delay"] * SECOND
    # how long a drained node waits for its evicted pods at most (their own grace period first)
    max_graceful_termination: int = TIMINGS["max-graceful-termination"] * SECOND
    unremovable_node_recheck_timeout: int = TIMINGS["unremovable-node-recheck-timeout"] * SECOND
    # False: every scale-down pass simulates every candidate afresh (the reference the exact
    # reuse of ``analyzer.replay.autoscale_reuse`` is tested against); not a config key
    reuse: bool = True
    # "" (not set): the default of the CA that goes with the cluster's Kubernetes version,
    # ``least-waste`` from 1.33 (upstream commit f8a68efe63), ``random`` before
    # (``default_expander``, read by the loop)
    expander: str = ""
    # ``--frequent-loops-enabled``; None (not set): the default of the version's CA, true from
    # 1.35 (``KubeVersion.ca_frequent_loops_default``, read by the loop)
    frequent_loops: bool | None = None
    priorities: tuple[tuple[int, tuple[str, ...]], ...] = ()  # highest first
    groups: Mapping[str, GroupBounds] = field(default_factory=dict)
    # ``cluster-autoscaler-version`` (not a CA flag): the CA release, e.g. "1.33.4", whose
    # patch-level rules apply (``analyzer.autoscaler.release``); None: the newest patch of the
    # cluster's minor known here. Checked against the cluster's version by the loop
    release: str | None = None
    # who set ``groups``' bounds, for the pools' notes (``analyzer demo`` sets its own); not a
    # config key
    groups_from: str = "the config"


HOSTNAME = "kubernetes.io/hostname"


def spare_labels(labels: dict[str, str], name: str) -> dict[str, str]:
    """A new node's labels copied from its template node: its own ``kubernetes.io/hostname``
    (its name) where the template has one, as cluster-autoscaler's sanitized template node
    (``simulator/node_info_utils.go`` ``createSanitizedNode``) and a launched node have; with
    the template's, a new node would share its hostname domain (spreading, anti-affinity)."""
    if HOSTNAME not in labels:
        return labels
    return {**labels, HOSTNAME: name}


def _seconds(raw: Any, where: str) -> int:
    if isinstance(raw, float):  # the section's durations are strings or whole seconds
        raise InputError(f"{where}: {preview(raw)} is not a duration like 10m or 30s")
    return int(duration_seconds(raw, where) * SECOND)


def _priorities(raw: Any, where: str) -> tuple[tuple[int, tuple[str, ...]], ...]:
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a mapping of priority to a list of group regexes")
    out = []
    for key, value in raw.items():
        try:
            level = int(str(plain(key)))
        except ValueError:
            raise InputError(f"{where}.{plain(key)}: a priority is a whole number") from None
        patterns = value if isinstance(value, list) else [value]
        for pattern in patterns:
            try:
                re.compile(str(pattern))
            except re.error as err:
                raise InputError(
                    f"{where}.{level}: {preview(pattern)} is no regex ({err})"
                ) from None
        out.append((level, tuple(str(p) for p in patterns)))
    return tuple(sorted(out, reverse=True))


def _groups(raw: Any, where: str) -> dict[str, GroupBounds]:
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a mapping of pool name to {{minSize, maxSize}}")
    out = {}
    for name, bounds in raw.items():
        at = f"{where}.{plain(name)}"
        if not isinstance(bounds, Mapping) or set(bounds) - {"minSize", "maxSize"}:
            raise InputError(f"{at}: expected {{minSize: N, maxSize: N}}")
        values = {}
        for key in ("minSize", "maxSize"):
            value = bounds.get(key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100_000
            ):
                raise InputError(f"{at}.{key}: {preview(value)} is not a whole number 0..100000")
            values[key] = value
        low, high = values["minSize"], values["maxSize"]
        if low is not None and high is not None and low > high:
            raise InputError(f"{at}: minSize {low} is above maxSize {high}")
        out[str(plain(name))] = GroupBounds(values["minSize"], values["maxSize"])
    return out


def parse_settings(raw: Any, where: str = "config autoscaler") -> AutoscalerSettings:
    """The ``autoscaler:`` section (None: every default); ``InputError`` naming the key."""
    if raw is None:
        return AutoscalerSettings()
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a mapping of cluster-autoscaler flags to values")
    flags: dict[str, Any] = {}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        name = str(plain(key))
        at = f"{where}.{name}"
        if name in TIMINGS:
            values[name.replace("-", "_").replace("scale_down_", "")] = _seconds(value, at)
        elif name == "expander":
            if value not in EXPANDERS:
                raise InputError(f"{at}: {preview(value)} is not one of {', '.join(EXPANDERS)}")
            values["expander"] = value
        elif name == "frequent-loops-enabled":
            if not isinstance(value, bool):
                raise InputError(f"{at}: {preview(value)} is not true or false")
            values["frequent_loops"] = value
        elif name == "priorities":
            values["priorities"] = _priorities(value, at)
        elif name == "node-groups":
            values["groups"] = _groups(value, at)
        elif name == "cluster-autoscaler-version":
            # its form now (its minor against the cluster's when the loop starts)
            release_of(value, at)
            values["release"] = value
        else:
            flags[name] = value
    if values.get("scan_interval") == 0:
        raise InputError(f"{where}.scan-interval: must be above 0s (e.g. 10s)")
    if values.get("expander") == "priority" and not values.get("priorities"):
        raise InputError(
            f"{where}.priorities: the priority expander needs priorities: {{10: [.*]}}"
        )
    options = parse_options(flags, where)
    if not options.scale_down_unready_enabled:  # a flag the replay would not honour: refused
        raise InputError(
            f"{where}.scale-down-unready-enabled: false is not modelled in the replay (its "
            "nodes' not-ready periods are not CA's unready nodes); remove it"
        )
    return AutoscalerSettings(options=options, **values)


@dataclass
class NodeGroups:
    """The groups of an autoscaled replay input: each slot's group, bounds and which are spare."""

    names: list[str]  # group names
    of_node: list[int]  # slot -> group index
    min_size: list[int]
    max_size: list[int]
    spare: np.ndarray[Any, np.dtype[np.bool_]]  # slots that exist only once provisioned
    data_nodes: int  # slots [0, data_nodes) are the snapshot's nodes
    notes: list[str] = field(default_factory=list)  # where each group's bounds came from


def _observed_range(inp: ReplayInput, members: np.ndarray[Any, Any]) -> tuple[int, int]:
    """The fewest and most of ``members`` present at once within the data (counted after every
    join and leave of an instant)."""
    joins = np.maximum(inp.node_join[members], inp.start)
    leaves = np.minimum(inp.node_leave[members], inp.end)
    instants = np.unique(np.concatenate([joins, leaves]))
    instants = instants[instants < inp.end]
    if not len(instants):
        return 0, len(members)
    present = [int(np.count_nonzero((joins <= t) & (leaves > t))) for t in instants.tolist()]
    return min(present), max(present)


def _shape(frame: pd.DataFrame, rows: np.ndarray[Any, Any], inp: ReplayInput) -> int:
    """The row of the group's most common node shape (allocatable), first such node."""
    alloc = inp.template.allocatable[rows]
    _, first, counts = np.unique(alloc, axis=0, return_index=True, return_counts=True)
    return int(rows[first[int(np.argmax(counts))]])


def daemon_overhead(inp: ReplayInput, row: int) -> list[int]:
    """The DaemonSet and static pods (``pinned``) a new node copied from node ``row`` holds:
    those on ``row`` at the first instant the most of them ran there at once within the
    window, in pod order. Upstream's template node of a group is an existing node's with its
    DaemonSet and mirror pods (``simulator/node_info_utils.go``
    ``SanitizedTemplateNodeInfoFromNodeInfo``), and the DaemonSet controller puts them on a
    new node as it registers."""
    pods = np.flatnonzero(inp.pinned & (inp.real_node == row))
    if not len(pods):
        return []
    starts = np.maximum(inp.arrival[pods], inp.start)
    stops = np.minimum(inp.departure[pods], inp.end)
    ran = starts < stops
    pods, starts, stops = pods[ran], starts[ran], stops[ran]
    best: list[int] = []
    for t in np.unique(starts).tolist():  # the count rises only at a start
        alive = pods[(starts <= t) & (stops > t)].tolist()
        if len(alive) > len(best):
            best = alive
    return best


def node_pools(nodes: pd.DataFrame) -> list[str]:
    """Each node's group: its pool, ``DEFAULT_GROUP`` where it has none (the names the config's
    ``autoscaler.node-groups`` keys are checked against)."""
    if "pool" not in nodes.columns:
        return [DEFAULT_GROUP] * len(nodes)
    return [p or DEFAULT_GROUP for p in nodes["pool"].fillna("").astype(str).tolist()]


def with_node_groups(
    inp: ReplayInput, settings: AutoscalerSettings
) -> tuple[ReplayInput, NodeGroups]:
    """``inp`` with the spare slots appended and the data's later joins and leaves dropped
    (module docstring), and the node groups."""
    nodes = inp.snapshot.nodes
    pools = node_pools(nodes)
    names = sorted(set(pools))
    of_node = [names.index(p) for p in pools]
    mins, maxes, shapes, notes = [], [], [], []
    for g, name in enumerate(names):
        members = np.flatnonzero(np.array(of_node) == g)
        low, high = _observed_range(inp, members)
        bounds = settings.groups.get(name, GroupBounds())
        mins.append(low if bounds.min_size is None else bounds.min_size)
        maxes.append(max(high, mins[-1]) if bounds.max_size is None else bounds.max_size)
        shapes.append(_shape(nodes, members, inp))
        if bounds.min_size is None or bounds.max_size is None:
            # say which bound came from where: one set in the config is not "observed"
            from_data = [
                key
                for key, given in (("minSize", bounds.min_size), ("maxSize", bounds.max_size))
                if given is None
            ]
            source = (
                "the data's observed range"
                if len(from_data) == 2
                else f"{from_data[0]} from the data's observed range, the other from "
                f"{settings.groups_from}"
            )
            notes.append(
                f"pool {name}: minSize {mins[-1]}, maxSize {maxes[-1]}"
                f" ({source}; set autoscaler.node-groups to change them)"
            )
    unknown = sorted(set(settings.groups) - set(names))
    if unknown:
        raise InputError(
            f"config autoscaler.node-groups: no pool named {unknown[0]} in the snapshot "
            f"(pools: {', '.join(names)})"
        )
    spare_rows = [shapes[g] for g in range(len(names)) for _ in range(maxes[g])]
    spare_names = [f"{names[g]}-ca-{i}" for g in range(len(names)) for i in range(maxes[g])]
    taken = set(inp.node_names) & set(spare_names)
    if taken:
        raise InputError(f"snapshot: node {sorted(taken)[0]} clashes with the autoscaler's names")
    t = inp.template
    rows = np.array(spare_rows, dtype=np.int64)
    labels = (
        [spare_labels(t.node_labels[r], n) for r, n in zip(spare_rows, spare_names, strict=True)]
        if t.node_labels
        else []
    )
    template = ClusterState(
        resources=t.resources,
        node_names=(*t.node_names, *spare_names),
        allocatable=np.concatenate([t.allocatable, t.allocatable[rows]]),
        requested=np.zeros((t.node_count + len(rows), len(t.resources)), dtype=np.int64),
        nonzero_requested=np.zeros((t.node_count + len(rows), 2), dtype=np.int64),
        pod_count=np.zeros(t.node_count + len(rows), dtype=np.int64),
        allowed_pods=np.concatenate([t.allowed_pods, t.allowed_pods[rows]]),
        node_labels=[*t.node_labels, *labels],
        node_annotations=[*t.node_annotations, *(t.node_annotations[r] for r in spare_rows)],
        node_taints=[*t.node_taints, *(t.node_taints[r] for r in spare_rows)]
        if t.node_taints
        else [],
        node_unschedulable=[*t.node_unschedulable, *([False] * len(rows))]
        if t.node_unschedulable
        else [],
        objects=t.objects,
        node_images=[*t.node_images, *({} for _ in spare_rows)] if t.node_images else [],
    )
    join = np.where(inp.node_join <= inp.start, inp.node_join, NEVER)
    out = dataclasses.replace(
        inp,
        node_names=template.node_names,
        node_join=np.concatenate([join, np.full(len(rows), NEVER, dtype=np.int64)]),
        node_leave=np.full(template.node_count, NEVER, dtype=np.int64),
        template=template,
    )
    out.events = rebuild_events(out)
    # each spare node holds its group's DaemonSet and static pods from its creation
    overhead = [daemon_overhead(inp, shapes[g]) for g in range(len(names))]
    first = t.node_count
    out.baseline = tuple(
        (first + i, pod)
        for i, g in enumerate(g for g in range(len(names)) for _ in range(maxes[g]))
        for pod in overhead[g]
    )
    groups = NodeGroups(
        names=names,
        of_node=[*of_node, *(g for g in range(len(names)) for _ in range(maxes[g]))],
        min_size=mins,
        max_size=maxes,
        spare=np.concatenate([np.zeros(t.node_count, bool), np.ones(len(rows), bool)]),
        data_nodes=t.node_count,
        notes=notes,
    )
    return out, groups


def default_expander(version: KubeVersion | None) -> str:
    """cluster-autoscaler's default ``--expander`` for the CA of Kubernetes ``version`` (CA's
    minor follows Kubernetes'; None: the default version): ``least-waste`` from 1.33 (upstream
    commit f8a68efe63, main.go/flags.go), ``random`` up to 1.32."""
    return "least-waste" if or_default(version).ca_least_waste_default else "random"
