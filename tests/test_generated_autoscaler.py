"""The generator's cluster-autoscaler (``analyzer.sources.autoscaled_nodes``): its removal
simulation's round-robin search goes on from candidate to candidate within a run and starts from
the first node at each run, as the replay's CA does (docs/autoscaling.md, row "round-robin start":
upstream's ``lastIndex`` is kept for the life of the process, over a node list rebuilt in Go map
order at every loop, so the index carried over names no particular node). Replaying the
generator's data reproduces its node count only if both read the rule alike: with the search
carried over from run to run in the generator alone, 3 of 30 three-day seeds parted
(``tests/test_autoscale_fidelity.py``).

Four nodes of 1000 m cpu, 1000 bytes of memory and 10 pods; nodes 1 and 2 hold 600 m (over the
0.5 threshold: never candidates, each with room for 400 m more); every pod requests 100 m.
"""

from __future__ import annotations

import numpy as np

from analyzer.sources.autoscaled_nodes import NodeAutoscaler

A, B = 0, 1  # pod indices


def _run(ca: NodeAutoscaler, now: int, on_node: list[set[int]]) -> None:
    allocatable = np.array([[1000, 1000, 10]] * 4, dtype=np.int64)
    requested = np.array([[0, 0, 0], [600, 100, 1], [600, 100, 1], [0, 0, 0]], dtype=np.int64)
    for node, pods in enumerate(on_node):
        requested[node] += [100 * len(pods), 10 * len(pods), len(pods)]
    ca.act(
        now,
        allocatable,
        requested,
        on_node,
        [],
        lambda pod: np.array([100, 10, 1], dtype=np.int64),
        lambda pod: True,
    )


def test_the_search_goes_on_from_candidate_to_candidate_within_a_run() -> None:
    # node 0 holds ``a``, node 3 holds ``b``: both candidates, node 0 first (slot order). ``a``'s
    # search starts at node 0 (itself), takes node 1 and leaves the next search at node 2, so
    # ``b`` takes node 2; a search restarted for each candidate would take node 1 again
    ca = NodeAutoscaler(initial=4, slots=8, min_size=1, max_size=8, start=0)
    _run(ca, 10, [{A}, set(), set(), {B}])
    assert ca.hints.get(A) == 1 and ca.hints.get(B) == 2
    assert ca.cursor == 3
    assert set(ca.unneeded) == {0, 3}


def test_each_run_searches_from_the_first_node() -> None:
    # run 1: ``a`` (node 0) takes node 1 and leaves the search at node 2; node 3 is empty.
    # Run 2: ``b`` has landed on node 3; ``a`` goes to its hinted node 1 (no search), then
    # ``b`` searches from node 0: node 0 is removed in this run, node 1 has room. A search
    # carried over from run 1 would start at node 2 and take it
    ca = NodeAutoscaler(initial=4, slots=8, min_size=1, max_size=8, start=0)
    _run(ca, 10, [{A}, set(), set(), set()])
    assert ca.hints.get(A) == 1 and ca.cursor == 2
    assert set(ca.unneeded) == {0, 3}
    _run(ca, 20, [{A}, set(), set(), {B}])
    assert ca.hints.get(A) == 1  # by its hint
    assert ca.hints.get(B) == 1  # the search from node 0, not from node 2
    assert ca.cursor == 2
