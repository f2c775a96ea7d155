"""Several openb pod lists ("variants") in one run: which files, and the combined JSON.

``pod_lists_in(DIR)`` finds the ``openb_pod_list_*.csv`` files of a folder (the 26 variants of the
FGD paper's artifact: ``default``, ``cpu*``, ``gpushare*``, ``gpuspec*``, ``multigpu*``), sorted by
name with ``default`` first. ``run_variants`` loads every list before replaying any, so a bad file
fails in a second rather than after an hour of replays, then runs them one after the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from analyzer.core.errors import InputError
from analyzer.trace.runner import TraceConfig, load_inputs, run_trace

POD_LIST_GLOB = "openb_pod_list_*.csv"
DEFAULT_VARIANT = "openb_pod_list_default.csv"


def pod_lists_in(directory: Path) -> list[Path]:
    """The openb pod lists in ``directory``: sorted by file name, the default list first."""
    directory = Path(directory)
    if not directory.is_dir():
        raise InputError(f"--pods-dir {directory}: not a folder; pass the folder of openb CSVs")
    found = sorted(
        (p for p in directory.glob(POD_LIST_GLOB) if p.is_file()),
        key=lambda p: (p.name != DEFAULT_VARIANT, p.name),
    )
    if not found:
        raise InputError(
            f"--pods-dir {directory}: no {POD_LIST_GLOB} files in it; pass the folder holding "
            "the openb pod lists (e.g. openb_pod_list_default.csv)"
        )
    return found


def run_variants(config: TraceConfig, pods_paths: Sequence[Path]) -> dict[str, Any]:
    """Replay each pod list under ``config``; the JSON of ``analyzer trace alibaba-gpu``.

    No path (or one) gives the single-trace shape; several give ``{"variants": {FILE NAME:
    <single-trace shape>}}`` in the order given.
    """
    paths: list[Path | None] = list(pods_paths) or [None]
    names = [p.name for p in paths if p is not None]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise InputError(
            f"--pods/--pods-dir: {duplicates[0]} is given twice; pass each pod list once"
        )
    configs = [replace(config, pods_path=path) for path in paths]
    loaded = [load_inputs(c) for c in configs]  # every file is checked before any replay
    results = [run_trace(c, inputs).to_json() for c, inputs in zip(configs, loaded, strict=True)]
    if len(results) == 1:
        return results[0]
    return {"variants": {r["trace"]["pods_file"]: r for r in results}}
