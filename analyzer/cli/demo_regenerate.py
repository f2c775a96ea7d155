"""``python -m analyzer.cli.demo_regenerate``: rewrite the default demo's shipped coarse history.

Generates the 83 days before the default demo's snapshot as ``analyzer demo --regenerate-history``
does (``cli/demo_coarse.generate_history_rows``: two worker processes, about 90 CPU seconds) and
stores them with their fingerprint in the package data (``cli/demo_shipped.write_shipped``,
``analyzer/_demo_history/``) or ``--out DIR``. Run it after a change of the generator, the rollups
or the demo's settings (``tests/test_demo_shipped.py`` fails until then), and commit the files.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from analyzer.cli.demo import DemoSettings, demo_spec
from analyzer.cli.demo_coarse import coarse_days, demo_history_key, generate_history_rows
from analyzer.cli.demo_shipped import COMMAND, SHIPPED, write_shipped


def main(argv: list[str] | None = None) -> None:
    """Regenerate the default demo's coarse history into the package data (or ``--out``)."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=main.__doc__)
    parser.add_argument("--out", type=Path, default=SHIPPED, help="folder (default: %(default)s)")
    args = parser.parse_args(argv)
    settings = DemoSettings()
    spec = demo_spec(settings.seed, settings.nodes, settings.days, settings.step_seconds)
    rows = generate_history_rows(spec, settings)
    key = demo_history_key(spec, settings)
    if key is None:
        raise SystemExit("the default demo has no coarse days to ship")
    record: dict[str, object] = {
        "seed": settings.seed,
        "nodes": settings.nodes,
        "days": settings.days,
        "history_days": settings.history_days,
        "history_step_seconds": settings.history_step,
        "history_rollouts": settings.history_rollouts,
        "method": settings.settings.method,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    sizes = write_shipped(args.out, rows, key, record)
    print(f"{len(coarse_days(spec, settings))} chunks written to {args.out}: {sizes}")


if __name__ == "__main__":
    main()
