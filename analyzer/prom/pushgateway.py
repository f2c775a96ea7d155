"""Push a run's metrics to a Prometheus Pushgateway (``--pushgateway``; docs/metrics.md).

The grouping key is ``job="analyzer"`` and ``command`` (nightly, monthly, backfill), so each
command owns one group. A successful run PUTs (the group is replaced as a whole: every family of
the last success, nothing stale left over); a failed run POSTs only its status families, which
replaces those families and leaves the last success's time and numbers in the group.

The token, when one is needed, comes from a file or an environment variable (as for
``--prometheus``) and is never printed. A failure raises ``PublishError`` (exit 5): the caller has
already written its output.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import requests

from analyzer.core.errors import InputError, PublishError
from analyzer.prom.settings import check_env_name, check_path_shape, public_url, read_token

JOB = "analyzer"
TIMEOUT_SECONDS = 10.0  # a Pushgateway answers in milliseconds; a nightly job must not hang on it
TRIES = 2  # one more try after a refused connection, a timeout or a 5xx
_SAFE_SEGMENT = re.compile(r"[A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class PushTarget:
    """Where to push: the Pushgateway's root URL and where its token comes from."""

    url: str
    token_file: Path | None = None
    token_env: str | None = None
    timeout: float = TIMEOUT_SECONDS
    tries: int = TRIES


def check_target(target: PushTarget) -> None:
    """Refuse a bad URL or token option before the run does any work (``InputError``)."""
    try:
        parts = urlsplit(target.url.strip())
        userinfo = "@" in parts.netloc
    except ValueError:
        raise InputError(
            "--pushgateway: not an http(s) URL (e.g. http://pushgateway:9091)"
        ) from None
    if userinfo:
        raise InputError(
            f"--pushgateway: the URL {public_url(target.url)} holds a user name/password, which "
            "would be printed; drop it and pass --pushgateway-token-file FILE or "
            "--pushgateway-token-env NAME"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(
            f"--pushgateway: {public_url(target.url)!r} is not an http(s) URL "
            "(e.g. http://pushgateway:9091)"
        )
    if target.token_file is not None and target.token_env:
        raise InputError("--pushgateway-token-file and --pushgateway-token-env: give only one")
    if target.token_env:
        check_env_name("--pushgateway-token-env", target.token_env)
    if target.token_file is not None:
        check_path_shape("--pushgateway-token-file", target.token_file)
    _token(target)  # an unreadable token file fails now, not after the report


def _token(target: PushTarget) -> str | None:
    return read_token(
        ("--pushgateway-token-file", target.token_file),
        ("--pushgateway-token-env", target.token_env),
    )


def group_path(labels: dict[str, str]) -> str:
    """``/metrics/job/analyzer/K/V…``. The grouping values are ours (command names), never
    user text, so they are plain path segments; anything else is a programming error."""
    parts = ["metrics", "job", JOB]
    for key, value in labels.items():
        if not (_SAFE_SEGMENT.fullmatch(key) and _SAFE_SEGMENT.fullmatch(value)):
            raise ValueError(f"grouping label {key}={value!r} is not a plain path segment")
        parts += [key, value]
    return "/" + "/".join(parts)


def push(target: PushTarget, labels: dict[str, str], body: str, *, replace: bool) -> None:
    """PUT (``replace``: the whole group) or POST (only the families in ``body``) the text
    ``body`` to the group ``labels``; ``PublishError`` after ``target.tries`` failed tries."""
    url = target.url.strip().rstrip("/") + group_path(labels)
    headers = {"Content-Type": "text/plain; version=0.0.4; charset=utf-8"}
    token = _token(target)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    method = "PUT" if replace else "POST"
    shown = public_url(target.url)
    problem = ""
    for attempt in range(target.tries):
        if attempt:
            time.sleep(0.5)
        try:
            response = requests.request(
                method, url, data=body.encode("utf-8"), headers=headers, timeout=target.timeout
            )
        except requests.Timeout:
            problem = f"no answer within {target.timeout:g} s"
            continue
        except requests.RequestException:
            problem = "connection failed"
            continue
        if response.status_code in (200, 202):
            return
        problem = f"HTTP {response.status_code}"
        text = response.text.strip().splitlines()[:1]
        if text:
            problem += f": {text[0][:200]}"
        if response.status_code < 500:
            break  # 400 (a body it refuses), 401/403 (the token): another try would not help
    raise PublishError(
        f"pushing metrics to {shown} failed ({problem}, {method}, {attempt + 1} "
        f"tr{'y' if attempt == 0 else 'ies'}); check --pushgateway and that the Pushgateway is up"
    )
