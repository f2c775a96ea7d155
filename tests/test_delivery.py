"""``--notify`` end to end: the real CLI in a child process, a real HTTP receiver and a real SMTP
relay (STARTTLS, AUTH) on 127.0.0.1, failures forced on the first tries (docs/delivery.md)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from delivery_servers import Receiver, Relay, http_receiver, self_signed_cert, smtp_relay
from reliability_doc import documented_exit
from report_snapshots import tiny_cluster

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot

ROOT = Path(__file__).resolve().parents[1]
# The secrets: a webhook URL's path is its token, the relay's password. None may appear anywhere.
SLACK_TOKEN = "T0SECRET/B0SECRET/xoxSlackToken123"
HOOK_TOKEN = "generic-hook-token-456"
PASSWORD = "relay-password-789"
USER = "reports@example.org"


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "analyzer", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=ROOT,
        timeout=120,
    )


def _invoke(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The same CLI in this process (click's runner): quicker where no process boundary matters."""
    result = CliRunner().invoke(main, args, env=env)
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def _snapshot(tmp_path: Path, days: int = 1) -> Path:
    snap = tmp_path / "snap"
    write_snapshot(tiny_cluster(days=days), snap)
    return snap


def _env(receiver: Receiver) -> dict[str, str]:
    return {
        "SLACK_WEBHOOK_URL": f"{receiver.url}/services/{SLACK_TOKEN}",
        "HOOK_URL": f"{receiver.url}/hook/{HOOK_TOKEN}",
        "RELAY_PASSWORD": PASSWORD,
    }


def _notify_args(relay: Relay) -> list[str]:
    return [
        "--notify", "slack", "--notify-slack-url-env", "SLACK_WEBHOOK_URL",
        "--notify", "webhook", "--notify-webhook-url-env", "HOOK_URL",
        "--notify", "email", "--notify-smtp", f"{relay.host}:{relay.port}",
        "--notify-smtp-user", USER, "--notify-smtp-password-env", "RELAY_PASSWORD",
        "--notify-from", "analyzer@example.org", "--notify-to", "platform@example.org",
        "--notify-ca-bundle", str(relay.cert),
        "--report-url", "https://reports.example.org/nightly/",
        "--notify-tries", "3", "--notify-backoff", "0.05", "--notify-timeout", "10",
    ]  # fmt: skip


def _no_secret(*texts: str, folder: Path) -> None:
    """No secret in the given outputs nor in any file under ``folder``."""
    secrets = (SLACK_TOKEN, HOOK_TOKEN, PASSWORD, "xoxSlackToken123")
    for text in texts:
        for secret in secrets:
            assert secret not in text
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in secrets:
                assert secret.encode() not in data, path


SLACK_PATH = f"/services/{SLACK_TOKEN}"
HOOK_PATH = f"/hook/{HOOK_TOKEN}"


def test_one_delivery_per_day_and_channel_across_three_forced_retries(tmp_path: Path) -> None:
    snap, out = _snapshot(tmp_path), tmp_path / "out"
    with http_receiver() as receiver, smtp_relay(tmp_path, USER, PASSWORD) as relay:
        # Run 1: Slack answers 500 three times (all its tries) → exit 5; the webhook gets a
        # dropped connection then 200; the relay answers 451 twice, then accepts.
        receiver.plan[SLACK_PATH] = ["500", "500", "500", "drop", "200"]
        receiver.plan[HOOK_PATH] = ["drop", "200"]
        relay.fail_next = 2
        args = ["report", "nightly", str(snap), "--out", str(out), *_notify_args(relay)]
        env = _env(receiver)
        runs = [_run(args, env) for _ in range(3)]

        first, second, third = runs
        assert first.returncode == documented_exit("notify-failed") == 5, first.stderr
        # The report was written before the delivery failed, and the stderr is one line.
        assert (out / "2026-11-01" / "report.html").is_file()
        (line,) = first.stderr.splitlines()
        assert line.startswith("analyzer: error: the nightly report 2026-11-01 was written")
        assert "slack: http://127.0.0.1" in line and "HTTP 500 (3 tries)" in line
        assert (
            "notify webhook: delivered" in first.stdout
            and "notify email: delivered" in first.stdout
        )
        # Run 2: Slack's record is missing → tried again (a dropped connection, then 200); the
        # others have their record → skipped, said on stdout.
        assert second.returncode == 0, second.stderr
        assert "notify slack: delivered" in second.stdout and "2 tries" in second.stdout
        assert "notify webhook: already delivered for 2026-11-01" in second.stdout
        assert "notify email: already delivered for 2026-11-01" in second.stdout
        # Run 3: nothing left to deliver.
        assert third.returncode == 0, third.stderr
        assert third.stdout.count("already delivered") == 3

        # Exactly one delivery per channel (the failed tries are seen, and not counted).
        assert len(receiver.delivered(SLACK_PATH)) == 1
        assert len(receiver.delivered(HOOK_PATH)) == 1
        assert len(relay.messages) == 1 and relay.refused == 2
        assert [p.status for p in receiver.posted if p.path == SLACK_PATH] == [
            500,
            500,
            500,
            0,
            200,
        ]
        # Every try of a channel carries the same idempotency key (a receiver may de-duplicate).
        keys = {p.headers["Idempotency-Key"] for p in receiver.posted if p.path == HOOK_PATH}
        assert len(keys) == 1
    for run in runs:
        _no_secret(run.stdout, run.stderr, folder=tmp_path / "out")
    records = sorted(p.name for p in (out / "deliveries").iterdir())
    assert records == [
        "nightly-2026-11-01.email.json",
        "nightly-2026-11-01.slack.json",
        "nightly-2026-11-01.webhook.json",
    ]
    slack_record = json.loads((out / "deliveries" / records[1]).read_text())
    assert slack_record["target"] == receiver.url and slack_record["status"] == 200


def test_payloads_say_the_pages_first_answers_and_stay_small(tmp_path: Path) -> None:
    snap, out = _snapshot(tmp_path), tmp_path / "out"
    with http_receiver() as receiver, smtp_relay(tmp_path, USER, PASSWORD) as relay:
        run = _invoke(["report", "nightly", str(snap), "--out", str(out), *_notify_args(relay)],
                   _env(receiver))  # fmt: skip
        assert run.returncode == 0, run.stderr
        (slack,) = receiver.delivered(SLACK_PATH)
        (hook,) = receiver.delivered(HOOK_PATH)
        (mail,) = relay.messages
    page = json.loads((out / "2026-11-01" / "report.json").read_text())
    for body in (slack.body, hook.body):
        assert len(body) < 40_000
    slack_json = json.loads(slack.body)
    assert set(slack_json) == {"text", "blocks"}
    # tiny_cluster: node-0 is the one hot node of 4; the message says it as the page does.
    assert slack_json["text"].startswith("analyzer nightly report 2026-11-01: 1 of 4 node(s)")
    assert page["answers"]["hot"].split(".")[0] in slack_json["text"]
    assert "https://reports.example.org/nightly/" in slack_json["text"]
    summary = json.loads(hook.body)
    assert summary["kind"] == "nightly" and summary["key"] == "2026-11-01"
    assert (
        summary["summary"]["nodes_with_breaches"]
        == page["summary"]["nodes_with_breaches"]["value"]
        == 1
    )
    assert summary["summary"]["coverage_pct"] == page["summary"]["coverage_pct"]["value"]
    png = base64.b64decode(summary["chart_png_base64"])
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) < 12_000
    # The e-mail: the answers in text, the chart inline, the report attached (it is < 5 MB).
    assert mail["Subject"].startswith("analyzer nightly report 2026-11-01")
    parts = {part.get_content_type(): part for part in mail.walk()}
    assert "image/png" in parts
    attached = [p for p in mail.walk() if p.get_filename() == "nightly-2026-11-01.html"]
    assert len(attached) == 1
    assert attached[0].get_payload(decode=True) == (out / "2026-11-01" / "report.html").read_bytes()
    assert relay.logins == [USER.encode()]


def test_each_report_day_is_delivered_once(tmp_path: Path) -> None:
    snap, out = _snapshot(tmp_path, days=2), tmp_path / "out"
    with http_receiver() as receiver:
        env = _env(receiver)
        args = ["report", "nightly", str(snap), "--out", str(out), "--notify", "webhook",
                "--notify-webhook-url-env", "HOOK_URL"]  # fmt: skip
        for day in ("2026-11-01", "2026-11-02", "2026-11-01", "2026-11-02"):
            assert _invoke([*args, "--date", day], env).returncode == 0
        keys = [json.loads(p.body)["key"] for p in receiver.delivered(HOOK_PATH)]
        assert keys == ["2026-11-01", "2026-11-02"]
        # The record is the only guard (at-least-once): without it the day goes again, with
        # the same Idempotency-Key, so a receiver that de-duplicates can drop it.
        (out / "deliveries" / "nightly-2026-11-01.webhook.json").unlink()
        assert _invoke([*args, "--date", "2026-11-01"], env).returncode == 0
        again = receiver.delivered(HOOK_PATH)
    assert [json.loads(p.body)["key"] for p in again] == ["2026-11-01", "2026-11-02", "2026-11-01"]
    assert again[0].headers["Idempotency-Key"] == again[2].headers["Idempotency-Key"]
    assert again[0].headers["Idempotency-Key"] != again[1].headers["Idempotency-Key"]


def test_an_untrusted_relay_certificate_is_not_retried(tmp_path: Path) -> None:
    snap, out = _snapshot(tmp_path), tmp_path / "out"
    with smtp_relay(tmp_path, USER, PASSWORD) as relay:
        args = [a for a in _notify_args(relay) if a != str(relay.cert)]
        args = args[args.index("email") - 1 : args.index("--report-url")]
        args.remove("--notify-ca-bundle")
        run = _invoke(["report", "nightly", str(snap), "--out", str(out), *args,
                    "--notify-backoff", "0"], {"RELAY_PASSWORD": PASSWORD})  # fmt: skip
        assert relay.messages == [] and relay.logins == []
    assert run.returncode == documented_exit("notify-tls-untrusted") == 5
    (line,) = run.stderr.splitlines()
    assert "TLS certificate not trusted" in line and "--notify-ca-bundle" in line
    assert "(1 try)" in line  # a certificate does not get better on a second try
    assert (out / "2026-11-01" / "report.html").is_file()
    assert not (out / "deliveries").exists()


def test_a_refused_login_names_the_user_never_the_password(tmp_path: Path) -> None:
    snap, out = _snapshot(tmp_path), tmp_path / "out"
    with smtp_relay(tmp_path, USER, "another-password") as relay:
        args = _notify_args(relay)
        args = args[args.index("email") - 1 : args.index("--report-url")]
        run = _invoke(["report", "nightly", str(snap), "--out", str(out), *args],
                   {"RELAY_PASSWORD": PASSWORD})  # fmt: skip
        assert relay.messages == []
    assert run.returncode == documented_exit("notify-smtp-login") == 5
    (line,) = run.stderr.splitlines()
    assert f"refused the login of {USER} (535)" in line
    _no_secret(run.stdout, run.stderr, folder=out)


def test_the_monthly_review_announces_each_pools_decision_once(tmp_path: Path) -> None:
    from datetime import date

    from monthly_history import PoolTruth, write_history

    write_history(tmp_path / "h", date(2026, 8, 1), 61, [PoolTruth("a"), PoolTruth("b")])
    out = tmp_path / "review"
    with http_receiver() as receiver:
        args = ["report", "monthly", str(tmp_path / "h"), "--out", str(out), "--notify",
                "webhook", "--notify-webhook-url-env", "HOOK_URL"]  # fmt: skip
        runs = [_invoke(args, _env(receiver)) for _ in range(2)]
        delivered = receiver.delivered(HOOK_PATH)
    assert [r.returncode for r in runs] == [0, 0], runs[0].stderr
    assert "notify webhook: already delivered for 2026-09" in runs[1].stdout
    (hook,) = delivered  # the re-written review kept its record: no second message
    body = json.loads(hook.body)
    page = json.loads((out / "report.json").read_text())
    assert body["key"] == page["month"] == "2026-09"
    assert [p["name"] for p in body["summary"]["pools"]] == ["a", "b"]
    for pool, line in zip(page["pools"], body["lines"], strict=True):
        assert line == f"{pool['name']}: {pool['decision']['sentence']}"
    assert (out / "deliveries" / "monthly-2026-09.webhook.json").is_file()


def test_a_relay_without_starttls_gets_neither_mail_nor_password(tmp_path: Path) -> None:
    snap, out = _snapshot(tmp_path), tmp_path / "out"
    with smtp_relay(tmp_path, USER, PASSWORD, tls=False) as relay:
        args = _notify_args(relay)
        args = args[args.index("email") - 1 : args.index("--report-url")]
        run = _invoke(["report", "nightly", str(snap), "--out", str(out), *args],
                      {"RELAY_PASSWORD": PASSWORD})  # fmt: skip
        assert relay.messages == [] and relay.logins == []
    assert run.returncode == documented_exit("notify-smtp-no-starttls") == 5
    (line,) = run.stderr.splitlines()
    assert "does not offer STARTTLS" in line and "(1 try)" in line
    assert (out / "2026-11-01" / "report.html").is_file()


def test_an_https_webhook_behind_a_private_ca_needs_the_ca_bundle(tmp_path: Path) -> None:
    snap, out = _snapshot(tmp_path), tmp_path / "out"
    cert, key = self_signed_cert(tmp_path)
    with http_receiver(tls=(cert, key)) as receiver:
        args = ["report", "nightly", str(snap), "--out", str(out), "--notify", "webhook",
                "--notify-webhook-url-env", "HOOK_URL", "--notify-backoff", "0"]  # fmt: skip
        untrusted = _invoke(args, _env(receiver))
        assert receiver.posted == []  # the handshake failed: nothing was sent
        trusted = _invoke([*args, "--notify-ca-bundle", str(cert)], _env(receiver))
        assert len(receiver.delivered(HOOK_PATH)) == 1
    assert receiver.url.startswith("https://")
    assert untrusted.returncode == documented_exit("notify-tls-untrusted") == 5
    (line,) = untrusted.stderr.splitlines()
    assert f"{receiver.url}: TLS certificate not trusted" in line and "(1 try)" in line
    assert trusted.returncode == 0, trusted.stderr
    _no_secret(untrusted.stdout, untrusted.stderr, trusted.stdout, folder=out)
