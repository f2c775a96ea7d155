"""Compare two ``analyzer demo`` folders file by file, timestamps aside.

Every file of either folder is listed: present in one only, byte-identical, identical once the
run's own stamps are masked, or different (then the differing lines, masked, are printed). The
masked stamps are the date-times of the day(s) the demos ran on (``--today``, default the
files' modification days: the demo's data are months older, so no data date is masked), and
each folder's own absolute path (a page that names its history folder). Parquet files that differ
in bytes are compared as tables too (same schema and values: "same table").

    .venv/bin/python bench/demo_compare.py BASE_DIR NEW_DIR [--show 20]

Ends with one line: how many files, how many identical (bytes, masked, table), how many differ.
"""

from __future__ import annotations

import argparse
import difflib
import re
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.parquet as pq

TEXT = {".html", ".json", ".csv", ".yaml", ".yml", ".txt", ".md", ".svg", ".j2"}


def _stamp_days(*folders: Path) -> set[str]:
    """The UTC days the folders' files were written on (the runs' days)."""
    return {
        datetime.fromtimestamp(p.stat().st_mtime, UTC).strftime("%Y-%m-%d")
        for folder in folders
        for p in folder.rglob("*")
        if p.is_file()
    }


def masker(folder: Path, days: set[str]) -> re.Pattern[str]:
    """A pattern matching the folder's path and any date-time on one of ``days``."""
    dates = "|".join(re.escape(d) for d in sorted(days))
    return re.compile(
        re.escape(str(folder.resolve()))
        + "|"
        + re.escape(str(folder))
        + rf"|(?:{dates})(?:[T ]\d{{2}}:\d{{2}}(?::\d{{2}}(?:\.\d+)?)?(?:[+-]\d{{2}}:?\d{{2}}|Z| UTC)?)?"
    )


def _masked(path: Path, pattern: re.Pattern[str]) -> list[str]:
    return pattern.sub("<MASKED>", path.read_text(errors="replace")).splitlines()


def main() -> None:
    """Compare and print (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--today", action="append", help="a run day to mask (YYYY-MM-DD)")
    parser.add_argument("--show", type=int, default=20, help="diff lines shown per file")
    args = parser.parse_args()
    days = set(args.today or _stamp_days(args.base, args.new))
    masks = masker(args.base, days), masker(args.new, days)
    files = {
        p.relative_to(root)
        for root in (args.base, args.new)
        for p in root.rglob("*")
        if p.is_file()
    }
    counts = {"bytes": 0, "masked": 0, "table": 0, "differ": 0, "one side": 0}
    for rel in sorted(files):
        a, b = args.base / rel, args.new / rel
        if not (a.is_file() and b.is_file()):
            counts["one side"] += 1
            print(f"ONLY IN {'base' if a.is_file() else 'new'}: {rel}")
            continue
        if a.read_bytes() == b.read_bytes():
            counts["bytes"] += 1
            continue
        if rel.suffix == ".parquet" and pq.read_table(a).equals(pq.read_table(b), True):
            counts["table"] += 1
            print(f"same table, other bytes: {rel}")
            continue
        if rel.suffix in TEXT:
            left, right = _masked(a, masks[0]), _masked(b, masks[1])
            if left == right:
                counts["masked"] += 1
                continue
            counts["differ"] += 1
            print(f"DIFFERS: {rel}")
            diff = [
                line
                for line in difflib.unified_diff(left, right, lineterm="", n=0)
                if line[:1] in "+-" and not line.startswith(("+++", "---"))
            ]
            for line in diff[: args.show]:
                print("    " + line[:400])
            continue
        counts["differ"] += 1
        print(f"DIFFERS (binary): {rel}")
    print(
        f"{len(files)} files: {counts['bytes']} byte-identical, {counts['masked']} identical "
        f"with the runs' date-times and folder paths masked, {counts['table']} same parquet "
        f"table, {counts['differ']} differ, {counts['one side']} in one folder only "
        f"(masked days {sorted(days)})"
    )


if __name__ == "__main__":
    main()
