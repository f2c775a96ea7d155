"""The replay benchmark's per-node loop baseline chooses the nodes the fast path chooses above
100 nodes, where kube-scheduler scores only the feasible nodes it finds (percentageOfNodesToScore).

Until 2026-11-29 the loop (``scheduling.reference.kube_default_loop``) scored every node, so at
5,000 nodes (500 found per pod) ``bench/replay.py`` stopped with "baseline and fast path disagree"
for kube-default; the fast path was right (``tests/test_replay_sampling.py`` checks it against an
independent walk of the node tree). The loop now walks the node list itself (``walk_found``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from analyzer.scheduling.reference import walk_found

ROOT = Path(__file__).resolve().parent.parent

# state rows in node list order, and which rows pass the filters (rows 3 and 4 do not)
ORDER = [4, 1, 3, 0, 2]
FEASIBLE = [True, True, True, False, False]


def test_walk_stops_at_the_wanted_feasible_node() -> None:
    # from position 2 (row 3, infeasible): row 0, then row 2 is the second feasible: 3 processed
    found, processed = walk_found(FEASIBLE, ORDER, 2, 2)
    assert [row for row, hit in enumerate(found) if hit] == [0, 2]
    assert processed == 3


def test_walk_wraps_round_the_end_of_the_list() -> None:
    # from position 4 (row 2): row 2, row 4 (infeasible), row 1: 3 processed, next start 2
    found, processed = walk_found(FEASIBLE, ORDER, 4, 2)
    assert [row for row, hit in enumerate(found) if hit] == [1, 2]
    assert (4 + processed) % len(ORDER) == 2


def test_fewer_feasible_than_wanted_processes_every_node() -> None:
    # upstream: every node examined, so the next start index is the same one
    found, processed = walk_found(FEASIBLE, ORDER, 3, 5)
    assert [row for row, hit in enumerate(found) if hit] == [0, 1, 2]
    assert processed == len(ORDER)


def test_bench_loop_agrees_with_the_fast_path_above_100_nodes() -> None:
    # 150 nodes: 100 found per pod (numFeasibleNodesToFind's minimum); the script raises at the
    # first pod where the loop's choice differs from the fast path's (the old loop: pod 1)
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "replay.py"),
            "--nodes=150",
            "--repeat=1",
            "--baseline-pods=30",
            "--strategies=kube-default,most-allocated",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert [line["strategy"] for line in lines] == ["kube-default", "most-allocated"]
    for line in lines:
        assert line["nodes"] == 150
        assert line["baseline_placements_per_s"] > 0  # the loop scored its 30 pods
