"""One call from a database URL to everything the build writes for sessions.

Read (batch-wise, Arrow) -> validate (rejects) -> the ``sessions``/``actions`` tables, the
``sft`` and ``self_correction`` rows with ``source = "session"``, and the summary for the
manifest and card. The build appends the rows to its configs and the rejects to its rejects
file; nothing here writes files.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from builder.redact import RedactionOptions, assigned_values, redact_columns
from builder.sessions.corrections import self_corrections
from builder.sessions.instructions import normalized_instructions
from builder.sessions.read import DEFAULT_BATCH_ROWS, read_source
from builder.sessions.replay import DEFAULT_OPTIONS, ReplayOptions, replay
from builder.sessions.stats import summary
from builder.sessions.tables import session_tables
from builder.sessions.urls import parse_url
from builder.sessions.validate import Validated, validate_source
from builder.validate.reject import Reject
from schemas.sessions import ACTION_ROW, SESSION_ROW
from schemas.tables import REDACTED_ROLES, columns_with_role


@dataclass(frozen=True)
class SessionsResult:
    tables: dict[str, pa.Table]  # "sessions", "actions" (schemas.sessions)
    sft: pl.DataFrame  # rows for the sft config
    self_correction: pl.DataFrame  # rows for the self_correction config
    rejects: list[Reject]
    summary: dict[str, Any]
    redactions: dict[str, int]  # replacements by kind in session text
    # question_id, split_text: the key of each session's split, made from its instruction as
    # captured (``builder.redact.split_key``), as an episode's question's
    split_texts: pl.DataFrame


# Redacted as read, before replay: every replayed state is made of these texts.
SESSION_TEXT = columns_with_role(SESSION_ROW, *REDACTED_ROLES)
ACTION_TEXT = columns_with_role(ACTION_ROW, *REDACTED_ROLES)


def _redacted(
    validated: Validated, redaction: RedactionOptions, known: Iterable[str] = ()
) -> tuple[Validated, Counter[str]]:
    """Secrets out of every text a session can put into a published config, before replay:
    a value assigned in either table (or in the episodes, ``known``) is replaced in both."""
    tables = [(validated.sessions, SESSION_TEXT), (validated.actions, ACTION_TEXT)]
    values = {*assigned_values(tables, redaction), *known}
    sessions, counts = redact_columns(validated.sessions, SESSION_TEXT, redaction, values)
    actions, more = redact_columns(validated.actions, ACTION_TEXT, redaction, values)
    if sum(counts.values()) + sum(more.values()):  # published: of the redacted task
        published = normalized_instructions(sessions, actions)
        sessions = sessions.drop("normalized_instruction").join(
            published, on="session_id", how="left", maintain_order="left"
        )
    total = Counter(counts)
    total.update(more)
    return replace(validated, sessions=sessions, actions=actions), total


def read(url: str, *, base: Path | None = None, batch_rows: int = DEFAULT_BATCH_ROWS) -> Validated:
    """One database's rows, validated (its rejects in ``rejects``); a relative
    ``sqlite:///`` path resolves against ``base``."""
    return validate_source(read_source(parse_url(url, base), batch_rows))


def run(
    url: str,
    *,
    base: Path | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    options: ReplayOptions = DEFAULT_OPTIONS,
    redaction: RedactionOptions | None = None,
) -> SessionsResult:
    """Everything for one database."""
    return finish(read(url, base=base, batch_rows=batch_rows), options, redaction)


def finish(
    validated: Validated,
    options: ReplayOptions = DEFAULT_OPTIONS,
    redaction: RedactionOptions | None = None,
    known: Iterable[str] = (),
) -> SessionsResult:
    """Redact (with ``known``, the secret values the episodes assigned), replay, tabulate."""
    redacted: Counter[str] = Counter()
    if redaction is not None:
        validated, redacted = _redacted(validated, redaction, known)
    replayed = replay(validated, options)
    corrections = self_corrections(validated, options)
    return SessionsResult(
        tables=session_tables(validated),
        sft=replayed.sft,
        self_correction=corrections,
        rejects=validated.rejects,
        summary=summary(validated, replayed, corrections),
        redactions=dict(redacted),
        split_texts=validated.sessions.select("question_id", "split_text"),
    )
