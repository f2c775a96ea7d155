"""What one delivery says, whatever the channel: built by ``report/notify_message.py`` from the
JSON side file the run just wrote, turned into each channel's payload by ``payloads.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Webhook payloads stay under this (chat servers refuse big bodies; Slack truncates long text).
MAX_PAYLOAD_BYTES = 40_000
# The HTML report is attached to the e-mail only under this size (relays commonly cap at 10 MB
# and base64 adds a third); above it the mail says "too large to attach" and gives the link.
MAX_ATTACHMENT_BYTES = 5_000_000


@dataclass(frozen=True)
class Message:
    """One report's announcement.

    ``kind`` and ``key`` identify the report (``nightly`` / ``2026-11-07``, ``monthly`` /
    ``2026-10``): one delivery per (kind, key, channel). ``lines`` are the page's first answers,
    most important first (payloads drop lines from the end to fit). ``summary`` is the JSON the
    generic webhook posts. ``chart_png`` is a small PNG; ``report_html`` the page to attach.
    """

    kind: str
    key: str
    title: str
    lines: tuple[str, ...]
    summary: dict[str, Any] = field(default_factory=dict)
    chart_png: bytes | None = None
    chart_alt: str = ""
    report_url: str | None = None
    report_html: Path | None = None
