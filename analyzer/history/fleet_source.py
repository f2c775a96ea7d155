"""Where a fleet's histories are: the clusters under one root, local or behind any fsspec URL.

A fleet root holds one history per cluster (docs/fleet.md, docs/history.md "Many clusters"):

- ``ROOT/cluster=NAME/history/…`` — what ``--all-clusters``, ``--cluster-label`` and the config
  file's ``clusters:`` write (``OUT/cluster=NAME/``): the directory is a hive partition, so
  DuckDB's ``read_parquet(…, hive_partitioning=true)`` gives every row its ``cluster``;
- ``ROOT/ANY/history/…`` — one cluster's ``OUT`` folder written before (its name from
  ``cluster.json``, else the folder's name), read as is: nothing is migrated;
- ``ROOT/history/…`` or ``ROOT`` itself being a history — one cluster.

Only files named by the history's rule (``YYYY-MM-DD.parquet``, ``YYYY-MM.json``) are listed, so a
stray copy is never read twice. A URL (``s3://bucket/fleet``) is listed and read through fsspec:
the protocol's filesystem is registered with DuckDB; without the package that provides it (s3fs for
``s3://``) the run ends in one line naming it (exit 2).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from analyzer.core.errors import InputError
from analyzer.core.structured import parse_json_text
from analyzer.core.text import one_line
from analyzer.history.files import DAY_FILE, MONTH_FILE

HIVE_PREFIX = "cluster="
_SAFE = re.compile(r"[^A-Za-z0-9._-]")
_TABLES = ("pools", "summary", "rollups", "forecasts")
MAX_CLUSTERS = 5000  # a root with more folders is not a fleet root; the walk stays bounded
# What each protocol needs installed (the message names the package to add).
_PACKAGES = {
    "s3": "s3fs",
    "s3a": "s3fs",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "abfs": "adlfs",
    "az": "adlfs",
}


def safe_name(cluster: str) -> str:
    """A cluster name as one path segment: letters, digits, ``.``, ``_``, ``-`` kept, every
    other character ``%XX`` (UTF-8), as hive partition values are escaped; never ``.`` or ``..``."""
    text = "".join(
        ch if not _SAFE.match(ch) else "".join(f"%{b:02X}" for b in ch.encode("utf-8"))
        for ch in cluster
    )
    return text if text not in ("", ".", "..") else text.replace(".", "%2E") or "%00"


def cluster_dir(cluster: str) -> str:
    """The per-cluster folder under OUT: ``cluster=<safe name>``."""
    return HIVE_PREFIX + safe_name(cluster)


@dataclass
class ClusterHistory:
    """One cluster's history under the fleet root."""

    key: str  # the hive partition value (``cluster=KEY``) or the legacy folder, unique in the root
    name: str  # shown: cluster.json's name, else the folder's
    path: str  # the history folder (local path or URL)
    hive: bool
    files: dict[str, list[str]] = field(default_factory=dict)  # table → day/month files
    stamped: str | None = None  # cluster.json's name: every day file's stamp must be it


class FleetSource:
    """A fleet root opened for listing and reading: local paths, or an fsspec filesystem."""

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/") or root
        self.protocol = root.split("://", 1)[0] if "://" in root else None
        self.fs: Any = None
        if self.protocol is not None and self.protocol != "file":
            self.fs = _filesystem(self.protocol, root)
        elif self.protocol == "file":
            self.root = self.root[len("file://") :]

    def _ls(self, path: str) -> list[tuple[str, bool]]:
        """``(name, is a folder)`` of ``path``'s entries; [] when it is not a folder."""
        try:
            if self.fs is None:  # a local folder: no fsspec needed
                with os.scandir(path) as scan:
                    return sorted((e.name, e.is_dir()) for e in scan)
            entries = self.fs.ls(path, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as exc:
            raise InputError(
                f"HISTORY_ROOT {one_line(self.root)}: cannot list {one_line(path)}: "
                f"{one_line(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)}"
            ) from None
        out = []
        for entry in entries:
            name = str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
            out.append((name, entry.get("type") == "directory"))
        return sorted(out)

    def url(self, path: str) -> str:
        """``path`` as DuckDB reads it (the protocol put back for a registered filesystem)."""
        if self.protocol is None or self.protocol == "file":
            return path
        return path if "://" in path else f"{self.protocol}://{path}"

    def _strip(self, path: str) -> str:
        return str(self.fs._strip_protocol(path)) if self.fs is not None else path

    def read_text(self, path: str) -> str:
        """A small file's text (cluster.json)."""
        if self.fs is None:
            with Path(path).open(encoding="utf-8") as handle:
                return handle.read(1 << 16)
        with self.fs.open(path, "r", encoding="utf-8") as handle:
            return str(handle.read(1 << 16))

    def clusters(self) -> list[ClusterHistory]:
        """Every cluster history under the root (see the module docstring), by shown name."""
        root = self._strip(self.root)
        found: list[ClusterHistory] = []
        top = self._ls(root)
        names = {n for n, is_dir in top if is_dir}
        if "pools" in names or "summary" in names:
            found.append(self._history(root, "", hive=False))
        elif "history" in names:
            found.append(self._history(f"{root}/history", "", hive=False))
        else:
            folders = [n for n, is_dir in top if is_dir and not n.startswith(".")]
            if len(folders) > MAX_CLUSTERS:
                raise InputError(
                    f"HISTORY_ROOT {one_line(self.root)}: {len(folders)} folders; a fleet root "
                    f"holds at most {MAX_CLUSTERS} cluster folders (cluster=NAME/history)"
                )
            for name in folders:
                history = f"{root}/{name}/history"
                if not any(n == "pools" and d for n, d in self._ls(history)):
                    continue
                hive = name.startswith(HIVE_PREFIX)
                found.append(
                    self._history(history, name[len(HIVE_PREFIX) :] if hive else name, hive)
                )
        found = [c for c in found if c.files.get("pools")]
        if not found:
            raise InputError(
                f"HISTORY_ROOT {one_line(self.root)}: no cluster history found (expected "
                "cluster=NAME/history/pools/YYYY-MM-DD.parquet, or an OUT folder's "
                "history/pools/); run `analyzer report nightly` or `analyzer history backfill` "
                "with --out under it first"
            )
        seen: dict[str, int] = {}
        for c in found:  # two folders naming the same cluster would be summed as one
            seen[c.name] = seen.get(c.name, 0) + 1
        twice = sorted(n for n, k in seen.items() if k > 1)
        if twice:
            raise InputError(
                f"HISTORY_ROOT {one_line(self.root)}: cluster {one_line(twice[0])} has more than "
                "one history folder (their cluster.json name it the same); keep one, or rename "
                "one in its cluster.json"
            )
        return sorted(found, key=lambda c: c.name)

    def _history(self, path: str, key: str, hive: bool) -> ClusterHistory:
        entries = {t: self._ls(f"{path}/{t}") for t in _TABLES}
        files = {
            t: [
                f"{path}/{t}/{n}"
                for n, is_dir in listing
                if not is_dir
                and (MONTH_FILE if t == "forecasts" else DAY_FILE).match(n)
                and n.endswith(".json" if t in ("summary", "forecasts") else ".parquet")
            ]
            for t, listing in entries.items()
        }
        name = unquote(key) if key else ""
        stamped = None
        try:
            label = f"HISTORY_ROOT: {one_line(path)}/cluster.json"
            data = parse_json_text(self.read_text(f"{path}/cluster.json"), label)
            if isinstance(data, dict) and isinstance(data.get("cluster"), str):
                name = stamped = data["cluster"]
        except FileNotFoundError:
            pass
        except InputError as exc:  # bad JSON or nested past the bound: one line naming it
            raise InputError(f"{exc}; fix or delete it") from None
        except OSError as exc:
            raise InputError(
                f"HISTORY_ROOT: {one_line(path)}/cluster.json cannot be read "
                f"({one_line(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)}); "
                "fix or delete it"
            ) from None
        return ClusterHistory(
            key=key, name=name or "(unnamed)", path=path, hive=hive, files=files, stamped=stamped
        )

    def connect(self) -> Any:
        """A DuckDB connection that reads this root (its fsspec filesystem registered)."""
        import duckdb

        con = duckdb.connect()
        # DuckDB's own threads: the machine's cores; memory bounded so a huge fleet spills
        # instead of taking the host (docs/fleet.md).
        con.execute("SET memory_limit='1GB'")
        if self.fs is not None:
            con.register_filesystem(self.fs)
        return con


def _filesystem(protocol: str, root: str) -> Any:
    try:
        import fsspec
    except ImportError:
        package = _PACKAGES.get(protocol, "")
        raise InputError(
            f"HISTORY_ROOT {one_line(root)}: {one_line(protocol)}:// needs fsspec"
            f"{' and ' + package if package else ''}, which is not installed; pip install fsspec "
            f"{package} (or copy the history to a local folder)".replace("  ", " ")
        ) from None
    try:
        return fsspec.filesystem(protocol)
    except ImportError:
        package = _PACKAGES.get(protocol, f"the fsspec implementation of {protocol}://")
        raise InputError(
            f"HISTORY_ROOT {one_line(root)}: {protocol}:// needs {package}, which is not "
            f"installed; pip install {package} (or copy the history to a local folder)"
        ) from None
    except ValueError:
        raise InputError(
            f"HISTORY_ROOT {one_line(root)}: {one_line(protocol)}:// is not a filesystem fsspec "
            "knows; give a local folder or a URL such as s3://bucket/fleet"
        ) from None
