"""What ``--notify`` asks for: the channels, where their secrets come from, how hard to try.

Every check here runs before the report's work starts, so a mistyped option costs nothing but
one line (exit 2). The secrets themselves are read here too (a variable that is not set is a
configuration error, better found before an hour of collection than after it), and are kept only
in ``Resolved`` values that are never printed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from analyzer.core.errors import InputError
from analyzer.deliver.secrets import SecretSource, webhook_url

CHANNELS = ("slack", "webhook", "email")
DEFAULT_SMTP_PORT = 587  # message submission with STARTTLS (RFC 6409)
DEFAULT_TRIES = 3
DEFAULT_BACKOFF_SECONDS = 2.0
DEFAULT_TIMEOUT_SECONDS = 10.0
# A plain address: something@host, no display name, no line breaks (they would inject headers).
_ADDRESS = re.compile(r"[^@\s<>,;\"]+@[A-Za-z0-9.-]+")


@dataclass(frozen=True)
class EmailSettings:
    """The team's SMTP relay: ``host:port``, STARTTLS always, login when ``user`` is given."""

    relay: str | None = None
    user: str | None = None
    password: SecretSource = field(
        default_factory=lambda: SecretSource(
            "--notify-smtp-password-env", "--notify-smtp-password-file"
        )
    )
    sender: str | None = None
    recipients: tuple[str, ...] = ()


@dataclass(frozen=True)
class NotifySettings:
    """``--notify`` and its companions (docs/delivery.md)."""

    channels: tuple[str, ...] = ()
    slack_url: SecretSource = field(
        default_factory=lambda: SecretSource("--notify-slack-url-env", "--notify-slack-url-file")
    )
    webhook_url: SecretSource = field(
        default_factory=lambda: SecretSource(
            "--notify-webhook-url-env", "--notify-webhook-url-file"
        )
    )
    email: EmailSettings = field(default_factory=EmailSettings)
    ca_bundle: Path | None = None
    report_url: str | None = None
    tries: int = DEFAULT_TRIES
    backoff: float = DEFAULT_BACKOFF_SECONDS
    timeout: float = DEFAULT_TIMEOUT_SECONDS


@dataclass(frozen=True)
class Resolved:
    """Checked settings with the secrets read: what the senders use. Never printed."""

    settings: NotifySettings
    urls: dict[str, str]  # channel → webhook URL (a credential)
    relay_host: str = ""
    relay_port: int = DEFAULT_SMTP_PORT
    smtp_password: str | None = None

    def __repr__(self) -> str:  # a stray repr in a log must not show a secret
        return f"Resolved(channels={self.settings.channels!r})"


def resolve(settings: NotifySettings) -> Resolved | None:
    """Check ``settings`` and read the secrets; None when no channel is asked for."""
    if not settings.channels:
        return None
    unknown = [c for c in settings.channels if c not in CHANNELS]
    if unknown:
        raise InputError(
            f"--notify: {unknown[0]!r} is not a channel; give one or more of {', '.join(CHANNELS)}"
        )
    _check_limits(settings)
    if settings.ca_bundle is not None and not Path(settings.ca_bundle).is_file():
        raise InputError(f"--notify-ca-bundle: {settings.ca_bundle} is not a file")
    if settings.report_url is not None:
        _check_report_url(settings.report_url)
    urls: dict[str, str] = {}
    for channel, source in (("slack", settings.slack_url), ("webhook", settings.webhook_url)):
        source.check()
        if channel in settings.channels:
            if not source.given:
                raise InputError(
                    f"--notify {channel}: needs {source.env_option} NAME or {source.file_option} "
                    "FILE (the URL is a credential, never a flag)"
                )
            urls[channel] = webhook_url(source)
    settings.email.password.check()
    if "email" not in settings.channels:
        return Resolved(settings, urls)
    host, port = _relay(settings.email.relay)
    _check_addresses(settings.email)
    password = None
    if settings.email.user is not None:
        if not settings.email.password.given:
            raise InputError(
                "--notify-smtp-user: needs --notify-smtp-password-env NAME or "
                "--notify-smtp-password-file FILE (the password is never a flag)"
            )
        password = settings.email.password.read()
    elif settings.email.password.given:
        raise InputError("--notify-smtp-password-env/-file: needs --notify-smtp-user as well")
    return Resolved(settings, urls, host, port, password)


def _check_limits(settings: NotifySettings) -> None:
    if not 1 <= settings.tries <= 10:
        raise InputError(f"--notify-tries: {settings.tries} must be between 1 and 10")
    if not (math.isfinite(settings.backoff) and 0 <= settings.backoff <= 60):
        raise InputError(f"--notify-backoff: {settings.backoff:g} must be 0..60 seconds")
    if not (math.isfinite(settings.timeout) and 0 < settings.timeout <= 300):
        raise InputError(f"--notify-timeout: {settings.timeout:g} must be in (0, 300] seconds")


def _check_report_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        userinfo = "@" in parts.netloc
    except ValueError:
        ok, userinfo = False, False
    if not ok or any(ch.isspace() for ch in url):
        raise InputError(
            "--report-url: not an http(s) URL; give where the team opens the reports, e.g. "
            "https://reports.example.com/nightly/"
        )
    if userinfo:
        raise InputError(
            "--report-url: the URL holds a user name/password, which would be sent in every "
            "message; drop it from the URL"
        )


def _relay(relay: str | None) -> tuple[str, int]:
    """``host`` or ``host:port`` (``[v6]:port``) of the SMTP relay."""
    if not relay:
        raise InputError("--notify email: needs --notify-smtp HOST[:PORT] (the team's relay)")
    match = re.fullmatch(r"\[?([A-Za-z0-9.:-]+?)\]?(?::(\d{1,5}))?", relay.strip())
    if match is None:
        raise InputError(f"--notify-smtp: {relay!r} is not HOST or HOST:PORT")
    port = int(match[2]) if match[2] else DEFAULT_SMTP_PORT
    if not 0 < port < 65536:
        raise InputError(f"--notify-smtp: port {port} is not 1..65535")
    return match[1], port


def _check_addresses(email: EmailSettings) -> None:
    if not email.recipients:
        raise InputError("--notify email: needs --notify-to ADDRESS (repeatable)")
    if email.sender is None:
        raise InputError("--notify email: needs --notify-from ADDRESS")
    for option, address in [("--notify-from", email.sender)] + [
        ("--notify-to", a) for a in email.recipients
    ]:
        if not _ADDRESS.fullmatch(address):
            raise InputError(
                f"{option}: {address!r} is not a plain e-mail address (name@host, no display "
                "name or line break)"
            )
