"""Which kept consolidation answers a node that freed room could change
(``analyzer.replay.karpenter_simulate.stale_answers``): exactly those with a pod that fits the
room now of a freed node numbered below the pod's bound (the node that took it in a first-fit
placement; ``FREED_ANYWHERE`` for a pod left over), a resource the pod does not request passing
whatever the room (as NodeResourcesFit). Checked pod by pod against that definition on random
small states, with the requests read from the pods and from the replay's requests matrix
alike."""

from __future__ import annotations

import random

import numpy as np
import pytest
from test_karpenter_place import _case

from analyzer.replay.karpenter_simulate import FREED_ANYWHERE, stale_answers


def _fits(room: np.ndarray, need: np.ndarray) -> bool:
    return all(n == 0 or r >= n for r, n in zip(room.tolist(), need.tolist(), strict=True))


@pytest.mark.parametrize("seed", range(120))
def test_an_answer_is_stale_when_one_of_its_pods_fits_a_freed_node(seed: int) -> None:
    state, demands, _, _, _, _ = _case(seed)
    rng = random.Random(seed)
    count = state.node_count
    freed = sorted(rng.sample(range(count), rng.randint(1, count)))
    kept = {
        (k,): [
            (p, rng.choice([FREED_ANYWHERE, rng.randrange(count + 1)]))
            for p in rng.sample(range(len(demands)), rng.randint(0, min(4, len(demands))))
        ]
        for k in range(rng.randint(1, 6))
    }
    rooms = {f: state.allocatable[f] - state.requested[f] for f in freed}
    expected = [
        key
        for key, moved in kept.items()
        if any(
            f < bound and _fits(room, demands[p].requests)
            for p, bound in moved
            for f, room in rooms.items()
        )
    ]
    assert stale_answers(state, demands, freed, kept) == expected
    matrix = np.stack([d.requests for d in demands])
    assert stale_answers(state, demands, freed, kept, matrix) == expected
    if seed == 0:  # an answer that moved no pod reads no room
        assert stale_answers(state, demands, freed, {(9,): []}) == []
