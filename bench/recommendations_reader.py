"""Benchmark: reading a million-row recommendations CSV at the boundary (campaign row 80).

Writes a rightsize-shaped CSV (every column ``analyzer rightsize`` writes, ``--rows`` rows of
workloads with mixed-type ``skipped_reason``/``rules`` columns, the shape that made pandas warn
``DtypeWarning``), then, in a child process each so that the peak resident set is that run's
own (``os.wait4``'s rusage), times:

- ``reader``: ``analyzer.core.workloads.read_recommendations`` (Arrow's CSV reader, only the five
  needed columns, every cell as text, then the checks);
- ``pandas default``: ``pd.read_csv(path)``, what ``whatif --recommendations`` did before.

It also reports whether the run wrote any warning (with warnings turned into errors for the
reader). Figures are wall seconds and peak RSS in MB; the file size is printed.

    .venv/bin/python bench/recommendations_reader.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

CHILD = r"""
import sys, time, warnings
kind, path = sys.argv[1], sys.argv[2]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    started = time.perf_counter()
    if kind == "reader":
        from analyzer.core.workloads import read_recommendations
        frame = read_recommendations(path)
    else:
        import pandas as pd
        frame = pd.read_csv(path)
    seconds = time.perf_counter() - started
print(f"{seconds:.3f} {len(frame)} {len(caught)}")
"""


def write_file(path: Path, rows: int) -> None:
    """A rightsize-shaped CSV: 44 known-looking workloads, the rest unknown, mixed text columns."""
    rng = np.random.default_rng(0)
    half = rows // 2
    frame = pd.DataFrame(
        {
            "namespace": np.where(np.arange(rows) % 7 == 0, "shop", "team"),
            "owner_kind": "Deployment",
            "owner_name": [f"w-{i}" for i in range(rows)],
            "pool": "general",
            "cpu_request_millicores": 1000.0,
            "memory_request_bytes": float(2**31),
            "cpu_recommended_millicores": rng.integers(10, 4000, rows).astype(float),
            "memory_recommended_bytes": rng.integers(2**27, 2**33, rows).astype(float),
            "days": 14,
            "skipped_reason": [""] * half + ["not running on 2026-11-07"] * (rows - half),
            "recipe": "krr",
            "samples": 4032,
            "rules": ["1"] * half + ["memory raised to the observed max"] * (rows - half),
            "note": "",
        }
    )
    frame.loc[frame.index % 3 == 0, "memory_recommended_bytes"] = np.nan
    frame.to_csv(path, index=False)


def measure(kind: str, path: Path) -> dict[str, float | int]:
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, kind, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    out = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out
    seconds, rows, warned = out.split()
    return {
        "seconds": float(seconds),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "rows": int(rows),
        "warnings": int(warned),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "recs.csv"
        started = time.perf_counter()
        write_file(path, args.rows)
        print(f"wrote {path.stat().st_size / 1e6:.0f} MB in {time.perf_counter() - started:.1f} s")
        results = {kind: measure(kind, path) for kind in ("reader", "pandas default")}
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
