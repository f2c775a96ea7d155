"""`python -m analyzer`."""

from analyzer.cli.entry import run

run()
