"""Connection settings for a Prometheus-compatible HTTP API (Prometheus, Thanos, Mimir, VictoriaMetrics).

Secrets never live in these settings as plain values: the bearer token comes from a file or an
environment variable, the basic-auth password from an environment variable, and they are read only
when the client is built. ``public_url`` is what may be printed or stored (``meta.json``).
"""

from __future__ import annotations

import ipaddress
import math
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from analyzer.core.errors import InputError

DEFAULT_TIMEOUT_SECONDS = 120.0
DEFAULT_PARALLELISM = 4
DEFAULT_RETRIES = 3
# The whole run's time limit: generous (a 5,000-node week takes minutes), yet a hung server ends a
# nightly job the same night.
DEFAULT_DEADLINE_SECONDS = 2 * 3600.0


@dataclass(frozen=True)
class PromSettings:
    """How to reach the metrics store. ``url`` includes any path prefix (``/prometheus`` for Mimir)."""

    url: str
    token_file: Path | None = None
    token_env: str | None = None
    basic_auth_user: str | None = None
    basic_auth_password_env: str | None = None
    ca_bundle: Path | None = None
    insecure_skip_verify: bool = False
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    parallelism: int = DEFAULT_PARALLELISM
    retries: int = DEFAULT_RETRIES  # further tries of a request after a 5xx, 429 or broken body
    backoff: float = 0.5  # seconds before the first retry; doubled on every further one
    deadline: float = DEFAULT_DEADLINE_SECONDS  # seconds for the whole run (``--deadline``)


def normalise_url(url: str) -> str:
    """Validate ``url`` (http/https with a host) and drop a trailing slash."""
    text = (url or "").strip()
    if not text:
        raise InputError(
            "--prometheus: no URL given; pass --prometheus URL, set ANALYZER_PROMETHEUS_URL "
            "or 'prometheus' in the config file"
        )
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(
            f"--prometheus: {public_url(text)!r} is not an http(s) URL (expected e.g. http://prometheus:9090)"
        )
    return text.rstrip("/")


def is_loopback(url: str) -> bool:
    """True when ``url``'s host is this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def public_url(url: str) -> str:
    """``url`` without user info, query string or fragment: safe to print and to store."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return "<invalid URL>"
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def parse_headers(items: tuple[str, ...] | list[str]) -> tuple[tuple[str, str], ...]:
    """Parse repeated ``--header K=V`` (or ``K: V``) options."""
    out: list[tuple[str, str]] = []
    for item in items:
        sep = "=" if "=" in item else ":"
        key, found, value = item.partition(sep)
        if not found or not key.strip():
            # Never echo the value: a mistyped header may well be a credential.
            raise InputError(f"--header #{len(out) + 1}: expected K=V (e.g. X-Scope-OrgID=team-a)")
        out.append((key.strip(), value.strip()))
    return tuple(out)


def bearer_token(settings: PromSettings) -> str | None:
    """The bearer token from ``token_file`` or ``token_env``, or None. Never logged."""
    if settings.token_file is not None:
        try:
            token = Path(settings.token_file).read_text().strip()
        except OSError as exc:
            raise InputError(
                f"--token-file: cannot read {settings.token_file} ({exc.strerror})"
            ) from None
        if not token:
            raise InputError(f"--token-file: {settings.token_file} is empty")
        return token
    if settings.token_env:
        token = os.environ.get(settings.token_env, "").strip()
        if not token:
            raise InputError(
                f"--token-env: environment variable {settings.token_env} is not set or empty"
            )
        return token
    return None


def basic_auth(settings: PromSettings) -> tuple[str, str] | None:
    """(user, password) for basic auth, the password read from its environment variable."""
    if settings.basic_auth_user is None:
        if settings.basic_auth_password_env:
            raise InputError("--basic-auth-password-env: needs --basic-auth-user as well")
        return None
    if not settings.basic_auth_password_env:
        raise InputError(
            "--basic-auth-user: needs --basic-auth-password-env NAME (the password is never a flag)"
        )
    password = os.environ.get(settings.basic_auth_password_env)
    if password is None:
        raise InputError(
            f"--basic-auth-password-env: environment variable {settings.basic_auth_password_env} is not set"
        )
    return settings.basic_auth_user, password


def check_settings(settings: PromSettings) -> None:
    """Reject impossible combinations early, each with a one-line fix."""
    if settings.token_file is not None and settings.token_env:
        raise InputError("--token-file and --token-env: give only one")
    if settings.ca_bundle is not None and not Path(settings.ca_bundle).is_file():
        raise InputError(f"--ca-bundle: {settings.ca_bundle} is not a file")
    check_limits(settings)


def check_limits(settings: PromSettings) -> None:
    """``--timeout``, ``--deadline`` and ``--parallelism``: positive and finite (0 is no default)."""
    if not (math.isfinite(settings.timeout) and settings.timeout > 0):
        raise InputError(f"--timeout: {settings.timeout:g} must be a number of seconds > 0")
    if not (math.isfinite(settings.deadline) and settings.deadline > 0):
        raise InputError(f"--deadline: {settings.deadline:g}s must be a duration > 0 (e.g. 30m)")
    if not 1 <= settings.parallelism <= 64:
        raise InputError(f"--parallelism: {settings.parallelism} must be between 1 and 64")
