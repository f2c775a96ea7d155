"""Render-only CPU of ``bench/collect_vm.py``'s JSON-lines writer: an older commit's against this one.

The loader's two halves were timed apart (docs/benchmarks.md "collectweek"): the rendering was the
bottleneck. This renders one generated cluster with the writer of ``--old`` (a commit; its
``bench/collect_vm.py`` is taken with ``git show``) and with this tree's, into a sink that only
counts bytes, and prints the samples per CPU second of each (``time.process_time``), twice::

    .venv/bin/python bench/collect_render_ab.py --nodes 500 --days 0.5 --old 64efaea
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import collect_vm as new  # noqa: E402

from analyzer.sources import SyntheticSpec, generate  # noqa: E402
from analyzer.sources.openmetrics import OpenMetricsOptions, _render  # noqa: E402


class _Sink:
    """Counts the characters written."""

    chars = 0

    def write(self, text: str) -> None:
        self.chars += len(text)


def _old_module(commit: str) -> Any:
    """``bench/collect_vm.py`` as it was at ``commit``, imported."""
    text = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{commit}:bench/collect_vm.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "old_collect_vm.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("old_collect_vm", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    """Both writers, two rounds; one JSON line per round."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--days", type=float, default=0.5)
    parser.add_argument("--old", default="64efaea")
    args = parser.parse_args()
    old = _old_module(args.old)
    cluster = generate(SyntheticSpec(seed=1, nodes=args.nodes, days=args.days, step=60))
    options = OpenMetricsOptions(
        instance_convention="host-ip", node_exporter_cpus=1, constant_step=300
    )
    times = cluster.grid.times

    def run(factory: Callable[[_Sink], Any], hours: float) -> dict[str, float]:
        started, samples, sink = time.process_time(), 0, _Sink()
        for lo in range(int(times[0]), int(times[-1]) + 1, int(hours * 3600)):
            out = factory(sink)
            out.stride = options.stride(cluster.grid.step)
            _render(out, cluster, replace(options, start_s=lo, end_s=lo + int(hours * 3600) - 1))
            out.close()
            samples += out.samples
        cpu = time.process_time() - started
        return {"samples": samples, "cpu_s": round(cpu, 1), "per_cpu_s": round(samples / cpu)}

    for round_ in range(2):
        heads: dict[str, str] = {}
        rows = {
            "old writer, 2 h slices": run(lambda s: old.JsonLinesWriter(s, times), 2),
            "new writer, 2 h slices": run(lambda s: new.JsonLinesWriter(s, times, {}), 2),
            "new writer, 24 h slices": run(lambda s, h=heads: new.JsonLinesWriter(s, times, h), 24),
        }
        print(json.dumps({"nodes": args.nodes, "days": args.days, "round": round_, **rows}))


if __name__ == "__main__":
    main()
