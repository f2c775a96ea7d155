"""Every query of the bundled profile runs against the real Prometheus and returns what it says."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import small_cluster as sc

from analyzer.collect.pods import cadvisor_containers
from analyzer.collect.usage import node_memory_series
from analyzer.prom.client import PromClient
from analyzer.prom.fetch import FetchPlan, run_profile, sample_rule
from analyzer.prom.profile import QuerySpec, load_profile
from analyzer.prom.samples import equivalent_promql
from analyzer.prom.settings import PromSettings
from analyzer.prom.time_grid import make_grid

pytestmark = pytest.mark.prometheus

# Metrics the small fixture does not export (all optional, opt-in or absent in KSM defaults).
EMPTY_IN_FIXTURE = {
    "node_labels",
    "node_annotations",
    "pod_labels",
    "replicaset_owner",
    "job_owner",
    "pod_deletion_time",
    "pod_init_container_info",
    "pod_init_container_limits",
    # Scheduling constraints: the small fixture has none; test_collect_synthetic checks their data.
    "node_taints",
    "pod_tolerations",
    "pod_nodeselectors",
    # The control plane's kubernetes_build_info: the small fixture scrapes no apiserver or
    # scheduler; test_cluster_version reads it from a real Prometheus that has it.
    "control_plane_version",
    # Node state in time: the small fixture has no taints, cordons or Ready conditions;
    # test_node_state_prometheus reads them from a real Prometheus that has them.
    "node_taint_intervals",
    "node_unschedulable",
    "node_ready",
}


def test_every_query_runs_and_required_ones_return_data(
    small_prometheus: Callable[..., object],
) -> None:
    server = small_prometheus(convention="node-name")
    profile = load_profile()
    grid = make_grid(sc.T0, sc.END, sc.STEP)
    with PromClient(PromSettings(server.url)) as client:  # type: ignore[attr-defined]
        results = run_profile(client, list(profile.values()), FetchPlan(grid, chunk_points=30))
    assert set(results) == set(profile)
    assert {n: r.error for n, r in results.items() if r.error is not None} == {}
    empty = {name for name, result in results.items() if result.series_count == 0}
    assert empty == EMPTY_IN_FIXTURE  # every query the fixture can answer did, the others not
    # Spot checks of what the headers promise.
    busy = {s.labels["instance"]: s for s in results["node_cpu_busy"].series}
    assert set(busy) == {"node-a", "node-b"}
    assert busy["node-b"].values[-1] == pytest.approx(1.6)  # cores, 2 cpus × 0.8 busy
    first_seen = {s.labels["uid"]: s.values.min() for s in results["pod_first_seen"].series}
    last_seen = {s.labels["uid"]: s.values.max() for s in results["pod_last_seen"].series}
    # Sample times: the last exactly (T0+2940), the first at most one lookback (5m) late.
    assert last_seen[sc.UID_DB_OLD] == sc.T0 + 49 * sc.STEP
    assert sc.T0 + 51 * sc.STEP <= first_seen[sc.UID_DB_NEW] <= sc.T0 + 51 * sc.STEP + 300
    table = results["pod_cpu_usage"].table
    assert table is not None  # kind: samples results live in the shared table
    times = np.arange(grid.start, grid.end + 1, grid.step, dtype=np.float64)
    pods = {s.labels["pod"] for s in table.series("pod_cpu_usage", times)}
    assert pods == {
        "web-7d4b9c8f5-x2x9q",
        "job-x-8kz2p",
        "db-0",
    }  # no pod cgroup, no pause, no root


@pytest.mark.parametrize(
    "options", [{"convention": "node-name", "ha": True}, {"convention": "host-ip"}]
)
def test_samples_kind_equals_the_promql_range_query(
    small_prometheus: Callable[..., object], options: dict[str, object]
) -> None:
    """``kind: samples`` (raw samples evaluated in numpy) gives exactly what Prometheus evaluates:
    every samples query of the bundled profile, and node memory in use (total − available)."""
    server = small_prometheus(**options)
    grid = make_grid(sc.T0 - 600, sc.END + 600, sc.STEP)  # beyond the data at both ends
    specs = [spec for spec in load_profile().values() if spec.kind == "samples"]
    assert {"pod_cpu_usage", "node_memory_total", "node_memory_available"} <= {
        spec.name for spec in specs
    }
    references = [
        QuerySpec(
            name=f"{spec.name}_promql",
            expr=equivalent_promql(spec.expr, sample_rule(spec, grid)),
            kind="range",
        )
        for spec in specs
    ]
    memory_used = QuerySpec(  # the single range query node memory used to be
        name="node_memory_used_promql",
        expr="max by (instance, node) (node_memory_MemTotal_bytes)"
        " - max by (instance, node) (node_memory_MemAvailable_bytes)",
        kind="range",
    )
    references.append(memory_used)
    containers = QuerySpec(  # the window query the cAdvisor container list used to be
        name="pod_cadvisor_containers",
        expr="max by (namespace, pod, container) (last_over_time(container_memory_working_set_bytes"
        '{container!="", container!="POD", image!=""}[{{span}}]))',
        kind="window",
    )
    with PromClient(PromSettings(server.url)) as client:  # type: ignore[attr-defined]
        plan = FetchPlan(grid, chunk_points=7)
        results = run_profile(client, [*specs, *references], plan)
        with_window = run_profile(client, [*specs, containers], plan)
    times = np.arange(grid.start, grid.end + 1, grid.step, dtype=np.float64)
    for spec in specs:
        reference = {
            tuple(sorted(s.labels.items())): s for s in results[f"{spec.name}_promql"].series
        }
        table = results[spec.name].table
        assert table is not None
        got = {tuple(sorted(s.labels.items())): s for s in table.series(spec.name, times)}
        assert set(got) == set(reference) and got, spec.name
        for key, want in reference.items():
            np.testing.assert_array_equal(got[key].timestamps, want.timestamps)
            np.testing.assert_allclose(got[key].values, want.values, rtol=1e-12)
    # Queries grouped by other labels get their own table: pod rows never meet node rows.
    pod_table, node_table = results["pod_cpu_usage"].table, results["node_memory_total"].table
    assert pod_table is not None and node_table is not None and pod_table is not node_table
    assert all(set(g) == {"namespace", "pod"} for g in pod_table.groups)
    assert all("instance" in g and "pod" not in g for g in node_table.groups)
    # total − available at the steps where both exist is what the old range query returned.
    want = {tuple(sorted(s.labels.items())): s for s in results[memory_used.name].series}
    got = {tuple(sorted(s.labels.items())): s for s in node_memory_series(results, grid)}
    assert set(got) == set(want) and got
    for key, series in want.items():
        np.testing.assert_array_equal(got[key].timestamps, series.timestamps)
        np.testing.assert_array_equal(got[key].values, series.values)  # bytes: exact
    # The app containers of the raw working-set series are the old window query's containers
    # (over a range wider than the data, both see every series).
    want_containers = {tuple(sorted(x.items())) for x in cadvisor_containers(with_window)}
    got_containers = {tuple(sorted(x.items())) for x in cadvisor_containers(results)}
    assert got_containers == want_containers and len(got_containers) >= 3
