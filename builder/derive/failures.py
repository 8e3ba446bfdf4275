"""Whether an execution output shows an error: one rule for the captured conversations of
episodes (``sft``) and the replayed sessions (``builder.sessions``)."""

from __future__ import annotations

import polars as pl

TRACEBACK = "Traceback (most recent call last)"
ERROR_LINE = r"(?m)^(?:[A-Za-z_][\w.]*)?(?:Error|Exception)(?::[ \t]*.*)?$"


def is_error(output: pl.Expr) -> pl.Expr:
    """Whether an execution output shows an error: a traceback, or an ``XxxError:`` line last
    (nothing runs after an uncaught error; a metric printed as ``MeanSquaredError: 0.5``
    and followed by more output is no error)."""
    last = output.str.strip_chars_end().str.extract(r"(?:^|\n)([^\n]*)$", 1)
    return output.str.contains(TRACEBACK, literal=True) | last.str.contains(ERROR_LINE)
