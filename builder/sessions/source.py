"""Sessions as a source: one database's rows, read (batch-wise, Arrow) and validated, and
their secrets redacted before any row is derived from them.

Nothing here writes files: the pipeline appends the rejects to its rejects file, and the
derive step (``builder.derive.sessions``) makes the training rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from builder.redact import RedactionOptions, assigned_values, redact_columns
from builder.sessions.instructions import normalized_instructions
from builder.sessions.read import DEFAULT_BATCH_ROWS, read_source
from builder.sessions.urls import parse_url
from builder.sessions.validate import Validated, validate_source
from schemas.sessions import ACTION_ROW, SESSION_ROW
from schemas.tables import REDACTED_ROLES, columns_with_role

# Redacted as read, before replay: every replayed state is made of these texts.
SESSION_TEXT = columns_with_role(SESSION_ROW, *REDACTED_ROLES)
ACTION_TEXT = columns_with_role(ACTION_ROW, *REDACTED_ROLES)


def read(url: str, *, base: Path | None = None, batch_rows: int = DEFAULT_BATCH_ROWS) -> Validated:
    """One database's rows, validated (its rejects in ``rejects``); a relative
    ``sqlite:///`` path resolves against ``base``."""
    return validate_source(read_source(parse_url(url, base), batch_rows))


def redacted(
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
