"""cluster-autoscaler's scale-up in the replay: which group grows, and by how many nodes.

After ``ScaleUpOrchestrator.ScaleUp`` (core/scaleup/orchestrator/orchestrator.go): pods that fit
on nodes already being provisioned are left to them (the scheduler's filters pass on such a node,
as on upstream's template copies of the upcoming nodes, and it has room left); per group with
room, the pods that pass the scheduler's filters on an empty node of the group's shape (an unused
spare slot of the group, so its labels, taints and allocatable are the group's) are packed
first-fit decreasing onto new nodes (``estimator.BinpackingNodeEstimator``: pods by decreasing
cpu+memory share of the template's allocatable, ``DecreasingPodOrderer``, each onto the first
new node with room, a new node when none has; where a pod has host ports, pod (anti-)affinity
or spreading, every scheduler filter is asked on the new nodes with the pods packed so far on
them, as upstream's ``tryToScheduleOnNewNodes``:
``_pack_exact``), capped at ``maxSize``; the expander (``expander/random``, ``expander/waste``,
``expander/priority``) picks one option.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analyzer.autoscaler.removal_state import STATIC_FILTERS, first_fitting
from analyzer.replay.autoscale_setup import SECOND, AutoscalerSettings
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.state import ClusterState, PodDemand

# ``ca`` below is the loop's ``ClusterAutoscaler`` (its state, groups, record and caches); typed
# Any because importing that class here would make an import circle (tests/test_layout.py)
ClusterAutoscaler = Any

IntArray = np.ndarray[Any, np.dtype[np.int64]]


@dataclass
class Option:
    """``expander.Option``: a group, how many nodes, which pods they would hold."""

    group: int
    slots: list[int]
    pods: list[int]
    waste: float


def _fits_empty(
    state: ClusterState, profile: Profile, demand: PodDemand, slot: int, now: float
) -> bool:
    """The scheduler's filters pass for ``demand`` on the (empty) node ``slot``."""
    return all(bool(p.filter(state, demand, now).feasible[slot]) for p in profile.filters)


def _pack(
    rows: Sequence[IntArray], capacity: IntArray, allowed: int, bins: int
) -> tuple[list[int], int]:
    """First-fit decreasing of ``rows`` (already in decreasing order) onto at most ``bins`` new
    nodes of ``capacity``: (indices of the rows packed, nodes used)."""
    free: list[IntArray] = []
    counts: list[int] = []
    packed: list[int] = []
    for i, row in enumerate(rows):
        for b, left in enumerate(free):
            if counts[b] < allowed and bool(np.all(row <= left)):
                free[b] = left - row
                counts[b] += 1
                packed.append(i)
                break
        else:
            if len(free) < bins and bool(np.all(row <= capacity)) and allowed > 0:
                free.append(capacity - row)
                counts.append(1)
                packed.append(i)
    return packed, len(free)


def _constrained(demand: PodDemand) -> bool:
    """Whether a pod's fit on a node depends on the other pods there (host ports, pod
    (anti-)affinity, spreading): packing it by resources alone may be wrong."""
    return bool(demand.host_ports or demand.affinity is not None or demand.spread)


class _Tentative:
    """Pods bound and nodes made present on the live state for one simulated snapshot (the
    estimator's new nodes, the upcoming nodes), every change undone on exit."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.bound: list[tuple[int, PodDemand]] = []
        self.shown: list[int] = []

    def show(self, slot: int) -> None:
        """``slot`` present (in the snapshot) until exit."""
        present = self.state.present
        if present is not None and not present[slot]:
            present[slot] = True
            self.shown.append(slot)

    def hide(self, slot: int) -> None:
        """Undo ``show(slot)`` now."""
        if slot in self.shown:
            self.shown.remove(slot)
            assert self.state.present is not None
            self.state.present[slot] = False

    def bind(self, slot: int, demand: PodDemand) -> None:
        """``demand`` bound on ``slot`` until exit."""
        self.state.bind(slot, demand)
        self.bound.append((slot, demand))

    def __enter__(self) -> _Tentative:
        return self

    def __exit__(self, *_: object) -> None:
        for slot, demand in reversed(self.bound):
            self.state.unbind(slot, demand)
        present = self.state.present
        if present is not None:
            for slot in self.shown:
                present[slot] = False
        self.bound, self.shown = [], []


def _pack_exact(
    state: ClusterState,
    profile: Profile,
    demands: Sequence[PodDemand],
    order: list[int],
    slots: list[int],
    now: float,
) -> tuple[list[int], int]:
    """``_pack`` with every scheduler filter asked on the new nodes: the group's unused
    ``slots`` in turn, the pods packed so far bound on them and the opened ones present (as
    upstream's estimator adds its new nodes and pods to the snapshot). The state is left as it
    was. (Indices into ``order`` of the pods packed, nodes used.)"""
    opened: list[int] = []
    packed: list[int] = []
    with _Tentative(state) as sim:
        for i, pod in enumerate(order):
            demand = demands[pod]
            for slot in [*opened, *slots[len(opened) : len(opened) + 1]]:
                fresh = slot not in opened
                sim.show(slot)
                if _fits_empty(state, profile, demand, slot, now):
                    if fresh:
                        opened.append(slot)
                    sim.bind(slot, demand)
                    packed.append(i)
                    break
                if fresh:
                    sim.hide(slot)
    return packed, len(opened)


def _upcoming(
    state: ClusterState,
    demands: Sequence[PodDemand],
    pods: list[int],
    slots: list[int],
    keys: Sequence[bytes] = (),
    fits: Any = None,
    exact: tuple[Profile, float] | None = None,
) -> set[int]:
    """The pods (of ``pods``) that fit on the nodes already being provisioned (first fit).

    ``keys``: each pod's shape key (same requests and constraints): a shape that fitted none of
    the nodes is not tried again (their room only shrinks while pods are taken). ``fits(pod,
    slot)``: the scheduler's filters pass for the pod on that empty node (None: not asked).
    ``exact`` (profile, now): a pod whose fit depends on the pods beside it (``_constrained``)
    is asked every filter on the node with the pods taken so far bound there and the nodes
    present, as upstream's snapshot holds the upcoming nodes; the state is left as it was."""
    taken: set[int] = set()
    if not slots:
        return taken
    free = {s: state.allocatable[s] - state.requested[s] for s in slots}
    counts = {s: int(state.allowed_pods[s] - state.pod_count[s]) for s in slots}
    missed: set[bytes] = set()
    with _Tentative(state) as sim:
        if exact is not None:
            for slot in slots:
                sim.show(slot)
        for pod in pods:
            if keys:
                if keys[pod] in missed:
                    continue
                missed.add(keys[pod])  # dropped below when the pod is taken
            demand = demands[pod]
            row = demand.requests
            closely = exact is not None and _constrained(demand)
            for slot in slots:
                if counts[slot] <= 0 or not bool(np.all(row <= free[slot])):
                    continue
                if closely:
                    assert exact is not None
                    if not _fits_empty(state, exact[0], demand, slot, exact[1]):
                        continue
                elif fits is not None and not fits(pod, slot):
                    continue
                free[slot] = free[slot] - row
                counts[slot] -= 1
                taken.add(pod)
                if exact is not None:
                    sim.bind(slot, demand)
                if keys:
                    missed.discard(keys[pod])
                break
    return taken


def _waste(state: ClusterState, slot: int, nodes: int, rows: list[IntArray]) -> float:
    """``waste`` expander's score: idle cpu share + idle memory share of the new nodes."""
    score = 0.0
    for name in ("cpu", "memory"):
        j = state.index_of(name)
        if j is None:
            continue
        total = float(state.allocatable[slot, j]) * nodes
        used = float(sum(int(r[j]) for r in rows))
        score += (total - used) / total if total > 0 else 0.0
    return score


def choose(
    options: list[Option],
    settings: AutoscalerSettings,
    names: Sequence[str],
    rng: np.random.Generator,
) -> Option:
    """The expander's pick among ``options`` (non-empty)."""
    pool = options
    if settings.expander == "least-waste":
        best = min(o.waste for o in pool)
        pool = [o for o in pool if o.waste <= best + 1e-12]
    elif settings.expander == "priority":
        # highest priority first; a regex matches anywhere in the group's name, as upstream's
        # ``groupIDMatchesList`` (Go's ``FindStringIndex``): ``gpu-`` matches ``pool-gpu-a``.
        # Upstream's ``BestOptions`` starts from ``maxPrio := -1``: a match below -1 is never
        # taken, and with none at -1 or above every option stays (then the random fallback)
        for level, patterns in settings.priorities:
            if level < -1:
                break
            matched = [o for o in pool if any(re.search(p, names[o.group]) for p in patterns)]
            if matched:
                pool = matched
                break
    return pool[int(rng.integers(len(pool)))] if len(pool) > 1 else pool[0]


def _fitter(
    state: ClusterState,
    profile: Profile,
    demands: Sequence[PodDemand],
    now: float,
    keys: Sequence[bytes],
    memo: dict[tuple[bytes, int], bool] | None,
) -> Callable[[int, int, int], bool]:
    """``fits_group(pod, group, probe)``: the scheduler's filters pass for the pod on the empty
    node ``probe`` of ``group``; a shape's verdict kept in ``memo`` (per shape key and group)
    when its filters read nothing of other pods, else for this call only."""
    fresh: dict[tuple[bytes, int], bool] = {}

    def fits_group(pod: int, group: int, probe: int) -> bool:
        if not keys:
            return _fits_empty(state, profile, demands[pod], probe, now)
        demand = demands[pod]
        lasting = memo is not None and demand.affinity is None and not demand.spread
        store = memo if lasting and memo is not None else fresh
        key = (keys[pod], group)
        found = store.get(key)
        if found is None:
            found = store[key] = _fits_empty(state, profile, demand, probe, now)
        return found

    return fits_group


def to_help(
    state: ClusterState,
    profile: Profile,
    demands: Sequence[PodDemand],
    waiting: Sequence[int],
    provisioning: list[int],
    now: float,
    keys: Sequence[bytes] = (),
    memo: dict[tuple[bytes, int], bool] | None = None,
    group_of: Sequence[int] | None = None,
) -> list[int]:
    """Upstream's ``unschedulablePodsToHelp``: the ``waiting`` pods (those that fit no existing
    node) less those that fit on the nodes being provisioned (``provisioning``, first fit).
    ``RunOnce`` (core/static_autoscaler.go) adds the upcoming nodes to its snapshot before
    ``PodListProcessor.Process`` filters out the schedulable pods, so the young-pod test
    (``allPodsAreNew``) and the scale-up read this list: a pod waiting for a node already
    ordered is no pod to help. Arguments as ``plan_scale_up``'s."""
    if not provisioning:
        return list(waiting)
    fits_group = _fitter(state, profile, demands, now, keys, memo)

    def fits_upcoming(pod: int, slot: int) -> bool:
        assert group_of is not None
        return fits_group(pod, group_of[slot], slot)

    upcoming = _upcoming(
        state, demands, list(waiting), provisioning, keys,
        fits_upcoming if group_of is not None else None,
        (profile, now) if group_of is not None else None,
    )  # fmt: skip
    return [p for p in waiting if p not in upcoming] if upcoming else list(waiting)


def plan_scale_up(
    state: ClusterState,
    profile: Profile,
    demands: Sequence[PodDemand],
    waiting: Sequence[int],
    free_slots: Sequence[list[int]],
    provisioning: list[int],
    room: Sequence[int],
    settings: AutoscalerSettings,
    names: Sequence[str],
    rng: np.random.Generator,
    now: float,
    keys: Sequence[bytes] = (),
    memo: dict[tuple[bytes, int], bool] | None = None,
    group_of: Sequence[int] | None = None,
    helped: list[int] | None = None,
) -> Option | None:
    """One scale-up for ``waiting``: per group its unused slots ``free_slots[g]`` and ``room[g]``
    (``maxSize`` less its nodes and nodes being provisioned). None: no group helps.

    ``keys``: each pod's shape key (the replay's ``shape_keys``) and ``memo`` a dict kept between
    calls: a pod shape's verdict on an empty node of a group is kept when its filters read nothing
    of other pods (no spread constraints, no pod (anti-)affinity); others are judged afresh.
    ``group_of``: each slot's group, so a node being provisioned takes only the pods its group's
    filters pass (None: by their requests alone). ``helped``: the pods to help when the caller
    has them already (``to_help`` of the same arguments), else made here."""
    fits_group = _fitter(state, profile, demands, now, keys, memo)
    if helped is None:
        helped = to_help(state, profile, demands, waiting, provisioning, now, keys, memo, group_of)
    pods = helped
    if not pods:
        return None
    # pods of one shape key and kind of verdict (kept between calls or not) share
    # ``fits_group``'s answer (it stores one per key and group): asked once per class and group
    kinds: list[Any]
    if keys:
        # a shape's pods share their spreading and affinity terms (with terms anywhere they are
        # in the key), hence whether their verdicts are kept: one class per shape key
        kinds = list(map(keys.__getitem__, pods))
        # each class's first pod (a dict built backwards keeps the earliest pod of each key),
        # the classes in the order their first pod waits
        earliest = dict(zip(reversed(kinds), reversed(pods), strict=True))
        first = {c: earliest[c] for c in dict.fromkeys(kinds)}
    else:  # no shape keys: every pod judged alone
        kinds = list(range(len(pods)))
        first = dict(zip(kinds, pods, strict=True))
    options = []
    sized = [j for j in (state.index_of("cpu"), state.index_of("memory")) if j is not None]
    for group, slots in enumerate(free_slots):
        bins = min(room[group], len(slots))
        if bins <= 0:
            continue
        probe = slots[0]
        capacity = state.allocatable[probe]
        verdicts = {c: fits_group(p, group, probe) for c, p in first.items()}
        if not any(verdicts.values()):
            continue  # no waiting pod fits an empty node of this group
        fits = [p for p, c in zip(pods, kinds, strict=True) if verdicts[c]]
        # ``DecreasingPodOrderer.calculatePodScore``: cpu and memory shares of the template's
        # allocatable alone (no GPU nor other resource)
        share = [
            sum(
                float(demands[p].requests[j]) / float(capacity[j]) for j in sized if capacity[j] > 0
            )
            for p in fits
        ]
        order = [fits[i] for i in sorted(range(len(fits)), key=lambda i: -share[i])]
        rows = [demands[p].requests for p in order]
        if any(_constrained(demands[p]) for p in order):
            packed, used = _pack_exact(state, profile, demands, order, slots[:bins], now)
        else:
            # a new node's room: its allocatable less its DaemonSet and static pods (the
            # spare slot holds them, ``ReplayInput.baseline``), as upstream's template node
            room_left = capacity - state.requested[probe]
            allowed = int(state.allowed_pods[probe] - state.pod_count[probe])
            packed, used = _pack(rows, room_left, allowed, bins)
        if not used:
            continue
        helped = [order[i] for i in packed]
        waste = _waste(state, probe, used, [rows[i] for i in packed])
        options.append(Option(group, slots[:used], helped, waste))
    if not options:
        return None
    return choose(options, settings, names, rng)


def unschedulable(ca: ClusterAutoscaler, waiting: list[int], now: int) -> list[int]:
    """``FilterOutSchedulablePodListProcessor``: the waiting pods that fit on no existing node
    (each that fits is placed there in the simulation, so the next sees it), e.g. pods the
    scheduler has not retried yet since a node became Ready.

    Fast path (``ca.reuse``: every filter's verdict on a node reads that node alone, and a bind
    only shrinks what a node accepts): a shape found on no node by the last call, before any
    simulated placement, is asked only of the nodes that may accept more since — those that lost
    a pod (``ca.sims.freed`` stamped after that call) or became present; the others refused it
    then and have only gained pods. Fitting none of those, it fits nowhere (the same answer as
    the full walk, which finds no node either)."""
    state, seconds = ca.state, now / SECOND
    placed: list[tuple[int, Any]] = []
    out = []
    nowhere: set[bytes] = set()  # shapes that fit no node: the rest of the shape neither
    keys, pinned = ca.inp.shape_keys, ca.pinned_rows
    before = ca.nowhere if ca.reuse else None
    opened: Any = None  # the nodes that may accept more than at the last call
    kept: set[bytes] = set()  # shapes on no node with nothing placed yet (for the next call)
    pods = [p for p in waiting if not pinned[p]]
    shapes = len(set(map(keys.__getitem__, pods)))
    for i, pod in enumerate(pods):
        if len(nowhere) == shapes:  # every shape fits nowhere: so do the rest
            out.extend(pods[i:])
            break
        key = keys[pod]
        if key in nowhere:
            out.append(pod)
            continue
        demand = ca.inp.demands[pod]
        if before is not None and key in before[2]:
            if opened is None:
                opened = np.flatnonzero(ca.active & ((ca.sims.freed > before[0]) | ~before[1]))
            node = None
            if len(opened):
                may = opened[_static_mask(ca, demand, seconds)[opened]]
                if _room_on(ca, demand, may):  # may fit there: the walk from the first node
                    node = _first_node(ca, demand, seconds)
        else:
            node = _first_node(ca, demand, seconds)
        if node is not None:
            state.bind(node, demand)
            placed.append((node, demand))
        else:
            nowhere.add(key)
            out.append(pod)
            if not placed:
                kept.add(key)
    for node, demand in reversed(placed):
        state.unbind(node, demand)
    if ca.reuse:
        ca.nowhere = (ca.sims.passes, ca.active.copy(), kept)
    return out


def undecided(
    pods: Sequence[int],
    keys: Sequence[bytes],
    demands: Sequence[PodDemand],
    groups: Sequence[int],
    memo: dict[tuple[bytes, int], bool],
) -> set[int] | None:
    """The groups (of ``groups``) that ``plan_scale_up`` may still find an option in for
    ``pods``: those where some pod's shape has no kept verdict on an empty node (``memo``);
    a group where every shape's kept verdict is "fits no empty node" offers none. None when
    some shape's verdict is kept "fits" or is never kept (spreading, affinity): plan in full.
    (A shape's pods share their spreading and affinity terms — with terms anywhere they are in
    the shape key — so one pod of a shape tells whether its verdicts are kept.)"""
    first = dict(zip(map(keys.__getitem__, pods), pods, strict=True))
    open_groups: set[int] = set()
    for key, pod in first.items():
        if demands[pod].affinity is not None or demands[pod].spread:
            return None  # judged afresh at every call
        for g in groups:
            verdict = memo.get((key, g))
            if verdict:
                return None
            if verdict is None:
                open_groups.add(g)
    return open_groups


def _static_mask(ca: ClusterAutoscaler, demand: PodDemand, seconds: float) -> Any:
    """The nodes the static filters (labels, taints, cordons: fixed without node-state
    intervals) pass for ``demand``, kept per constraints object as ``_first_node``'s masks."""
    key = ("*", id(demand.constraints))
    mask = ca.static.get(key)
    if mask is None:
        mask = np.ones(ca.state.node_count, dtype=bool)
        for plugin in ca.profile.filters:
            if getattr(plugin, "name", "") in STATIC_FILTERS:
                mask &= _static_filter(ca.static, plugin, ca.state, demand, seconds)
        ca.static[key] = mask
    return mask


def _static_filter(
    static: dict[tuple[Any, ...], Any], plugin: Any, state: ClusterState, demand: PodDemand,
    seconds: float,
) -> Any:  # fmt: skip
    """A static filter's verdict per node for ``demand``, kept in ``static`` per (filter,
    constraints object) while the nodes keep their labels, taints and cordons."""
    key = (plugin.name, id(demand.constraints))
    mask = static.get(key)
    if mask is None:
        mask = static[key] = plugin.filter(state, demand, seconds).feasible
    return mask


def _compared(ca: ClusterAutoscaler, fit: Any, demand: PodDemand) -> Any:
    """NodeResourcesFit's compared (column, request) pairs for ``demand``, kept per demand
    (None: it asks a resource no node offers)."""
    found = ca.columns.get(id(demand))
    if found is None:
        found = ca.columns[id(demand)] = (demand, fit.compared(ca.state, demand))
    return found[1]


def _room_on(ca: ClusterAutoscaler, demand: PodDemand, nodes: IntArray) -> bool:
    """Whether NodeResourcesFit may pass for ``demand`` on one of ``nodes`` (False: it fails
    on all, so every filter pass does; True also when the profile has no such filter)."""
    fit = ca.resources_fit
    if fit is None:
        return True
    state = ca.state
    columns = _compared(ca, fit, demand)
    if columns is None:  # a resource no node offers
        return False
    alloc, used, count, allowed = (
        state.allocatable, state.requested, state.pod_count, state.allowed_pods,
    )  # fmt: skip
    for i in nodes.tolist():
        if count.item(i) < allowed.item(i) and all(
            alloc.item(i, j) - used.item(i, j) >= r for j, r in columns
        ):
            return True
    return False


def _first_node(ca: ClusterAutoscaler, demand: PodDemand, seconds: float) -> int | None:
    """The first present node (in slot order) whose filters pass for ``demand``. The fast
    path (``settings.reuse``) takes the static filters' masks kept between runs (as the
    removal simulation does), skips NodePorts for a pod without host ports, and asks
    NodeResourcesFit of the first candidate nodes only (``first_fitting``): the same node."""
    state, fast = ca.state, ca.settings.reuse
    static = ca.static if ca.inp.snapshot.node_state is None else None
    feasible = ca.active.copy()
    fit: Any = None
    for plugin in ca.profile.filters:
        name = getattr(plugin, "name", "")
        if fast and plugin is ca.resources_fit:
            fit = plugin
            continue
        if fast and name == "NodePorts" and not demand.host_ports:
            continue  # a pod without host ports conflicts with no port anywhere
        if fast and static is not None and name in STATIC_FILTERS:
            feasible &= _static_filter(static, plugin, state, demand, seconds)
            continue
        feasible &= plugin.filter(state, demand, seconds).feasible
    if fit is not None:
        return first_fitting(state, fit, demand, _compared(ca, fit, demand), feasible, 0)
    nodes = np.flatnonzero(feasible)
    return int(nodes[0]) if len(nodes) else None
