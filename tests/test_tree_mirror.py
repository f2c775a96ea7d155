"""The sampled choice's incremental structure (``analyzer.replay.tree_mirror`` through
``NodeSampler.choose``) gives, after any sequence of small writes, bulk rewrites and node list
changes, exactly what a plain read of the node list gives: walk the list from the start index,
stop at the ``wanted``-th feasible node (or after every node when fewer are feasible), take the
rows at the highest total among those, ascending; the start index moves by the nodes processed.

The plain read is written here from that definition; totals are drawn from a few values so that
ties — wide ones at the top, as LeastAllocated's empty nodes make — are common.
"""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.replay.node_tree import NodeSampler
from analyzer.replay.tree_mirror import TOP_MOST, TreeMirror
from analyzer.scheduling.node_sampling import num_feasible_nodes_to_find

LOWEST = int(np.iinfo(np.int64).min)
ZONE = "topology.kubernetes.io/zone"


def plain(order: list[int], totals: np.ndarray, start: int, wanted: int) -> tuple[list[int], int]:
    """(rows at the window's highest total ascending, nodes processed), by walking the list.
    With no more feasible nodes than wanted every node is processed (the walk never stops
    early), as ``node_sampling.found_nodes``."""
    n = len(order)
    feasible = [row for row in order if totals[row] != LOWEST]
    if len(feasible) <= wanted:
        window, processed = feasible, n
    else:
        window, processed = [], 0
        for step in range(n):
            row = order[(start + step) % n]
            processed += 1
            if totals[row] != LOWEST:
                window.append(row)
                if len(window) == wanted:
                    break
    if not window:
        return [], n
    peak = max(int(totals[r]) for r in window)
    return sorted(r for r in window if totals[r] == peak), processed


@pytest.mark.parametrize("churn", [0.05, 0.3])
@pytest.mark.parametrize("seed", range(6))
def test_the_mirror_answers_as_a_plain_walk_of_the_node_list(seed: int, churn: float) -> None:
    """``churn``: the share of steps where a node joins or leaves (cluster-autoscaler's node
    set changes; the mirror is then relisted, not rebuilt)."""
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(120, 400))
    zones = int(rng.integers(1, 4))
    labels = [{ZONE: f"z{int(rng.integers(zones))}"} for _ in range(rows)]
    names = [f"node-{i:04d}" for i in range(rows)]
    present = rng.random(rows) < 0.85
    percentage = int(rng.choice([0, 10, 30]))
    sampler = NodeSampler(percentage, labels, names)
    sampler.begin(present)
    spread = int(rng.choice([3, 40, 1000]))  # few distinct totals: wide ties
    totals = np.where(rng.random(rows) < 0.6, rng.integers(0, spread, rows), LOWEST)
    totals = totals.astype(np.int64)
    totals[~present] = LOWEST
    masked = totals.copy()
    mirror = TreeMirror(masked, LOWEST)
    for step in range(400):
        action = rng.random()
        if action < 0.6:  # a small refresh: a few rows get new totals
            changed = sorted(set(rng.integers(0, rows, int(rng.integers(1, 9))).tolist()))
            values = []
            for row in changed:
                value = LOWEST if rng.random() < 0.3 or not present[row] else rng.integers(spread)
                values.append(int(value))
            totals[changed] = values
            masked[changed] = values
            mirror.write(changed, values)
        elif action < 0.65:  # a bulk rewrite
            totals[:] = np.where(rng.random(rows) < 0.5, rng.integers(0, spread, rows), LOWEST)
            totals[~present] = LOWEST
            masked[:] = totals
            mirror.invalidate()
        elif action < 0.65 + churn:  # a node joins or leaves
            row = int(rng.integers(rows))
            present[row] = not present[row]
            if rng.random() < 0.7:  # its totals go with it (the engine's refresh writes them)
                value = int(rng.integers(spread)) if present[row] else LOWEST
                totals[row] = masked[row] = value
                mirror.write([row], [value])
            # else its total stays as it was: the list alone decides whether it is read
            sampler.membership(row, bool(present[row]))
        start = sampler.start
        order = sampler.tree.order().tolist()  # (the tree's own list: no sampler state read)
        wanted = num_feasible_nodes_to_find(len(order), percentage)
        expected, processed = plain(order, totals, start % len(order), wanted)
        got = sampler.choose(mirror)
        assert got == expected, f"step {step}"
        moved = 0 if not expected else processed % len(order)
        assert sampler.start == (start % len(order) + moved) % len(order), f"step {step}"


def test_a_tie_wider_than_the_list_is_answered_from_the_array() -> None:
    """Every node at one total (empty nodes under LeastAllocated): the listed rows give up, the
    window's ties come from one slice; the answer is every node found."""
    rows = TOP_MOST * 3
    labels = [{} for _ in range(rows)]
    names = [f"n{i:04d}" for i in range(rows)]
    sampler = NodeSampler(0, labels, names)
    sampler.begin(np.ones(rows, dtype=bool))
    masked = np.full(rows, 100, dtype=np.int64)
    mirror = TreeMirror(masked, LOWEST)
    wanted = sampler.wanted
    assert wanted < rows
    assert sampler.choose(mirror) == list(range(wanted))
    assert mirror.top == []  # the wide tie is not listed
    assert sampler.choose(mirror) == list(range(wanted, min(rows, 2 * wanted)))


def test_exactly_wanted_feasible_nodes_process_every_node() -> None:
    """With exactly K feasible nodes the scheduler never finds a (K+1)-th, so it never cancels:
    every node is processed and the start index stays (the earlier window read moved it to just
    past the K-th; it differed from this rule in 7 of 94,734 choices of a 5,000-node replay)."""
    rows = 150
    sampler = NodeSampler(0, [{} for _ in range(rows)], [f"n{i:03d}" for i in range(rows)])
    sampler.begin(np.ones(rows, dtype=bool))
    wanted = sampler.wanted
    assert wanted == 100  # adaptive: 50 - 150/125 = 49 % of 150 = 73, at least 100
    masked = np.full(rows, LOWEST, dtype=np.int64)
    masked[:wanted] = np.arange(wanted)  # the first 100 nodes feasible, the last the highest
    sampler.start = 7
    assert sampler.choose(TreeMirror(masked, LOWEST)) == [wanted - 1]
    assert sampler.start == 7
    masked[wanted] = 0  # a 101st feasible node: from 7 the walk finds 7..100 (94 nodes), wraps
    assert sampler.choose(TreeMirror(masked, LOWEST)) == [wanted - 1]
    assert sampler.start == 6  # round to 0..5 for the other 6: 149 nodes processed, 7 + 149 - 150
