"""Each channel's payload at its limits: under 40 kB however long the report's answers, the
report attached only under 5 MB, Slack's control characters escaped (docs/delivery.md)."""

from __future__ import annotations

import json
from pathlib import Path

from analyzer.deliver.message import Message
from analyzer.deliver.payloads import email_message, slack_payload, webhook_payload

# A PNG-sized blob that alone is over the limit once base64-encoded (60 kB → 80 kB).
BIG_CHART = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 234


def _message(lines: int, html: Path | None = None) -> Message:
    return Message(
        kind="monthly",
        key="2026-10",
        title="analyzer monthly review 2026-10: 900 pool(s), 900 to act on",
        lines=tuple(f"pool-{i:03d}: add 2 nodes by 2026-12-01 " + "x" * 400 for i in range(lines)),
        summary={"month": "2026-10"},
        chart_png=BIG_CHART,
        chart_alt="CPU per pool",
        report_url="https://reports.example.org/monthly/2026-10/",
        report_html=html,
    )


def test_webhook_payloads_stay_under_40_kb_keeping_the_first_answers() -> None:
    message = _message(900)
    for body in (slack_payload(message), webhook_payload(message)):
        assert len(body) <= 40_000
        text = body.decode("utf-8")
        assert "pool-000: add 2 nodes" in text  # the first answer survives
        assert "pool-899" not in text  # the last could not
        assert "more line(s) in the report" in text
    hook = json.loads(webhook_payload(message))
    assert "chart_png_base64" not in hook  # the chart went first
    assert all(len(line) <= 300 for line in hook["lines"])  # each line cut at 300 characters


def test_a_small_message_keeps_its_chart_and_every_line() -> None:
    message = Message("nightly", "2026-11-07", "t", ("a", "b"), chart_png=b"\x89PNG tiny")
    hook = json.loads(webhook_payload(message))
    assert hook["lines"] == ["a", "b"] and "chart_png_base64" in hook


def test_slack_control_characters_are_escaped() -> None:
    message = Message("nightly", "2026-11-07", "t", ("Hottest: <!channel> & <@U123>",))
    body = json.loads(slack_payload(message))
    assert "<!channel>" not in json.dumps(body) and "<@U123>" not in json.dumps(body)
    assert "&lt;!channel&gt; &amp; &lt;@U123&gt;" in body["blocks"][1]["text"]["text"]


def test_the_report_is_attached_only_under_5_mb(tmp_path: Path) -> None:
    small, big = tmp_path / "small.html", tmp_path / "big.html"
    small.write_text("<html>report</html>")
    big.write_bytes(b"<html>" + b"x" * 5_000_001 + b"</html>")
    with_small = email_message(_message(2, small), "a@example.org", ("b@example.org",))
    names = [p.get_filename() for p in with_small.walk() if p.get_filename()]
    assert names == ["chart.png", "monthly-2026-10.html"]
    with_big = email_message(_message(2, big), "a@example.org", ("b@example.org",))
    assert [p.get_filename() for p in with_big.walk() if p.get_filename()] == ["chart.png"]
    text = with_big.get_body(("plain",))
    assert text is not None
    body = text.get_content()
    assert "too large to attach (5.0 MB)" in body
    assert "open it at https://reports.example.org/monthly/2026-10/" in body
    assert len(with_big.as_bytes()) < 200_000


def test_a_damaged_or_hostile_delivery_record_counts_as_delivered(tmp_path: Path) -> None:
    # A record only a person can have damaged (writes are atomic): never a traceback, never a
    # second message. 100,000-deep JSON would be a RecursionError in json.loads.
    from analyzer.deliver.record import read_record

    path = tmp_path / "nightly-2026-11-07.slack.json"
    for data in (b"[" * 100_000 + b"]" * 100_000, b"\xff\xfe", b"{not json", b"[1, 2]"):
        path.write_bytes(data)
        assert read_record(path) == {}
