"""The default demo's coarse history shipped with the package (``cli/demo_shipped.py``).

The history is generated in independent chunks (a week each, ``history_chunks.chunk_specs``:
each chunk's spec, generation and placement stand alone, the workers already generate them in any
order), so regenerating one chunk and comparing it with the shipped rows of its days is an exact
check of those days. The test regenerates the LAST chunk (the 6 days before the snapshot, the
most grown cluster; ~6 s of one core) — not all 12 (~90 CPU s): a change of the generator that
changes any day's rows almost surely changes these too, and then the data must be rewritten with
``python -m analyzer.cli.demo_regenerate``.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from analyzer.cli.demo import DemoSettings, demo_spec
from analyzer.cli.demo_coarse import (
    coarse_days,
    demo_crowded,
    demo_history_key,
    history_spec,
    shipped_history,
)
from analyzer.cli.demo_shipped import SHIPPED, read_manifest, shipped_rows, stored_form
from analyzer.nightly.synthetic_history import DayRows, history_rows, write_rows
from analyzer.sources.constrained_placement import constrained_crowding_place

SETTINGS = DemoSettings()
SPEC = demo_spec(SETTINGS.seed, SETTINGS.nodes, SETTINGS.days, SETTINGS.step_seconds)


@pytest.fixture(scope="module")
def last_chunk() -> tuple[list[DayRows], list[DayRows]]:
    """(regenerated, shipped) rows of the last chunk's days."""
    days = coarse_days(SPEC, SETTINGS)[-1]
    [regenerated] = history_rows(
        history_spec(SPEC, SETTINGS),
        days[0],
        days[-1],
        step=SETTINGS.history_step,
        place=constrained_crowding_place(demo_crowded(SPEC)),
        method=SETTINGS.settings.method,
    )
    key = demo_history_key(SPEC, SETTINGS)
    assert key is not None
    shipped = shipped_rows(key, coarse_days(SPEC, SETTINGS))
    assert shipped is not None, "the shipped rows are not the default demo's: regenerate them"
    return regenerated, shipped[-1]


def test_the_package_ships_the_default_demos_rows_under_their_fingerprint() -> None:
    manifest = read_manifest()
    assert manifest is not None, f"no {SHIPPED}/manifest.json"
    assert manifest["fingerprint"] == demo_history_key(SPEC, SETTINGS), (
        "the demo's coarse-history settings changed: run python -m analyzer.cli.demo_regenerate"
    )
    chunks = coarse_days(SPEC, SETTINGS)
    # 90 days of history − the 7-day snapshot = 83 coarse days: 11 weeks and 6 days
    assert (manifest["days"], len(chunks), len(chunks[-1])) == (83, 12, 6)
    for name in ("pools", "workloads", "headroom"):
        days = set(pq.read_table(SHIPPED / f"{name}.parquet", columns=["day"])["day"].to_pylist())
        assert len(days) == 83, name  # every coarse day has rows of every table
    total = sum(f.stat().st_size for f in SHIPPED.iterdir())
    assert total < 4 << 20  # package data of a few MB at most


def test_other_settings_do_not_read_the_shipped_rows() -> None:
    default = demo_history_key(SPEC, SETTINGS)
    others = [
        (demo_spec(7, 200, 7, 300), SETTINGS),
        (demo_spec(42, 50, 7, 300), SETTINGS),
        (SPEC, DemoSettings(history_days=60)),
        (SPEC, DemoSettings(history_rollouts=0.1)),
    ]
    for spec, settings in others:
        key = demo_history_key(spec, settings)
        assert key is not None and key != default
        assert shipped_rows(key, coarse_days(spec, settings)) is None
    assert demo_history_key(SPEC, DemoSettings(history_days=7)) is None  # no coarse days
    # --regenerate-history: the default settings, generated anyway
    assert shipped_history(SPEC, DemoSettings(regenerate_history=True)) is None


def test_shipped_rows_are_a_regeneration_of_the_last_chunk(
    last_chunk: tuple[list[DayRows], list[DayRows]],
) -> None:
    regenerated, shipped = last_chunk
    assert [r[0] for r in regenerated] == [r[0] for r in shipped]
    for (day, *made), (_, *read) in zip(regenerated, shipped, strict=True):
        for name, a, b in zip(("pools", "workloads", "headroom"), made, read, strict=True):
            assert not a.empty, (day, name)  # every day has pools, workloads and shapes
            assert stored_form(name, a, day).equals(stored_form(name, b, day)), (day, name)


def test_history_files_from_shipped_rows_are_the_generated_files(
    last_chunk: tuple[list[DayRows], list[DayRows]], tmp_path: Path
) -> None:
    """What the demo writes from the shipped rows is, byte for byte, what it writes from a
    generation (the pages read these files)."""
    regenerated, shipped = last_chunk
    for where, rows in (("made", regenerated), ("shipped", shipped)):
        write_rows(tmp_path / where, [rows], step=3600, source="synthetic:seed=42,nodes=200")
    made = sorted(p.relative_to(tmp_path / "made") for p in (tmp_path / "made").rglob("*.parquet"))
    read = sorted(
        p.relative_to(tmp_path / "shipped") for p in (tmp_path / "shipped").rglob("*.parquet")
    )
    assert made == read and len(made) == 3 * 6  # pools, workloads, headroom of 6 days
    for path in made:
        assert (tmp_path / "made" / path).read_bytes() == (tmp_path / "shipped" / path).read_bytes()


def test_a_damaged_shipped_file_is_named_and_not_read(tmp_path: Path) -> None:
    """A shipped parquet whose bytes differ from the manifest's SHA-256 (a damaged install) is
    named, not read: the demo then generates the rows (``shipped_history``) instead of reading
    rows that are not the shipped ones or stopping in a pyarrow traceback."""
    import shutil

    from analyzer.cli.demo_shipped import ShippedDamaged

    folder = tmp_path / "shipped"
    shutil.copytree(SHIPPED, folder)
    key = demo_history_key(SPEC, SETTINGS)
    assert key is not None
    days = coarse_days(SPEC, SETTINGS)
    assert shipped_rows(key, days, folder) is not None  # the intact copy reads
    damaged = folder / "workloads.parquet"
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    with pytest.raises(ShippedDamaged, match=r"workloads\.parquet"):
        shipped_rows(key, days, folder)
    damaged.unlink()
    with pytest.raises(ShippedDamaged, match=r"workloads\.parquet is missing"):
        shipped_rows(key, days, folder)
