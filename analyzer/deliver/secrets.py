"""Secrets for delivery (webhook URLs, the SMTP password): taken from a file or an environment
variable, never from a flag or the config file in clear, never printed.

A webhook URL is itself a credential (a Slack incoming-webhook URL lets anyone post to the
channel), so it is handled as one: only its scheme and host are ever shown (``public_target``).
What a secret option names is checked as a name or a path before anything can print it: a user who
pastes the secret where its name belongs must not find it in a cron mail.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from analyzer.core.errors import InputError
from analyzer.core.secrets import (
    NOT_SHOWN,
    check_env_name,
    check_path_shape,
    read_secret_env,
    read_secret_file,
)


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
        if self.env:
            check_env_name(self.env_option, self.env, example="SLACK_WEBHOOK_URL")
        if self.file is not None:
            check_path_shape(self.file_option, self.file)

    def read(self) -> str:
        """The secret, stripped of surrounding white space; ``InputError`` if missing or empty."""
        self.check()
        if self.file is not None:
            return read_secret_file(self.file_option, self.file)
        if self.env:
            return read_secret_env(self.env_option, self.env, example="SLACK_WEBHOOK_URL")
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
