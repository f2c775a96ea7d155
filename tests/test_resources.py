"""The effective pod request rule (component-helpers PodRequests) and kube-scheduler's non-zero rule."""

from __future__ import annotations

from analyzer.core.resources import (
    DEFAULT_MEMORY_REQUEST,
    Container,
    PodSpecResources,
    pod_limits,
    pod_requests,
    qos_class,
)

MI = 2**20


def app(name: str = "app", **requests: int) -> Container:
    return Container(name=name, requests=dict(requests))


def test_containers_are_summed_and_overhead_added() -> None:
    pod = PodSpecResources(
        containers=(app(cpu=100, memory=64 * MI), app("b", cpu=200)),
        overhead={"cpu": 250, "memory": 120 * MI},
    )
    assert pod_requests(pod) == {"cpu": 550, "memory": 184 * MI}


def test_largest_init_container_dominates_when_bigger_than_the_sum() -> None:
    pod = PodSpecResources(
        containers=(app(cpu=300),),
        init_containers=(Container("init", requests={"cpu": 1000}),),
    )
    assert pod_requests(pod) == {"cpu": 1000}


def test_sidecar_runs_beside_app_and_later_init_phases() -> None:
    # app 1000m; sidecar 500m declared before a regular init of 2000m:
    # running = 1000 + 500 = 1500; init phase = 2000 + 500 (sidecar already running) = 2500
    pod = PodSpecResources(
        containers=(app(cpu=1000),),
        init_containers=(
            Container("sidecar", requests={"cpu": 500}, sidecar=True),
            Container("init", requests={"cpu": 2000}),
        ),
    )
    assert pod_requests(pod) == {"cpu": 2500}


def test_sidecar_declared_after_a_regular_init_does_not_add_to_it() -> None:
    # regular init 2000m runs alone (phase 2000); running = 1000 + 500 = 1500 -> 2000
    pod = PodSpecResources(
        containers=(app(cpu=1000),),
        init_containers=(
            Container("init", requests={"cpu": 2000}),
            Container("sidecar", requests={"cpu": 500}, sidecar=True),
        ),
    )
    assert pod_requests(pod) == {"cpu": 2000}


def test_non_zero_defaults_apply_per_container_without_the_key() -> None:
    pod = PodSpecResources(
        containers=(app(cpu=0), app("b"), app("c", memory=10 * MI)),
        init_containers=(Container("init"),),
    )
    # cpu: 0 (explicit) + 100 + 100 = 200; init phase 100 -> 200
    # memory: 200Mi + 200Mi + 10Mi = 410Mi; init 200Mi -> 410Mi
    assert pod_requests(pod, non_zero=True) == {"cpu": 200, "memory": 410 * MI}
    assert pod_requests(pod) == {"cpu": 0, "memory": 10 * MI}


def test_pod_without_containers_adds_nothing_even_non_zero() -> None:
    assert pod_requests(PodSpecResources(), non_zero=True) == {"cpu": 0, "memory": 0}


def test_non_zero_init_container_default_can_dominate() -> None:
    pod = PodSpecResources(containers=(app(cpu=50, memory=MI),), init_containers=(Container("i"),))
    assert pod_requests(pod, non_zero=True) == {"cpu": 100, "memory": DEFAULT_MEMORY_REQUEST}


def test_limits_add_overhead_only_where_a_limit_is_set() -> None:
    pod = PodSpecResources(
        containers=(Container("a", limits={"cpu": 1000}),),
        overhead={"cpu": 250, "memory": 120 * MI},
    )
    assert pod_limits(pod) == {"cpu": 1250}


def test_qos_classes() -> None:
    guaranteed = Container(
        "a", requests={"cpu": 1000, "memory": MI}, limits={"cpu": 1000, "memory": MI}
    )
    limits_only = Container("b", limits={"cpu": 1000, "memory": MI})  # requests default to limits
    burstable = Container("c", requests={"cpu": 100})
    empty = Container("d")
    assert qos_class([guaranteed, limits_only]) == "Guaranteed"
    assert qos_class([guaranteed, burstable]) == "Burstable"
    assert qos_class([empty]) == "BestEffort"
    assert qos_class([guaranteed, empty]) == "Burstable"
