"""The text a trainer reads of a training config's row: the columns it is fed, and how many
characters they hold. The export counts them as it writes each file (for the card's length
chart) and the report from a finished build's files; both count them here."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

# The text columns of each training config, added up per row; a tuple inside is "the
# longest" (``dpo`` feeds the prompt and one of chosen and rejected).
TEXT_COLUMNS: dict[str, tuple[str | tuple[str, ...], ...]] = {
    "sft": ("messages",),
    "sft_turns": ("prompt", "completion"),
    "rl": ("prompt",),
    "prm": ("step",),
    "prm_stepwise": ("prompt", "completions"),
    "orm": ("prompt", "completion"),
    "dpo": ("prompt", ("chosen", "rejected")),
    "self_correction": ("prompt", "completion"),
}


def chars(dtype: pl.DataType, column: str) -> pl.Expr:
    """Characters of ``column`` per row: a string, a list of strings, or a list of messages
    (structs with ``content``); nulls count 0."""
    col = pl.col(column)
    if dtype == pl.String:
        return col.str.len_chars().fill_null(0)
    if isinstance(dtype, pl.List):
        inner = dtype.inner
        if inner == pl.String:
            element = pl.element().str.len_chars()
        elif isinstance(inner, pl.Struct) and "content" in {f.name for f in inner.fields}:
            element = pl.element().struct.field("content").str.len_chars()
        else:
            raise ValueError(f"{column}: no text in {dtype}")
        return col.list.eval(element.fill_null(0)).list.sum().fill_null(0)
    raise ValueError(f"{column}: no text in {dtype}")


def row_chars_expr(name: str, schema: Mapping[str, pl.DataType]) -> pl.Expr | None:
    """Characters of the text a trainer reads per row of config ``name``; None for a config
    without text columns, or rows lacking one of them."""
    parts = []
    for item in TEXT_COLUMNS.get(name, ()):
        present = [n for n in ((item,) if isinstance(item, str) else item) if n in schema]
        if not present:
            return None
        exprs = [chars(schema[n], n) for n in present]
        parts.append(exprs[0] if len(exprs) == 1 else pl.max_horizontal(exprs))
    return pl.sum_horizontal(parts) if parts else None
