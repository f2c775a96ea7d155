"""Command-line interface: ``analyzer <command>``. Click lives only in this package.

Each command module adds its commands to ``main`` (or the ``report`` group) on import.
"""

from __future__ import annotations

import importlib

from analyzer.cli.base import main, report

# One module per command family; importing registers the commands.
COMMAND_MODULES = [
    "analyzer.cli.inspect_cmd",
    "analyzer.cli.generate",
    "analyzer.cli.aggregate",
    "analyzer.cli.report_cmds",
    "analyzer.cli.score",
    "analyzer.cli.collect",
    "analyzer.cli.trace",
    "analyzer.cli.whatif",
]

for _module in COMMAND_MODULES:
    importlib.import_module(_module)

__all__ = ["main", "report"]
