"""The idempotency record: one small JSON file per (report, channel), written atomically after
the channel confirmed the delivery (HTTP 2xx, SMTP 250). A retried run that finds it skips the
channel. It holds no secret: the target is its scheme and host only.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from analyzer.core.atomic import atomic_write_text
from analyzer.core.errors import InputError
from analyzer.core.structured import load_json

RECORDS_FOLDER = "deliveries"  # inside the report's output folder


def record_path(records: Path, kind: str, key: str, channel: str) -> Path:
    """``records/<kind>-<key>.<channel>.json`` (``nightly-2026-11-07.slack.json``)."""
    return Path(records) / f"{kind}-{key}.{channel}.json"


def read_record(path: Path) -> dict[str, Any] | None:
    """The record at ``path``, or None when there is none.

    A record that cannot be read as JSON (written by hand, damaged) still counts as delivered:
    an atomic write never leaves half a file, so only a person put it there, and duplicating a
    message is the mistake we avoid here.
    """
    if not Path(path).is_file():
        return None
    try:  # the one loader: a hand-made record nested 100,000 deep is refused, not a traceback
        data = load_json(Path(path), what="delivery record")
    except InputError:
        return {}
    return data if isinstance(data, dict) else {}


def write_record(path: Path, *, channel: str, target: str, status: int, size: int) -> None:
    """Record a confirmed delivery (atomically: a reader sees no record or the whole one)."""
    record = {
        "schema": "analyzer.delivery/v1",
        "channel": channel,
        "target": target,
        "status": status,
        "payload_bytes": size,
        "delivered_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
    }
    atomic_write_text(Path(path), json.dumps(record, indent=1, sort_keys=True) + "\n")
