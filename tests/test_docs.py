"""The README stays true: every command is documented, its config example is accepted."""

from __future__ import annotations

import re
from pathlib import Path

import click
import yaml

from analyzer.cli import main
from analyzer.cli.base import command_options
from analyzer.core.config import build_default_map
from analyzer.nightly.headroom_shapes import parse_headroom
from analyzer.usage.thresholds import ThresholdConfig

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def _command_paths(group: click.Group, prefix: str = "") -> list[str]:
    paths = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        if isinstance(command, click.Group):
            paths += _command_paths(command, f"{prefix}{name} ")
        else:
            paths.append(f"{prefix}{name}")
    return paths


def test_readme_shows_every_command() -> None:
    missing = [p for p in _command_paths(main) if f"analyzer {p}" not in README]
    assert not missing, f"README lacks an example of: {missing}"


def test_readme_config_example_is_accepted() -> None:
    block = re.search(r"```yaml\n(.*?)```", README, re.S)
    assert block, "README has a YAML config example"
    data = yaml.safe_load(block.group(1))
    default_map = build_default_map(data, command_options(main))
    assert default_map["collect"]["prometheus"] == data["prometheus"]
    assert default_map["collect"]["step"] == "1m"
    assert default_map["collect"]["headers"] == data["header"]  # flag spelling accepted
    config = ThresholdConfig.from_config(data)
    assert config.usage == {"cpu": 65, "memory": 95}
    assert config.aggregated is not None
    shapes = parse_headroom(data)  # the headroom: pod shapes (docs/headroom.md)
    assert shapes is not None and [s.name for s in shapes] == ["web", "gpu-job"]
