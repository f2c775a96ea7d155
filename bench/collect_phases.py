"""Where a streamed ``analyzer collect`` peaks: resident memory per phase, in one process.

Runs ``analyzer.collect.stream.collect_to`` against a running Prometheus with the CLI's memory
settings, and a thread reads ``VmRSS`` from ``/proc/self/status`` every 20 ms. The phase is the
innermost of these steps running at that moment (each is wrapped where ``collect_to`` calls it):
the whole-range fetch (summaries and node state), building the pods and nodes tables, each day's
usage fetch, node-usage and pod-usage build, the parquet appends, and the final small files.
Prints the peak RSS per phase (MiB) and where the process stood when it started::

    .venv/bin/python bench/collect_phases.py URL START END [STEP]
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PHASES = {
    "run_profile": "fetch",
    "build_inventory": "pods and nodes tables",
    "build_node_state": "node state",
    "build_node_usage": "node usage build",
    "pod_usage_rows": "pod usage build",
    "write_snapshot_files": "small files",
}


def rss_mb() -> float:
    """This process's resident set, MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    url, start, end = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    step = int(sys.argv[4]) if len(sys.argv) > 4 else 60
    from analyzer.collect import stream
    from analyzer.collect.run import CollectRequest
    from analyzer.core.daygroups import DayGroupWriter
    from analyzer.core.memory import limit_heap_growth
    from analyzer.prom.settings import PromSettings

    stack: list[str] = ["outside these steps"]
    peaks: dict[str, float] = {}
    calls: dict[str, int] = {}
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            phase = stack[-1]
            peaks[phase] = max(peaks.get(phase, 0.0), rss_mb())
            time.sleep(0.02)

    def wrap(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            phase = PHASES.get(name, name)
            if name == "run_profile":  # the first call is the whole-range pass
                phase = "whole-range fetch" if not calls.get(name) else "daily usage fetch"
            calls[name] = calls.get(name, 0) + 1
            stack.append(phase)
            try:
                return func(*args, **kwargs)
            finally:
                stack.pop()

        return wrapped

    for name in PHASES:
        setattr(stream, name, wrap(name, getattr(stream, name)))
    DayGroupWriter.append = wrap("parquet append", DayGroupWriter.append)  # type: ignore[method-assign]
    limit_heap_growth()
    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    started = rss_mb()
    out = Path("/tmp/analyzer-bench-phases")
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    result = stream.collect_to(
        CollectRequest(
            PromSettings(url),
            datetime.fromtimestamp(start, tz=UTC),
            datetime.fromtimestamp(end, tz=UTC),
            step_seconds=step,
        ),
        out,
    )
    wall = time.perf_counter() - t
    stop.set()
    thread.join()
    shutil.rmtree(out, ignore_errors=True)
    print(
        json.dumps(
            {
                "rss_at_start_mb": round(started),
                "peak_by_phase_mb": {k: round(v) for k, v in peaks.items()},
                "calls": calls,
                "pods": len(result.result.snapshot.pods),
                "node_usage_rows": result.node_usage_rows,
                "pod_usage_rows": result.pod_usage_rows,
                "wall_s": round(wall, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
