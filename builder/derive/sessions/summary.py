"""Numbers about one sessions database for the manifest and the dataset card.

Everything a reader needs to judge the sessions part of the dataset: how much was read and
kept, the mix of human / ai / dataset actions, how many sessions are verified, why the
others did not train, and what the rejects were. Plain JSON types only.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import polars as pl

from builder.derive.sessions.replay import Replay
from builder.fs.storage import file_sha256
from builder.sessions.urls import parse_url
from builder.sessions.validate import Validated
from schemas.sessions import ACTION_SOURCES, ACTION_TYPES


def _counts(column: pl.Series, keys: tuple[str, ...]) -> dict[str, int]:
    found = dict(column.value_counts().iter_rows())
    return {key: int(found.get(key, 0)) for key in keys}


def summary(v: Validated, replayed: Replay, corrections: pl.DataFrame) -> dict[str, Any]:
    """Counts for the manifest/card (``replay`` and ``self_corrections`` outputs of ``v``)."""
    n_sessions = v.sessions.height
    verified = int(v.sessions["verified"].fill_null(False).sum())
    weights = replayed.sft.select(pl.col("messages").explode().struct.field("weight"))
    rejected_tables = Counter(r.key.split(".", 1)[0] for r in v.rejects if r.key)
    database = parse_url(v.source).path  # SQLite: the file (or dump) read; PostgreSQL: none
    return {
        "source": v.source,
        # the file's bytes as stored, so the build can be traced to them like every JSONL input
        "sha256": file_sha256(database) if database is not None else None,
        "bytes": database.stat().st_size if database is not None else None,
        "rows_read": dict(v.rows_read),
        # the producer's columns no output holds (the database keeps them)
        "unread_columns": {t: list(v.unread_columns.get(t, [])) for t in ("sessions", "actions")},
        # the contract's optional columns the database lacks, read as null
        "absent_columns": {t: list(v.absent_columns.get(t, [])) for t in ("sessions", "actions")},
        "sessions": n_sessions,
        "actions": v.actions.height,
        "actions_by_source": _counts(v.actions["source"], ACTION_SOURCES),
        "actions_by_type": _counts(v.actions["action_type"], ACTION_TYPES),
        "verified_sessions": verified,
        "verified_share": round(verified / n_sessions, 4) if n_sessions else 0.0,
        "sessions_with_rejected_actions": int(v.sessions["incomplete"].sum()),
        "rejected": {
            "sessions": rejected_tables.get("sessions", 0),
            "actions": rejected_tables.get("actions", 0),
            "by_kind": dict(sorted(Counter(r.kind for r in v.rejects).items())),
        },
        "excluded_sessions": dict(replayed.excluded),
        "sft_rows": replayed.sft.height,
        "sft_assistant_messages": {
            "trained": int((weights["weight"] == 1).sum()),
            "context_only": int((weights["weight"] == 0).sum()),
        },
        "self_correction_rows": corrections.height,
    }
