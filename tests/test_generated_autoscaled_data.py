"""The generator's autoscaled cluster (``SyntheticSpec.autoscaled``), checked on its pods before
they are written: what its data says must be what a Kubernetes cluster could record."""

from __future__ import annotations

from typing import Any

import pytest

import analyzer.sources.synthetic as synthetic
from analyzer.sources import SyntheticSpec, generate
from analyzer.sources.lifecycle import Pod


def _pods(monkeypatch: pytest.MonkeyPatch, seed: int, **extra: Any) -> tuple[list[Pod], int]:
    """The pods the generator's scheduling loop ran (as it left them), and the window's start."""
    seen: dict[str, list[Pod]] = {}
    run = synthetic.run_lifecycles

    def keep(pods: list[Pod], *args: Any, **kwargs: Any) -> None:
        # the list as given: ``replaces`` numbers positions in it (the loop appends the
        # controllers' new pods, which replace none, and leaves out at its end the pods outside
        # the window); its pods are the same objects, which the loop fills in
        seen["pods"] = list(pods)
        run(pods, *args, **kwargs)
        known = {id(q) for q in seen["pods"]}
        seen["pods"] += [p for p in pods if id(p) not in known]  # the controllers' new pods

    monkeypatch.setattr(synthetic, "run_lifecycles", keep)
    spec = SyntheticSpec(seed=seed, nodes=8, days=1, step=60, churn=1, pods_per_node=16, **extra)
    generate(spec)
    return seen["pods"], spec.start_s


@pytest.mark.parametrize("seed", [3, 17])
def test_a_rollout_replaces_a_pod_of_its_own_deployment(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    # each new pod of a rollout deletes the old replica it replaces once it has started: a pod of
    # the same Deployment, created before it. (The autoscaled cluster leaves the DaemonSet pods
    # out of the list the replaced pods are numbered in; kept as they were, the numbers named
    # other pods: of other workloads, some not created yet, deleted before they existed.)
    pods, _ = _pods(monkeypatch, seed, autoscaled=True)
    replacing = [p for p in pods if p.replaces is not None]
    assert replacing  # full churn: rollouts happen
    for pod in replacing:
        assert pod.replaces is not None
        old = pods[pod.replaces]
        assert old.workload_name == pod.workload_name, (pod.name, old.name)
        assert old.created < pod.created, (pod.name, old.name)
    # and no pod is deleted before the scheduler could see it
    assert not [p.name for p in pods if p.deleted is not None and p.deleted <= p.arrive]


@pytest.mark.parametrize("seed", [3, 17])
def test_an_autoscaled_cluster_holds_no_pod_back(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    # a pod created in the window reaches the scheduler a second after its creation (a
    # controller's retry at once: at its creation); the plain cluster holds ~2 % back for
    # minutes (``pending_fraction``), which the data could not tell from a wait for a node
    pods, start = _pods(monkeypatch, seed, autoscaled=True)
    fresh = [p for p in pods if p.created >= start and p.pin < 0]
    assert fresh and all(p.arrive - p.created <= 1 for p in fresh)
    plain, start = _pods(monkeypatch, seed)
    held = [p for p in plain if p.created >= start and p.arrive - p.created >= 120]
    assert held  # the same spec without autoscaled does hold some back


def test_an_autoscaled_cluster_preempts_on_the_nodes_it_has(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a pod that fits on no node there is may evict lower-priority pods (DefaultPreemption, as
    # the replay's scheduler). The generator's preemption once judged the nodes not created yet
    # too: the pod fitted one of those, so it never preempted, where the replay did (seed 17's
    # data parted from its replay by 9 % of node-hours there); seed 10 has three now, none before
    pods, _ = _pods(monkeypatch, 10, autoscaled=True)
    by_uid = {p.uid: p for p in pods}
    made = [(p, victims) for p in pods for _, _, victims, _ in p.preemptions]
    assert made
    for preemptor, victims in made:
        assert victims and all(
            by_uid[v].request is not None
            and preemptor.request is not None
            and by_uid[v].request.priority < preemptor.request.priority
            for v in victims
        )
