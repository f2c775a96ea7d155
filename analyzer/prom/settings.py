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

from analyzer.core import secrets
from analyzer.core.errors import InputError
from analyzer.prom.thanos import ThanosParams

DEFAULT_TIMEOUT_SECONDS = 120.0
DEFAULT_PARALLELISM = 4
# The query budget (docs/collect.md "Query budget"): at most this many points per series in one
# response (12 h at 1 m: small responses, many requests to run in parallel) and never more than
# Prometheus' own limit of 11,000; at most 64 requests in flight.
DEFAULT_MAX_POINTS = 720
MAX_POINTS_LIMIT = 11_000
MAX_IN_FLIGHT_LIMIT = 64
DEFAULT_RETRIES = 3
# The whole run's time limit: generous (a 5,000-node week takes minutes), yet a hung server ends a
# nightly job the same night.
DEFAULT_DEADLINE_SECONDS = 2 * 3600.0

# What a secret option names is checked as a name, and never printed: a user who pastes the token
# itself where its name belongs must not find it in a cron mail.
_NOT_SHOWN = secrets.NOT_SHOWN
# Headers that carry a credential: never accepted in clear from a flag or the config file.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})


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
    parallelism: int = DEFAULT_PARALLELISM  # ``--max-in-flight``: requests in flight at most
    max_points: int = DEFAULT_MAX_POINTS  # ``--max-points-per-request``: points per series at most
    retries: int = DEFAULT_RETRIES  # further tries of a request after a 5xx, 429 or broken body
    backoff: float = 0.5  # seconds before the first retry; doubled on every further one
    deadline: float = DEFAULT_DEADLINE_SECONDS  # seconds for the whole run (``--deadline``)
    thanos: ThanosParams | None = None  # ``--thanos``: the querier's own parameters on every query
    # ``--cluster-label NAME --cluster X``: (NAME, X) added to every selector (prom/selectors.py)
    select: tuple[str, str] | None = None


def normalise_url(url: str) -> str:
    """Validate ``url`` (http/https with a host) and drop a trailing slash."""
    text = (url or "").strip()
    if not text:
        raise InputError(
            "--prometheus: no URL given; pass --prometheus URL, set ANALYZER_PROMETHEUS_URL "
            "or 'prometheus' in the config file"
        )
    try:
        parts = urlsplit(text)
        has_userinfo = "@" in parts.netloc
    except ValueError:
        parts, has_userinfo = urlsplit(""), False
    if has_userinfo:
        raise InputError(
            f"--prometheus (or 'prometheus' in the config file): the URL {public_url(text)} holds a "
            "user name/password, which would be stored and printed; drop it from the URL and pass "
            "--basic-auth-user USER --basic-auth-password-env NAME (the password from an "
            "environment variable) or --token-file FILE"
        )
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
        if key.strip().lower() in CREDENTIAL_HEADERS:
            raise InputError(
                f"--header #{len(out) + 1} (or 'header' in the config file): {key.strip()} carries "
                "a credential and is never taken in clear; use --token-file FILE or --token-env "
                "NAME for a bearer token, or --basic-auth-user with --basic-auth-password-env NAME"
            )
        out.append((key.strip(), value.strip()))
    return tuple(out)


def check_env_name(option: str, name: str) -> None:
    """``name`` must look like an environment variable name; the value is never echoed."""
    secrets.check_env_name(option, name)


def check_path_shape(option: str, path: Path) -> None:
    """``path`` must look like a path (no line breaks or control characters, not absurdly long)."""
    secrets.check_path_shape(option, path)


def bearer_token(settings: PromSettings) -> str | None:
    """The bearer token from ``token_file`` or ``token_env``, or None. Never logged."""
    return read_token(("--token-file", settings.token_file), ("--token-env", settings.token_env))


def read_token(file: tuple[str, str | Path | None], env: tuple[str, str | None]) -> str | None:
    """A token from a file or an environment variable, each given as ``(option, value)`` for the
    messages, or None when neither is given (the Prometheus and the Pushgateway tokens alike).
    The name and the path are checked first and a value that is not one is never shown."""
    (file_option, path_value), (env_option, env_name) = file, env
    if path_value is not None:
        return secrets.read_secret_file(file_option, path_value)
    if env_name:
        return secrets.read_secret_env(env_option, env_name)
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
    check_env_name("--basic-auth-password-env", settings.basic_auth_password_env)
    password = os.environ.get(settings.basic_auth_password_env)
    if password is None:
        raise InputError(
            f"--basic-auth-password-env: the environment variable it names is not set {_NOT_SHOWN}; "
            "export it before running analyzer"
        )
    return settings.basic_auth_user, password


def check_settings(settings: PromSettings) -> None:
    """Reject impossible combinations early, each with a one-line fix."""
    if settings.token_file is not None and settings.token_env:
        raise InputError("--token-file and --token-env: give only one")
    # Names are checked as names before anything else can print them.
    if settings.token_env:
        check_env_name("--token-env", settings.token_env)
    if settings.basic_auth_password_env:
        check_env_name("--basic-auth-password-env", settings.basic_auth_password_env)
    if settings.token_file is not None:
        check_path_shape("--token-file", Path(settings.token_file))
    if settings.ca_bundle is not None and not Path(settings.ca_bundle).is_file():
        raise InputError(f"--ca-bundle: {settings.ca_bundle} is not a file")
    check_limits(settings)


def check_limits(settings: PromSettings) -> None:
    """``--timeout``, ``--deadline`` and the query budget (``--max-in-flight``,
    ``--max-points-per-request``): positive and finite (0 is no default)."""
    if not (math.isfinite(settings.timeout) and settings.timeout > 0):
        raise InputError(f"--timeout: {settings.timeout:g} must be a number of seconds > 0")
    if not (math.isfinite(settings.deadline) and settings.deadline > 0):
        raise InputError(f"--deadline: {settings.deadline:g}s must be a duration > 0 (e.g. 30m)")
    if not 1 <= settings.parallelism <= MAX_IN_FLIGHT_LIMIT:
        raise InputError(
            f"--max-in-flight (--parallelism): {settings.parallelism} must be between 1 and "
            f"{MAX_IN_FLIGHT_LIMIT} requests (default {DEFAULT_PARALLELISM})"
        )
    # 2 at least: a raw-sample request spans (N - 1) scrape intervals (``prom.fetch``).
    if not 2 <= settings.max_points <= MAX_POINTS_LIMIT:
        raise InputError(
            f"--max-points-per-request (--chunk-points): {settings.max_points} must be between 2 "
            f"and {MAX_POINTS_LIMIT:,} (Prometheus' own limit; default {DEFAULT_MAX_POINTS})"
        )
