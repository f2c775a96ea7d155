"""Each channel's payload from a ``Message``: Slack-compatible incoming-webhook JSON, the generic
webhook's summary JSON, and the e-mail (text, HTML with the chart inline, the report attached).

Webhook payloads are kept under ``MAX_PAYLOAD_BYTES``: the chart goes first, then answer lines
from the end (the first answers matter most), with a line saying the rest is in the report.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Callable
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from typing import Any

from analyzer.deliver.message import MAX_ATTACHMENT_BYTES, MAX_PAYLOAD_BYTES, Message

MAX_LINE_CHARS = 300  # one answer line; a 253-character node name still fits
_SLACK_SECTION_CHARS = 2900  # Slack refuses a section text over 3,000 characters
_SLACK_HEADER_CHARS = 150  # and a header over 150


def _slack_escape(text: str) -> str:
    """Slack's three control characters (a node named ``<!channel>`` must not ping anyone)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fit(build: Callable[[Message, tuple[str, ...], bool], bytes], message: Message) -> bytes:
    """The largest payload ``build`` makes under the limit: all lines and the chart, then
    without the chart, then with fewer lines."""
    lines = tuple(_clip(line, MAX_LINE_CHARS) for line in message.lines)
    body = build(message, lines, True)
    if len(body) <= MAX_PAYLOAD_BYTES:
        return body
    for keep in range(len(lines), 0, -1):
        dropped = len(lines) - keep
        shown = lines[:keep] + ((f"… {dropped} more line(s) in the report",) if dropped else ())
        body = build(message, shown, False)
        if len(body) <= MAX_PAYLOAD_BYTES:
            return body
    return build(message, (), False)


def _slack(message: Message, lines: tuple[str, ...], _chart: bool) -> bytes:
    # Incoming webhooks take images only by a public URL the chat server fetches, so the chart
    # goes by e-mail and the generic webhook; here the link leads to the page and its charts.
    bullets = "\n".join(f"• {_slack_escape(line)}" for line in lines)
    text = f"{message.title}\n{bullets}"
    if message.report_url:
        text += f"\nReport: {message.report_url}"
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "text": {"type": "plain_text", "text": _clip(message.title, _SLACK_HEADER_CHARS)},
        }
    ]
    if bullets:
        blocks.append(
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": _clip(bullets, _SLACK_SECTION_CHARS)},
            }
        )
    if message.report_url:
        link = f"<{message.report_url}|Open the report>"
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": link}]})
    # ``text`` is what Mattermost and Rocket.Chat show (they ignore ``blocks``) and Slack's
    # notification fallback; both carry the same answers.
    return json.dumps({"text": text, "blocks": blocks}, ensure_ascii=False).encode("utf-8")


def slack_payload(message: Message) -> bytes:
    """The incoming-webhook JSON (``text`` + ``blocks``), under ``MAX_PAYLOAD_BYTES``."""
    return _fit(_slack, message)


def _webhook(message: Message, lines: tuple[str, ...], chart: bool) -> bytes:
    body: dict[str, Any] = {
        "schema": "analyzer.notify/v1",
        "kind": message.kind,
        "key": message.key,
        "title": message.title,
        "lines": list(lines),
        "summary": message.summary,
        "report_url": message.report_url,
    }
    if chart and message.chart_png is not None:
        body["chart_png_base64"] = base64.b64encode(message.chart_png).decode("ascii")
        body["chart_alt"] = message.chart_alt
    return json.dumps(body, ensure_ascii=False, sort_keys=True, allow_nan=False).encode("utf-8")


def webhook_payload(message: Message) -> bytes:
    """The generic webhook's JSON: the run's summary, answers, link, chart; under the limit."""
    return _fit(_webhook, message)


def idempotency_key(message: Message, channel: str) -> str:
    """A stable key of (report, channel): the same on every retry of the same report day.

    Sent as the webhook's ``Idempotency-Key`` header and in the e-mail's ``Message-ID``, so a
    receiver that de-duplicates can drop the one duplicate at-least-once delivery allows."""
    digest = hashlib.sha256(f"{message.kind}\0{message.key}\0{channel}".encode()).hexdigest()
    return f"analyzer-{message.kind}-{message.key}-{channel}-{digest[:12]}"


def email_message(message: Message, sender: str, recipients: tuple[str, ...]) -> EmailMessage:
    """The e-mail: text and HTML answers, the chart inline, the HTML report attached (< 5 MB)."""
    mail = EmailMessage()
    mail["Subject"] = message.title
    mail["From"] = sender
    mail["To"] = ", ".join(recipients)
    mail["Date"] = format_datetime(datetime.now(UTC))
    domain = sender.rpartition("@")[2] or "analyzer.invalid"
    mail["Message-ID"] = f"<{idempotency_key(message, 'email')}@{domain}>"
    size = message.report_html.stat().st_size if message.report_html is not None else 0
    attach = message.report_html is not None and size <= MAX_ATTACHMENT_BYTES
    where = message.report_url or (str(message.report_html) if message.report_html else "")
    note = (
        "The report is attached."
        if attach
        else f"The report is too large to attach ({size / 1e6:.1f} MB); open it at {where}."
        if message.report_html is not None
        else ""
    )
    text = "\n".join(
        [message.title, "", *(f"- {line}" for line in message.lines), ""]
        + ([f"Report: {message.report_url}"] if message.report_url else [])
        + ([note] if note else [])
    )
    mail.set_content(text + "\n")
    chart_cid = make_msgid(domain=domain)
    items = "".join(f"<li>{html.escape(line)}</li>" for line in message.lines)
    link = (
        f'<p><a href="{html.escape(message.report_url)}">Open the report</a></p>'
        if message.report_url
        else ""
    )
    image = (
        f'<p><img src="cid:{chart_cid[1:-1]}" alt="{html.escape(message.chart_alt)}"></p>'
        if message.chart_png is not None
        else ""
    )
    page = (
        f"<html><body><h2>{html.escape(message.title)}</h2><ul>{items}</ul>{image}{link}"
        f"<p>{html.escape(note)}</p></body></html>"
    )
    mail.add_alternative(page, subtype="html")
    if message.chart_png is not None:
        # The HTML alternative becomes multipart/related: the page and the image it shows.
        html_part = next(part for part in mail.iter_parts() if part.get_content_subtype() == "html")
        assert isinstance(html_part, EmailMessage)
        html_part.add_related(
            message.chart_png, maintype="image", subtype="png", cid=chart_cid, filename="chart.png"
        )
    if attach and message.report_html is not None:
        mail.add_attachment(
            message.report_html.read_bytes(),
            maintype="text",
            subtype="html",
            filename=f"{message.kind}-{message.key}.html",
        )
    return mail
