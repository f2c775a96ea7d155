"""Secrets for delivery (webhook URLs, the SMTP password): taken from a file or an environment
variable, never from a flag or the config file in clear, never printed.

A webhook URL is itself a credential (a Slack incoming-webhook URL lets anyone post to the
channel), so it is handled as one: only its scheme and host are ever shown (``public_target``).
What a secret option names is checked as a name or a path before anything can print it: a user who
pastes the secret where its name belongs must not find it in a cron mail.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from analyzer.core.errors import InputError

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NOT_SHOWN = "(it is not shown, in case it is the secret itself)"


@dataclass(frozen=True)
class SecretSource:
    """Where one secret comes from: an environment variable or a file (exactly one).

    ``env_option`` and ``file_option`` are the option names messages cite (``--notify-slack-url-env``).
    """

    env_option: str
    file_option: str
    env: str | None = None
    file: Path | None = None

    @property
    def given(self) -> bool:
        """True when the user named a variable or a file."""
        return bool(self.env) or self.file is not None

    def check(self) -> None:
        """The name is a variable name, the path is path-shaped, not both (nothing echoed)."""
        if self.env and self.file is not None:
            raise InputError(f"{self.env_option} and {self.file_option}: give only one")
        if self.env and not _ENV_NAME.fullmatch(self.env):
            raise InputError(
                f"{self.env_option}: the value is not a valid environment variable name "
                f"{NOT_SHOWN}; give the NAME of a variable that holds the secret, e.g. "
                f"{self.env_option} SLACK_WEBHOOK_URL"
            )
        if self.file is not None:
            text = str(self.file)
            if (
                not text.strip()
                or len(text) > 4096
                or "://" in text
                or any(ord(ch) < 32 or ord(ch) == 127 for ch in text)
            ):
                raise InputError(
                    f"{self.file_option}: the value is not a file path {NOT_SHOWN}; give the path "
                    "of a file holding the secret"
                )

    def read(self) -> str:
        """The secret, stripped of surrounding white space; ``InputError`` if missing or empty."""
        self.check()
        if self.file is not None:
            try:
                value = Path(self.file).read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as exc:
                # A path that exists is a path and may be shown; one that does not may be a secret.
                shown = str(self.file) if os.path.lexists(self.file) else f"the file {NOT_SHOWN}"
                reason = getattr(exc, "strerror", None) or "not UTF-8 text"
                raise InputError(
                    f"{self.file_option}: cannot read {shown} ({reason}); give the path of a "
                    "file holding the secret"
                ) from None
            if not value:
                raise InputError(f"{self.file_option}: {self.file} is empty")
            return value
        if self.env:
            value = os.environ.get(self.env, "").strip()
            if not value:
                raise InputError(
                    f"{self.env_option}: the environment variable {self.env} is not set or empty; "
                    "export it before running analyzer"
                )
            return value
        raise InputError(f"give {self.env_option} NAME or {self.file_option} FILE")


def public_target(url: str) -> str:
    """What may be printed of a webhook URL: its scheme and host (and port), never the path,
    whose token is the credential."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or "?"
        port = parts.port
    except ValueError:
        return "<invalid URL>"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


def webhook_url(source: SecretSource) -> str:
    """The webhook URL from its secret source, checked to be http(s) with a host (not shown)."""
    url = source.read()
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port that is not a number raises here, not in the first try
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        userinfo = "@" in parts.netloc
    except ValueError:
        ok, userinfo = False, False
    origin = f"the environment variable {source.env}" if source.env else str(source.file)
    if not ok or any(ch.isspace() for ch in url):
        raise InputError(
            f"{source.env_option if source.env else source.file_option}: {origin} does not hold "
            f"an http(s) URL {NOT_SHOWN}; put the webhook URL there"
        )
    if userinfo:
        raise InputError(
            f"{source.env_option if source.env else source.file_option}: the URL in {origin} "
            "holds a user name/password; incoming webhooks carry their token in the path"
        )
    return url
