"""The config file: defaults for command options, merged under the command line.

A config file (YAML or TOML, ``--config FILE`` or ``$ANALYZER_CONFIG``) holds option values by
option name, either at top level (apply to every command that has that option) or in a section
named after a command (``collect:``, ``violations:``; ``report nightly`` is ``report-nightly``).
The ``query:`` section holds the query budget (``max-points-per-request``, ``max-in-flight``) for
every command that reads Prometheus (collect, check, aggregate, report nightly, history backfill).
Flags always win over the file (click ``default_map``). A few top-level sections carry structured
settings that are not flags (see ``STRUCTURED_SECTIONS``). An unknown key is an error naming it.
Secrets come from files or environment variables, never from the config file in clear.
The file is read through ``core.structured`` (YAML aliases and nesting bounded, one line naming
``--config FILE`` for any unreadable, non-UTF-8 or malformed file).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from analyzer.core.errors import InputError
from analyzer.core.structured import describe_value, load_toml, load_yaml, plain, preview

# Sections that hold structured settings read by one stage (not click options): the usage
# thresholds (``usage/thresholds.py``), the replay's node autoscaler (``replay/autoscale_setup.py``)
# and the nightly's ``headroom:`` pod shapes (``nightly/headroom_shapes.py``). A section nothing
# reads is an unknown key like any other.
# ``clusters:`` is the list of clusters with their own connection (``cli/clusters.py``);
# ``growth:`` the changes ``whatif --growth`` replays (``whatif/growth_plan.py``).
STRUCTURED_SECTIONS = frozenset(
    {"thresholds", "node_thresholds", "autoscaler", "headroom", "clusters", "growth"}
)


# ``query:``: the query budget's keys (either spelling of each option) → the click parameter.
QUERY_SECTION = "query"
QUERY_KEYS = {
    "max_points_per_request": "max_points",
    "chunk_points": "max_points",
    "max_in_flight": "parallelism",
    "parallelism": "parallelism",
}


def load_config_file(path: Path) -> dict[str, Any]:
    """Read a YAML or TOML config file into a dict; ``InputError`` naming the file on failure."""
    path = Path(path)
    loader = load_toml if path.suffix.lower() == ".toml" else load_yaml
    data: Any = loader(path, what="--config")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(
            f"--config {path}: must hold a mapping of option names to values, "
            f"not {describe_value(data)}"
        )
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
        if key in commands and not isinstance(value, dict):
            raise InputError(
                f"{source}: section {key}: expected a mapping of option names to values, "
                f"not {describe_value(value)}"
            )
        if key in commands:
            for sub_key, sub_value in value.items():
                param = commands[key].get(str(sub_key).replace("-", "_"))
                if param is None:
                    raise InputError(
                        f"{source}: unknown option {key}.{plain(sub_key)} "
                        f"(the {key} command has no such option)"
                    )
                result[key][param] = sub_value
        elif key in STRUCTURED_SECTIONS:
            continue
        elif key == QUERY_SECTION:
            _query_section(value, commands, result, source)
        elif norm in all_keys:
            for name, options in commands.items():
                if norm in options:
                    result[name].setdefault(options[norm], value)
        else:
            raise InputError(
                f"{source}: unknown option {preview(key)}; see 'analyzer --help' for option names"
            )
    return result


def _query_section(
    value: Any,
    commands: Mapping[str, Mapping[str, str]],
    result: dict[str, dict[str, Any]],
    source: str,
) -> None:
    """``query:``: the budget's values as defaults of every command that takes them (a
    command's own section still wins)."""
    if not isinstance(value, dict):
        raise InputError(
            f"{source}: section query: expected a mapping such as {{max-points-per-request: "
            f"720, max-in-flight: 4}}, not {describe_value(value)}"
        )
    for sub_key, sub_value in value.items():
        param = QUERY_KEYS.get(str(sub_key).replace("-", "_"))
        if param is None:
            raise InputError(
                f"{source}: unknown option query.{plain(sub_key)} (the query section holds "
                "max-points-per-request and max-in-flight)"
            )
        for name, options in commands.items():
            if param in options.values():
                result[name].setdefault(param, sub_value)
