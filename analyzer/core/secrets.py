"""Reading a secret named by an option: from a file or an environment variable, never echoed.

One reader for every credential analyzer takes (the Prometheus and Pushgateway bearer tokens, the
basic-auth password, the delivery webhook URLs and SMTP password), so that one rule holds for all:
what an option names is checked as a name or a path before any message can show it, and a value
that is not one is never shown — a user who pastes the secret where its name belongs must not find
it in a cron mail. A name-shaped value may still be the secret (``abc123`` is a valid variable
name), so messages about an unset variable do not repeat the name either.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from analyzer.core.errors import InputError

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NOT_SHOWN = "(it is not shown, in case it is the secret itself)"
_MAX_PATH = 4096


def check_env_name(option: str, name: str, example: str = "PROM_TOKEN") -> None:
    """``name`` must look like an environment variable name; the value is never echoed."""
    if not ENV_NAME.fullmatch(name):
        raise InputError(
            f"{option}: the value is not a valid environment variable name {NOT_SHOWN}; "
            f"give the NAME of a variable that holds the secret, e.g. {option} {example}"
        )


def check_path_shape(option: str, path: str | Path) -> None:
    """``path`` must look like a path: not blank, not absurdly long, no control characters, no
    ``://`` (a URL pasted where its file belongs)."""
    text = str(path)
    if (
        not text.strip()
        or len(text) > _MAX_PATH
        or "://" in text
        or any(ord(ch) < 32 or ord(ch) == 127 for ch in text)
    ):
        raise InputError(
            f"{option}: the value is not a file path {NOT_SHOWN}; give the path of a file "
            "holding the secret"
        )


def read_secret_file(option: str, path: str | Path) -> str:
    """The file's text, stripped; ``InputError`` naming ``option`` when unreadable or empty."""
    check_path_shape(option, path)
    file = Path(path)
    try:
        value = file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        # A path that exists is a path and may be shown; one that does not may be the secret.
        shown = str(file) if os.path.lexists(file) else f"the file {NOT_SHOWN}"
        reason = getattr(exc, "strerror", None) or "not UTF-8 text"
        raise InputError(
            f"{option}: cannot read {shown} ({reason}); give the path of a file holding the secret"
        ) from None
    if not value:
        raise InputError(f"{option}: {file} is empty")
    return value


def read_secret_env(option: str, name: str, example: str = "PROM_TOKEN") -> str:
    """The variable's value, stripped; ``InputError`` naming ``option`` when unset or empty."""
    check_env_name(option, name, example)
    value = os.environ.get(name, "").strip()
    if not value:
        raise InputError(
            f"{option}: the environment variable it names is not set or empty {NOT_SHOWN}; "
            "export it before running analyzer"
        )
    return value
