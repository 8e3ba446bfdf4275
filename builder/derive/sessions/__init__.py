"""Training rows from sessions: the derive step of the session source (``builder.sessions``).

A validated, redacted database (``builder.sessions.source``) is replayed into ``sft`` rows
(``replay``), its failed-then-fixed code into ``self_correction`` rows (``corrections``;
what counts as a failed run: ``outputs``), and counted for the manifest and card
(``summary``). The rows have the objectives' columns, with ``source = "session"``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from builder.derive import reshaped, sft_turns
from builder.derive.sessions.corrections import self_corrections
from builder.derive.sessions.replay import DEFAULT_OPTIONS, ReplayOptions, replay
from builder.derive.sessions.summary import summary
from builder.redact import RedactionOptions
from builder.sessions.read import DEFAULT_BATCH_ROWS
from builder.sessions.source import read, redacted
from builder.sessions.tables import session_tables
from builder.sessions.validate import Validated
from builder.validate.reject import Reject


@dataclass(frozen=True)
class SessionsResult:
    tables: dict[str, pa.Table]  # "sessions", "actions" (schemas.sessions)
    sft: pl.DataFrame  # rows for the sft config
    sft_turns: pl.LazyFrame  # rows for the sft_turns config: the sft rows, reshaped
    self_correction: pl.DataFrame  # rows for the self_correction config
    rejects: list[Reject]
    summary: dict[str, Any]
    # question_id, split_text: the key of each session's split, made from its instruction as
    # captured (``builder.redact.split_key``), as an episode's question's
    split_texts: pl.DataFrame
    redactions: Mapping[str, int] = field(default_factory=dict)  # replacements by kind


def derive_sessions(
    validated: Validated,
    options: ReplayOptions = DEFAULT_OPTIONS,
    redactions: Mapping[str, int] | None = None,
    name: str | None = None,
) -> SessionsResult:
    """Replay, corrections, tables and counts of one validated (and redacted) database;
    ``redactions``: what its redaction replaced, by kind; ``name``: what the rows call the
    database (a restored build's: its name there)."""
    replayed = replay(validated, options)
    corrections = self_corrections(validated, options)
    return SessionsResult(
        tables=session_tables(validated if name is None else replace(validated, source=name)),
        sft=replayed.sft,
        sft_turns=reshaped(sft_turns.NAME, replayed.sft.lazy()),
        self_correction=corrections,
        rejects=validated.rejects,
        summary=summary(validated, replayed, corrections),
        split_texts=validated.sessions.select("question_id", "split_text"),
        redactions=dict(redactions or {}),
    )


def run(
    url: str,
    *,
    base: Path | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    options: ReplayOptions = DEFAULT_OPTIONS,
    redaction: RedactionOptions | None = None,
    known: Iterable[str] = (),
) -> SessionsResult:
    """Everything for one database: read, redact (with ``known``, the secret values the
    episodes assigned), derive."""
    validated = read(url, base=base, batch_rows=batch_rows)
    counts: Mapping[str, int] = {}
    if redaction is not None:
        validated, counts = redacted(validated, redaction, known)
    return derive_sessions(validated, options, counts)
