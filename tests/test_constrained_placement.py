"""The demo's observed placement: crowding, and the pods' required constraints honoured.

Facts checked on a 40-node demo cluster (one day): the plain crowding placement lets replicas with
required pod anti-affinity per hostname run beside each other (so the check below can fail), the
constrained one never does; both fill the crowded nodes to the brim; and a cluster whose pods
carry no constraint is placed node for node as the plain crowding placement places it (the filters
run only for the pods that carry constraints); the filters' remembered answer to "may a seen
required anti-affinity term select this pod?" is, at every placement, the answer of asking every
term seen so far (the answer is extended as terms come, not recomputed: issue 29, the demo's speed);
and a placer that placed the snapshot's pods first places a history day's pods as a fresh one does
(the demo generates its history with a placer of its own, beside the snapshot).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from functools import cache

import numpy as np
import pandas as pd
from anti_affinity_facts import anti_affinity_breaks

from analyzer.cli.demo import demo_crowded, demo_spec
from analyzer.core.snapshot import Snapshot
from analyzer.scheduling import load_strategy
from analyzer.scheduling.label_selectors import NOTHING
from analyzer.scheduling.pod_cells import labels_from_cell
from analyzer.sources.constrained_placement import RequiredFilters, constrained_crowding_place
from analyzer.sources.history_chunks import chunk_specs
from analyzer.sources.placement import ClusterState, PlacementRequest, crowding_place
from analyzer.sources.synthetic import generate

SPEC = demo_spec(7, 40, 1, 600)
CROWDED = demo_crowded(SPEC)


@cache
def placed(constrained: bool, pod_constraints: bool = True) -> Snapshot:
    spec = replace(SPEC, pod_constraints=pod_constraints)
    make = constrained_crowding_place if constrained else crowding_place
    return generate(spec, place=make(CROWDED)).snapshot


def _cpu_requested_share(snapshot: Snapshot) -> pd.Series:
    """Per node: cpu requested by the pods still running at the end / allocatable cpu."""
    pods = snapshot.pods
    running = pods[pods["node"].notna() & pods["finished"].isna()]
    allocatable = snapshot.nodes.set_index("node")["allocatable:cpu"]
    requested = running.groupby("node")["requests:cpu"].sum()
    return (requested / allocatable).reindex(allocatable.index).fillna(0.0)


def test_required_anti_affinity_is_honoured() -> None:
    breaking, carrying = anti_affinity_breaks(placed(False).pods)
    assert carrying > 50 and breaking > 0  # the plain crowding placement ignores the terms
    breaking, carrying = anti_affinity_breaks(placed(True).pods)
    assert carrying > 50 and breaking == 0


def test_crowded_nodes_are_still_filled_first() -> None:
    for constrained in (False, True):
        share = _cpu_requested_share(placed(constrained))
        crowded = share[sorted(CROWDED)]
        # the crowded nodes' cpu is (nearly) all requested; the other nodes keep room
        assert (crowded > 0.95).all(), crowded
        assert share.drop(sorted(CROWDED)).max() < crowded.min()


def test_pods_without_constraints_are_placed_as_before() -> None:
    plain = placed(False, pod_constraints=False).pods
    assert (plain["affinity"].isin(["", "{}"])).all()
    assert (plain["topology_spread"].isin(["", "[]"])).all()
    assert plain["node"].notna().sum() > 500
    assert plain["node"].equals(placed(True, pod_constraints=False).pods["node"])


class _Checked(RequiredFilters):
    """RequiredFilters that compares its remembered answer with every seen term asked anew."""

    asked: int = 0
    selected: int = 0

    def __call__(self, pod: PlacementRequest, state: ClusterState) -> np.ndarray | None:
        if not pod.daemonset:
            labels = labels_from_cell(pod.cells.get("labels", "{}"))
            every = any(
                t.namespace_selector is not NOTHING or t.matches(pod.namespace, labels, None)
                for t in self._anti
            )
            remembered = self._selected(pod)
            assert remembered == every, pod.uid
            self.asked += 1
            self.selected += remembered
        return super().__call__(pod, state)


def test_remembered_anti_affinity_selection_is_every_terms_answer() -> None:
    checked = _Checked(load_strategy("kube-default"))
    snapshot = generate(SPEC, place=crowding_place(CROWDED, checked)).snapshot
    assert checked.asked > 500 and 0 < checked.selected < checked.asked
    # the same placement as the demo's constrained placer
    assert snapshot.pods["node"].equals(placed(True).pods["node"])


def test_a_used_placer_places_a_history_day_as_a_fresh_one() -> None:
    used = _Checked(load_strategy("kube-default"))
    generate(SPEC, place=crowding_place(CROWDED, used))  # the snapshot's pods first
    assert used._anti  # it remembers required anti-affinity terms: it could differ
    day = SPEC.start.date() - timedelta(days=3)
    [(_, chunk)] = chunk_specs(SPEC, day, day, step=3600, chunk_days=1)
    again = generate(chunk, place=crowding_place(CROWDED, used)).snapshot.pods
    fresh = generate(chunk, place=constrained_crowding_place(CROWDED)).snapshot.pods
    assert len(fresh) > 300 and fresh["node"].notna().sum() > 300
    assert again["uid"].equals(fresh["uid"]) and again["node"].equals(fresh["node"])
