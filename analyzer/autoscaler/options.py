"""cluster-autoscaler's flags that the scale-down decision reads, by their flag names.

Defaults are upstream's (``cluster-autoscaler/main.go`` / ``config/flags``). An omitted flag keeps
its default; an unknown flag or a value of the wrong type is refused with the flag named.
``max-empty-bulk-delete`` is deprecated upstream: when it is set and
``max-scale-down-parallelism`` is not, it sets the parallelism (as upstream's flag handling does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from analyzer.core.durations import parse_duration
from analyzer.core.errors import InputError
from analyzer.core.structured import plain, preview


@dataclass(frozen=True)
class CAOptions:
    """The scale-down options (CA's ``AutoscalingOptions`` / ``NodeGroupAutoscalingOptions``)."""

    scale_down_utilization_threshold: float = 0.5
    scale_down_gpu_utilization_threshold: float = 0.5
    skip_nodes_with_local_storage: bool = True
    skip_nodes_with_system_pods: bool = True
    skip_nodes_with_custom_controller_pods: bool = True
    ignore_daemonsets_utilization: bool = False
    ignore_mirror_pods_utilization: bool = False
    # ``--scale-down-unready-enabled``: false keeps every unready node (``ScaleDownUnreadyDisabled``)
    scale_down_unready_enabled: bool = True
    max_empty_bulk_delete: int = 10
    max_scale_down_parallelism: int = 10
    max_drain_parallelism: int = 1
    min_replica_count: int = 0
    # ``--blocking-system-pod-distruption-timeout`` (upstream's spelling; CA 1.33+, commit
    # 696af986ed): a kube-system pod no PDB covers is drainable once older than this (seconds);
    # None: never (CA before 1.33, whose system rule had no timeout)
    blocking_system_pod_distruption_timeout: float | None = 3600.0
    # ``--expendable-pods-priority-cutoff``: a pod whose spec.priority is below it is expendable
    # (``core/utils/expendable.go IsExpendablePod``; a pod without a priority never is): it is
    # not in CA's cluster snapshot (``static_autoscaler.go``: ``FilterOutExpendablePods`` before
    # ``SetClusterState``), so it counts in no utilisation, is neither moved nor blocking in a
    # drain, leaves its room free to moved pods, and triggers no scale-up
    # (``podlistprocessor/filter_out_expendable.go``)
    expendable_pods_priority_cutoff: int = -10
    # not a flag: the CA release (major, minor, patch) whose rules apply (``release``: the
    # scenario's ``kubernetesVersion`` minor, its newest patch unless given): the
    # ``oncompletion`` rule from 1.36, the replica-count rule's StatefulSet group check from
    # 1.33 (and its backports), the legacy drain order up to 1.28, ...
    rules_version: tuple[int, int, int] = (1, 36, 1)


NOT_FLAGS = ("rules_version",)  # fields of ``CAOptions`` that no flag sets


_FLOATS = ("scale-down-utilization-threshold", "scale-down-gpu-utilization-threshold")
_BOOLS = (
    "skip-nodes-with-local-storage",
    "skip-nodes-with-system-pods",
    "skip-nodes-with-custom-controller-pods",
    "ignore-daemonsets-utilization",
    "ignore-mirror-pods-utilization",
    "scale-down-unready-enabled",
)
_INTS = (
    "max-empty-bulk-delete",
    "max-scale-down-parallelism",
    "max-drain-parallelism",
    "min-replica-count",
)
_DURATIONS = ("blocking-system-pod-distruption-timeout",)
_SIGNED = ("expendable-pods-priority-cutoff",)  # Go ints that may be below 0
FLAGS = (*_FLOATS, *_BOOLS, *_INTS, *_DURATIONS, *_SIGNED)
# cluster-autoscaler flags its loop reads over time (scale-up, the timers, drains in progress:
# the replay's ``autoscaler:`` section, ``analyzer.replay.autoscale_setup``), which no single
# instant's scale-down decision reads: a scenario that carries them, as a pasted flag set does,
# gets a note for each instead of a refusal (``parse_options``'s ``notes``)
LOOP_FLAGS = (
    "scan-interval",
    "scale-down-unneeded-time",
    "scale-down-unready-time",
    "scale-down-delay-after-add",
    "scale-down-delay-after-delete",
    "scale-down-delay-after-failure",
    "unremovable-node-recheck-timeout",
    "max-graceful-termination-sec",
    "max-node-provision-time",
    "expander",
    "frequent-loops-enabled",
)


def duration_seconds(raw: Any, where: str) -> float:
    """A duration setting in seconds: a string like ``10m``, ``30s`` or ``1h30m``, or a number
    of seconds, from 0s to 7d (``InputError`` naming ``where`` otherwise)."""
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise InputError(f"{where}: {preview(raw)} is not a duration like 10m or 30s")
    if isinstance(raw, str):
        seconds = parse_duration(raw, field=where).total_seconds()
    else:
        seconds = float(raw)
    if not 0 <= seconds <= 7 * 86400:
        raise InputError(f"{where}: {preview(raw)} must be between 0s and 7d")
    return seconds


def _value(flag: str, raw: Any, where: str) -> Any:
    at = f"{where}.{flag}"
    if flag in _BOOLS:
        if not isinstance(raw, bool):
            raise InputError(f"{at}: {preview(raw)} is not true or false")
        return raw
    if flag in _DURATIONS:
        if raw is None:  # (a scenario's group options echo the version's "none")
            return None
        # a number is seconds (a scenario's group options echo the scenario's so)
        return duration_seconds(raw, at)
    if flag in _SIGNED:
        if isinstance(raw, bool) or not isinstance(raw, int) or not -(2**63) <= raw < 2**63:
            raise InputError(f"{at}: {preview(raw)} is not a whole number (e.g. -10)")
        return raw
    if flag in _FLOATS:
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 <= raw <= 1:
            raise InputError(f"{at}: {preview(raw)} is not a ratio between 0 and 1 (e.g. 0.5)")
        return float(raw)
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= 100_000:
        raise InputError(f"{at}: {preview(raw)} is not a whole number between 0 and 100000")
    return raw


def parse_options(raw: Any, where: str = "options", notes: list[str] | None = None) -> CAOptions:
    """``options:`` of a scenario (CA flag name → value) as ``CAOptions``. With ``notes`` (a
    scenario's), a flag of ``LOOP_FLAGS`` is noted there and ignored; any other unknown flag is
    refused."""
    if raw is None:
        return CAOptions()
    if not isinstance(raw, Mapping):
        raise InputError(f"{where}: expected a mapping of cluster-autoscaler flags to values")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        flag = plain(key)
        if notes is not None and flag in LOOP_FLAGS:
            notes.append(
                f"{where}.{flag}: read by cluster-autoscaler's loop over time (whatif "
                "--autoscaler), not by one instant's scale-down decision; ignored"
            )
            continue
        if flag not in FLAGS:
            raise InputError(
                f"{where}.{flag}: not a modelled cluster-autoscaler flag "
                f"(valid: {', '.join(FLAGS)})"
            )
        values[flag.replace("-", "_")] = _value(flag, value, where)
    if "max_empty_bulk_delete" in values and "max_scale_down_parallelism" not in values:
        values["max_scale_down_parallelism"] = values["max_empty_bulk_delete"]
    return CAOptions(**values)
