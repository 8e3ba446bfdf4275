"""An objective built from another's collected rows (``builder.derive.RESHAPED``) holds
exactly the rows its own ``derive`` gives from the tables."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from builder.derive import OBJECTIVE_MODULES, RESHAPED, DeriveOptions
from builder.export.buckets import BUCKETED
from builder.pipeline import BuildReport


def rows(frame: pl.DataFrame) -> list[str]:
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in frame.to_dicts())


def published(folder: Path, name: str) -> pl.DataFrame:
    return pl.read_parquet(folder / name / "*.parquet")


@pytest.mark.parametrize("name", sorted(RESHAPED))
def test_a_reshaped_objective_equals_its_own_derivation(
    sample_build: BuildReport, name: str
) -> None:
    folder = sample_build.out
    tables = {table: published(folder, table).lazy() for table in BUCKETED}
    expected = OBJECTIVE_MODULES[name].derive(tables, DeriveOptions()).collect()
    built = published(folder, name).filter(pl.col("source") == "episode")  # not sessions'
    assert built.height == expected.height > 0
    assert rows(built.select(expected.columns)) == rows(expected)
