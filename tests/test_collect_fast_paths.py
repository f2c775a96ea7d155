"""The collector's cheap paths give what Prometheus' own evaluation gives, and the CLI loads lazily.

- ``kind: samples`` (the bundled pod-usage queries): raw samples evaluated in numpy equal the PromQL
  range query they replace (``equivalent_promql``), evaluated by a real Prometheus;
- ``kind: times`` (first/last seen): the exact first/last raw sample times, hand-known from
  tests/small_cluster.py, and consistent with the 5 m timestamp subquery they replace;
- raw requests cover exactly the samples the grid needs, identical requests are sent once;
- ``analyzer collect`` imports only its own command module; ``--help`` and config files see all.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import small_cluster as sc

from analyzer.core.errors import InputError
from analyzer.prom.client import PromClient, Series
from analyzer.prom.fetch import FetchPlan, run_profile, sample_rule
from analyzer.prom.profile import QuerySpec, load_profile, parse_query_file
from analyzer.prom.samples import equivalent_promql, sample_times, subquery_promql, time_bounds
from analyzer.prom.settings import PromSettings, is_loopback
from analyzer.prom.time_grid import make_grid

T = sc.T0
M = sc.STEP


def test_time_bounds_and_sample_times_by_hand() -> None:
    a = Series({"uid": "u1", "r": "1"}, np.array([100.0, 160.0, 220.0]), np.ones(3))
    b = Series({"uid": "u1", "r": "2"}, np.array([40.0, 280.0]), np.ones(2))
    c = Series({"uid": "u2"}, np.array([10.0, 20.0]), np.ones(2))  # all before ``since``
    bounds = time_bounds([a, b, c], since=50.0)
    assert [s.timestamps.tolist() for s in bounds] == [[100.0, 220.0], [280.0, 280.0]]
    first = sample_times(bounds, ("uid",), "min")
    last = sample_times(bounds, ("uid",), "max")
    assert [(s.labels, s.values.tolist()) for s in first] == [({"uid": "u1"}, [100.0])]
    assert [(s.labels, s.values.tolist()) for s in last] == [({"uid": "u1"}, [280.0])]
    assert last[0].timestamps.tolist() == [280.0]  # window-query shape: time of the value


def test_raw_requests_cover_exactly_what_the_grid_needs() -> None:
    spec = QuerySpec("q", "x[{{span}}]", kind="samples", dedupe=("a",), sum_by=("a",))
    grid = make_grid(0, 86400, 60)
    plan = FetchPlan(grid, chunk_points=720)
    requests = plan.requests_for(spec)
    # Back to the 5 m lookback before the first step, contiguous, no more; 719 steps per request
    # (12 h less one minute): a series scraped every step has at most 720 samples in one (the
    # query budget), its window being the span plus 1 s either side.
    assert requests == [(-300, 120, 0), (120, 43260, 0), (43260, 86400, 0)]
    times = replace(spec, kind="times", by=("a",), combine="min")
    assert plan.requests_for(times) == requests


def test_times_header_needs_by_and_min_or_max(tmp_path: Path) -> None:
    path = tmp_path / "q.promql"
    path.write_text("# first\n# kind: times\n# combine: min\nx[{{span}}]\n")
    with pytest.raises(InputError, match="kind times needs 'by: labels'"):
        parse_query_file(path)
    path.write_text("# first\n# kind: times\n# combine: last\n# by: uid\nx[{{span}}]\n")
    with pytest.raises(InputError, match="kind times needs"):
        parse_query_file(path)
    path.write_text("# first\n# kind: times\n# combine: max\n# by: uid, node\nx[{{span}}]\n")
    assert parse_query_file(path).by == ("uid", "node")


def test_loopback_hosts() -> None:
    assert is_loopback("http://127.0.0.1:9090") and is_loopback("http://localhost:9090/prom")
    assert is_loopback("http://[::1]:9090")
    assert not is_loopback("http://10.0.0.1:9090") and not is_loopback("https://prom.example")


class CountingClient(PromClient):
    """A real client that counts the requests it sends."""

    sent = 0

    def request(self, *args: object, **kwargs: object) -> object:
        type(self).sent += 1
        return super().request(*args, **kwargs)  # type: ignore[arg-type]


@pytest.mark.prometheus
@pytest.mark.parametrize("options", [{"convention": "node-name", "ha": True}, {}])
def test_times_queries_give_exact_sample_times(
    small_prometheus: Callable[..., object], options: dict[str, object]
) -> None:
    server = small_prometheus(**options)
    profile = load_profile()
    names = ("pod_first_seen", "pod_last_seen", "node_first_seen", "node_last_seen")
    specs = [profile[n] for n in names]
    grid = make_grid(sc.T0, sc.END, sc.STEP)
    plan = FetchPlan(grid, chunk_points=20)
    CountingClient.sent = 0
    with CountingClient(PromSettings(server.url)) as client:  # type: ignore[attr-defined]
        results = run_profile(client, specs, plan)
        # first and last seen read the same raw samples: each request goes out once.
        distinct = {(s.kind, s.expr) for s in specs}
        assert CountingClient.sent == len(distinct) * len(plan.requests_for(specs[0]))
        plain = {
            name: run_profile(
                client,
                [
                    QuerySpec(
                        name,
                        subquery_promql(spec.expr, spec.by, spec.combine, "5m"),
                        kind="window",
                        combine=spec.combine,
                    )
                    for spec in [profile[name]]
                ],
                plan,
            )[name]
            for name in names
        }

    def by_key(name: str, key: str) -> dict[str, float]:
        return {s.labels[key]: float(s.values[0]) for s in results[name].series}

    # Alive sample indices k (t = T0 + 60 k) from small_cluster: web 0..60, job 0..40,
    # db-0 old 0..49, db-0 new 51..60; kube_node_info at every k.
    assert by_key("pod_first_seen", "uid") == {
        sc.UID_WEB: T,
        sc.UID_JOB: T,
        sc.UID_DB_OLD: T,
        sc.UID_DB_NEW: T + 51 * M,
    }
    assert by_key("pod_last_seen", "uid") == {
        sc.UID_WEB: T + 60 * M,
        sc.UID_JOB: T + 40 * M,
        sc.UID_DB_OLD: T + 49 * M,
        sc.UID_DB_NEW: T + 60 * M,
    }
    assert set(by_key("node_first_seen", "node").values()) == {T}
    assert set(by_key("node_last_seen", "node").values()) == {sc.END}
    # Against Prometheus' own subquery: last seen identical, first seen at most 5 m earlier.
    for name in names:
        key = "uid" if name.startswith("pod") else "node"
        ours = by_key(name, key)
        pick = np.max if name.endswith("last_seen") else np.min
        theirs = {s.labels[key]: float(pick(s.values)) for s in plain[name].series}
        assert set(ours) == set(theirs), name
        for item, value in ours.items():
            if name.endswith("last_seen"):
                assert value == theirs[item], (name, item)
            else:
                assert theirs[item] - 300 <= value <= theirs[item], (name, item)


@pytest.mark.prometheus
def test_times_count_samples_back_to_one_lookback_before_the_range(
    small_prometheus: Callable[..., object],
) -> None:
    server = small_prometheus()
    grid = make_grid(sc.T0 + 20 * M, sc.END, sc.STEP)  # starts at k = 20
    with PromClient(PromSettings(server.url)) as client:  # type: ignore[attr-defined]
        results = run_profile(client, [load_profile()["pod_first_seen"]], FetchPlan(grid))
    first = {s.labels["uid"]: float(s.values[0]) for s in results["pod_first_seen"].series}
    # The first step (k = 20) sees samples back to k = 15 (5 m lookback); db-0 new starts at 51.
    assert first == {
        sc.UID_WEB: T + 15 * M,
        sc.UID_JOB: T + 15 * M,
        sc.UID_DB_OLD: T + 15 * M,
        sc.UID_DB_NEW: T + 51 * M,
    }


@pytest.mark.prometheus
@pytest.mark.parametrize("options", [{"convention": "node-name", "ha": True}, {}])
def test_bundled_samples_queries_equal_their_promql(
    small_prometheus: Callable[..., object], options: dict[str, object]
) -> None:
    """The bundled ``kind: samples`` queries equal the PromQL range query Prometheus evaluates."""
    server = small_prometheus(**options)
    profile = load_profile()
    samples = [spec for spec in profile.values() if spec.kind == "samples"]
    assert {s.name for s in samples} >= {"pod_cpu_usage", "pod_memory_working_set"}
    grid = make_grid(sc.T0 - 600, sc.END + 600, sc.STEP)  # beyond the data at both ends
    plan = FetchPlan(grid, chunk_points=7)
    references = [
        QuerySpec(
            f"{spec.name}_promql",
            equivalent_promql(spec.expr, sample_rule(spec, grid)),
            kind="range",
        )
        for spec in samples
    ]
    with PromClient(PromSettings(server.url)) as client:  # type: ignore[attr-defined]
        results = run_profile(client, [*samples, *references], plan)
    grid_times = np.arange(grid.start, grid.end + 1, grid.step, dtype=np.float64)
    for spec in samples:
        want = _keyed(results[f"{spec.name}_promql"].series)
        table = results[spec.name].table
        assert table is not None and results[spec.name].series == []
        got = _keyed(table.series(spec.name, grid_times))
        assert results[spec.name].series_count == len(got)
        assert set(got) == set(want) and got, spec.name
        for key, series in want.items():
            np.testing.assert_array_equal(got[key].timestamps, series.timestamps)
            np.testing.assert_allclose(got[key].values, series.values, rtol=1e-12)


def _keyed(series: list[Series]) -> dict[tuple[tuple[str, str], ...], Series]:
    return {tuple(sorted(s.labels.items())): s for s in series}


_PROBE = """
import json, sys
from analyzer.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("analyzer.cli."))))
"""


def _loaded_after(*args: str) -> tuple[list[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, check=True
    )
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]), "\n".join(lines[:-1])


def test_collect_imports_only_its_command_module() -> None:
    loaded, text = _loaded_after("collect", "--help")
    assert "--prometheus" in text
    assert "analyzer.cli.collect" in loaded
    assert "analyzer.cli.trace" not in loaded and "analyzer.cli.report_cmds" not in loaded


def test_help_lists_the_commands_of_every_module() -> None:
    from analyzer.cli import COMMAND_MODULES

    loaded, text = _loaded_after("--help")
    assert set(COMMAND_MODULES) <= set(loaded)
    for command in ("collect", "check", "inspect", "report", "trace", "score", "whatif"):
        assert f"  {command} " in text, command


def test_config_file_checks_options_of_commands_not_yet_imported(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("whatif:\n  no-such-option: 1\n")  # a command not imported yet
    done = subprocess.run(
        [sys.executable, "-m", "analyzer", "--config", str(config), "inspect", "--help"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    assert "unknown option whatif.no-such-option" in done.stderr
