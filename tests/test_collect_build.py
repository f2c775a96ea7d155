"""The collector's table builders and memory-saving paths, without a network where possible.

Each builder has a plain path (results as ``Series``, as tests and custom sources give them) and
the collector's path (rows straight from the joined sample table); both must give the same table.
The column wrappers must not copy (that is their point) and must give the schema's values.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
import small_cluster as sc

from analyzer.collect.usage import MEM_AVAILABLE, MEM_TOTAL, NodeMapper, build_node_usage
from analyzer.core.columns import category_column, codes_dtype, utc_column
from analyzer.prom.client import PromClient, Series
from analyzer.prom.fetch import Cancelled, FetchPlan, QueryResult, run_profile
from analyzer.prom.profile import QuerySpec, load_profile
from analyzer.prom.sample_table import SampleTable
from analyzer.prom.settings import PromSettings
from analyzer.prom.time_grid import make_grid

GRID = make_grid(600, 1200, 60)  # 11 steps


def test_utc_column_wraps_nanoseconds_without_a_copy() -> None:
    ns = np.array([0, 1_500_000_000, 86_400_000_000_000], dtype=np.int64)
    column = utc_column(ns)
    assert str(column.dtype) == "datetime64[ns, UTC]"
    assert list(column) == [
        pd.Timestamp("1970-01-01T00:00:00Z"),
        pd.Timestamp("1970-01-01T00:00:01.5Z"),
        pd.Timestamp("1970-01-02T00:00:00Z"),
    ]
    assert np.shares_memory(column.asi8, ns)


@pytest.mark.parametrize(("count", "dtype"), [(100, np.int8), (1000, np.int16), (40_000, np.int32)])
def test_categorical_codes_in_pandas_own_width_are_wrapped(count: int, dtype: type) -> None:
    # pandas keeps codes in the narrowest signed type that holds every category and -1;
    # codes allocated in that type become the column as they are.
    categories = pd.Index([f"uid-{i}" for i in range(count)], dtype="str")
    assert codes_dtype(categories) == np.dtype(dtype)
    codes = np.array([count - 1, 0, 5], dtype=codes_dtype(categories))
    column = category_column(codes, categories)
    assert list(column) == [f"uid-{count - 1}", "uid-0", "uid-5"]
    assert np.shares_memory(column.codes, codes)


def _spec(name: str) -> QuerySpec:
    return QuerySpec(
        name, "x[{{span}}]", kind="samples", dedupe=("instance",), sum_by=("instance",)
    )


def _series(instance: str, values: list[float], start_step: int = 0) -> Series:
    steps = np.arange(start_step, start_step + len(values))
    return Series({"instance": instance}, GRID.start + steps * 60.0, np.array(values))


def _memory_results(as_table: bool) -> dict[str, QueryResult]:
    # node-a is scraped under two targets (its name and its IP) that disagree; node-b has
    # MemAvailable only from step 2 on, so steps 0-1 have no used memory.
    total = [
        _series("node-a", [10.0, 10.0, 10.0]),
        _series("10.0.0.1:9100", [10.0, 10.0, 10.0]),
        _series("node-b", [20.0, 20.0, 20.0, 20.0]),
    ]
    available = [
        _series("node-a", [4.0, 7.0, 9.0]),  # used 6, 3, 1
        _series("10.0.0.1:9100", [5.0, 5.0, 5.0]),  # used 5, 5, 5
        _series("node-b", [15.0, 12.0], start_step=2),  # used 5, 8 at steps 2, 3
    ]
    results = {
        "node_cpu_busy": QueryResult(QuerySpec("node_cpu_busy", "x"), "x"),
        MEM_TOTAL: QueryResult(_spec(MEM_TOTAL), "x", series=total),
        MEM_AVAILABLE: QueryResult(_spec(MEM_AVAILABLE), "x", series=available),
    }
    if as_table:
        table = SampleTable.from_series(
            {MEM_TOTAL: total, MEM_AVAILABLE: available}, GRID.start, GRID.step
        )
        for name in (MEM_TOTAL, MEM_AVAILABLE):
            results[name].series, results[name].table = [], table
    return results


@pytest.mark.parametrize("as_table", [False, True])
def test_node_memory_is_total_minus_available_and_the_larger_of_two_targets(
    as_table: bool,
) -> None:
    mapper = NodeMapper({"node-a", "node-b"}, {"10.0.0.1": "node-a"}, {})
    usage = build_node_usage(_memory_results(as_table), mapper, GRID)
    got = {
        (str(n), int((t.value // 10**9 - GRID.start) // 60)): m
        for n, t, m in zip(usage["node"], usage["timestamp"], usage["memory"], strict=True)
    }
    assert got == {
        ("node-a", 0): 6.0,
        ("node-a", 1): 5.0,
        ("node-a", 2): 5.0,
        ("node-b", 2): 5.0,
        ("node-b", 3): 8.0,
    }
    assert usage["cpu"].isna().all()
    assert str(usage["timestamp"].dtype) == "datetime64[ns, UTC]"
    assert mapper.used == {"node-name": 2, "host-ip": 1}  # one lookup per target, either path
    assert not mapper.unmapped


@pytest.mark.parametrize("as_table", [False, True])
def test_node_usage_memory_follows_the_data_not_the_range(as_table: bool) -> None:
    # The same four steps of data in a 9,999-day range (14.4 M steps): the same rows, and the
    # builder allocates for the steps with data. Before, it filled two nodes × 14.4 M-step
    # matrices (≈ 0.5 GB; numpy reports its buffers to tracemalloc).
    import tracemalloc

    mapper = NodeMapper({"node-a", "node-b"}, {"10.0.0.1": "node-a"}, {})
    small = build_node_usage(_memory_results(as_table), mapper, GRID)
    huge_grid = make_grid(GRID.start, GRID.start + 9999 * 86400, GRID.step)
    results = _memory_results(as_table)
    tracemalloc.start()
    try:
        huge = build_node_usage(results, mapper, huge_grid)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    pd.testing.assert_frame_equal(huge, small)
    assert peak < 20 * 2**20, f"{peak / 2**20:.0f} MiB for 4 steps of data"


@pytest.mark.prometheus
def test_run_profile_stops_when_cancelled(small_prometheus: Callable[..., object]) -> None:
    server = small_prometheus()
    spec = load_profile()["node_cpu_busy"]  # a range query: one request per chunk of 5 steps
    plan = FetchPlan(make_grid(sc.T0, sc.END, sc.STEP), chunk_points=5, parallelism=1)
    assert len(plan.requests_for(spec)) > 3  # so that most requests are never sent
    cancel = threading.Event()
    sent: list[int] = []

    class Client(PromClient):
        def query_range(self, *args: object, **kwargs: object) -> list[Series]:
            sent.append(1)
            cancel.set()
            return super().query_range(*args, **kwargs)  # type: ignore[arg-type]

    with Client(PromSettings(server.url)) as client, pytest.raises(Cancelled):  # type: ignore[attr-defined]
        run_profile(client, [spec], plan, cancel=cancel)
    # one worker, a queue of parallelism + 2: at most those three were sent, not the rest
    assert 1 <= len(sent) <= 3 < len(plan.requests_for(spec))


def test_heap_limits_route_arrow_through_malloc() -> None:
    import pyarrow as pa

    from analyzer.core.memory import limit_heap_growth

    if not limit_heap_growth():
        pytest.skip("not glibc: the heap limits are skipped")
    assert pa.default_memory_pool().backend_name == "system"


def test_gc_paused_restores_the_collector_state() -> None:
    import gc

    from analyzer.core.memory import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("a failed collect")
    assert gc.isenabled()  # re-enabled on the way out of an error too
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()
