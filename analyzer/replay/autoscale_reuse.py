"""Exact reuse of cluster-autoscaler's removal simulations between scale-down passes (issue 25
item 5).

CA's answer for a candidate is a function of what its simulation read; when none of that changed
since an earlier pass, the earlier answer is the answer (``analyzer.replay.autoscale_loop`` takes
it again instead of simulating). What one simulation reads, and how each is checked:

- the candidate's pods (the keys of its pod objects, moved-in pods of this pass included) and the
  PodDisruptionBudgets' disruptions left at its turn: equal keys;
- what the pass did before it (each earlier candidate's verdict and moves, but for those blocked
  by a pod, which changed nothing: ``simulate_candidates``): an equal context, so the scheduler
  state at its turn differs from the earlier pass's only by the replay's own binds and unbinds
  since;
- the round-robin start (``lastIndex``) at its turn: equal;
- the nodes each successful placement looked at (from the start to the node it took): none of
  them bound or unbound a pod since (a per-node stamp of the last pass before its change);
- a placement that failed looked at every destination: it fails again when no node freed room
  since, or none that did has room for any of the candidate's pods (cpu, memory, a pod slot;
  the filters can only refuse more than that, and a bind only takes room);
- a whole pass is not run when it would answer as the last (``unchanged``): the pods changed
  only on nodes it did not judge (or skipped as recently unremovable), that are not near the
  threshold now and that no placement walked (nor, freed, could take a pod that found no
  place); the caller adds: no recheck deadline passed, the last pass found no node unremovable
  and, if the candidates limit stopped it, the limit is the same
  (``analyzer.autoscaler.recheck``);
- a candidate blocked by a pod read its pods and the budgets only (any context, any start);
- a removable candidate whose pods all went to their hinted nodes (CA's scheduling hints) read
  its pods, the budgets, the hints and those nodes only (no search: not the start, not the
  others): taken again, whatever the context and start, when those are equal and each hinted
  node is still a destination with room for its pods in turn (checked on the state now);
- such an answer used in the last pass, when nothing it read changed since (its pods, budgets
  and hints, and on each target its pods, whether it is a destination and the answers that
  moved pods onto it before its turn), is taken without the check (``SimulationMemo.unread``);
- the set of nodes, groups and provisioning: any join, removal or scale-up starts a new epoch
  in which no earlier answer that read the node set is reused (the two kinds above that read
  none of it, blocked and placed by hints, are kept: ``new_epoch``).

This holds only where each node's verdict depends on that node alone (``local``): no pod with
topology spread, pod (anti-)affinity or host ports, no DoNotSchedule default spreading, no
node-state changes over time (labels, taints, cordons), filters from the set below. Elsewhere
every candidate is simulated (the plain path, also ``AutoscalerSettings.reuse`` False).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from analyzer.autoscaler.removal_state import Outcome
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.state import ClusterState, PodDemand

# a ``NoPlaceToMovePods`` answer on a candidate's first pod is quiet as a blocked one is
# (``Entry.quiet``: out of later answers' context, skipped and rechecked as blocked ones are,
# ``autoscale_steady``, ``autoscale_expiry``); False keeps it loud (tests compare the two)
NO_PLACE_QUIET = True

# an answer placed by hints alone whose reads did not change since the last pass is taken again
# without its check (``SimulationMemo.unread``); False checks every one (tests compare the two)
UNREAD_TAKES = True

# an answer placed by hints alone is asked again by its hints only (``_by_hints_again``), not by
# ``find`` first (which takes it only where that check passes too); False asks ``find`` first
# (tests that count ``find``'s answers)
HINTED_ALONE = True

# ``SimulationMemo.extend``'s table is emptied at this many contexts (a later one gets a new
# number: an answer that read one made before is not taken again by ``find``)
CONTEXTS_KEPT = 200_000

# filters whose verdict on a node reads only that node (given the conditions of ``local``)
LOCAL_FILTERS = frozenset(
    {
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
    }
)


def local(profile: Profile, demands: Sequence[PodDemand], node_states: bool) -> bool:
    """Whether every placement's verdict on a node reads that node alone (module docstring)."""
    if node_states:
        return False
    for plugin in profile.filters:
        name = getattr(plugin, "name", "")
        if name not in LOCAL_FILTERS:
            return False
        defaults = getattr(plugin, "defaults", ())
        if any(c.when_unsatisfiable == "DoNotSchedule" for c in defaults):
            return False
    return not any(d.spread or d.affinity is not None or d.host_ports for d in demands)


@dataclass
class HintsRead:
    """An answer's hint looks and sets as taking it again reads them: the keys and hints it
    read in order (``Hints.same_keys``), each key's first look (what a simulation's
    ``looked.setdefault`` in order leaves, in that order) and its sets as one dict (what
    ``set`` of each in order leaves: a key's last node, at its first key's place)."""

    keys: tuple[str, ...]
    hints: tuple[str | None, ...]
    first: dict[str, str | None]
    sets: dict[str, str]


@dataclass
class Entry:
    """One simulation's answer and what it read."""

    made: int  # the pass whose state it read (changes stamped later make it stale)
    epoch: int
    context: int  # ``SimulationMemo.extend``'s number for what the pass did before it
    pods: tuple[int, ...]
    pdbs: tuple[int, ...]
    start: int  # lastIndex before
    end: int  # lastIndex after
    outcome: Outcome
    targets: list[int]
    reads: np.ndarray[Any, np.dtype[np.int64]]  # node indices its placements looked at
    rows: list[np.ndarray[Any, Any]]  # a failed one's pods' requests (cpu, memory)
    looks: list[tuple[str, str | None]]  # each pod's scheduling hint as it read it, in order
    sets: list[tuple[str, str]]  # the hints it set, in order
    by_hints: bool = False  # removable, every pod placed on its hinted node (no search)
    # ``autoscaler.hinted.plan`` of a removable answer, made at its first reuse (False: none
    # possible): its moves added in one step, and for a by-hints one its check's fixed part
    plan: Any = None
    # its part of a later candidate's context (slot, reason, targets), made at its first turn:
    # the answer is never changed
    said: tuple[Any, ...] | None = None
    # False for an answer that time alone may change (blocked by a kube-system pod not yet old
    # enough, CA 1.33+): ``find`` never takes it again
    lasting: bool = True
    # ``hints_read`` made at its first reuse (None: not yet)
    _hints: HintsRead | None = None
    # what an unread take reads (``SimulationMemo.unread``): the last pass it was used in,
    # ``Hints.drops`` then, its distinct targets (made where first read), and the last pass
    # in which a later answer set one of its pods' hints
    seen: int = -1
    hint_drops: int = -1
    distinct: list[int] | None = None
    disturbed: int = -1

    def targets_once(self) -> list[int]:
        """Its distinct targets, in order."""
        found = self.distinct
        if found is None:
            found = self.distinct = list(dict.fromkeys(self.targets))
        return found

    def hints_read(self) -> HintsRead:
        """Its looks and sets in the forms taking it again reads (made once: never changed)."""
        found = self._hints
        if found is None:
            first: dict[str, str | None] = {}
            for key, hint in self.looks:
                first.setdefault(key, hint)
            found = self._hints = HintsRead(
                tuple(k for k, _ in self.looks), tuple(h for _, h in self.looks), first,
                dict(self.sets),
            )  # fmt: skip
        return found

    @property
    def quiet(self) -> bool:
        """Whether the answer changed nothing a later simulation of the pass reads: blocked by
        a pod (``GetPodsToMove`` alone, before any placement), or ``NoPlaceToMovePods`` on its
        first pod (``inert``: no pod placed, so no hint set and the round-robin start where it
        was; the first pod's placements bound nothing, and a failed one is reverted)."""
        reason = self.outcome.reason
        return reason == "BlockedByPod" or (
            NO_PLACE_QUIET
            and reason == "NoPlaceToMovePods"
            and not self.sets
            and self.end == self.start
        )


@dataclass
class PassSummary:
    """What a whole scale-down pass read, to tell whether the next would answer the same."""

    epoch: int
    provisioning: int
    look: np.ndarray[Any, np.dtype[np.bool_]]  # nodes judged (near or under the threshold)
    reads: np.ndarray[Any, np.dtype[np.bool_]]  # nodes its placements walked
    failed: list[np.ndarray[Any, Any]]  # the pods' requests of its NoPlaceToMovePods answers
    budgets: bool  # PodDisruptionBudgets covered its candidates' pods
    reasons: dict[str, int]
    # the nodes it found unremovable (given recheck deadlines) if every answer was ``quiet``
    # (blocked by a pod, or no place for its first pod), else None
    # (``autoscale_stands.stands``: the next pass may stand with them skipped)
    blocked: tuple[int, ...] | None = None
    # how many of ``blocked`` found no place for their first pod (the others: blocked by a pod)
    no_place: int = 0
    # the nodes a later pass skipped as ``blocked`` (``autoscale_steady.skip_blocked``), the
    # reasons this pass recorded before and ``no_place``: at their deadline, a pass may answer
    # as this one
    rechecks: tuple[tuple[int, ...], dict[str, int], int] | None = None
    # nodes judged with a verdict a bind keeps (``autoscale_steady.steady``): None, none
    steady: np.ndarray[Any, np.dtype[np.bool_]] | None = None
    # candidates refused because their group was at its minSize (never simulated): None, none
    at_min: np.ndarray[Any, np.dtype[np.bool_]] | None = None


class SimulationMemo:
    """The last simulation per candidate and the per-node change stamps they are checked by."""

    # ``autoscaler.hinted.Views`` of the state's arrays, kept across passes by
    # ``simulate_candidates`` (made again where an array is not the same object)
    views: Any = None

    def __init__(self, nodes: int) -> None:
        self.passes = 0
        self.epoch = 0
        self.changed = np.zeros(nodes, dtype=np.int64)  # pass after which it last changed
        self.freed = np.zeros(nodes, dtype=np.int64)  # ... last lost a pod (or joined)
        self.touched: set[int] = set()  # the nodes changed since the last pass began
        # ``unchanged`` verifies each touched node once per summary: ``pending`` are those
        # touched since its last True answer (or since the summary), ``leaning`` the verified
        # ones that passed only as recently unremovable (checked again at each call: the
        # skipped set is read then); ``incremental`` False verifies every touched node anew
        self.pending: set[int] = set()
        self.leaning: set[int] = set()
        self.incremental = True
        self.entries: dict[int, Entry] = {}
        self.reused = 0
        self.simulated = 0
        self.drains: dict[tuple[object, ...], Any] = {}  # ``GetPodsToMove`` answers (same reads)
        self.used: list[Entry] = []  # the entries of the current pass (made or taken again)
        self.summary: PassSummary | None = None
        # nodes a bind need not have verified against the summary (``touch``): none without one
        self.clear = np.zeros(nodes, dtype=bool)
        # ``PassSummary.reads`` of a pass whose placements walked no node (read only: shared)
        self.no_reads = np.zeros(nodes, dtype=bool)
        self.no_reads.flags.writeable = False
        # what ``unread`` reads: this pass's removable answers in order (slot, entry) and the
        # last pass's; the nodes whose counts or destination at a candidate's turn may differ
        # from the last pass's at the same candidate's turn (``diverged``: ``start_pass``,
        # ``starting``, ``answered``); the destinations as the last pass began
        self.removable: list[tuple[int, Entry]] = []
        self.last_removable: list[tuple[int, Entry]] = []
        self.diverged: set[int] = set()
        self.starts: np.ndarray[Any, Any] | None = None
        # contexts by number (``extend``): (the context before, the item added) -> its number;
        # numbers are never given twice, so one made before the table was emptied equals none
        # made after it
        self.contexts: dict[tuple[int, tuple[Any, ...]], int] = {}
        self.context_numbers = itertools.count(1)
        # each pod hint key's by-hints answer that last set it (``claim``)
        self.owner: dict[str, Entry] = {}

    def touch(self, node: int, freed: bool) -> None:
        """The replay bound (``freed`` False) or unbound a pod on ``node``. A bind on a node
        ``clear`` of the summary is not verified by ``unchanged`` (not ``pending``): it only
        raises the node's requests, so its ratio stays at or above the threshold's margin, and
        it frees no room; whether the summary judged or walked it does not change. (A node
        already ``pending`` stays so.)"""
        self.changed[node] = self.passes + 1
        self.touched.add(node)
        if freed:
            self.freed[node] = self.passes + 1
            self.pending.add(node)
        elif not self.clear.item(node):
            self.pending.add(node)

    def new_epoch(self) -> None:
        """Nodes joined or left, or a scale-up changed the groups' sizes: no answer that read
        the node set is reused (``find`` refuses an entry of another epoch). Two kinds read
        none of it and are taken again at any epoch, on the checks they are taken by at any
        time (the entries stay; the others of earlier epochs are never taken again):

        - ``BlockedByPod``: ``GetPodsToMove`` read the candidate's pods, the flags and the
          budgets' disruptions left, nothing of any other node (``find`` compares those first);
        - removable with every pod on its hinted node (``by_hints``): each placement read its
          pod's hint and that one node (``tryScheduleUsingHints``: ``GetNodeInfo`` of the hinted
          node, its filters; no list of nodes, no ``lastIndex``). ``_by_hints_again`` compares
          the pods, the budgets and the hints, and asks each hinted node again on the state now
          (``fits_as_hinted``: still present and a destination, its static filters, its room
          with the earlier pods counted). A node that left is no destination, so a hint naming
          it fails there and the candidate is simulated; a node that joined is not read by such
          an answer (only a search would walk it). The groups' sizes are read before any
          simulation (a group at its minSize is not simulated), not by the answer.

        So whatever joined or left since, where those checks pass, simulating gives the same
        answer."""
        self.epoch += 1
        if len(self.drains) > 10_000:  # keyed by pods that may be long gone: bounded
            self.drains = {}

    def start_pass(self) -> None:
        """A scale-down pass begins (stamps after this refer to changes after it)."""
        # the nodes whose pods changed since the last pass began
        self.diverged = set(self.touched)
        self.last_removable, self.removable = self.removable, []
        self.passes += 1
        self.touched.clear()
        self.pending.clear()
        self.leaning.clear()
        self.used = []

    def summarise(
        self,
        look: np.ndarray[Any, Any],
        provisioning: int,
        budgets: bool,
        reasons: dict[str, int],
        under: np.ndarray[Any, Any],
        blocked: tuple[int, ...] | None = None,
        steady: np.ndarray[Any, Any] | None = None,
        at_min: list[int] | None = None,
        no_place: int = 0,
    ) -> None:
        """Keep what the pass just run read (``unchanged`` compares the next state with it).
        ``under``: the slots near or under the threshold then, or judged whatever their ratio
        (``always``); the others that no placement walked are ``clear`` (``touch``).
        ``blocked``, ``no_place``: ``PassSummary``'s; ``steady``: nodes judged whose verdict a bind
        keeps (``PassSummary.steady``), ``clear`` too where no placement walked them.
        ``at_min``: the candidates refused for their group's minSize (``PassSummary.at_min``)."""
        failed = []
        walks = []
        for entry in self.used:
            if len(entry.reads):
                walks.append(entry.reads)
            if entry.outcome.reason == "NoPlaceToMovePods":
                failed.extend(entry.rows)
        if walks:  # one assignment of every walked index
            walked = walks[0] if len(walks) == 1 else np.concatenate(walks)
            reads = np.zeros(len(self.changed), dtype=bool)
            reads[walked] = True
        else:  # no placement walked a node (most passes): the shared mask of none
            reads = self.no_reads
        self.summary = PassSummary(
            self.epoch,
            provisioning,
            look,
            reads,
            failed,
            budgets,
            dict(reasons),
            blocked,
            no_place,
            steady=steady,
        )
        if at_min:
            refused = np.zeros(len(self.changed), dtype=bool)
            refused[at_min] = True
            self.summary.at_min = refused
        # ~((under & ~steady) | reads): ``~under | steady`` (``less_equal`` of two masks), the
        # walked nodes then set False
        self.clear = np.logical_not(under) if steady is None else np.less_equal(under, steady)
        if walks:
            self.clear[walked] = False
        # a new summary: every node touched since the pass began is verified against it
        self.pending = set(self.touched)
        self.leaning.clear()

    def unchanged(
        self,
        state: ClusterState,
        under: Callable[[list[int], float], bool],
        threshold: float,
        always: np.ndarray[Any, Any],
        provisioning: int,
        columns: tuple[int, int],
        recent: Container[int],
        verified: Container[int] = (),
        candidates: Callable[[list[int]], bool] | None = None,
    ) -> bool:
        """Whether a pass now would answer as the last one did: no join, removal, scale-up or
        PDB since, and every node whose pods changed since was not judged then (or was judged
        with a verdict a bind keeps, ``PassSummary.steady``, and only bound to), is not near the
        threshold now (``under``: whether the screen of one of the nodes it is given is under
        a limit, ``autoscale_screen.under``; ``always``: GPU and scale-down-disabled nodes,
        judged whatever their ratio) unless skipped as recently unremovable now (in
        ``recent``: its own pods are not read; the caller checks that the skipped set is the
        last pass's, or, for nodes that pass judged and found blocked by a pod, that it answers
        as that pass with them skipped: ``autoscale_steady.blocked_only``), was walked by no
        placement, and if it freed room, has none for a pod that found no place. A node of
        ``verified`` is not asked whether it was or is judged: the caller checked what a pass
        now judges of it (``autoscale_expiry.classify``). ``candidates``: whether each node it
        is given is a candidate now; a node the summary refused for its group's minSize (no
        join, removal or scale-up since: the same sizes) is refused again while it is one, so
        a pass reads nothing else of it (``autoscale_scaledown.still_candidates``)."""
        last = self.summary
        if last is None or last.epoch != self.epoch or last.provisioning != provisioning:
            return False
        if last.budgets:
            return False
        if self.incremental:
            # a node verified since the summary keeps its verdict until touched again (then it
            # is in ``pending``): every input of its check is its own pods and room, the
            # summary's arrays and rows (fixed with the summary) and ``always`` (fixed) — but
            # for one that passed as skipped, whether it still is (``leaning``)
            nodes = self.pending
            gone = [n for n in self.leaning if n not in recent] if self.leaning else []
            if gone:
                nodes = nodes.union(gone)
        else:
            nodes = self.touched
        if not nodes:  # nothing changed since, or all verified
            return True
        look, reads, freed, passes = last.look, last.reads, self.freed, self.passes
        steady, at_min = last.steady, last.at_min if candidates is not None else None
        judged = []
        skipped = []
        refused = []
        for node in nodes:
            if reads.item(node):
                return False
            if node in verified:
                continue
            if node in recent:  # a skipped node's own pods are not read (one the last pass
                skipped.append(node)  # judged was found blocked by it: ``blocked_only``)
            elif look.item(node):
                # judged with a verdict a bind keeps, and only bound to since: the same verdict
                if steady is not None and steady.item(node) and freed.item(node) <= passes:
                    continue
                if at_min is not None and at_min.item(node):
                    refused.append(node)  # refused again if still a candidate (below)
                    continue
                return False
            else:
                if always.item(node):
                    return False
                judged.append(node)
        if judged and under(judged, threshold + 1e-6):
            return False
        if refused and candidates is not None and not candidates(refused):
            return False
        if last.failed:  # else no pod found no place: room freed anywhere changes nothing
            opened = np.array([n for n in nodes if freed.item(n) > passes], dtype=np.int64)
            if room_for_any(state, opened, last.failed, columns):
                return False
        if self.incremental:  # all verified: only later touches (and ``leaning``) are asked
            if judged and self.leaning:
                self.leaning.difference_update(judged)
            if skipped:
                self.leaning.update(skipped)
            self.pending = set()
        return True

    def find(
        self,
        slot: int,
        context: int,
        pods: tuple[int, ...],
        pdbs: tuple[int, ...],
        start: int,
        state: ClusterState,
        destinations: np.ndarray[Any, Any],
        columns: tuple[int, int],
    ) -> Entry | None:
        """The entry for ``slot`` if its answer holds now (module docstring), else None."""
        entry = self.entries.get(slot)
        if entry is None:
            return None
        if entry.outcome.reason == "BlockedByPod":  # the drain rules read its pods and budgets
            # (and the time, for a pod whose block time lifts: not ``lasting``)
            same = entry.lasting and (entry.pods, entry.pdbs) == (pods, pdbs)
            return entry if same else None
        if entry.epoch != self.epoch:
            return None
        if (entry.context, entry.pods, entry.pdbs, entry.start) != (context, pods, pdbs, start):
            return None
        if len(entry.reads) and int(self.changed[entry.reads].max()) > entry.made:
            return None
        if entry.outcome.reason == "NoPlaceToMovePods":
            allowed = allowed_but(destinations, slot)  # where its pods may go
            opened = np.flatnonzero((self.freed > entry.made) & allowed)
            if room_for_any(state, opened, entry.rows, columns):
                return None
        return entry

    def extend(self, context: int, said: tuple[Any, ...]) -> int:
        """The number of ``context`` (a number of this method's, 0: what an empty pass did)
        followed by ``said``: equal numbers are equal sequences of items, so a kept answer's
        context is compared in one step however long the pass (a tuple of the items made
        again at each turn would cost the pass's length each time)."""
        key = (context, said)
        found = self.contexts.get(key)
        if found is None:
            if len(self.contexts) >= CONTEXTS_KEPT:
                self.contexts = {}
            found = self.contexts[key] = next(self.context_numbers)
        return found

    def starting(self, destinations: np.ndarray[Any, Any], order: Sequence[int]) -> None:
        """The pass's destinations as it begins and its candidates' ``order``. Diverge: the
        nodes that became or stopped being a destination since the last pass began, and the
        targets (and own node) of each of the last pass's removable answers that this pass
        will not reach in the same order relative to the others (not a candidate now, or
        ordered before one that was before it): the moves onto a node before a candidate's
        turn are then those of the last pass, unless an answer changes (``answered``)."""
        diverged, last = self.diverged, self.starts
        if last is not None and last.shape == destinations.shape:
            diverged.update(np.flatnonzero(last != destinations).tolist())
        self.starts = destinations.copy()
        before = self.last_removable
        if not before:
            return
        where = np.full(len(destinations), -1, dtype=np.int64)
        where[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int64)
        at = where[np.array([slot for slot, _ in before], dtype=np.int64)]
        # absent, or after one that was after it in the last pass
        for i in np.flatnonzero((at < 0) | (at < np.maximum.accumulate(at))).tolist():
            self._diverge(*before[i])

    def answered(self, slot: int, last: Entry | None, entry: Entry) -> None:
        """``slot``'s answer in this pass (``entry``), its answer in the last pass ``last`` if it
        was a removable one (else None). Where they differ, the moves onto their targets and
        the drop of ``slot`` differ from the last pass's from here on: those nodes diverge."""
        if entry is last or (last is not None and same_moves(last, entry)):
            return
        if last is not None:
            self._diverge(slot, last)
        if entry.outcome.removable:
            self._diverge(slot, entry)

    def _diverge(self, slot: int, entry: Entry) -> None:
        """``slot``'s removable ``entry`` moves or drops differently from here on: its targets
        and ``slot`` diverge."""
        self.diverged.update(entry.targets_once())
        self.diverged.add(slot)

    def claim(self, entry: Entry) -> None:
        """``entry`` (simulated, or taken again after a check) set its pods' hints: an
        answer placed by hints alone whose pods' hints another answer set is ``disturbed``
        (the next pass reads those, not its own); a by-hints ``entry`` owns its keys."""
        sets = entry.hints_read().sets
        owner, passes = self.owner, self.passes
        for key in sets:
            found = owner.get(key)
            if found is not None and found is not entry:
                found.disturbed = passes
        if entry.by_hints:
            owner.update(dict.fromkeys(sets, entry))

    def unread(
        self, entry: Entry, pods: tuple[int, ...], pdbs: tuple[int, ...], drops: int
    ) -> bool:
        """Whether ``entry`` (its slot's) would pass ``_by_hints_again``'s check now, with nothing
        of it read: a removable answer placed by hints alone, used in the last pass, whose
        pods' hints are those it set there (it placed each pod on its hint, so it set each to
        the hint it read; no later answer of that pass set one: not ``disturbed``; one
        ``drop_old`` since, which keeps what that pass set: ``drops``, ``Hints.drops`` now);
        the same pods and budgets; and no target ``diverged``: each one's pods and destination
        as when the last pass began, and the same answers moved pods onto it before this one's
        turn (``starting``, ``answered``). Each target's room and pod slots are then those it
        had at this answer's turn in the last pass, where the check passed: so does it now.
        (``seen`` and ``drops`` agree but where a pass ends with no node to look at: it drops
        the old hints and starts no pass.)"""
        last = self.passes - 1
        return bool(
            UNREAD_TAKES
            and entry.by_hints
            and entry.plan
            and entry.seen == last
            and entry.disturbed < last
            and entry.hint_drops + 1 == drops
            and entry.pods == pods
            and entry.pdbs == pdbs
            and self.diverged.isdisjoint(entry.targets_once())
        )

    def keep(self, slot: int, entry: Entry) -> None:
        """Remember ``slot``'s simulation of this pass."""
        self.entries[slot] = entry
        self.used.append(entry)


def same_moves(a: Entry, b: Entry) -> bool:
    """Whether two removable answers move the same pods (the same objects, in order) to the same
    targets: the same additions to the counts, the same pods moved onto each node."""
    x, y = a.outcome, b.outcome
    return bool(
        x.removable
        and y.removable
        and a.targets == b.targets
        and len(x.moved) == len(y.moved)
        and all(p is q for p, q in zip(x.moved, y.moved, strict=True))
    )


def allowed_but(destinations: np.ndarray[Any, Any], slot: int) -> np.ndarray[Any, Any]:
    """``destinations`` with ``slot`` refused (a copy): where a candidate's pods may go."""
    allowed = destinations.copy()
    allowed[slot] = False
    return allowed


def room_for_any(
    state: ClusterState,
    nodes: np.ndarray[Any, Any],
    rows: Sequence[np.ndarray[Any, Any]],
    columns: tuple[int, int],
) -> bool:
    """Whether one of ``nodes`` has a pod slot and room for each resource one of ``rows``
    (request rows of pods that found no place) requests: cpu, memory and any other (a GPU pod's
    GPUs: cpu and memory room alone would say a full GPU node has room). Only requested
    resources are compared, as NodeResourcesFit does: a pod that requests none of one fits an
    overcommitted node. cpu and memory (``columns``) are compared first: most rows fit nowhere
    on them, and the others are then not read."""
    if not len(nodes):
        return False
    cpu, memory = columns
    room = state.allocatable[nodes] - state.requested[nodes]
    slots = state.pod_count[nodes] < state.allowed_pods[nodes]
    for row in rows:
        fits = slots
        for j in columns:
            if row[j] > 0:
                fits = fits & (row[j] <= room[:, j])
        if not fits.any():
            continue
        for j in np.flatnonzero(row).tolist():
            if j != cpu and j != memory:
                fits = fits & (row[j] <= room[:, j])
        if bool(fits.any()):
            return True
    return False


# a walk at least this long is one ``arange`` in ``walked``, not a list of ints
LONG_WALK = 32


def walked(walks: Sequence[tuple[int, int]], count: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    """The node indices of ``walks`` ((start, length) round-robin spans over ``count`` nodes,
    each start below ``count``), in order."""
    if not walks:
        return np.zeros(0, dtype=np.int64)
    # most walks stop at their first node (one list of ints for the short ones); a search past
    # the near nodes walks hundreds (an ``arange``: 464 of 26,564 walks in the 500-node week
    # held ~140k of its ~179k indices); the modulo only where a span passes the last node
    pieces: list[np.ndarray[Any, np.dtype[np.int64]]] = []
    out: list[int] = []
    wraps = False
    for a, n in walks:
        if n == 1 and a < count:
            out.append(a)
            continue
        wraps = wraps or a + n > count
        if n < LONG_WALK:
            out.extend(range(a, a + n))
            continue
        if out:
            pieces.append(np.array(out, dtype=np.int64))
            out = []
        pieces.append(np.arange(a, a + n, dtype=np.int64))
    if out or not pieces:
        pieces.append(np.array(out, dtype=np.int64))
    found = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
    if wraps:
        found %= count
    return found
