"""Deliver one report's ``Message`` to every asked-for channel, once per report and channel.

For each channel: a record already there → skip (said on stdout); else build the payload, try it
with bounded retries and backoff, and write the record only after the channel confirmed. A
failed channel does not stop the others; at the end one ``PublishError`` names every failure
(exit 5: the report is written, telling about it failed). Delivery is at-least-once: a crash
between the confirmation and the record means the retried run sends it again
(docs/delivery.md explains the choice).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from analyzer.core.errors import PublishError
from analyzer.deliver.message import Message
from analyzer.deliver.payloads import (
    email_message,
    idempotency_key,
    slack_payload,
    webhook_payload,
)
from analyzer.deliver.record import read_record, record_path, write_record
from analyzer.deliver.secrets import public_target
from analyzer.deliver.settings import CHANNELS, Resolved
from analyzer.deliver.transport import AttemptFailed, post_json, send_mail


@dataclass(frozen=True)
class Outcome:
    """What happened on one channel: ``delivered``, ``skipped`` (a record) or ``failed``."""

    channel: str
    state: str
    detail: str


def _attempt(
    send: Callable[[], int], tries: int, backoff: float, sleep: Callable[[float], None]
) -> tuple[int, int]:
    """Run ``send`` up to ``tries`` times, waiting ``backoff``·2^k between; (status, tries)."""
    for number in range(1, tries + 1):
        try:
            return send(), number
        except AttemptFailed as exc:
            if not exc.retry or number == tries:
                exc.reason = f"{exc.reason} ({number} tr{'y' if number == 1 else 'ies'})"
                raise
            sleep(backoff * 2 ** (number - 1))
    raise AssertionError("unreachable")  # pragma: no cover


def _sender(
    message: Message, channel: str, resolved: Resolved
) -> tuple[str, int, Callable[[], int]]:
    """(target shown, payload size, one attempt) for ``channel``."""
    settings = resolved.settings
    key = idempotency_key(message, channel)
    if channel in ("slack", "webhook"):
        url = resolved.urls[channel]
        body = slack_payload(message) if channel == "slack" else webhook_payload(message)
        return (
            public_target(url),
            len(body),
            lambda: post_json(
                url, body, key=key, timeout=settings.timeout, ca_bundle=settings.ca_bundle
            ),
        )
    email = settings.email
    assert email.sender is not None
    mail = email_message(message, email.sender, email.recipients)
    size = len(mail.as_bytes())
    return (
        f"smtp://{resolved.relay_host}:{resolved.relay_port}",
        size,
        lambda: send_mail(
            mail,
            host=resolved.relay_host,
            port=resolved.relay_port,
            user=email.user,
            password=resolved.smtp_password,
            timeout=settings.timeout,
            ca_bundle=settings.ca_bundle,
        ),
    )


def deliver(
    message: Message,
    resolved: Resolved,
    records: Path,
    say: Callable[[str], None],
    sleep: Callable[[float], None] = time.sleep,
) -> list[Outcome]:
    """Deliver to each channel of ``resolved`` once; ``PublishError`` if any channel failed."""
    outcomes: list[Outcome] = []
    for channel in (c for c in CHANNELS if c in resolved.settings.channels):
        path = record_path(records, message.kind, message.key, channel)
        found = read_record(path)
        if found is not None:
            when = found.get("delivered_at", "an earlier run")
            detail = f"already delivered for {message.key} ({when}, record {path}); skipped"
            say(f"notify {channel}: {detail}")
            outcomes.append(Outcome(channel, "skipped", detail))
            continue
        target, size, send = _sender(message, channel, resolved)
        try:
            status, tries = _attempt(
                send, resolved.settings.tries, resolved.settings.backoff, sleep
            )
        except AttemptFailed as exc:
            say(f"notify {channel}: FAILED: {exc.reason}")
            outcomes.append(Outcome(channel, "failed", exc.reason))
            continue
        write_record(path, channel=channel, target=target, status=status, size=size)
        detail = f"delivered to {target} ({status}, {size:,} bytes, {tries} tr{'y' if tries == 1 else 'ies'})"
        say(f"notify {channel}: {detail}")
        outcomes.append(Outcome(channel, "delivered", detail))
    failed = [o for o in outcomes if o.state == "failed"]
    if failed:
        reasons = "; ".join(f"{o.channel}: {o.detail}" for o in failed)
        raise PublishError(
            f"the {message.kind} report {message.key} was written, but delivering it failed "
            f"({reasons}); run the job again to deliver only what is missing"
        )
    return outcomes
