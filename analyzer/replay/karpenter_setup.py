"""Karpenter in the replay: its settings and the shapes each pool may launch (issue 25 item 2).

``KarpenterSettings`` is the config file's ``autoscaler.karpenter:`` section, one NodePool spec
applied to every pool of the snapshot (each pool is a NodePool)::

    autoscaler:
      provisioning-delay: 2m              # launch + registration until the node is Ready
      karpenter:
        disruption:                       # the NodePool's spec.disruption (upstream defaults)
          consolidationPolicy: WhenEmptyOrUnderutilized   # or WhenEmpty, Balanced
          consolidateAfter: 0s            # or Never
          budgets: [{nodes: "10%"}]       # nodes N or N%, schedule + duration, reasons
        requirements:                     # the NodePool's spec.template.spec.requirements
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}
        batchIdleDuration: 1s             # the provisioner's batching (BATCH_IDLE_DURATION)
        batchMaxDuration: 10s             # (BATCH_MAX_DURATION)

``with_shapes`` turns a replay input into one whose node set Karpenter drives: a pool's shapes
are its data nodes' distinct allocatable (named by their ``node.kubernetes.io/instance-type``
label), kept when the node's labels meet the requirements; each priced from ``--prices`` (the
pool's core-hour and GiB-hour prices × the shape's cores and GiB) or, without prices, ranked by
capacity (half the shape's cores over the pool's mean cores per node plus half its GiB over the
mean GiB: one average node costs 1). Per pool and shape as many spare slots as the pool's most
nodes at once in the data (named ``<pool>-karpenter-<n>``); the data's later joins and leaves are
dropped, as under cluster-autoscaler. A spare node holds the DaemonSet and static pods of the
node it copies (``autoscale_setup.daemon_overhead``), and a shape's ``allocatable`` is what is
left beside them (upstream's daemon overhead on every NodeClaim).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.autoscaler.nodepool import BudgetRule, Shape, parse_disruption
from analyzer.core.durations import parse_duration
from analyzer.core.errors import InputError
from analyzer.core.prices import Prices
from analyzer.core.structured import plain, preview
from analyzer.replay.autoscale_setup import (
    AutoscalerSettings,
    daemon_overhead,
    node_pools,
    parse_settings,
    spare_labels,
)
from analyzer.replay.input import NEVER, ReplayInput, rebuild_events
from analyzer.scheduling.fields import listing, mapping
from analyzer.scheduling.state import ClusterState

SECOND = 1_000_000_000
GIB = float(2**30)
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
KEYS = ("disruption", "requirements", "batchIdleDuration", "batchMaxDuration")


@dataclass(frozen=True)
class Requirement:
    """A NodePool requirement on a node label (``NodeSelectorRequirement``)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def allows(self, labels: Mapping[str, str]) -> bool:
        """Whether a node with ``labels`` meets the requirement."""
        value = labels.get(self.key)
        if self.operator == "In":
            return value in self.values
        if self.operator == "NotIn":
            return value not in self.values
        if self.operator == "Exists":
            return value is not None
        if self.operator == "DoesNotExist":
            return value is None
        if value is None or not value.lstrip("-").isdigit():
            return False
        bound = int(self.values[0])
        return int(value) > bound if self.operator == "Gt" else int(value) < bound


@dataclass(frozen=True)
class KarpenterSettings:
    """The ``autoscaler.karpenter:`` section (module docstring); defaults are upstream's."""

    policy: str = "WhenEmptyOrUnderutilized"
    never: bool = False
    consolidate_after: int = 0  # ns
    rules: tuple[BudgetRule, ...] = (BudgetRule("10%"),)
    requirements: tuple[Requirement, ...] = ()
    batch_idle: int = 1 * SECOND
    batch_max: int = 10 * SECOND
    provisioning_delay: int = 120 * SECOND  # the autoscaler section's provisioning-delay
    poll: int = 10 * SECOND  # the disruption controller's polling period
    # ``commandValidationDelay``: a command is checked again this long after it was made and
    # runs only if it still holds (0: at once, as the replay did before it modelled this)
    validation: int = 15 * SECOND
    # the exact shortcuts of the consolidation simulation (karpenter_simulate ``fast``); False:
    # the plain path, kept for the test that both decide alike
    fast: bool = True


def _requirement(raw: Any, where: str) -> Requirement:
    body = mapping(raw, where)
    key, op = body.get("key"), body.get("operator")
    if not isinstance(key, str) or not key:
        raise InputError(f"{where}.key: a node label key is needed")
    if op not in OPERATORS:
        raise InputError(f"{where}.operator: {preview(op)} is not one of {', '.join(OPERATORS)}")
    values = tuple(str(plain(v)) for v in listing(body.get("values"), f"{where}.values"))
    if op in ("In", "NotIn") and not values:
        raise InputError(f"{where}.values: {op} needs at least one value")
    if op in ("Gt", "Lt") and (len(values) != 1 or not values[0].lstrip("-").isdigit()):
        raise InputError(f"{where}.values: {op} needs one whole number")
    return Requirement(key, str(op), values)


def _ns(raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        raise InputError(f"{where}: {preview(raw)} is not a duration like 1s or 10s")
    text = f"{raw}s" if isinstance(raw, int) else raw
    seconds = parse_duration(text, field=where).total_seconds()
    if not 0 < seconds <= 3600:
        raise InputError(f"{where}: {preview(raw)} must be above 0s and at most 1h")
    return int(seconds * SECOND)


def parse_karpenter(
    raw: Any, provisioning_delay: int, where: str = "config autoscaler.karpenter"
) -> KarpenterSettings:
    """The ``karpenter:`` sub-section (None: every default); ``InputError`` naming the key."""
    body = mapping(raw, where)
    unknown = sorted(str(plain(k)) for k in body if k not in KEYS)
    if unknown:
        raise InputError(f"{where}.{unknown[0]}: not a setting (known: {', '.join(KEYS)})")
    policy, never, after, rules = parse_disruption(body.get("disruption"), f"{where}.disruption")
    requirements = tuple(
        _requirement(r, f"{where}.requirements[{i}]")
        for i, r in enumerate(listing(body.get("requirements"), f"{where}.requirements"))
    )
    idle = _ns(body.get("batchIdleDuration", "1s"), f"{where}.batchIdleDuration")
    most = _ns(body.get("batchMaxDuration", "10s"), f"{where}.batchMaxDuration")
    if most < idle:
        raise InputError(f"{where}.batchMaxDuration: below batchIdleDuration")
    return KarpenterSettings(
        policy, never, after * SECOND, rules, requirements, idle, most, provisioning_delay
    )


def autoscaler_settings(section: Any, autoscaler: str) -> AutoscalerSettings | KarpenterSettings:
    """The config's ``autoscaler:`` section as ``autoscaler``'s settings: cluster-autoscaler's
    flags (every key but ``karpenter``), or for ``karpenter`` its sub-section (with the
    section's ``provisioning-delay``). With ``auto`` both are checked, so a bad key fails
    before any work whichever autoscaler the data suggests later (called again with its name)."""
    karpenter = section.get("karpenter") if isinstance(section, Mapping) else None
    if isinstance(section, Mapping):  # the karpenter: sub-section is Karpenter's, not CA's flags
        section = {k: v for k, v in section.items() if k != "karpenter"}
    flags = parse_settings(section)
    if autoscaler in ("karpenter", "auto"):
        chosen = parse_karpenter(karpenter, flags.provisioning_delay)
        if autoscaler == "karpenter":
            return chosen
    return flags


@dataclass
class KarpenterPools:
    """The pools of a Karpenter-driven input: each slot's pool and shape, the spare slots."""

    names: list[str]  # pool names (the record's groups)
    of_node: list[int]  # slot -> pool index
    shapes: list[list[Shape]]  # per pool, cheapest first
    shape_of: list[int]  # slot -> index into its pool's shapes (-1: not a launchable shape)
    spare: np.ndarray[Any, np.dtype[np.bool_]]
    data_nodes: int
    priced: bool
    notes: list[str] = field(default_factory=list)
    by_shape: dict[tuple[int, int], list[int]] = field(default_factory=dict)  # ``slots``' index

    def slots(self, pool: int, shape: int) -> list[int]:
        """The spare slots of ``shape`` of ``pool``."""
        if not self.by_shape:
            for s in np.flatnonzero(self.spare).tolist():
                self.by_shape.setdefault((self.of_node[s], self.shape_of[s]), []).append(s)
        return self.by_shape.get((pool, shape), [])


def _most_at_once(inp: ReplayInput, members: np.ndarray[Any, Any]) -> int:
    joins = np.maximum(inp.node_join[members], inp.start)
    leaves = np.minimum(inp.node_leave[members], inp.end)
    instants = np.unique(joins)
    if not len(instants):
        return 0
    return max(int(np.count_nonzero((joins <= t) & (leaves > t))) for t in instants.tolist())


def _pool_shapes(
    inp: ReplayInput,
    members: np.ndarray[Any, Any],
    name: str,
    settings: KarpenterSettings,
    prices: Prices | None,
    overheads: dict[int, list[int]],
) -> tuple[list[tuple[int, Shape]], dict[int, int]]:
    """A pool's shapes (representative row, Shape) cheapest first, and each member's shape;
    each representative row's DaemonSet and static pods go into ``overheads``."""
    t = inp.template
    alloc = t.allocatable[members]
    cpu, mem = t.resources.index("cpu"), t.resources.index("memory")
    mean_cores = float(alloc[:, cpu].mean()) / 1000.0
    mean_gib = float(alloc[:, mem].mean()) / GIB
    _, first, inverse = np.unique(alloc, axis=0, return_index=True, return_inverse=True)
    price = None if prices is None else prices.for_pool(name)
    unit = None if price is None else price.per_unit(mean_cores, mean_gib)
    found = []
    for k, i in enumerate(first.tolist()):
        row = int(members[i])
        labels = t.node_labels[row] if t.node_labels else {}
        if not all(r.allows(labels) for r in settings.requirements):
            continue
        cores, gib = float(t.allocatable[row, cpu]) / 1000.0, float(t.allocatable[row, mem]) / GIB
        if unit is not None:
            cost = cores * unit[0] + gib * unit[1]
        else:  # ranked by capacity: an average node of the pool costs 1
            cost = 0.5 * cores / max(mean_cores, 1e-9) + 0.5 * gib / max(mean_gib, 1e-9)
        alloc_map = {
            r: int(v) for r, v in zip(t.resources, t.allocatable[row].tolist(), strict=True)
        }
        alloc_map["pods"] = int(t.allowed_pods[row])
        # what a new node of the shape holds beside its DaemonSet and static pods (its spare
        # slots hold them: ``ReplayInput.baseline``), as upstream adds the NodePool's daemon
        # overhead to every NodeClaim's requests (``scheduling/scheduler.go``
        # ``buildDaemonOverheadGroups``)
        overheads[row] = daemon_overhead(inp, row)
        for pod in overheads[row]:
            for resource, value in inp.demands[pod].request_map.items():
                alloc_map[resource] = alloc_map.get(resource, 0) - int(value)
            alloc_map["pods"] -= 1
        label = labels.get(INSTANCE_TYPE) or f"{cores:g}c-{gib:.0f}Gi"
        found.append((k, row, Shape(label, alloc_map, cost)))
    found.sort(key=lambda f: (f[2].price, f[1]))
    order = {k: j for j, (k, _, _) in enumerate(found)}
    member_shape = {
        int(m): order.get(int(inverse.reshape(-1)[i]), -1) for i, m in enumerate(members)
    }
    return [(row, shape) for _, row, shape in found], member_shape


def with_shapes(
    inp: ReplayInput, settings: KarpenterSettings, prices: Prices | None, *, room: int = 1
) -> tuple[ReplayInput, KarpenterPools]:
    """``inp`` with each pool's spare slots per shape appended, the data's later joins and
    leaves dropped (module docstring), and the pools. ``room``: spare slots per shape as a
    multiple of the pool's most nodes at once (the growth replay needs room to grow)."""
    nodes = inp.snapshot.nodes
    pools = node_pools(nodes)
    names = sorted(set(pools))
    of_node = [names.index(p) for p in pools]
    shapes: list[list[Shape]] = []
    shape_of = [-1] * len(of_node)
    overheads: dict[int, list[int]] = {}  # shape row -> its DaemonSet and static pods
    spare_rows: list[int] = []
    spare_pool: list[int] = []
    spare_shape: list[int] = []
    notes = []
    priced = prices is not None and all(prices.for_pool(n) is not None for n in names)
    for g, name in enumerate(names):
        members = np.flatnonzero(np.array(of_node) == g)
        found, member_shape = _pool_shapes(
            inp, members, name, settings, prices if priced else None, overheads
        )
        for m, k in member_shape.items():
            shape_of[m] = k
        shapes.append([s for _, s in found])
        most = max(_most_at_once(inp, members), 1) * room
        for k, (row, _) in enumerate(found):
            spare_rows.extend([row] * most)
            spare_pool.extend([g] * most)
            spare_shape.extend([k] * most)
        listed = ", ".join(f"{s.name} ({s.price:.3g})" for _, s in found) or "none"
        notes.append(
            f"pool {name}: may launch {listed}, up to {most} node(s) of each"
            + ("" if priced else "; ranked by capacity (no --prices: an average node costs 1)")
        )
        if not found:
            notes.append(f"pool {name}: no node shape meets autoscaler.karpenter.requirements")
    if settings.policy == "Balanced":
        notes.append(
            "consolidationPolicy Balanced (Karpenter v1.14.0): a consolidation move is made only "
            "when its share of the pool's cost saved is at least half its share of the pool's "
            "disruption (1 per node plus each moved pod's eviction cost)"
        )
    elif settings.policy == "WhenEmpty":
        notes.append("consolidationPolicy WhenEmpty: only empty nodes are deleted")
    spare_names = [f"{names[g]}-karpenter-{i}" for i, g in enumerate(spare_pool)]
    taken = set(inp.node_names) & set(spare_names)
    if taken:
        raise InputError(f"snapshot: node {sorted(taken)[0]} clashes with Karpenter's names")
    template = _extended(inp.template, spare_rows, spare_names)
    join = np.where(inp.node_join <= inp.start, inp.node_join, NEVER)
    out = dataclasses.replace(
        inp,
        node_names=template.node_names,
        node_join=np.concatenate([join, np.full(len(spare_rows), NEVER, dtype=np.int64)]),
        node_leave=np.full(template.node_count, NEVER, dtype=np.int64),
        template=template,
    )
    out.events = rebuild_events(out)
    count = inp.template.node_count
    # each spare node holds the DaemonSet and static pods of the node it copies
    out.baseline = tuple(
        (count + i, pod) for i, row in enumerate(spare_rows) for pod in overheads[row]
    )
    return out, KarpenterPools(
        names=names,
        of_node=[*of_node, *spare_pool],
        shapes=shapes,
        shape_of=[*shape_of, *spare_shape],
        spare=np.concatenate([np.zeros(count, bool), np.ones(len(spare_rows), bool)]),
        data_nodes=count,
        priced=priced,
        notes=notes,
    )


def _extended(t: ClusterState, rows: list[int], names: list[str]) -> ClusterState:
    """``t`` with copies of its nodes ``rows`` (labels, taints, allocatable) named ``names``,
    empty and schedulable."""
    idx = np.array(rows, dtype=np.int64)
    total = t.node_count + len(rows)
    return ClusterState(
        resources=t.resources,
        node_names=(*t.node_names, *names),
        allocatable=np.concatenate([t.allocatable, t.allocatable[idx]]),
        requested=np.zeros((total, len(t.resources)), dtype=np.int64),
        nonzero_requested=np.zeros((total, 2), dtype=np.int64),
        pod_count=np.zeros(total, dtype=np.int64),
        allowed_pods=np.concatenate([t.allowed_pods, t.allowed_pods[idx]]),
        node_labels=[
            *t.node_labels,
            *(spare_labels(t.node_labels[r], n) for r, n in zip(rows, names, strict=True)),
        ]
        if t.node_labels
        else [],
        node_annotations=[*t.node_annotations, *(t.node_annotations[r] for r in rows)],
        node_taints=[*t.node_taints, *(t.node_taints[r] for r in rows)] if t.node_taints else [],
        node_unschedulable=[*t.node_unschedulable, *([False] * len(rows))]
        if t.node_unschedulable
        else [],
        objects=t.objects,
        node_images=[*t.node_images, *({} for _ in rows)] if t.node_images else [],
    )
