"""cluster-autoscaler's drainability rules (simulator/drainability/rules/*, ``rules.Default``)
and ``GetPodsToMove`` (simulator/drain.go).

Each rule answers for one pod: undefined (ask the next rule), drainable (the pod is moved, or a
DaemonSet pod evicted), skip (ignored) or blocked with a ``drain.BlockingPodReason``. The first
answer that is not undefined wins, in upstream's order:

1. mirror → skip; 2. long-terminating → skip; 3. replica count (only with
   ``skip-nodes-with-custom-controller-pods`` and when the controllers are known:
   ``ControllerNotFound``, ``MinReplicasReached``);
4. DaemonSet → drainable; 5. ``safe-to-evict: "true"`` → drainable; 6. terminal → drainable;
6b. (CA 1.36+) ``safe-to-evict: "on-completion"`` → wait for completion: not moved, not
   blocking, but its node is not deleted while the pod runs (``planner``);
7. replicated (no controller, or with the custom-controller flag a kind other than
   ReplicationController/Job/ReplicaSet/StatefulSet: ``NotReplicated``);
8. system (with ``skip-nodes-with-system-pods``: a kube-system pod no PDB covers:
   ``UnmovableKubeSystemPod``, or drainable once older than
   ``blocking-system-pod-distruption-timeout``, CA 1.33+);
9. ``safe-to-evict: "false"``: ``NotSafeToEvictAnnotation``;
10. local storage (with ``skip-nodes-with-local-storage``: ``LocalStorageRequested``);
11. PDB: a covering budget with fewer than 1 disruption left: ``NotEnoughPdb``.

``Controllers`` stands for upstream's listers: None (no ``objects:`` in the scenario) skips the
replica-count rule as upstream does with nil listers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from analyzer.autoscaler.options import CAOptions
from analyzer.autoscaler.pods import CAPod
from analyzer.autoscaler.release import STATEFULSET_ANY_GROUP, has
from analyzer.scheduling.pdb import DisruptionBudget

UNDEFINED, DRAIN_OK, SKIP, BLOCK = "Undefined", "DrainOk", "SkipDrain", "BlockDrain"
WAIT = "WaitForCompletion"
REPLICATED_KINDS = ("ReplicationController", "Job", "ReplicaSet", "StatefulSet")


@dataclass(frozen=True)
class Status:
    """``drainability.Status``: the outcome and, when blocked, the reason."""

    outcome: str
    reason: str = ""


# the answers without a reason, made once (equal to any ``Status`` of the same outcome)
_UNDEFINED, _DRAIN_OK, _SKIP = Status(UNDEFINED), Status(DRAIN_OK), Status(SKIP)
_WAIT = Status(WAIT)


@dataclass(frozen=True)
class Controllers:
    """The controllers a lister would find: (kind, namespace, name) → ``spec.replicas`` (None:
    unset or a kind without replicas)."""

    known: Mapping[tuple[str, str, str], int | None] = field(default_factory=dict)

    def get(self, kind: str, namespace: str, name: str) -> tuple[bool, int | None]:
        """Whether the controller exists, and its replicas."""
        key = (kind, namespace, name)
        return key in self.known, self.known.get(key)


class PdbTracker:
    """``basicRemainingPdbTracker``: budgets with the disruptions still allowed in this pass."""

    def __init__(self, budgets: Sequence[DisruptionBudget]) -> None:
        self.budgets = list(budgets)
        self.remaining = [b.disruptions_allowed for b in budgets]

    def matching(self, pod: CAPod) -> list[int]:
        """Indices of the budgets covering ``pod`` (same namespace, selector matches)."""
        if not self.budgets:
            return []
        return [
            i
            for i, b in enumerate(self.budgets)
            if b.namespace == pod.obj.namespace and b.selector.matches(pod.obj.labels)
        ]

    def in_parallel(self, pods: Sequence[CAPod]) -> bool:
        """``CanRemovePods``' second answer: every budget allows all its pods at once."""
        if not self.budgets:  # nothing to count
            return True
        counts = [0] * len(self.budgets)
        for pod in pods:
            for i in self.matching(pod):
                counts[i] += 1
        return all(self.remaining[i] >= c for i, c in enumerate(counts) if c)

    def remove(self, pods: Sequence[CAPod]) -> None:
        """``RemovePods``: each covered pod takes one disruption from each of its budgets."""
        if not self.budgets:
            return
        for pod in pods:
            for i in self.matching(pod):
                self.remaining[i] -= 1


def _group(api_version: str) -> str:
    """The API group of an ownerReference's ``apiVersion`` (``schema.ParseGroupVersion``:
    ``apps/v1`` → ``apps``, ``v1`` → the core group, "")."""
    return api_version.split("/")[0] if "/" in api_version else ""


def _replica_count(pod: CAPod, options: CAOptions, controllers: Controllers | None) -> Status:
    ref = pod.obj.controller
    if controllers is None or ref is None:
        return _UNDEFINED
    found, replicas = controllers.get(ref.kind, pod.obj.namespace, ref.name)
    statefulset_group = has(options.rules_version, STATEFULSET_ANY_GROUP)
    too_few = replicas is not None and replicas < options.min_replica_count
    # upstream's if / else-if chain: ReplicationController, DaemonSet pod, Job, ReplicaSet, ...
    if ref.kind == "ReplicationController":
        if not found:
            return Status(BLOCK, "ControllerNotFound")
        if too_few:
            return Status(BLOCK, "MinReplicasReached")
    elif pod.daemonset:
        # a DaemonSet of the apps group only from CA 1.30; 1.29 looked any group's up
        apps = _group(ref.api_version) == "apps" or options.rules_version < (1, 30)
        if apps and ref.kind == "DaemonSet" and not found:
            return Status(BLOCK, "ControllerNotFound")
    elif ref.kind == "StatefulSet" and _group(ref.api_version) != "apps" and statefulset_group:
        # CA 1.33+ (commit cc3a9f5d10): no lister for another group's StatefulSet
        return _UNDEFINED
    elif ref.kind in ("Job", "ReplicaSet", "StatefulSet"):
        if not found:
            return Status(BLOCK, "ControllerNotFound")
        if ref.kind == "ReplicaSet" and too_few:
            return Status(BLOCK, "MinReplicasReached")
    return _UNDEFINED


def drainable(
    pod: CAPod,
    options: CAOptions,
    pdbs: PdbTracker,
    now: float,
    controllers: Controllers | None = None,
) -> Status:
    """``rules.Default(options).Drainable``: the first rule with an answer."""
    if pod.mirror:
        return _SKIP
    if pod.deletion_time is not None and pod.long_terminating(now):
        return _SKIP  # deleted long enough ago to count as gone
    # without listers (``controllers`` None) the replica-count rule has no answer
    if options.skip_nodes_with_custom_controller_pods and controllers is not None:
        status = _replica_count(pod, options, controllers)
        if status.outcome != UNDEFINED:
            return status
    if pod.daemonset or pod.safe_to_evict or pod.terminal:
        return _DRAIN_OK
    if pod.on_completion and options.rules_version >= (1, 36):
        return _WAIT
    ref = pod.obj.controller
    replicated = ref is not None
    if options.skip_nodes_with_custom_controller_pods:
        replicated = ref is not None and ref.kind in REPLICATED_KINDS
    if not replicated:
        return Status(BLOCK, "NotReplicated")
    matching = pdbs.matching(pod)
    if options.skip_nodes_with_system_pods and pod.obj.namespace == "kube-system" and not matching:
        # ``isBspPassedDisruptionTimeout``: created (a creation time given) longer ago than the
        # timeout, strictly: drainable, and no later rule is asked
        timeout, created = options.blocking_system_pod_distruption_timeout, pod.creation_time
        if timeout is not None and created is not None and now > created + timeout:
            return _DRAIN_OK
        return Status(BLOCK, "UnmovableKubeSystemPod")
    if pod.not_safe_to_evict:
        return Status(BLOCK, "NotSafeToEvictAnnotation")
    if options.skip_nodes_with_local_storage and pod.blocking_local_storage:
        return Status(BLOCK, "LocalStorageRequested")
    if matching and any(pdbs.remaining[i] < 1 for i in matching):
        return Status(BLOCK, "NotEnoughPdb")
    return _UNDEFINED


def system_pods_age(options: CAOptions) -> bool:
    """Whether the system rule reads a kube-system pod's age: it is on and has a timeout
    (CA 1.33+)."""
    return (
        options.skip_nodes_with_system_pods
        and options.blocking_system_pod_distruption_timeout is not None
    )


def ages(pod: CAPod, options: CAOptions) -> bool:
    """Whether time alone may change ``pod``'s verdict: a kube-system pod with a creation time
    under the system rule's timeout (CA 1.33+), blocking until it is old enough. A caller that
    keeps verdicts keeps no blocking one of such a pod (``pods_to_move``, the replay's caches)."""
    return (
        pod.creation_time is not None
        and pod.obj.namespace == "kube-system"
        and system_pods_age(options)
    )


@dataclass(frozen=True)
class PodsToMove:
    """``GetPodsToMove`` (``PodMoveInfo``): the pods to re-place, the DaemonSet pods, the pods
    left to finish (``OnCompletionPods``), or the pod that blocks."""

    pods: tuple[CAPod, ...] = ()
    daemonset_pods: tuple[CAPod, ...] = ()
    blocking: CAPod | None = None
    reason: str = ""
    on_completion: tuple[CAPod, ...] = ()


def pods_to_move(
    pods: Sequence[CAPod],
    options: CAOptions,
    pdbs: PdbTracker,
    now: float,
    controllers: Controllers | None = None,
    verdicts: dict[int, tuple[CAPod, Status]] | None = None,
    first: bool = False,
) -> PodsToMove:
    """Sort a node's pods by ``drainable``: the first blocked pod stops the walk.
    ``verdicts``: a caller's dict (same ``options`` every call) keeping each pod's verdict where
    it reads nothing but the pod and the options: no budgets, no controllers, not deleted, and
    not a blocking verdict that time may lift (``ages``).
    ``first``: the first pod to move also stops the walk (its answer then holds that pod alone:
    for a caller that asks only whether the node has a pod to move or a blocking one)."""
    if options.rules_version < (1, 29):  # one function with its own order (``legacy``)
        return _legacy_pods_to_move(pods, options, pdbs, now, controllers, first)
    move: list[CAPod] = []
    daemons: list[CAPod] = []
    waiting: list[CAPod] = []
    keep = verdicts is not None and not pdbs.budgets and controllers is None
    for pod in pods:
        if keep and pod.deletion_time is None:
            known = verdicts.get(id(pod))  # type: ignore[union-attr]
            if known is None:  # the pod is kept with its verdict, so its id stays its own
                known = (pod, drainable(pod, options, pdbs, now))
                if known[1].outcome != BLOCK or not ages(pod, options):
                    verdicts[id(pod)] = known  # type: ignore[index]
            status = known[1]
        else:
            status = drainable(pod, options, pdbs, now, controllers)
        outcome = status.outcome
        if outcome == BLOCK:
            return PodsToMove(blocking=pod, reason=status.reason)
        if outcome == WAIT:
            waiting.append(pod)
        elif outcome != SKIP:  # UNDEFINED or DRAIN_OK: moved, or a DaemonSet pod evicted
            if pod.daemonset:
                daemons.append(pod)
            elif first:
                return PodsToMove((pod,), tuple(daemons), on_completion=tuple(waiting))
            else:
                move.append(pod)
    return PodsToMove(tuple(move), tuple(daemons), on_completion=tuple(waiting))


def _legacy_replicated(
    pod: CAPod, options: CAOptions, controllers: Controllers | None
) -> tuple[bool, bool, str]:
    """CA up to 1.28's ``legacyCheckForReplicatedPods`` (utils/drain/drain.go, with
    ``skip-nodes-with-custom-controller-pods``): (replicated, a DaemonSet pod, the blocking
    reason or ""). Without listers (``controllers`` None) a ReplicationController, Job,
    ReplicaSet or StatefulSet owner is replicated; with them it must be listed (else
    ``ControllerNotFound``), a ReplicationController or ReplicaSet with at least
    ``min-replica-count`` replicas (else ``MinReplicasReached``); a DaemonSet pod's DaemonSet
    owner (any group) must be listed. Another kind is not replicated."""
    ref = pod.obj.controller
    kind = "" if ref is None else ref.kind
    # upstream's if / else-if chain: ReplicationController, a DaemonSet pod, Job, ReplicaSet,
    # StatefulSet
    if pod.daemonset and kind != "ReplicationController":
        if (
            ref is not None
            and kind == "DaemonSet"
            and controllers is not None
            and not controllers.get(kind, pod.obj.namespace, ref.name)[0]
        ):
            return False, True, "ControllerNotFound"
        return False, True, ""
    if ref is None or kind not in REPLICATED_KINDS:
        return False, False, ""
    if controllers is None:
        return True, False, ""
    found, replicas = controllers.get(kind, pod.obj.namespace, ref.name)
    if not found:
        return False, False, "ControllerNotFound"
    few = replicas is not None and replicas < options.min_replica_count
    if few and kind in ("ReplicationController", "ReplicaSet"):
        return False, False, "MinReplicasReached"
    return True, False, ""


def _legacy_pods_to_move(
    pods: Sequence[CAPod],
    options: CAOptions,
    pdbs: PdbTracker,
    now: float,
    controllers: Controllers | None,
    first: bool,
) -> PodsToMove:
    """``GetPodsToMove`` up to CA 1.28 (simulator/drain.go): mirror pods skipped (its one
    drainability rule), then utils/drain/drain.go ``GetPodsForDeletionOnNodeDrain`` pod by pod —
    long-terminating ones skipped, the replicated check (``_legacy_replicated`` with
    ``skip-nodes-with-custom-controller-pods``, else any controller), DaemonSet pods evicted,
    and unless the pod is ``safe-to-evict: "true"`` or terminal: ``NotReplicated``, a
    kube-system pod no PodDisruptionBudget covers (``UnmovableKubeSystemPod``), local storage
    (``LocalStorageRequested``), then ``safe-to-evict: "false"`` (``NotSafeToEvictAnnotation``) —
    and only after every pod ``checkPdbs``: for each budget in turn, the first pod to move it
    covers blocks (``NotEnoughPdb``) when it allows fewer than 1 disruption."""
    move: list[CAPod] = []
    daemons: list[CAPod] = []
    for pod in pods:
        if pod.mirror or (pod.deletion_time is not None and pod.long_terminating(now)):
            continue
        if options.skip_nodes_with_custom_controller_pods:
            replicated, daemon, reason = _legacy_replicated(pod, options, controllers)
            if reason:
                return PodsToMove(blocking=pod, reason=reason)
        else:
            replicated, daemon = pod.obj.controller is not None, pod.daemonset
        if daemon:
            daemons.append(pod)
            continue
        if not pod.safe_to_evict and not pod.terminal:
            reason = ""
            if not replicated:
                reason = "NotReplicated"
            elif (
                options.skip_nodes_with_system_pods
                and pod.obj.namespace == "kube-system"
                and not pdbs.matching(pod)
            ):
                reason = "UnmovableKubeSystemPod"
            elif options.skip_nodes_with_local_storage and pod.blocking_local_storage:
                reason = "LocalStorageRequested"
            elif pod.not_safe_to_evict:
                reason = "NotSafeToEvictAnnotation"
            if reason:
                return PodsToMove(blocking=pod, reason=reason)
        if first:
            return PodsToMove((pod,), tuple(daemons))
        move.append(pod)
    for i, budget in enumerate(pdbs.budgets):
        if pdbs.remaining[i] >= 1:
            continue
        for pod in move:
            if budget.namespace == pod.obj.namespace and budget.selector.matches(pod.obj.labels):
                return PodsToMove(blocking=pod, reason="NotEnoughPdb")
    return PodsToMove(tuple(move), tuple(daemons))
