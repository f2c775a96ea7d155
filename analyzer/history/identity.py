"""A history knows its cluster: ``OUT/history/cluster.json``, and a stamp in every day file.

``cluster.json`` (``{"cluster": NAME, "source": URL-or-null, "explicit": bool}``) is the primary
record, written atomically by the first run that records a day; every pools and workloads file
then carries the name in its parquet metadata (``analyzer.history.cluster``) and every summary a
``cluster`` key, so a day file copied in from another history is caught when read.

The name (docs/history.md, "Which cluster"): ``--cluster NAME`` when given, else derived from
where the data came from — the Prometheus URL without credentials, query or trailing slash, its
scheme and host lower-cased and a default port dropped; for a snapshot, its ``meta.json`` source
(a URL likewise; ``synthetic`` or ``trace:NAME`` for data from no server). The node names are
deliberately not part of it: nodes come and go every day in an autoscaled cluster, a server URL
does not. A run whose cluster differs from the history's is refused before it writes anything
(exit 2, both names shown) — unless it names the history's cluster with ``--cluster`` (the same
cluster behind a new URL), or its derived source equals the one an explicitly named history
recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from analyzer.core.atomic import atomic_write_text
from analyzer.core.errors import InputError
from analyzer.core.text import escaped, shortened
from analyzer.history.files import DAY_FILE, read_json, refuse

IDENTITY_FILE = "cluster.json"
CLUSTER_KEY = b"analyzer.history.cluster"
MAX_NAME = 200
_DEFAULT_PORTS = {"http": 80, "https": 443}
_DAY_FOLDERS = ("pools", "workloads", "summary", "rollups")


@dataclass(frozen=True)
class ClusterIdentity:
    """Which cluster a run's data is of: ``cluster`` (the name kept), ``source`` (normalised URL or
    snapshot source; None when unknown) and whether the user named it (``--cluster``)."""

    cluster: str
    source: str | None = None
    explicit: bool = False

    def to_json(self) -> str:
        record = {"cluster": self.cluster, "source": self.source, "explicit": self.explicit}
        return json.dumps(record, sort_keys=True, indent=1) + "\n"


def shown(name: str) -> str:
    """A cluster name fit for one message line: non-printables escaped, at most 80 characters."""
    return repr(shortened(escaped(name)))


def normalise_source(source: str) -> str:
    """``source`` without credentials, query, fragment, default port or trailing slash; scheme
    and host lower-cased. Not a URL (``synthetic:…``, ``trace:NAME``): the part before the first
    comma-separated parameter of a synthetic source, so every generated snapshot is one cluster."""
    text = source.strip()
    if "://" not in text:
        return "synthetic" if text.startswith("synthetic") else text
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


def identity_for(
    source: str | None, explicit: str | None, option: str = "--cluster"
) -> ClusterIdentity:
    """The identity of a run reading ``source`` (URL or snapshot source), named ``explicit``."""
    normalised = None if not source else normalise_source(source)
    if explicit is not None:
        name = explicit.strip()
        if not name or len(name) > MAX_NAME or not name.isprintable():
            raise InputError(
                f"{option}: {shown(explicit)} is not a cluster name; give 1 to {MAX_NAME} "
                "printable characters (no line breaks or control characters)"
            )
        return ClusterIdentity(name, normalised, explicit=True)
    return ClusterIdentity(normalised or "unknown", normalised, explicit=False)


def read_identity(root: Path) -> ClusterIdentity | None:
    """The identity ``root`` (``OUT/history``) records, or None (a history written before)."""
    path = Path(root) / IDENTITY_FILE
    if not path.exists():
        return None
    data = read_json(path)
    if not isinstance(data, dict):
        refuse(path, "does not hold a JSON object")
    name, source = data.get("cluster"), data.get("source")
    if (
        not isinstance(name, str)
        or not name.strip()
        or not name.isprintable()
        or len(name) > MAX_NAME
    ):
        refuse(path, "has no valid cluster name")
    if source is not None and (not isinstance(source, str) or not source.isprintable()):
        refuse(path, "has a source that is not a text")
    return ClusterIdentity(name, source, explicit=bool(data.get("explicit")))


def stored_cluster(root: Path) -> str | None:
    """The cluster name ``root`` records (None when it records none)."""
    identity = read_identity(root)
    return None if identity is None else identity.cluster


def _has_days(root: Path) -> bool:
    for folder in _DAY_FOLDERS:
        place = Path(root) / folder
        if place.is_dir() and any(DAY_FILE.match(p.name) for p in place.iterdir()):
            return True
    return False


def check_identity(root: Path, identity: ClusterIdentity, option: str = "--out") -> str | None:
    """Before any write: refuse a run of another cluster than the history's (exit 2). Returns a
    note to print once when a history without identity (written before it existed) will adopt
    this one; None otherwise."""
    root = Path(root)
    stored = read_identity(root)
    if stored is None:
        if _has_days(root):
            return (
                f"history: {root} recorded no cluster; it is now the history of cluster "
                f"{shown(identity.cluster)} (docs/history.md, 'Which cluster')"
            )
        return None
    if stored.cluster == identity.cluster:
        return None
    if not identity.explicit and stored.source is not None and stored.source == identity.source:
        return None  # the history was named explicitly; this run reads the same server
    source = "" if identity.explicit or identity.source is None else " (this run's source)"
    raise InputError(
        f"{option} {root.parent}: its history is of cluster {shown(stored.cluster)}, not "
        f"{shown(identity.cluster)}{source}; give another --out for that cluster, or pass "
        f"--cluster {shown(stored.cluster)} if it is the same cluster (e.g. its Prometheus moved)"
    )


def adopt(root: Path, identity: ClusterIdentity) -> str:
    """Record ``identity`` in ``root`` unless it records one already; return the history's name
    (the stored one when the run was accepted as the same cluster)."""
    root = Path(root)
    stored = read_identity(root)
    if stored is not None:
        return stored.cluster
    stored_identity = ClusterIdentity(identity.cluster, identity.source, identity.explicit)
    atomic_write_text(root / IDENTITY_FILE, stored_identity.to_json())
    return identity.cluster


def check_cluster(path: Path, raw: bytes | str | None, expected: list[str | None]) -> None:
    """A day file's cluster stamp (``raw``; None in files written before) equals the history's
    (``expected[0]``; the first stamp seen when the history records none, kept there)."""
    if raw is None:
        return
    name = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    if expected[0] is None:
        expected[0] = name
    elif name != expected[0]:
        refuse(
            path,
            f"is of cluster {shown(name)}, but the history is of cluster {shown(expected[0])}",
            "move that file to its own cluster's history, or delete it",
        )
