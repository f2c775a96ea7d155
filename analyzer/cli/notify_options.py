"""``--notify`` and its companions on ``report nightly`` and ``report monthly``: one decorator,
one settings builder, one publish call per command (docs/delivery.md).

Secrets (webhook URLs, the SMTP password) are named, never given: ``--notify-slack-url-env NAME``
or ``--notify-slack-url-file FILE``. The config file sets any of these by option name, at top
level or under ``report-nightly:`` / ``report-monthly:``, and can therefore hold every channel at
once without a secret in it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from analyzer.deliver.message import Message
from analyzer.deliver.publish import deliver
from analyzer.deliver.record import RECORDS_FOLDER
from analyzer.deliver.secrets import SecretSource
from analyzer.deliver.settings import (
    CHANNELS,
    DEFAULT_BACKOFF_SECONDS,
    DEFAULT_TIMEOUT_SECONDS,
    DEFAULT_TRIES,
    EmailSettings,
    NotifySettings,
    Resolved,
    resolve,
)

F = TypeVar("F", bound=Callable[..., Any])
_FILE = click.Path(dir_okay=False, path_type=Path)


def notify_options(func: F) -> F:
    """Add the delivery options to a report command (applied with one line per command)."""
    options = [
        click.option("--notify", "notify", multiple=True, type=click.Choice(CHANNELS),
                     help="Tell the team once the report is written: slack (Slack-compatible "
                     "incoming webhook), webhook (POST the summary JSON), email (SMTP relay, "
                     "STARTTLS). Repeatable; docs/delivery.md."),
        click.option("--report-url", metavar="URL",
                     help="Where the team opens the report (put in every message)."),
        click.option("--notify-slack-url-env", metavar="NAME",
                     help="Environment variable holding the Slack incoming-webhook URL."),
        click.option("--notify-slack-url-file", type=_FILE,
                     help="File holding the Slack incoming-webhook URL."),
        click.option("--notify-webhook-url-env", metavar="NAME",
                     help="Environment variable holding the generic webhook URL."),
        click.option("--notify-webhook-url-file", type=_FILE,
                     help="File holding the generic webhook URL."),
        click.option("--notify-smtp", metavar="HOST[:PORT]",
                     help="The team's SMTP relay (default port 587; STARTTLS required)."),
        click.option("--notify-smtp-user", metavar="USER", help="SMTP login user."),
        click.option("--notify-smtp-password-env", metavar="NAME",
                     help="Environment variable holding the SMTP password."),
        click.option("--notify-smtp-password-file", type=_FILE,
                     help="File holding the SMTP password."),
        click.option("--notify-from", metavar="ADDRESS", help="Sender address of the e-mail."),
        click.option("--notify-to", multiple=True, metavar="ADDRESS",
                     help="Recipient address, repeatable."),
        click.option("--notify-ca-bundle", type=_FILE,
                     help="CA bundle for the relay's and webhooks' TLS (a private CA)."),
        click.option("--notify-tries", type=int, default=DEFAULT_TRIES, show_default=True,
                     help="Tries per channel (1..10)."),
        click.option("--notify-backoff", type=float, default=DEFAULT_BACKOFF_SECONDS,
                     show_default=True, help="Seconds before the 2nd try, doubled after."),
        click.option("--notify-timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS,
                     show_default=True, help="Seconds each try may take."),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return func


def notify_settings(opts: dict[str, Any]) -> Resolved | None:
    """The checked delivery settings with their secrets read (None without ``--notify``).

    Called before the report's work, so a bad option is exit 2 at once."""
    settings = NotifySettings(
        channels=tuple(dict.fromkeys(opts["notify"] or ())),
        slack_url=SecretSource(
            "--notify-slack-url-env",
            "--notify-slack-url-file",
            opts["notify_slack_url_env"],
            opts["notify_slack_url_file"],
        ),
        webhook_url=SecretSource(
            "--notify-webhook-url-env",
            "--notify-webhook-url-file",
            opts["notify_webhook_url_env"],
            opts["notify_webhook_url_file"],
        ),
        email=EmailSettings(
            relay=opts["notify_smtp"],
            user=opts["notify_smtp_user"],
            password=SecretSource(
                "--notify-smtp-password-env",
                "--notify-smtp-password-file",
                opts["notify_smtp_password_env"],
                opts["notify_smtp_password_file"],
            ),
            sender=opts["notify_from"],
            recipients=tuple(opts["notify_to"] or ()),
        ),
        ca_bundle=opts["notify_ca_bundle"],
        report_url=opts["report_url"],
        tries=opts["notify_tries"],
        backoff=opts["notify_backoff"],
        timeout=opts["notify_timeout"],
    )
    return resolve(settings)


def publish(resolved: Resolved | None, message: Message, out: Path) -> None:
    """Deliver ``message`` on every channel once; records under ``out/deliveries/``.

    Raises ``PublishError`` (exit 5) after trying every channel, if any failed."""
    if resolved is None:
        return
    deliver(message, resolved, Path(out) / RECORDS_FOLDER, say=click.echo)
