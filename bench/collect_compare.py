"""Does this tree's ``analyzer collect`` write the snapshot a baseline tree writes? Every file.

Runs ``python -m analyzer collect`` of this tree and of ``--baseline-tree`` (a checkout of main,
put first on ``PYTHONPATH``: ``bench/collect_stream.py``'s ``run``) against one server and
compares the two folders file by file: the same file names, every file byte-identical except
``meta.json``, which must be equal but for ``collected_at`` (the clock) and ``query_profile``
(the path of each tree's own ``queries/``). A file that differs in
bytes is then read (``read_snapshot``) to say whether its table differs too. Prints one JSON line.

``--fixture`` serves the real-Prometheus fixture of tests/test_collect_stream.py (the generator,
seed 5, 4 nodes, 2 days at 5 m, backfilled with promtool into Prometheus 2.42 on 127.0.0.1) and
collects its range; ``--url`` collects ``--start``/``--end`` from a running server (e.g. the
VictoriaMetrics store of ``bench/collect_vm.py``)::

    .venv/bin/python bench/collect_compare.py --fixture --baseline-tree /tmp/collectweek-base
    .venv/bin/python bench/collect_compare.py --url http://127.0.0.1:18431 --start S --end E \\
        --step 60s --baseline-tree /tmp/collectweek-base
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))


from collect_stream import KEYS  # noqa: E402

# meta.json fields that differ between any two runs: the clock, and the tree's own query folder
VARYING = ("collected_at", "query_profile")


def compare(a: Path, b: Path) -> dict[str, Any]:
    """File by file: names, bytes, and for ``meta.json`` the JSON without ``collected_at``."""
    names = sorted(p.name for p in a.iterdir()), sorted(p.name for p in b.iterdir())
    report: dict[str, Any] = {"same_names": names[0] == names[1], "files": {}}
    for name in sorted(set(names[0]) & set(names[1])):
        left, right = (a / name).read_bytes(), (b / name).read_bytes()
        if name == "meta.json":
            one, two = json.loads(left), json.loads(right)
            for varying in VARYING:
                one.pop(varying, None)
                two.pop(varying, None)
            report["files"][name] = "equal but " + ", ".join(VARYING) if one == two else "DIFFERENT"
        else:
            report["files"][name] = "identical bytes" if left == right else _tables(a, b, name)
    different = [n for n, v in report["files"].items() if "DIFFERENT" in v]
    report["identical"] = report["same_names"] and not different
    return report


def _tables(a: Path, b: Path, name: str) -> str:
    """A file whose bytes differ: does its table differ too?"""
    import pandas as pd

    from analyzer.core.snapshot import read_snapshot

    table = name.split(".")[0]
    left, right = read_snapshot(a), read_snapshot(b)
    one, two = getattr(left, table, None), getattr(right, table, None)
    if not (isinstance(one, pd.DataFrame) and isinstance(two, pd.DataFrame)):
        return "DIFFERENT"
    if one.equals(two):
        return "bytes differ, table equal"
    keys = KEYS.get(table)
    if keys is not None and _sorted(one, keys).equals(_sorted(two, keys)):
        # the usage rows of a day are joined in the order the responses arrive (threads)
        return "same rows in another order"
    return "DIFFERENT"


def _sorted(frame: Any, keys: list[str]) -> Any:
    return frame.sort_values(keys, kind="stable").reset_index(drop=True)


def _fixture(workdir: Path) -> tuple[Any, str, int, int, int]:
    """tests/test_collect_stream.py's cluster in a fresh Prometheus: (server, url, start, end,
    step)."""
    from conftest import backfill, start_prometheus

    from analyzer.sources import SyntheticSpec, generate, write_openmetrics

    step = 300
    cluster = generate(SyntheticSpec(seed=5, nodes=4, days=2, step=step))
    write_openmetrics(cluster, workdir / "cluster.om")
    backfill(workdir / "cluster.om", workdir / "blocks")
    server = start_prometheus(workdir / "blocks", workdir / "prometheus")
    truth = cluster.snapshot
    start = int(truth.start.timestamp()) + 5 * 3600  # the tests' range: two UTC days
    return server, server.url, start, int(truth.end.timestamp()), step


def main() -> None:
    """Collect with both trees, compare, print the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-tree", type=Path, required=True)
    parser.add_argument("--fixture", action="store_true")
    parser.add_argument("--url")
    parser.add_argument("--start", type=int)
    parser.add_argument("--end", type=int)
    parser.add_argument("--step", default="60s")
    parser.add_argument("--keep", type=Path, default=None, help="keep both snapshots here")
    args = parser.parse_args()
    from collect_stream import run

    workdir = Path(tempfile.mkdtemp(prefix="collect-compare-"))
    server = None
    try:
        if args.fixture:
            (workdir / "prometheus").mkdir()
            server, url, start, end, step = _fixture(workdir)
            step_text = f"{step}s"
        else:
            url, start, end, step_text = args.url, args.start, args.end, args.step
        out = args.keep or workdir
        figures = {}
        for side, tree in (("branch", ROOT), ("baseline", args.baseline_tree.resolve())):
            shutil.rmtree(out / side, ignore_errors=True)
            wall, rss, cpu, _ = run(tree, [
                "collect", "--prometheus", url, "--start", str(start), "--end", str(end),
                "--step", step_text, "--out", str(out / side),
            ])  # fmt: skip
            figures[side] = {
                "wall_s": round(wall, 1),
                "peak_rss_mb": round(rss),
                "cpu_s": round(cpu, 1),
            }
        report = compare(out / "baseline", out / "branch")
        print(json.dumps({"url": url, "start": start, "end": end, **figures, **report}))
    finally:
        if server is not None:
            from conftest import stop_prometheus

            stop_prometheus(server)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
