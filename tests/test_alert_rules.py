"""deploy/alerts: the rules pass ``promtool check rules`` and their unit tests
(``promtool test rules``, which fire and do not fire every alert), and the PrometheusRule object
holds exactly the plain rules file's groups."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from conftest import PROMTOOL, require_prometheus

ALERTS = Path(__file__).resolve().parents[1] / "deploy" / "alerts"
RULES = ALERTS / "analyzer-rules.yaml"
ALERT_NAMES = {
    "AnalyzerPoolCapacityWithin30Days",
    "AnalyzerNightlyFailed",
    "AnalyzerNightlyStale",
    "AnalyzerNightlyMetricsMissing",
    "AnalyzerCoverageDropped",
}


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    require_prometheus()
    return subprocess.run(
        [PROMTOOL, *args], capture_output=True, text=True, check=False, cwd=ALERTS
    )


def test_promtool_check_rules() -> None:
    proc = _promtool("check", "rules", str(RULES))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {len(ALERT_NAMES)} rules found" in proc.stdout


def test_promtool_unit_tests_pass() -> None:
    tests = sorted(str(p) for p in (ALERTS / "tests").glob("*.yaml"))
    proc = _promtool("test", "rules", *tests)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("SUCCESS") == len(tests)


def test_every_alert_is_tested_firing_and_quiet() -> None:
    firing: set[str] = set()
    quiet: set[str] = set()
    for path in (ALERTS / "tests").glob("*.yaml"):
        for case in yaml.safe_load(path.read_text())["tests"]:
            for check in case.get("alert_rule_test", []):
                (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
    assert firing == ALERT_NAMES
    assert quiet == ALERT_NAMES


def test_rule_names_are_those_of_the_docs() -> None:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    names = {r["alert"] for g in groups for r in g["rules"]}
    assert names == ALERT_NAMES
    doc = (ALERTS.parents[1] / "docs" / "metrics.md").read_text()
    assert all(f"`{n}`" in doc for n in names)


def test_prometheusrule_is_the_rules_file() -> None:
    proc = subprocess.run(
        [sys.executable, str(ALERTS / "render_prometheusrule.py"), "--check"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    plain = yaml.safe_load(RULES.read_text())
    operator = yaml.safe_load((ALERTS / "prometheusrule.yaml").read_text())
    assert operator["kind"] == "PrometheusRule"
    assert operator["apiVersion"] == "monitoring.coreos.com/v1"
    assert operator["spec"]["groups"] == plain["groups"]
