"""``headroom:`` in the config file, through ``analyzer report nightly``: declared shapes reach
report.json and the metrics textfile; every mistake is one line naming the field, exit 2, and no
report folder (docs/reliability.md, section "headroom")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result
from reliability_doc import documented_exit

from analyzer.core.snapshot import write_snapshot
from analyzer.core.structured import load_json
from analyzer.history.headroom import read_headroom
from analyzer.sources import SyntheticSpec, generate

DAY = "2026-11-01"


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small generated day (6 nodes, a tainted pool) written to disk."""
    spec = SyntheticSpec(seed=4, nodes=6, days=1.0, step=900, dedicated_pools=("general",))
    path = tmp_path_factory.mktemp("snap") / "snap"
    write_snapshot(generate(spec).snapshot, path, "test")
    return path


def _nightly(snapshot: Path, tmp_path: Path, config: Any, *extra: str) -> Result:
    from analyzer.cli import main

    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    args = ["--config", str(cfg), "report", "nightly", str(snapshot), "--out",
            str(tmp_path / "out"), "--date", DAY, *extra]  # fmt: skip
    return CliRunner().invoke(main, args)


def test_declared_shapes_reach_report_json_and_metrics(snapshot: Path, tmp_path: Path) -> None:
    """Two declared shapes: both in report.json's table in config order, and the textfile has
    one copies sample per shape with the same value."""
    config = {"headroom": [{"name": "small", "cpu": "250m", "memory": "256Mi"},
                           {"name": "big", "cpu": "3", "memory": "8Gi"}]}  # fmt: skip
    prom = tmp_path / "headroom.prom"
    result = _nightly(snapshot, tmp_path, config, "--metrics-textfile", str(prom))
    assert result.exit_code in (0, 3), result.output
    report = load_json(tmp_path / "out" / DAY / "report.json")
    rows = report["tables"]["shape_headroom"]
    assert [r["shape"] for r in rows] == ["small", "big"]
    assert all(r["source"] == "declared" for r in rows)
    # a quarter-core shape fits at least as often as a three-core one on the same cluster
    assert rows[0]["copies_now"] >= rows[1]["copies_now"] >= 0
    # the day's rows are the history's daily series too, read back through the checked reader
    stored = read_headroom(tmp_path / "out" / "history")
    assert stored["shape"].tolist() == ["big", "small"]  # sorted by shape within the day
    by_shape = stored.set_index("shape")
    for row in rows:
        assert by_shape.loc[row["shape"], "copies_now"] == row["copies_now"]
        assert by_shape.loc[row["shape"], "copies_min"] == row["copies_min"]
        assert str(by_shape.loc[row["shape"], "day"].date()) == DAY
    text = prom.read_text()
    for row in rows:
        line = f'analyzer_nightly_headroom_copies{{shape="{row["shape"]}",source="declared"}}'
        assert f"{line} {row['copies_now']}\n" in text


CASES = [
    ("headroom-not-list", documented_exit("headroom-not-list"), {"headroom": {"name": "x"}}, "--config headroom: expected a list"),
    ("headroom-no-name", documented_exit("headroom-no-name"), {"headroom": [{"cpu": "1"}]}, "--config headroom[0].name: every shape"),
    ("headroom-duplicate-name", documented_exit("headroom-duplicate-name"), {"headroom": [{"name": "a", "cpu": "1"}, {"name": "a", "cpu": "2"}]},
     "--config headroom[1].name: 'a' is declared twice"),
    ("headroom-unknown-key", documented_exit("headroom-unknown-key"), {"headroom": [{"name": "a", "cpus": "1"}]},
     "--config headroom[0].cpus: unknown key"),
    ("headroom-pod-and-short", documented_exit("headroom-pod-and-short"), {"headroom": [{"name": "a", "cpu": "1", "pod": {"spec": {}}}]},
     "--config headroom[0]: give either pod or cpu"),
    ("headroom-bad-quantity", documented_exit("headroom-bad-quantity"), {"headroom": [{"name": "a", "cpu": "one"}]},
     "--config headroom[0].cpu"),
    ("headroom-requests-nothing", documented_exit("headroom-requests-nothing"), {"headroom": [{"name": "a", "cpu": "0"}]},
     "--config headroom[0]: the shape requests nothing"),
    ("headroom-too-many", documented_exit("headroom-too-many"), {"headroom": [{"name": f"s{i}", "cpu": "1"} for i in range(21)]},
     "--config headroom: 21 shapes; at most 20"),
    ("headroom-bad-pod", documented_exit("headroom-bad-pod"), {"headroom": [{"name": "a", "pod": {"spec": {"containers": "web"}}}]},
     "--config headroom[0].pod.spec.containers"),
]  # fmt: skip


@pytest.mark.parametrize(("fault", "code", "config", "text"), CASES, ids=[c[0] for c in CASES])
def test_config_mistakes_are_one_line(
    snapshot: Path, tmp_path: Path, fault: str, code: int, config: Any, text: str
) -> None:
    result = _nightly(snapshot, tmp_path, config)
    assert result.exit_code == code == 2, (fault, result.output)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr  # one line, no traceback
    assert lines[0].startswith("analyzer: error: ") and text in lines[0], lines[0]
    assert not (tmp_path / "out").exists()
