"""Write prometheusrule.yaml: analyzer-rules.yaml's groups as a Prometheus Operator PrometheusRule.

    python3 deploy/alerts/render_prometheusrule.py          # rewrite prometheusrule.yaml
    python3 deploy/alerts/render_prometheusrule.py --check  # exit 1 when it is out of date

The plain rules file is the one people edit (promtool checks and tests it); this object is made
from it so the two cannot differ (tests/test_alert_rules.py runs --check).
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "analyzer-rules.yaml"
TARGET = HERE / "prometheusrule.yaml"
HEADER = (
    "# Generated from analyzer-rules.yaml by render_prometheusrule.py: edit that file, then run\n"
    "# python3 deploy/alerts/render_prometheusrule.py (tests/test_alert_rules.py checks it).\n"
)


def render() -> str:
    """The PrometheusRule manifest holding the rules file's groups, unchanged."""
    rules = yaml.safe_load(SOURCE.read_text(encoding="utf-8"))
    manifest = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": "analyzer",
            "labels": {"app.kubernetes.io/name": "analyzer", "role": "alert-rules"},
        },
        "spec": {"groups": rules["groups"]},
    }
    return HEADER + yaml.safe_dump(manifest, sort_keys=False, width=1000, allow_unicode=True)


def main(argv: list[str]) -> int:
    """Write the file, or with ``--check`` compare it and exit 1 when it differs."""
    text = render()
    if "--check" in argv:
        if TARGET.read_text(encoding="utf-8") != text:
            print(f"{TARGET}: out of date; run python3 {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
