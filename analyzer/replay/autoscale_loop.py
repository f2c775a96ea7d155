"""cluster-autoscaler in the replay's loop: scale-up when pods wait, scale-down of unneeded nodes.

The engine (``analyzer.replay.engine``) calls this at every instant it handles, before it places
that instant's pods; the autoscaler's own instants (its ticks, a node becoming Ready) are instants
of the loop too (``next_time``). Rules, each after upstream (docs/autoscaling.md "In the replay"):

- **the loop** runs every ``scan-interval`` (``StaticAutoscaler.RunOnce``; a change between two
  runs waits for the next) while anything may change its answer: the state changed since the
  last pass, pods wait, or nodes are unneeded; with frequent loops (``--frequent-loops-enabled``,
  CA 1.35+'s default) also at once after a run that scaled and when a pod becomes unschedulable,
  the timer restarting there (``analyzer.replay.autoscale_settle.trigger``);
- **scale-up** (``ScaleUpOrchestrator.ScaleUp``): the pods that wait after the scheduler tried
  them; those that fit on nodes already being provisioned are left to them (upstream's upcoming
  nodes); for each group with room below ``maxSize``, which of the rest pass the scheduler's
  filters on an empty node of the group's shape, and how many new nodes they need (first-fit
  decreasing on the requests: ``estimator.BinpackingNodeEstimator``), capped at ``maxSize``; the
  expander picks one group (``random``, seeded; ``least-waste``: least idle cpu + memory
  fraction; ``priority``: the highest-priority groups, then random; by default the version's
  CA's: ``least-waste`` from 1.33, ``random`` before); its nodes join after
  ``provisioning-delay`` (``analyzer.replay.autoscale_scaleup``, with the waiting pods that
  fit an existing node filtered out first: ``unschedulable``);
- **scale-down** (``Planner.UpdateClusterState`` / ``NodesToDelete``, in
  ``analyzer.replay.autoscale_scaledown``): every present node through
  ``analyzer.autoscaler.eligibility`` (utilisation and threshold), the candidates through
  ``analyzer.autoscaler.removal`` on the replay's own state (drain rules, PDBs with the
  disruptions allowed now, re-placement on the scheduler's filters), empty ones first; a node
  unneeded for ``scale-down-unneeded-time`` is deleted, not within
  ``scale-down-delay-after-add`` of a scale-up, within the group's ``minSize`` and the
  parallelism budgets (``analyzer.autoscaler.planner.select``); its pods are evicted and go back
  to the replay's scheduler (DaemonSet and static pods end with the node).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from analyzer.autoscaler.eligibility import eligible_at_threshold
from analyzer.autoscaler.options import CAOptions
from analyzer.autoscaler.recheck import PassIntervals, UnremovableNodes
from analyzer.autoscaler.release import expendable_needs_preemption, parse_release
from analyzer.autoscaler.removal_state import Outcome, hint_key
from analyzer.replay.autoscale_idle import catch_up, deletable, next_time
from analyzer.replay.autoscale_record import AutoscalerRecord
from analyzer.replay.autoscale_reuse import SimulationMemo, local
from analyzer.replay.autoscale_scaledown import still_candidates, to_delete, update_unneeded
from analyzer.replay.autoscale_scaleup import plan_scale_up, to_help, undecided, unschedulable
from analyzer.replay.autoscale_settle import finish, settle, skipped_at
from analyzer.replay.autoscale_setup import (
    SECOND,
    AutoscalerSettings,
    NodeGroups,
    default_expander,
)
from analyzer.replay.autoscale_view import ReplayView
from analyzer.replay.budgets import ReplayBudgets
from analyzer.replay.input import NEVER, ReplayInput
from analyzer.scheduling.framework import Profile
from analyzer.scheduling.queue_order import TERMINATION_GRACE
from analyzer.scheduling.sim_hints import Hints
from analyzer.scheduling.state import ClusterState
from analyzer.scheduling.versions import or_default

# ``static_autoscaler.go``: ``unschedulablePodTimeBuffer``, ``unschedulablePodWithGpuTimeBuffer``
NEW_POD_BUFFER = 2 * SECOND
NEW_GPU_POD_BUFFER = 30 * SECOND


class ClusterAutoscaler(ReplayView):
    """cluster-autoscaler's loop over one replay's live state (module docstring); its view of
    the nodes, pods and groups is ``ReplayView``'s."""

    def __init__(
        self,
        inp: ReplayInput,
        groups: NodeGroups,
        settings: AutoscalerSettings,
        profile: Profile,
        state: ClusterState,
        active: np.ndarray[Any, Any],
        on_node: list[set[int]],
        bound: list[int],
        budgets: ReplayBudgets,
        rng: np.random.Generator,
    ) -> None:
        # the drain rules of the CA that goes with the cluster's version (CA's minor follows
        # Kubernetes'): before 1.33 a kube-system pod no PodDisruptionBudget covers always blocks
        version = or_default(profile.version)
        release = parse_release(
            settings.release, version, "config autoscaler.cluster-autoscaler-version"
        )
        options = dataclasses.replace(settings.options, rules_version=release)
        if not version.ca_system_pod_timeout:
            options = dataclasses.replace(options, blocking_system_pod_distruption_timeout=None)
        settings = dataclasses.replace(settings, options=options)
        super().__init__(inp, groups, settings.options, state, active, on_node)
        given = settings.expander
        if not given:  # not set: the default of the profile's version's CA
            settings = dataclasses.replace(settings, expander=default_expander(profile.version))
        # CA's simulations run its own scheduler: no GPU-sharing plugin (``without_devices``)
        self.settings, self.profile, self.bound = settings, profile.without_devices(), bound
        # an evicted pod's termination: kube's default grace, capped by max-graceful-termination
        self.eviction_grace = min(TERMINATION_GRACE * SECOND, settings.max_graceful_termination)
        # ``--frequent-loops-enabled`` (``loop/trigger.go``): set, or the version's CA's default
        frequent = settings.frequent_loops
        if frequent is None:
            frequent = or_default(profile.version).ca_frequent_loops_default
        self.frequent = frequent
        self.budgets, self.rng = budgets, rng
        self.provisioning: dict[int, int] = {}  # slot -> when it becomes Ready
        self.draining: dict[int, int] = {}  # deleted slot -> until when it still runs
        # (when, how many) empty nodes were deleted at the last instant that deleted one: in
        # progress for a run at that instant (frequent loops run again at once after a deletion)
        self.emptied = (-NEVER, 0)
        self.unneeded: dict[int, int] = {}  # slot -> since when
        self.outcomes: dict[int, Outcome] = {}  # the last pass's removable nodes, pass order
        self.last_add = -NEVER
        # nodes found unremovable, skipped until their recheck deadline (``RecentlyUnremovable``)
        self.recheck: UnremovableNodes[int] = UnremovableNodes()
        self.intervals = PassIntervals(settings.unneeded_time, settings.scan_interval)
        self.last_unneeded = 0  # nodes unneeded after the last pass (``unneededNodesLimit``)
        # the last pass's candidates limit, whether it stopped the pass, and whether the pass
        # found nodes unremovable (the next one skips them): when a pass may answer as the last
        self.last_pass: tuple[int, bool, bool] = (-1, False, False)
        # the first run one scan after the start: at the start itself no pod is placed yet
        self.next_tick = inp.start + settings.scan_interval
        self.clock = inp.start
        # the loop's timer: its runs are at ``anchor`` + k × ``scan-interval`` (upstream's
        # ``time.After(scanInterval)`` after each run, a run taking no time here), whether a
        # run does anything or not; a run off that grid only where frequent loops start one
        # at once (``again``: ``autoscale_settle.trigger``), which then restarts the timer
        self.anchor = inp.start
        self.again = False
        # what starts a run at once with frequent loops, at the end of an instant
        # (``autoscale_settle.trigger``): a run of it ordered a scale-up or started a deletion
        # (``productive``), or a pod became unschedulable in it (the engine sets that)
        self.productive = False
        self.unschedulable = False
        # the first run of the loop's grid after ``clock`` (``_on_grid``), set with it
        self.grid_after = self._on_grid(inp.start + 1)
        self.dirty = True
        self.waiting = False  # pods wait after the scheduler's last pass (the engine sets it)
        # the removal simulations taken again when nothing they read changed (exact)
        self.sims = SimulationMemo(len(inp.node_names))
        self.reuse = settings.reuse and local(
            profile, inp.demands, inp.snapshot.node_state is not None
        )
        self.asked: tuple[Any, ...] = ()  # what the last scale-up was asked about
        # the young-pod buffer (``allPodsAreNew``) held this run's scale-up back: no deletion
        # at this run either (``DisableScaleDownForLoop``)
        self.young = False
        self.memo: dict[tuple[bytes, int], bool] = {}  # pod shape x group: fits an empty node
        self.record = AutoscalerRecord(
            "cluster-autoscaler", groups.names, groups.of_node, groups.data_nodes
        )
        self.record.notes.extend(groups.notes)
        self.record.notes.append(unseen_pod_fields(settings.options))
        # whether each pod asks for a GPU (the young-pod buffer's longer wait; ``_gpu_pods``)
        self._gpu_asks: np.ndarray[Any, Any] | None = None
        self._young_kept: tuple[list[int], int, int] | None = None  # (``_any_young``)
        # expendable pods (``IsExpendablePod``: priority set and below the cutoff) trigger no
        # scale-up (``filter_out_expendable.go``); upstream's scale-down leaves them out of its
        # snapshot too, which the replay's pass on the live state does not (the row's note)
        # (in CA 1.30.0 to 1.33.0 only a pod whose preemptionPolicy is not Never)
        cutoff = settings.options.expendable_pods_priority_cutoff
        never = expendable_needs_preemption(release)
        self.expendable = frozenset(
            i
            for i, d in enumerate(inp.demands)
            if d.priority is not None
            and d.priority < cutoff
            and not (never and d.preemption_policy == "Never")
        )
        if self.expendable:
            self.record.notes.append(expendable_note(len(self.expendable), cutoff))
        for slot in np.flatnonzero(active).tolist():
            self.record.joined(slot, inp.start)
        # CA's scheduling hints (``HintingSimulator``), kept across passes; whether the last
        # pass left the hints it read, its candidates in the order a pass on the same state
        # would take them (that pass would then answer the same)
        self.hints: Hints[str, str] = Hints()
        self.hints_stable = True
        # ... or, in that order, placed each pod once, so that a pass on the same state reading
        # the hints it set places them there again (``autoscale_steady.repeats``)
        self.hints_repeat = False
        self.repeat_check: Any = None  # what ``repeat_again`` asks, until asked
        self.static: dict[tuple[str, int], Any] = {}  # static filter masks (``LiveState.static``)
        self.columns: dict[int, Any] = {}  # NodeResourcesFit's compared columns per demand
        self.verdicts: dict[int, Any] = {}  # each CA pod's drain verdict (``pods_to_move``)
        # CA's utilisation screen per slot (``autoscale_scaledown.ratios``), up to date but for
        # the slots in ``stale`` (touched since: only a bind or unbind changes a node's requests)
        self.ratio = np.zeros(len(state.node_names), dtype=np.float64)
        self.screen = (self.cpu or 0, self.mem or 0)
        self.screen_threshold = min(self.options.scale_down_utilization_threshold, 1.0)
        # a node at the threshold is a candidate: the CA release's rule (1.35+, backported)
        self.at_threshold = eligible_at_threshold(release)
        self.record.notes.append(
            version_rules(
                release,
                settings.release is not None,
                settings.expander,
                bool(given),
                self.at_threshold,
                (self.frequent, settings.frequent_loops is not None),
            )
        )
        self.stale: set[int] = set(range(len(state.node_names)))
        # per slot, its kept eligibility (judged again where ``unjudged``): its unremovable
        # reason ("": a candidate); and whether it has no pod to move, as of its pods' version
        # ``emptied_at`` (asked only of candidates that are ordered: ``autoscale_scaledown.
        # empty_ones``)
        self.unfit_reason = [""] * len(state.node_names)
        self.emptied_at = [-1] * len(state.node_names)
        self.no_pod_to_move = [False] * len(state.node_names)

    # the replay's preemption victims terminating and deleted for good, per pod (set by the
    # engine where it preempts): not healthy, and not expected, in the budgets (``budgets.at``)
    terminating: tuple[Any, Any] = (None, None)
    # the earliest time in ``provisioning`` (``NEVER``: none), kept by ``ready`` and ``_scale_up``
    # (the engine reads it: before it and ``next_tick``, ``ready`` alone is called)
    ready_at = NEVER
    # the last ``unschedulable`` call's scale-down pass count, present nodes and the shapes it
    # found on no node before any simulated placement (its fast path, ``reuse``)
    nowhere: tuple[int, Any, set[bytes]] | None = None
    # the deadlines' count, the earliest and the loop's first run at or after it (``_expiry``)
    _expiry_kept: tuple[int, int | None, int] | None = None
    # runs that do nothing left out (``autoscale_idle``): the engine's queue's ``pods`` where
    # allowed (None: every run is an instant), the first run left out after the last instant,
    # and ``to_delete``'s first possible time as of (outcomes, their count, ``last_add``)
    queued: Callable[[], list[int]] | None = None
    idle_from: int | None = None
    deletable_kept: tuple[Any, int, int, int] | None = None
    # the run at which a change settled at the end of its instant (``settle``) would have made
    # a scale-down pass that answers as the last (None: no such run due)
    settled: int | None = None
    # a change ``settle`` left to the next run (its pass may differ): not asked again before
    # that run, which decides it (``update_unneeded``; later changes only add to it)
    undecided = False

    # -- the engine's side ---------------------------------------------------------------------
    # the next instant the autoscaler acts on its own (``autoscale_idle.next_time``, called as
    # a method: once per instant)
    next_time = next_time

    def first_run(self) -> int:
        """The next run of the loop while one is due: one scan interval after the last run, on
        the timer's grid (from ``anchor``), after the last instant; or the run frequent loops
        start at once, at the clock (``again``)."""
        if self.again:  # frequent loops start one at once, at this instant
            return self.clock
        return max(self.next_tick, self.grid_after)

    def _on_grid(self, time: int) -> int:
        """The first run of the loop's grid (scan-intervals from ``anchor``: the start of the
        data, or the last run frequent loops started at once) at or after ``time``."""
        scan, start = self.settings.scan_interval, self.anchor
        return start + -(-(time - start) // scan) * scan

    # the end of an instant: a change whose pass would answer as the last is settled; the end
    # of the replay (``autoscale_settle``'s functions, called as methods: one call per instant)
    settle = settle
    finish = finish
    # whether the nodes given are candidates now (``autoscale_scaledown.still_candidates``, a
    # method: ``stands`` passes it to ``SimulationMemo.unchanged``)
    still_candidates = still_candidates

    def _recheck_due(self, now: int) -> bool:
        expiry = self._expiry()
        return expiry is not None and expiry <= now

    def _expiry(self) -> int | None:
        """``recheck.next_expiry()``, kept while the deadlines cannot have changed: they change
        in a scale-down pass (``_run`` drops the kept value after it) and when a node is
        removed (``forget``: one fewer deadline). Kept with it: the first run of the loop's
        grid at or after it (``next_time``)."""
        size = len(self.recheck.deadlines)
        kept = self._expiry_kept
        if kept is None or kept[0] != size:
            expiry = self.recheck.next_expiry()
            kept = (size, expiry, NEVER if expiry is None else self._on_grid(expiry))
            self._expiry_kept = kept
        return kept[1]

    def deadlines_changed(self) -> None:
        """The recheck deadlines were set again (a pass, or one that stood as the pass that
        set them: ``autoscale_steady.restore_blocked``): ``_expiry`` computes the earliest
        again, which their count alone may not show."""
        self._expiry_kept = None

    def ready(self, now: int) -> list[int]:
        """Slots whose provisioning ends at ``now``: they join (the engine activates them). The
        engine's first call at each instant: the loop's clock is ``now`` from here on."""
        # the first run after the last instant is the first after ``now`` too if it is later
        # than ``now``; else most often the next one
        after = self.grid_after
        if now < self.clock:  # an instant before the data's start (where the clock begins)
            after = self._on_grid(now + 1)
        elif now >= after:
            after += self.settings.scan_interval
            if now >= after:
                after = self._on_grid(now + 1)
        self.clock, self.grid_after = now, after
        if self.ready_at > now:  # none due (most instants)
            return []
        joining = sorted(s for s, at in self.provisioning.items() if at <= now)
        for slot in joining:
            del self.provisioning[slot]
            self.record.joined(slot, now)
            self.record.added.append((now, slot))
        self.ready_at = min(self.provisioning.values(), default=NEVER)
        if joining:
            self.dirty = True
            self.sims.new_epoch()
        return joining

    def tick(self, now: int, waiting: list[int]) -> list[int]:
        """One run of the loop at ``now`` if one is due: scale-up for ``waiting`` (pods pending
        after the scheduler tried them), then scale-down. Returns the slots to delete now
        (``ready(now)`` was called before, at the same instant). Before ``next_tick`` it does
        nothing: the runs left out (from ``idle_from``) and a settled change's run
        (``settled``) are at or after ``first_run``, so at or after ``next_tick`` (both are
        set from it, and it moves only in here: ``catch_up``, ``skipped_at``, a run); the
        engine does not call it then."""
        if self.again:
            # a run frequent loops start at once, at this instant (``autoscale_settle.trigger``:
            # ``next_tick`` and a settled change's run are this instant; runs left out before
            # it were caught up with at this instant's first call)
            self.again = False
        else:
            if self.idle_from is not None:  # runs were left out before now (``autoscale_idle``)
                catch_up(self, now)
            settled = self.settled
            if settled is not None and settled < now:  # its run was left out
                skipped_at(self, settled)
            if now < self.next_tick:
                return []
            if (now - self.anchor) % self.settings.scan_interval:
                return []  # between two runs of the loop's timer: the change waits for the next
        recheck = self._recheck_due(now)
        if not (self.dirty or self.waiting or self.unneeded or recheck):
            if self.settled is not None:  # the settled change's run: nothing else to do
                skipped_at(self, now)
            return []
        self.next_tick = now + self.settings.scan_interval
        if not (waiting or self.dirty or recheck):
            # no scale-up and no pass: ``_run`` records a settled change's run and asks
            # ``to_delete``, which answers nothing before ``deletable`` (most such runs)
            if self.settled is not None:
                skipped_at(self, now)
            if now < deletable(self):
                return []
        # CA's simulations bind and unbind on the live state and undo it all; per-GPU device
        # state (GPU-sharing profiles) is left out of them, as CA knows no shared GPUs
        devices, self.state.devices = self.state.devices, None
        try:
            return self._run(now, waiting)
        finally:
            self.state.devices = devices

    def _run(self, now: int, waiting: list[int]) -> list[int]:
        """The run of the loop at ``now`` (``tick``)."""
        # a settled change (``autoscale_settle``) asks the scale-up again as ``dirty`` does; its
        # pass stands unless a scale-up here changed what the pass reads (the groups' sizes).
        # A scale-up always has this run's pass run, settled or not: upstream's ``RunOnce``
        # calls UpdateClusterState after a successful scale-up, on the groups' new target
        # sizes. A candidate of a group that was at its minSize (not simulated here, simulated
        # all along upstream) becomes unneeded at this run; upstream may delete it first when
        # ``scale-down-delay-after-add`` ends, from this run too (docs/autoscaling.md, "min size")
        settled, self.settled = self.settled is not None, None
        scaled = False
        self.young = False
        if waiting:
            # ``waiting`` is the queue's list, the same object while the queue did not change:
            # the comparison below is then one identity check, not one per pod
            asked = (waiting, len(self.record.presence), len(self.record.removed))
            if self.dirty or settled or asked != self.asked:  # else as before
                self.asked = asked
                if self._scale_up(now, waiting):
                    self.last_add = now
                    scaled = True
        if self.dirty or self._recheck_due(now) or scaled:
            self.dirty = self.undecided = False
            passes = self.record.passes
            update_unneeded(self, now)  # sets ``dirty`` again when the next pass may differ
            if self.record.passes != passes:  # the pass may have changed the recheck deadlines
                self.deadlines_changed()  # (else only dropped some: ``_expiry`` sees the count)
        elif settled:  # it stood: recorded and counted skipped at this run
            skipped_at(self, now)
        if now < deletable(self) or self.young:  # none unneeded long enough, in the
            self.productive = scaled  # cool-down, or a loop whose pods were too young: none
            return []
        going = to_delete(self, now)
        # upstream's ``lastScaleUpTime`` / ``lastScaleDownDeleteTime`` set by this run
        self.productive = scaled or bool(going)
        return going

    def deletions_in_progress(self, now: int) -> tuple[int, int]:
        """(empty, drained) deletions started and not done at ``now`` (``CropNodes``'
        ``DeletionsInProgress``): a drained node's until its evicted pods are gone
        (``draining``); an empty node's when the cloud provider's call returns, taken as at
        once: in progress only for another run at the same instant (frequent loops run again
        at once after a deletion, sooner than such a call returns), done by the timer's next
        run (``emptied``)."""
        at, empties = self.emptied
        drains = sum(until > now for until in self.draining.values())
        return (empties if at == now else 0, drains)

    def removed(self, slot: int, now: int, evicted: list[int]) -> None:
        """The engine deleted ``slot`` and evicted ``evicted`` from it (pending from now). A
        drained node keeps running until its evicted pods are gone: their grace period
        (kube's default 30 s) capped by ``max-graceful-termination``; an empty one goes now."""
        drain = 0
        if evicted:
            drain = min(TERMINATION_GRACE * SECOND, self.settings.max_graceful_termination)
        self.record.left(slot, now + drain)
        if drain:
            self.draining[slot] = now + drain
        else:  # an empty node goes at once, after the runs at this instant (``to_delete``)
            at, count = self.emptied
            self.emptied = (now, count + 1 if at == now else 1)
        self.record.removed.append((now, slot, bool(evicted)))
        self.record.evictions.extend((now, pod) for pod in evicted)
        for pod in evicted:  # their controllers' new pods, created now
            self.recreate(pod, now)
        for pod in evicted:  # upstream's replacement pod has a new UID: no hint
            self.hints.forget(hint_key(self.ca_pod(pod)))
        self.unneeded.pop(slot, None)
        self.outcomes.pop(slot, None)
        self.recheck.forget(slot)
        self.dirty = True
        self.sims.new_epoch()
        if self.record.reasons:  # the deleted node stops counting as unneeded at once
            counts = dict(self.record.reasons[-1][1])
            counts["Unneeded"] = counts.get("Unneeded", 1) - 1
            self.record.reasons.append((now, {k: v for k, v in counts.items() if v > 0}))

    def node_changes(self) -> list[int]:
        """The nodes whose taints the autoscaler changed since the last call: none here (a
        deletion takes no time in the replay, so CA's ToBeDeleted taint has no window)."""
        return []

    def reads_changed(self) -> None:
        """Something a scale-down pass reads changed at this instant without a bind or unbind
        (the engine says so): nodes' cordons or taints (the snapshot's node-state intervals:
        where pods may move), or, where PodDisruptionBudgets exist, what they count — a pod
        started or stopped waiting (expected, not healthy: ``ReplayBudgets.at``) or a
        preemption victim started terminating (not healthy: ``terminating``). The next run's
        pass is run (upstream's runs at every loop)."""
        self.dirty = True

    def touch(self, node: int, freed: bool, pod: int = -1) -> None:
        """The engine bound (``freed`` False) or unbound (True) ``pod`` on ``node``
        (``nominated_holds.HOLD``: a nominated pod's hold taken or released there); CA's passes
        read the node's version, not which pod."""
        self.dirty = True
        self.version[node] += 1
        self.unjudged_flags[node] = 1
        self.stale.add(node)
        self.sims.touch(node, freed)

    # -- helpers -------------------------------------------------------------------------------
    def _free_slots(self) -> list[list[int]]:
        """Each group's spare slots that do not exist now (a deleted one may be used again)."""
        unused = self.groups.spare & ~self.active
        # a drain that ended frees its slot for good
        self.draining = {s: until for s, until in self.draining.items() if until > self.clock}
        busy = [*self.provisioning, *self.draining]
        if busy:
            unused[busy] = False
        slots = np.flatnonzero(unused)
        of = self.group_of[slots]
        return [slots[of == g].tolist() for g in range(len(self.groups.names))]

    # -- scale-up ------------------------------------------------------------------------------
    @functools.cached_property
    def pinned_rows(self) -> list[bool]:
        """``inp.pinned`` as a list (read per waiting pod at every scale-up)."""
        return self.inp.pinned.tolist()  # type: ignore[no-any-return]

    @functools.cached_property
    def spare_groups(self) -> list[int]:
        """The groups with spare slots (the others can never grow)."""
        return sorted(set(self.group_of[self.groups.spare].tolist()))

    @functools.cached_property
    def resources_fit(self) -> Any:
        """The profile's NodeResourcesFit filter with ``fits_on`` (None: it has none)."""
        for plugin in self.profile.filters:
            if getattr(plugin, "name", "") == "NodeResourcesFit" and hasattr(plugin, "fits_on"):
                return plugin
        return None

    # the queue's list ``_hopeless`` last asked about, the kept verdicts' count then and its
    # ``undecided`` answer (the list is not changed while it is the queue's; verdicts are only
    # added, never changed: the same list and count give the same answer)
    _undecided_kept: tuple[list[int], int, set[int] | None] | None = None

    def _hopeless(self, waiting: list[int], room: list[int], queue: bool = False) -> bool:
        """No group with ``room`` may take any of ``waiting``: their shapes' kept verdicts say
        they fit no empty node of the others (``undecided``). ``queue``: ``waiting`` is the
        queue's list (its answer is kept)."""
        kept = self._undecided_kept
        if queue and kept is not None and kept[0] is waiting and kept[1] == len(self.memo):
            left = kept[2]
        else:
            left = undecided(
                waiting, self.inp.shape_keys, self.inp.demands, self.spare_groups, self.memo
            )
            if queue:
                self._undecided_kept = (waiting, len(self.memo), left)
        return left is not None and all(room[g] <= 0 for g in left)

    def _gpu_pods(self) -> np.ndarray[Any, Any]:
        """Whether each pod asks for a GPU (the young-pod buffer's longer wait), made at the
        first use."""
        if self._gpu_asks is None:
            gpu = self.gpu_column
            self._gpu_asks = (
                np.zeros(len(self.created), dtype=bool)
                if gpu is None
                else np.array([d.requests[gpu] > 0 for d in self.inp.demands], dtype=bool)
            )
        return self._gpu_asks

    def _any_young(self, pods: list[int], now: int) -> bool:
        """Whether a pod of ``pods`` was created within the young-pod buffer (its GPU one for a
        pod asking for a GPU): else no subset of them is all new. The latest end of their
        buffers is kept for the queue's list (the same object while the queue did not change;
        a pod CA evicts, whose creation ``recreate`` moves, joins the queue anew)."""
        if not pods:
            return False
        kept = self._young_kept
        if kept is not None and kept[0] is pods and kept[1] == len(pods):
            return kept[2] > now
        born, gpu = self.created, self._gpu_pods()
        at = np.fromiter(pods, dtype=np.int64, count=len(pods))
        latest = int((born[at] + np.where(gpu[at], NEW_GPU_POD_BUFFER, NEW_POD_BUFFER)).max())
        self._young_kept = (pods, len(pods), latest)
        return latest > now

    def _all_new(self, waiting: list[int], now: int) -> bool:
        """``allPodsAreNew`` (static_autoscaler.go): the oldest pod to help was created less
        than 2 s ago, or the oldest of them asking for a GPU less than 30 s ago: upstream waits
        one loop for more pods, and makes no deletion in this one."""
        born, gpu = self.created, self._gpu_pods()
        at = np.fromiter(waiting, dtype=np.int64, count=len(waiting))
        created = born[at]
        if int(created.min()) + NEW_POD_BUFFER > now:
            return True
        asking = created[gpu[at]]
        return bool(len(asking)) and int(asking.min()) + NEW_GPU_POD_BUFFER > now

    def _scale_up(self, now: int, queued: list[int]) -> bool:
        """One scale-up for the pods waiting in ``queued`` that fit no existing node
        (``unschedulable``); True if nodes were ordered."""
        if self.expendable:
            queued = [pod for pod in queued if pod not in self.expendable]
            if not queued:
                return False
        room = [self.groups.max_size[g] - size for g, size in enumerate(self.sizes())]
        # no option for any pod queued: none for those of them that fit nowhere either (their
        # shapes are some of these), so the filter need not run (unless a queued pod is young
        # enough for the young-pod buffer, which needs the pods to help: ``_all_new``)
        if (
            self.settings.reuse
            and not self._any_young(queued, now)
            and self._hopeless(queued, room, queue=True)
        ):
            return False
        waiting = unschedulable(self, queued, now)
        if not waiting:
            return False
        # less the pods that fit on the nodes being provisioned: upstream's pods to help, which
        # the young-pod test reads (``to_help``); none left: no scale-up needed (not a young run)
        provisioning = sorted(self.provisioning)
        helped = to_help(
            self.state, self.profile, self.inp.demands, waiting, provisioning, now / SECOND,
            self.inp.shape_keys, self.memo, self.groups.of_node,
        )  # fmt: skip
        if not helped:
            return False
        if self._all_new(helped, now):  # asked again at the next run, whatever changes
            self.young, self.asked = True, ()
            return False
        if self.settings.reuse and self._hopeless(helped, room):
            return False  # no option: ``plan_scale_up`` would answer None (and draw nothing)
        choice = plan_scale_up(
            self.state,
            self.profile,
            self.inp.demands,
            waiting,
            self._free_slots(),
            provisioning,
            room,
            self.settings,
            self.groups.names,
            self.rng,
            now / SECOND,
            self.inp.shape_keys,
            self.memo,
            self.groups.of_node,
            helped,
        )
        if choice is None:
            return False
        group, slots = choice.group, choice.slots
        for slot in slots:
            self.provisioning[slot] = now + self.settings.provisioning_delay
        self.ready_at = min(self.provisioning.values())
        self.record.scale_ups.append((now, group, len(slots)))
        return True


def unseen_pod_fields(options: CAOptions) -> str:
    """The note every CA replay carries: the drain rules that read what a snapshot's pods table
    does not hold (volumes, annotations) are not applied, so the replay may remove a node
    upstream keeps (docs/autoscaling.md, "Not modelled")."""
    storage = (
        "local storage (an emptyDir or hostPath volume, skip-nodes-with-local-storage) or "
        if options.skip_nodes_with_local_storage
        else ""
    )
    return (
        "pods' volumes and annotations are not in the data: no pod blocked a drain for "
        f'{storage}a cluster-autoscaler.kubernetes.io/safe-to-evict: "false" annotation, so '
        "a node CA keeps for such a pod may be removed here"
    )


def expendable_note(count: int, cutoff: int) -> str:
    """The note of a CA replay whose data has ``count`` expendable pods (docs/autoscaling.md,
    "Not modelled")."""
    return (
        f"{count} pods have a priority below expendable-pods-priority-cutoff ({cutoff}): as "
        "upstream, none of them asked for a scale-up; upstream also leaves them out of its "
        "scale-down (no utilisation, not moved, their room free), while the replay's scale-down "
        "counts them as any pod, so it may keep nodes upstream would remove"
    )


def version_rules(
    release: tuple[int, int, int],
    pinned: bool,
    expander: str,
    given: bool,
    at_threshold: bool,
    frequent: tuple[bool, bool],
) -> str:
    """The page's note of the cluster-autoscaler rules that depend on its release (CA's minor
    follows Kubernetes'; the profile's, else the default; its patch the newest known unless
    ``pinned`` by the config, ``analyzer.autoscaler.release``): the ``expander`` (``given`` in the
    config or the version's default), whether a node at the scale-down threshold is a
    candidate (``eligible_at_threshold``) and whether its loop runs at once on a scale-up, a
    deletion or a newly unschedulable pod (``frequent``: on, and whether the config set it;
    the version's default is on from CA 1.35, ``KubeVersion.ca_frequent_loops_default``)."""
    how = "as set in the config" if given else "CA's default for this version"
    at = (
        "a node exactly at the scale-down threshold is a candidate (CA 1.35+, 1.32.6+, 1.33.4+, "
        "1.34.3+)"
        if at_threshold
        else "a node exactly at the scale-down threshold is NotUnderutilized (CA before 1.35 "
        "but for 1.32.6+, 1.33.4+, 1.34.3+)"
    )
    version = ".".join(map(str, release))
    which = (
        "as set in the config"
        if pinned
        else "the newest of its minor known here; autoscaler.cluster-autoscaler-version pins one"
    )
    on, set_here = frequent
    said = "as set in the config" if set_here else "CA's default for this version"
    loops = (
        f"; frequent loops ({said}): a run at once after a scale-up or a deletion and when a "
        "pod becomes unschedulable, else every scan-interval"
        if on
        else f"; the loop runs every scan-interval (frequent loops off: {said})"
    )
    return (
        f"cluster-autoscaler {version}'s rules ({which}): expander {expander} ({how}); {at}{loops}"
    )
