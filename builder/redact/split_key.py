"""The text a question's split is keyed by: its normalized text with the secrets it shows
itself replaced, never the values learned elsewhere.

A split must be a function of the question alone: what the build's redaction finds depends
on the other data (a value assigned to a secret name in one file is redacted wherever it
appears after that), so a split keyed by the published text would part one question's rows
and move them between releases. Keyed by the raw text, two questions that differ only in a
secret (``api_key = "…"`` with two keys) would be one published prompt in two splits. So the
key replaces what the text shows on its own: the credential patterns (built in and
``[redaction] extra_patterns``) and every value assigned to a secret name, random-looking or
not. It is made from the normalized (casefolded) text, so texts that normalize alike have
one key: the patterns match in any case there.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from builder.redact.patterns import (
    ASSIGNMENT,
    BUILTIN_PATTERNS,
    PLACEHOLDER,
    SECRET_ASSIGNMENT,
    whole,
)

_PREFIX, _VALUE = ASSIGNMENT.split("(?P<value>", 1)
_ASSIGNED = (f"({_PREFIX})(?:{_VALUE}", "${1}" + PLACEHOLDER.format(kind=SECRET_ASSIGNMENT))


def split_key_texts(
    normalized: pl.Series, extra_patterns: Mapping[str, str] | None = None
) -> pl.Series:
    """The key of each normalized question text (a pure function of it)."""
    extra = [whole(kind, regex) for kind, regex in (extra_patterns or {}).items()]
    patterns = [*BUILTIN_PATTERNS, *extra]
    key = pl.col("v")
    for pattern in patterns:
        key = key.str.replace_all(f"(?i){pattern.regex}", pattern.replacement)
    key = key.str.replace_all(f"(?i){_ASSIGNED[0]}", _ASSIGNED[1])
    return normalized.to_frame("v").select(key).to_series().alias(normalized.name)
