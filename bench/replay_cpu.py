"""Benchmark helper: CPU seconds of one ``replay`` per strategy for the tree on ``PYTHONPATH``.

Used to pair an old tree (``git archive REV | tar -x -C DIR``) against this one on one snapshot
(docs/benchmarks.md, "regress"): the same work ``bench/replay.py`` times — the snapshot read, the
input prepared and the usage matrices built outside the timer, one ``replay`` per strategy — without
its baselines, plus a hash of the placements (``result.node``) so two trees' replays can be told
equal. With ``WARM=1`` the pod usage rows sorted by grid column are built before the timer too
(trees since 2026-11-29 build them lazily at the first replay; older ones in ``usage_matrices``).

    PYTHONPATH=TREE python bench/replay_cpu.py SNAPSHOT [strategy,strategy] [stop_after_events]

Prints a JSON line per strategy: strategy, cpu (s), scored (placements, DaemonSet pods excluded),
per_s, waited, nodes_sha (first 12 hex digits of the placements' SHA-1), events.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from analyzer.core.snapshot import read_snapshot
from analyzer.replay.engine import Strategy, replay
from analyzer.replay.input import prepare
from analyzer.replay.projection import usage_matrices
from analyzer.scheduling import load_strategy


def main() -> None:
    """Replay each strategy once and print its figures."""
    inp = prepare(read_snapshot(Path(sys.argv[1])))
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else ["koord-loadaware"]
    kwargs: dict[str, Any] = {"stop_after": int(sys.argv[3])} if len(sys.argv) > 3 else {}
    mats = usage_matrices(inp)
    rows = getattr(mats, "rows", None)
    if os.environ.get("WARM") and rows is not None and hasattr(rows, "chunk"):
        started = time.process_time()
        for k in range(len(rows.chunks)):
            rows.chunk(k)
        print(f"rows sorted in {time.process_time() - started:.2f} CPU s", file=sys.stderr)
    for name in names:
        strategy = Strategy(name, load_strategy(name))
        started = time.process_time()
        result = replay(inp, strategy, seed=0, matrices=mats, **kwargs)
        cpu = time.process_time() - started
        scored = int((~inp.pinned[result.segments["pod"]]).sum())
        digest = hashlib.sha1(np.asarray(result.node).tobytes()).hexdigest()[:12]
        line = {
            "strategy": name,
            "cpu": round(cpu, 2),
            "scored": scored,
            "per_s": round(scored / cpu) if cpu else None,
            "waited": int(result.waited.sum()),
            "nodes_sha": digest,
            "events": len(inp.events[0]),
        }
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
