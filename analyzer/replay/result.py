"""What one replay returns: where and when every pod ran under one strategy and seed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from analyzer.replay.autoscale_record import AutoscalerRecord
from analyzer.replay.input import BoolArray, Int64Array
from analyzer.replay.refusals import Refusal


@dataclass
class ReplayResult:
    """Where and when every pod ran under one strategy and seed.

    Per pod (snapshot order): ``node`` (first node it was placed on, -1 never), ``placed_at`` (ns,
    ``NEVER`` if never), ``wait`` (total ns spent pending), ``waited`` (pending at least once),
    ``pending_at_end`` and ``abandoned`` (its real lifetime ended while pending). ``segments``:
    pod, node, start, end (ns; end NEVER = ran to the end), ``first`` (the pod's first run, placed
    without waiting). ``waits``: pod, start, end of every pending interval (end NEVER = still
    pending at the end). ``preemptions``: victim, preemptor, node, time (ns) of every eviction by
    DefaultPreemption (``analyzer.replay.preemption``).
    """

    strategy: str
    seed: int
    node: Int64Array
    placed_at: Int64Array
    wait: Int64Array
    waited: BoolArray
    pending_at_end: BoolArray
    abandoned: BoolArray
    segments: dict[str, np.ndarray[Any, Any]]
    waits: dict[str, Int64Array]
    evicted: int = 0
    preemptions: dict[str, Int64Array] = field(default_factory=dict)
    refusals: dict[int, Refusal] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    autoscaler: AutoscalerRecord | None = None  # the node autoscaler's actions (None: none)
