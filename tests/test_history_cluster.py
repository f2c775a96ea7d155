"""A history knows its cluster (issue 31 item 4, campaign row 24), and a nightly OUT may hold the
monthly review analyzer wrote inside it (item 6, row 54).

Snapshots made by the generator get a Prometheus-like ``meta.json`` source, so that two runs of
"one cluster" (the same server URL written two ways, with different nodes: autoscaling churn)
and of "another cluster" (another server) can be told apart through the real commands.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result
from monthly_history import PoolTruth, WorkloadTruth, write_history
from reliability_doc import documented_exit

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot
from analyzer.history.identity import CLUSTER_KEY, IDENTITY_FILE, normalise_source
from analyzer.sources import SyntheticSpec, generate


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _snapshot(path: Path, source: str, seed: int, nodes: int) -> Path:
    snapshot = generate(SyntheticSpec(seed=seed, nodes=nodes, days=1, step=300)).snapshot
    folder = write_snapshot(snapshot, path)
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "source": source}))
    return folder


@pytest.fixture(scope="module")
def snaps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("snaps")
    return {
        # one cluster, reached as written by two users, on two days of churn (3 then 4 nodes)
        "a1": _snapshot(base / "a1", "https://prom.example:9090/", seed=1, nodes=3),
        "a2": _snapshot(base / "a2", "https://PROM.example:9090", seed=2, nodes=4),
        "b": _snapshot(base / "b", "http://other.example:9090", seed=3, nodes=3),
    }


def _nightly(snapshot: Path, out: Path, *extra: str) -> Result:
    return _run("report", "nightly", str(snapshot), "--out", str(out), *extra)


def _stamps(out: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(out)): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in sorted((out / "history").rglob("*.*"))
    }


def test_the_source_is_normalised_without_credentials() -> None:
    assert (
        normalise_source("HTTPS://user:pw@Prom.Example:443/prom/?x=1#f")
        == "https://prom.example/prom"
    )
    assert normalise_source("http://127.0.0.1:9090/") == "http://127.0.0.1:9090"
    assert normalise_source("synthetic:seed=1,nodes=3,days=1,step=300s") == "synthetic"


def test_one_cluster_with_churning_nodes_is_one_history(
    snaps: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first = _nightly(snaps["a1"], out)
    assert first.exit_code in (0, 3), first.output
    second = _nightly(snaps["a2"], out)
    assert second.exit_code in (0, 3), second.output
    identity = json.loads((out / "history" / IDENTITY_FILE).read_text())
    assert identity["cluster"] == "https://prom.example:9090" and identity["explicit"] is False
    day = next((out / "history" / "pools").glob("*.parquet"))
    assert pq.read_schema(day).metadata[CLUSTER_KEY] == b"https://prom.example:9090"
    summary = json.loads(next((out / "history" / "summary").glob("*.json")).read_text())
    assert summary["cluster"] == "https://prom.example:9090"


def test_another_cluster_is_refused_naming_both_force_or_not(
    snaps: dict[str, Path], tmp_path: Path
) -> None:
    """Row 24: backfilling or reporting cluster B into A's OUT said "skipped (already present)",
    and with --force replaced A's days silently."""
    out = tmp_path / "out"
    assert _nightly(snaps["a1"], out).exit_code in (0, 3)
    before = _stamps(out)
    run = _nightly(snaps["b"], out)
    assert run.exit_code == documented_exit("history-other-cluster"), run.output
    line = run.stderr.strip()
    assert "'https://prom.example:9090'" in line and "'http://other.example:9090'" in line
    assert "\n" not in line
    # the backfill refuses before any request (the URL below answers nothing), --force or not
    for extra in ((), ("--force",)):
        run = _run("history", "backfill", "--prometheus", "http://other.example:9090",
                   "--since", "1d", "--until", "2026-11-01", "--out", str(out), *extra)  # fmt: skip
        assert run.exit_code == documented_exit("history-other-cluster"), run.output
        assert "skipped" not in run.output and "other.example" in run.stderr
    assert _stamps(out) == before  # not one file of A touched


def test_naming_the_history_s_cluster_accepts_a_new_url(
    snaps: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert _nightly(snaps["a1"], out, "--cluster", "prod-eu").exit_code in (0, 3)
    # the same server, not named: accepted (the source the explicit name recorded)
    assert _nightly(snaps["a2"], out).exit_code in (0, 3)
    # another server named as the history's cluster: the user says it is the same cluster
    assert _nightly(snaps["b"], out, "--cluster", "prod-eu").exit_code in (0, 3)
    run = _nightly(snaps["a1"], out, "--cluster", "prod-us")
    assert run.exit_code == 2 and "'prod-eu', not 'prod-us'" in run.stderr
    run = _nightly(snaps["a1"], out, "--cluster", "bad\nname")
    assert run.exit_code == 2 and "--cluster: 'bad\\\\nname' is not a cluster name" in run.stderr


def test_an_old_history_adopts_the_first_identity_and_says_so_once(
    snaps: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    write_history(out / "history", date(2026, 10, 1), 3, [PoolTruth("general")])
    first = _nightly(snaps["a1"], out)
    assert "recorded no cluster; it is now the history of cluster 'https://prom.example:9090'" in (
        first.stdout
    )
    second = _nightly(snaps["a2"], out)
    assert "recorded no cluster" not in second.output


def _month(root: Path) -> None:
    write_history(root, date(2026, 10, 1), 31, [PoolTruth("general")],
                  [WorkloadTruth("api", "general")])  # fmt: skip


def test_the_review_shows_the_cluster_and_refuses_a_day_of_another(tmp_path: Path) -> None:
    root = tmp_path / "out" / "history"
    root.mkdir(parents=True)
    (root / IDENTITY_FILE).write_text(json.dumps({"cluster": "prod-eu", "source": None}))
    _month(root)
    run = _run("report", "monthly", str(root), "--out", str(tmp_path / "m"))
    assert run.exit_code == 0, run.output
    assert json.loads((tmp_path / "m" / "report.json").read_text())["history_cluster"] == "prod-eu"
    assert "cluster prod-eu" in (tmp_path / "m" / "report.html").read_text()
    path = root / "pools" / "2026-10-15.parquet"
    table = pq.read_table(path)
    metadata = {**(table.schema.metadata or {}), CLUSTER_KEY: b"prod-us"}
    pq.write_table(table.replace_schema_metadata(metadata), path)
    run = _run("report", "monthly", str(root), "--out", str(tmp_path / "m2"))
    assert run.exit_code == documented_exit("history-other-cluster"), run.output
    assert "is of cluster 'prod-us', but the history is of cluster 'prod-eu'" in run.stderr
    assert not (tmp_path / "m2").exists()


def test_a_monthly_review_inside_the_nightly_out_keeps_it_usable(
    snaps: dict[str, Path], tmp_path: Path
) -> None:
    """Row 54: after ``report monthly OUT --out OUT/monthly`` every later nightly and backfill into
    OUT exited 2 "not a report folder analyzer wrote (it holds monthly)"."""
    out = tmp_path / "out"
    _month(out / "history")
    run = _run("report", "monthly", str(out), "--month", "2026-10", "--out", str(out / "monthly"))
    assert run.exit_code == 0, run.output
    nightly = _nightly(snaps["a1"], out)
    assert nightly.exit_code in (0, 3), nightly.output  # report-out-holds-reports: it goes on
    assert (out / "monthly" / "report.json").is_file()  # left as it was
    # the backfill gets past the folder check to its (unreachable) server
    run = _run("history", "backfill", "--prometheus", "https://prom.example:9090", "--since", "1d",
               "--until", "2026-11-01", "--out", str(out), "--timeout", "2", "--force")  # fmt: skip
    assert "not a report folder" not in run.output
    assert run.exit_code == documented_exit("backfill-unreachable"), run.output
    # a folder of the user's own beside it is still not analyzer's
    (out / "mine").mkdir()
    (out / "mine" / "notes.txt").write_text("keep")
    run = _nightly(snaps["a1"], out)
    assert run.exit_code == 2 and "it holds mine" in run.stderr
    assert (out / "mine" / "notes.txt").read_text() == "keep"
