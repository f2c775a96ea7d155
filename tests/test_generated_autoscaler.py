"""The generator's cluster-autoscaler (``analyzer.sources.autoscaled_nodes``): its removal
simulation's round-robin search starts where the last one stopped, from run to run, as upstream's
``SchedulerPluginRunner.lastIndex`` (kept for the life of the process) and as the replay's CA.

Four nodes of 1000 m cpu, 1000 bytes of memory and 10 pods; nodes 1 and 2 hold 600 m (over the
0.5 threshold: never candidates, each with room for 400 m more). Run 1: node 3 is empty and node
0 holds one 100 m pod ``a``: both are candidates; ``a``'s search starts at node 0 (itself), takes
node 1 and leaves the next search at node 2. Run 2: pod ``b`` (100 m) has landed on node 3. ``a``
goes to its hinted node 1 (a hinted placement does not move the search), then ``b`` searches:
from node 2 it takes node 2. A search restarted at node 0 at each run would skip node 0 (removed
in this run) and take node 1.
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


def test_the_search_goes_on_from_where_the_last_run_left_it() -> None:
    ca = NodeAutoscaler(initial=4, slots=8, min_size=1, max_size=8, start=0)
    _run(ca, 10, [{A}, set(), set(), set()])
    assert ca.hints.get(A) == 1 and ca.cursor == 2
    assert set(ca.unneeded) == {0, 3}
    _run(ca, 20, [{A}, set(), set(), {B}])
    assert ca.hints.get(A) == 1  # by its hint
    assert ca.hints.get(B) == 2  # the search from node 2, not from node 0
    assert ca.cursor == 3
