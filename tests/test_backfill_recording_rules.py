"""``history backfill`` states what it read: the usage step, and a kubernetes-mixin cross-check.

Against real Prometheus servers (promtool-backfilled, tests/conftest.py): one holding a small
synthetic cluster, one holding the same cluster plus the mixin's recording rules
``namespace_cpu:kube_pod_container_resource_requests:sum`` and
``namespace_memory:kube_pod_container_resource_requests:sum`` written as plain series. The rules'
values are taken from the first server with the mixin's own expressions, per namespace, so a
server whose rules agree with its raw series must print "agree" with the two totals equal; a
server without the rules prints no rule line at all (one query each, nothing found).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import requests
from click.testing import CliRunner, Result

from analyzer.cli import main
from analyzer.prom.recording_rules import CPU, GIB, MEMORY, RuleCheck
from analyzer.sources import SyntheticSpec, generate, write_openmetrics

pytestmark = pytest.mark.prometheus

DAY = "2026-11-01"  # the generator's first day (DEFAULT_START)
END = datetime(2026, 11, 2, tzinfo=UTC).timestamp()  # the midnight closing DAY


def _backfill(url: str, out: Path, *extra: str) -> Result:
    args = ["history", "backfill", "--prometheus", url, "--since", "1d", "--until", DAY]
    return CliRunner().invoke(main, [*args, "--out", str(out), *extra], catch_exceptions=False)


@pytest.fixture(scope="module")
def servers(
    prometheus_from_openmetrics: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, str]:
    """(URL without the rule, URL with the rule recorded from the raw series)."""
    folder = tmp_path_factory.mktemp("rules")
    plain = folder / "cluster.om"
    write_openmetrics(generate(SyntheticSpec(seed=11, nodes=3, days=1, step=300)), plain)
    bare = str(prometheus_from_openmetrics(plain, keep=True).url)  # read again below
    lines = []
    for rule in (CPU, MEMORY):
        reply = requests.get(
            f"{bare}/api/v1/query",
            params={"query": f"sum by (namespace) ({rule.raw})", "time": str(END)},
            timeout=30,
        ).json()
        rows = reply["data"]["result"]
        assert rows, f"the raw {rule.resource} requests expression must have data at the day's end"
        lines.append(f"# TYPE {rule.name} gauge")
        for row in rows:  # two samples at and before the end: within Prometheus' 5-min look-back
            labels = f'namespace="{row["metric"]["namespace"]}"'
            lines += [
                f"{rule.name}{{{labels}}} {row['value'][1]} {END - 60 * k:.0f}" for k in (1, 0)
            ]
    text = plain.read_text()
    plain.unlink()
    assert text.rstrip().endswith("# EOF")
    ruled = folder / "cluster-rules.om"
    ruled.write_text(text.rstrip()[: -len("# EOF")] + "\n".join(lines) + "\n# EOF\n")
    return bare, str(prometheus_from_openmetrics(ruled).url)


def test_rules_present_agree_with_the_raw_series(servers: tuple[str, str], tmp_path: Path) -> None:
    run = _backfill(servers[1], tmp_path / "out")
    assert run.exit_code == 0, run.output
    rules = [x for x in run.output.splitlines() if x.startswith("recording rule")]
    assert [line.split()[2] for line in rules] == [CPU.name + ":", MEMORY.name + ":"]
    for line, unit in zip(rules, ("cores", "GiB"), strict=True):
        rule, raw = (float(v) for v in re.findall(rf"([0-9.]+) {unit}", line))
        assert rule > 0  # pods request cpu and memory at midnight: zero would be no data read
        assert rule == pytest.approx(raw, rel=1e-6)
        assert line.endswith(": agree")
    # memory is shown in GiB: the synthetic pods request between MiBs and GiBs each, so the
    # cluster total of a few nodes is a few to a few hundred GiB, not bytes
    memory = float(re.findall(r"([0-9.]+) GiB", rules[1])[0])
    assert 0.1 < memory < 1000


def test_no_rule_no_line_and_the_step_is_stated(servers: tuple[str, str], tmp_path: Path) -> None:
    run = _backfill(servers[0], tmp_path / "out")
    assert run.exit_code == 0, run.output
    assert "recording rule" not in run.output
    assert "read: usage at a 5m step (the backfill default for any range (5m))" in run.output
    summary = json.loads((tmp_path / "out/history/summary" / f"{DAY}.json").read_text())
    assert summary["step_seconds"] == 300  # the day's record says the step it was read at


def test_a_given_step_is_stated_and_recorded(servers: tuple[str, str], tmp_path: Path) -> None:
    run = _backfill(servers[0], tmp_path / "out", "--step", "10m")
    assert run.exit_code == 0, run.output
    assert "read: usage at a 10m step (--step)" in run.output
    summary = json.loads((tmp_path / "out/history/summary" / f"{DAY}.json").read_text())
    assert summary["step_seconds"] == 600


def test_a_rule_off_by_a_namespace_differs() -> None:
    """A rule missing one namespace's 0.5 cores (or 1 GiB) does not "agree"; rounding does."""
    assert not RuleCheck(at=END, rule_total=10.0, raw_total=10.5).agrees
    assert not RuleCheck(at=END, rule_total=10.0, raw_total=None).agrees
    assert RuleCheck(at=END, rule_total=10.0, raw_total=10.0 + 1e-12).agrees
    assert "DIFFER" in RuleCheck(at=END, rule_total=10.0, raw_total=10.5).line()
    memory = RuleCheck(at=END, rule_total=10 * GIB, raw_total=11 * GIB, rule=MEMORY)
    assert not memory.agrees
    assert "10.000 GiB (rule) vs 11.000 GiB (raw series): DIFFER" in memory.line()
