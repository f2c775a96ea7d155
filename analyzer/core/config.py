"""The config file: defaults for command options, merged under the command line.

A config file (YAML or TOML, ``--config FILE`` or ``$ANALYZER_CONFIG``) holds option values by
option name, either at top level (apply to every command that has that option) or in a section
named after a command (``collect:``, ``violations:``; ``report nightly`` is ``report-nightly``).
Flags always win over the file (click ``default_map``). A few top-level sections carry structured
settings that are not flags (see ``STRUCTURED_SECTIONS``). An unknown key is an error naming it.
Secrets come from files or environment variables, never from the config file in clear.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from analyzer.core.errors import InputError

# Sections that hold structured settings read by one stage (not click options).
STRUCTURED_SECTIONS = frozenset({"thresholds", "node_thresholds", "pools"})


def load_config_file(path: Path) -> dict[str, Any]:
    """Read a YAML or TOML config file into a dict; ``InputError`` naming the file on failure."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(f"--config: cannot read {path} ({exc.strerror})") from None
    try:
        data: Any = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(
            f"--config: {path} is not valid {path.suffix.lstrip('.') or 'YAML'}: {first}"
        ) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(f"--config: {path} must hold a mapping of option names to values")
    return data


def build_default_map(
    data: Mapping[str, Any], commands: Mapping[str, Mapping[str, str]], source: str = "config"
) -> dict[str, dict[str, Any]]:
    """Turn config data into a click ``default_map``.

    ``commands`` maps each command path (``collect``, ``report-nightly``) to the keys it accepts
    (flag or parameter spelling, with underscores) → the click parameter name they set.
    """
    all_keys = {key for options in commands.values() for key in options}
    result: dict[str, dict[str, Any]] = {name: {} for name in commands}
    for key, value in data.items():
        norm = str(key).replace("-", "_")
        if key in commands and isinstance(value, dict):
            for sub_key, sub_value in value.items():
                param = commands[key].get(str(sub_key).replace("-", "_"))
                if param is None:
                    raise InputError(
                        f"{source}: unknown option {key}.{sub_key} (the {key} command has no such option)"
                    )
                result[key][param] = sub_value
        elif key in STRUCTURED_SECTIONS:
            continue
        elif norm in all_keys:
            for name, options in commands.items():
                if norm in options:
                    result[name].setdefault(options[norm], value)
        else:
            raise InputError(
                f"{source}: unknown option {key!r}; see 'analyzer --help' for option names"
            )
    return result
