"""The text columns a trainer reads are columns of their configs, and every training config
names its own."""

from __future__ import annotations

import polars as pl

from schemas.objectives import OBJECTIVES
from schemas.row_text import TEXT_COLUMNS, row_chars_expr


def test_every_training_config_names_columns_it_has() -> None:
    assert set(TEXT_COLUMNS) == set(OBJECTIVES)
    for name, spec in TEXT_COLUMNS.items():
        names = [n for item in spec for n in ((item,) if isinstance(item, str) else item)]
        assert set(names) <= set(OBJECTIVES[name].names), name


def test_a_piece_without_its_text_columns_is_not_counted() -> None:
    assert row_chars_expr("orm", {"prompt": pl.List(pl.String)}) is None
    assert row_chars_expr("questions", {"question_text": pl.String}) is None
