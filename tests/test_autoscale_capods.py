"""The replay's CA pods (``ReplayView.ca_pod`` through ``pods.RunningPods``) are made without the
dataclasses' constructors, sharing their specs and defaults: each must equal, field for field,
the pod the constructors make from the same demand (as ``ca_pod`` made them before), and its
``requests`` must be those of its own spec.

Demands: every pod of two seeded generator clusters, and a few made here for what the generator
may not give (a static pod's mirror controlled by its Node, no controller, requests that differ in
one value only or in their order).
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest

from analyzer.autoscaler.pods import MIRROR_ANNOTATION, CAPod, RunningPods
from analyzer.core.resources import Container, PodSpecResources, pod_requests
from analyzer.replay.autoscale_view import ReplayView
from analyzer.replay.input import prepare
from analyzer.scheduling.objects import PodObject
from analyzer.scheduling.spread_types import OwnerRef
from analyzer.scheduling.state import make_demand
from analyzer.sources import SyntheticSpec, generate


def _plain(d: Any) -> CAPod:
    """The CA pod of demand ``d`` made by the constructors (``ca_pod`` before ``RunningPods``)."""
    kind = "" if d.controller is None else d.controller.kind
    return CAPod(
        PodObject(
            name=d.name,
            namespace=d.namespace,
            spec=PodSpecResources((Container("main", dict(d.request_map)),)),
            labels=d.labels,
            annotations={MIRROR_ANNOTATION: "replay"} if kind == "Node" else {},
            owner_kinds=(kind,) if kind else (),
            phase="Running",
            controller=d.controller,
            uid=d.uid,
        )
    )


def _view(demands: list[Any]) -> Any:
    """What ``ReplayView.ca_pod`` reads of its view (called on this as ``self``)."""
    return SimpleNamespace(
        inp=SimpleNamespace(demands=demands),
        pods={},
        demand_by_id={},
        running=RunningPods(),
        system_ages=False,  # no creation read (``tests/test_replay_autoscaler_system_pods.py``)
    )


def _made_here() -> list[Any]:
    resources = ("cpu", "memory")
    node = OwnerRef("v1", "Node", "n1")
    daemons = OwnerRef("apps/v1", "DaemonSet", "ds")
    made = []
    for i, (requests, controller) in enumerate(
        [
            ({"cpu": 100, "memory": 200}, None),
            ({"cpu": 100, "memory": 300}, daemons),  # one value differs
            ({"memory": 200, "cpu": 100}, node),  # the first's items in another order
            ({"cpu": 100, "memory": 200}, node),
            ({"cpu": 100}, None),
            ({}, daemons),
        ]
    ):
        made.append(
            make_demand(
                resources, requests, requests, name=f"p{i}", namespace="ns",
                labels={"app": str(i % 2)}, controller=controller, uid=f"u{i}",
            )
        )  # fmt: skip
    return made


def _demands(seed: int) -> list[Any]:
    cluster = generate(SyntheticSpec(seed=seed, nodes=12, days=0.5, step=300))
    return list(prepare(cluster.snapshot).demands) + _made_here()


@pytest.mark.parametrize("seed", [1, 7])
def test_ca_pods_equal_the_constructors(seed: int) -> None:
    """Mutants caught: the spec kept by the request map's resource names only
    (``tuple(requests)`` as the key: the second made pod would get the first's spec), the
    ``requests`` set from another spec, a field of ``PodObject`` left at a default the
    constructor would not give (``phase``), the annotations of a Node-controlled pod not those
    of a mirror, ``daemonset`` set to what ``mirror`` reads."""
    demands = _demands(seed)
    view = _view(demands)
    kinds = set()
    for i, d in enumerate(demands):
        pod = ReplayView.ca_pod(view, i)
        want = _plain(d)
        assert pod == want
        assert vars(pod.obj) == vars(want.obj)
        assert pod.requests == pod_requests(want.obj.spec)
        assert pod.key == f"{d.namespace}/{d.name}"
        for name in ("requests", "key", "mirror", "daemonset"):  # set by ``RunningPods``
            assert vars(pod)[name] == getattr(want, name), name
        assert ReplayView.ca_pod(view, i) is pod  # made once
        assert view.demand_by_id[id(pod)] is d
        kinds.add(pod.obj.owner_kinds)
    assert {("Node",), ("DaemonSet",), ()} <= kinds
    # equal request maps share one spec (what makes the pods cheaper): the cache is used
    specs = {id(p.obj.spec) for p in view.pods.values()}
    maps = {tuple(d.request_map.items()) for d in demands}
    assert len(specs) == len(maps) < len(demands)


def test_shared_defaults_are_the_constructors() -> None:
    """The fields a running pod does not set are those the constructors give (``PodObject``
    and ``CAPod`` defaults), whatever ``RunningPods`` shares of them."""
    made = RunningPods().make("a", "b", {"cpu": 1}, {}, {}, (), None, "u")
    plain = CAPod(PodObject("a", "b", PodSpecResources((Container("main", {"cpu": 1}),))))
    assert vars(made.obj) == {**vars(plain.obj), "phase": "Running", "uid": "u"}
    names = [f.name for f in dataclasses.fields(CAPod) if f.name != "obj"]
    assert [getattr(made, n) for n in names] == [getattr(plain, n) for n in names]
    assert made.requests == {"cpu": 1}
