"""The text a question's split is keyed by: its captured text with the secrets that text
itself shows replaced, never the values learned elsewhere.

A split must be a function of the question alone: what the build's redaction finds depends
on the other data (a value assigned to a secret name in one file is redacted wherever it
appears after that), so a split keyed by the published text would part one question's rows
and move them between releases. Keyed by the raw text, two questions that differ only in a
secret (``api_key = "…"`` with two keys) would be one published prompt in two splits. So the
key replaces what the text shows on its own — the built-in credential patterns and the
values it assigns to secret names — whatever the ``[redaction]`` settings say.
"""

from __future__ import annotations

import polars as pl

from builder.hashing import normalize_question_text
from builder.redact import _accepted, _Redactor, redact_series
from builder.redact.options import RedactionOptions
from builder.redact.patterns import ASSIGNMENT, PLACEHOLDER, SECRET_ASSIGNMENT

_BUILT_IN = RedactionOptions()
_ASSIGNED = PLACEHOLDER.format(kind=SECRET_ASSIGNMENT)


def split_key_texts(texts: pl.Series, normalized: pl.Series) -> pl.Series:
    """The normalized key text of each question: ``normalized`` (its captured text
    normalized) where ``texts`` show no secret, else that of the text with them replaced."""
    redactor = _Redactor(_BUILT_IN, ())
    frame = texts.to_frame("v")
    shown = frame.select(
        (redactor.hits(pl.col("v")) | pl.col("v").str.contains(ASSIGNMENT)).fill_null(False)
    ).to_series()
    if not shown.any():
        return normalized
    keys = []
    for text in redact_series(texts.filter(shown), redactor).to_list():
        found = pl.Series([text]).str.extract_all(ASSIGNMENT).explode().drop_nulls()
        values = _accepted(found, _BUILT_IN)
        for value in values:  # longest first
            text = text.replace(value, _ASSIGNED)
        keys.append(normalize_question_text(text))
    replaced = pl.Series(keys, dtype=pl.String)
    order = pl.concat([shown.not_().arg_true(), shown.arg_true()]).arg_sort()
    return pl.concat([normalized.filter(shown.not_()), replaced]).gather(order)
