"""What a session's code produced: the output of each run (``builder.derive.failures`` says
whether it is an error).

A ``set_code`` replaces the code; the ``set_exec_output`` actions after it, before the next
``set_code``, each replace the output of running it, so the code's output is the last of
them (a re-run's, not a stale one). The replay weighs code by it and the self-correction
pairs start from it.
"""

from __future__ import annotations

import polars as pl

from builder.derive.failures import ERROR_LINE


def error_parts(output: pl.Expr) -> list[pl.Expr]:
    """error_type (last dotted name: ``KeyError``) and error_message of the last error line."""
    line = output.str.extract_all(ERROR_LINE).list.last()
    name = line.str.extract(r"^([^:]+)", 1).str.strip_chars()
    return [
        name.str.split(".").list.last().alias("error_type"),
        line.str.extract(r"^[^:]*:[ \t]*(.*)$", 1).alias("error_message"),
    ]


def with_code_outputs(rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` (one per message, in conversation order per ``session_id``, with
    ``action_type`` and ``action``) plus ``output``: on each ``set_code`` row, the last output
    of running that code (null when it never ran); null on other rows."""
    code = pl.col("action_type") == "set_code"
    epoch = code.cast(pl.Int32).cum_sum().over("session_id").alias("_epoch")
    rows = rows.with_columns(epoch)
    outputs = (
        rows.filter(pl.col("action_type") == "set_exec_output", pl.col("_epoch") > 0)
        .group_by("session_id", "_epoch")
        .agg(pl.col("action").fill_null("").last().alias("output"))
    )
    joined = rows.join(outputs, on=["session_id", "_epoch"], how="left", maintain_order="left")
    return joined.with_columns(pl.when(code).then(pl.col("output"))).drop("_epoch")
