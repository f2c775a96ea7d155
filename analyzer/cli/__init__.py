"""Command-line interface: ``analyzer <command>``. Click lives only in this package.

Each command module adds its commands to ``main`` (or the ``report`` group) on import. Modules are
imported on first use (``analyzer.cli.base.LazyGroup``): ``analyzer collect`` must not pay for
importing the report, replay and trace stacks.
"""

from __future__ import annotations

from analyzer.cli.base import LazyGroup, main, report

# One module per command family; importing registers the commands.
COMMAND_MODULES = [
    "analyzer.cli.inspect_cmd",
    "analyzer.cli.generate",
    "analyzer.cli.aggregate",
    "analyzer.cli.report_cmds",
    "analyzer.cli.score",
    "analyzer.cli.autoscale",
    "analyzer.cli.collect",
    "analyzer.cli.trace",
    "analyzer.cli.whatif",
    "analyzer.cli.rightsize_cmds",
    "analyzer.cli.monthly_cmds",
    "analyzer.cli.history_cmds",
    "analyzer.cli.fleet_cmd",
]

# Where the frequent commands live, so running one imports only its module. A command missing
# here still works: an unknown name imports every module of COMMAND_MODULES.
COMMAND_HOMES = {
    "collect": "analyzer.cli.collect",
    "check": "analyzer.cli.collect",
    "queries": "analyzer.cli.collect",
    "inspect": "analyzer.cli.inspect_cmd",
    "generate": "analyzer.cli.generate",
    "aggregate": "analyzer.cli.aggregate",
    "violations": "analyzer.cli.aggregate",
    "fragmentation": "analyzer.cli.aggregate",
    "demo": "analyzer.cli.report_cmds",
    "score": "analyzer.cli.score",
    "strategies": "analyzer.cli.score",
    "autoscale": "analyzer.cli.autoscale",
    "trace": "analyzer.cli.trace",
    "whatif": "analyzer.cli.whatif",
    "rightsize": "analyzer.cli.rightsize_cmds",
    "history": "analyzer.cli.history_cmds",
}
REPORT_HOMES = {
    "nightly": "analyzer.cli.report_cmds",
    "whatif": "analyzer.cli.whatif",
    "monthly": "analyzer.cli.monthly_cmds",
    "fleet": "analyzer.cli.fleet_cmd",
}

for _group, _homes in ((main, COMMAND_HOMES), (report, REPORT_HOMES)):
    assert isinstance(_group, LazyGroup)
    _group.set_modules(COMMAND_MODULES, _homes)

__all__ = ["main", "report"]
