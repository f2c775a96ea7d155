"""``--notify`` options refused before any work: secrets in clear, missing secrets, incomplete
channels. One stderr line, exit 2, nothing written, no secret printed (docs/delivery.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from reliability_doc import documented_exit
from report_snapshots import tiny_cluster

from analyzer.cli import main
from analyzer.core.snapshot import write_snapshot

HOOK = "https://hooks.slack.com/services/T000/B000/SuperSecretToken42"


def _nightly(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Result:
    snap = tmp_path / "snap"
    if not snap.exists():
        write_snapshot(tiny_cluster(), snap)
    return CliRunner().invoke(
        main, ["report", "nightly", str(snap), "--out", str(tmp_path / "out"), *args], env=env
    )


def _one_line(result: Result, code: int) -> str:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("analyzer: error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--notify", "slack", "--notify-slack-url-env", HOOK], "--notify-slack-url-env"),
        (["--notify", "slack", "--notify-slack-url-file", HOOK], "--notify-slack-url-file"),
        (["--notify", "webhook", "--notify-webhook-url-env", HOOK], "--notify-webhook-url-env"),
        (
            [
                "--notify",
                "email",
                "--notify-smtp",
                "relay:587",
                "--notify-smtp-user",
                "u",
                "--notify-smtp-password-env",
                "hunter2 SuperSecretToken42",
            ],
            "--notify-smtp-password-env",
        ),
    ],
)
def test_a_secret_where_its_name_belongs_is_refused_unseen(
    tmp_path: Path, args: list[str], option: str
) -> None:
    line = _one_line(_nightly(tmp_path, *args), documented_exit("notify-secret-clear"))
    assert line.startswith(f"analyzer: error: {option}:") and "not shown" in line
    assert "SuperSecretToken42" not in line
    assert not (tmp_path / "out").exists()  # refused before any work


def test_a_webhook_url_in_clear_in_the_config_file_is_refused_unseen(tmp_path: Path) -> None:
    config = tmp_path / "analyzer.yaml"
    config.write_text(f"report-nightly:\n  notify: [slack]\n  notify_slack_url_env: {HOOK}\n")
    snap = tmp_path / "snap"
    write_snapshot(tiny_cluster(), snap)
    result = CliRunner().invoke(
        main,
        ["--config", str(config), "report", "nightly", str(snap), "--out", str(tmp_path / "o")],
    )
    line = _one_line(result, documented_exit("notify-secret-clear"))
    assert "--notify-slack-url-env" in line and "SuperSecretToken42" not in result.output
    # And there is no option that takes the URL itself: click names the right ones.
    direct = _nightly(tmp_path, "--notify", "slack", "--notify-slack-url", HOOK)
    assert direct.exit_code == 2 and "SuperSecretToken42" not in direct.output


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (
            ["--notify", "slack"],
            {},
            "--notify slack: needs --notify-slack-url-env NAME or --notify-slack-url-file FILE",
        ),
        (
            ["--notify", "webhook", "--notify-webhook-url-env", "HOOK_URL"],
            {},
            "--notify-webhook-url-env: the environment variable it names is not set or empty",
        ),
        (
            ["--notify", "webhook", "--notify-webhook-url-env", "HOOK_URL"],
            {"HOOK_URL": "hooks.example.org/SuperSecretToken42"},
            "--notify-webhook-url-env: the environment variable HOOK_URL does not hold an http(s) URL",
        ),
        (
            ["--notify", "email", "--notify-from", "a@example.org", "--notify-to", "b@example.org"],
            {},
            "--notify email: needs --notify-smtp HOST[:PORT]",
        ),
        (
            ["--notify", "email", "--notify-smtp", "relay", "--notify-from", "a@example.org"],
            {},
            "--notify email: needs --notify-to ADDRESS",
        ),
        (
            [
                "--notify",
                "email",
                "--notify-smtp",
                "relay",
                "--notify-from",
                "a@example.org",
                "--notify-to",
                "b@example.org",
                "--notify-smtp-user",
                "u",
            ],
            {},
            "--notify-smtp-user: needs --notify-smtp-password-env NAME or --notify-smtp-password-file",
        ),
        (
            [
                "--notify",
                "email",
                "--notify-smtp",
                "relay",
                "--notify-from",
                "a@example.org",
                "--notify-to",
                "b@example.org\nBcc: x@evil.example",
            ],
            {},
            "--notify-to: 'b@example.org\\nBcc: x@evil.example' is not a plain e-mail address",
        ),
        (
            ["--notify", "webhook", "--notify-webhook-url-env", "H", "--report-url", "ftp://x"],
            {"H": HOOK},
            "--report-url: not an http(s) URL",
        ),
        (
            ["--notify", "webhook", "--notify-webhook-url-env", "H", "--notify-tries", "0"],
            {"H": HOOK},
            "--notify-tries: 0 must be between 1 and 10",
        ),
    ],
)
def test_an_incomplete_channel_is_refused_before_any_work(
    tmp_path: Path, args: list[str], env: dict[str, str], expected: str
) -> None:
    result = _nightly(tmp_path, *args, env={"HOOK_URL": "", **env})
    line = _one_line(result, documented_exit("notify-incomplete"))
    assert expected in line, line
    assert "SuperSecretToken42" not in result.output
    assert not (tmp_path / "out").exists()


def test_monthly_takes_the_same_options(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["report", "monthly", str(tmp_path / "h"), "--out", str(tmp_path / "r"),
         "--notify", "slack", "--notify-slack-url-env", HOOK],
    )  # fmt: skip
    line = _one_line(result, documented_exit("notify-secret-clear"))
    assert line.startswith("analyzer: error: --notify-slack-url-env:")
    assert "SuperSecretToken42" not in result.output


def test_the_documented_config_example_is_accepted() -> None:
    import re

    import yaml

    from analyzer.cli.base import command_options
    from analyzer.core.config import build_default_map

    doc = (Path(__file__).resolve().parents[1] / "docs" / "delivery.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", doc, re.S)
    assert block is not None
    defaults = build_default_map(yaml.safe_load(block.group(1)), command_options(main))
    nightly, monthly = defaults["report-nightly"], defaults["report-monthly"]
    assert nightly["notify"] == ["slack", "email"] and monthly["notify"] == ["email"]
    assert nightly["notify_slack_url_env"] == monthly["notify_slack_url_env"] == "SLACK_WEBHOOK_URL"
    assert nightly["report_url"] == "https://reports.example.org/nightly/"
    assert "report_url" not in monthly
    assert monthly["notify_to"] == ["platform@example.org", "capacity@example.org"]
