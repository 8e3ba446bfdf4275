"""The ``sessions`` and ``actions`` rows of a build, as the database held them: the output
tables' database columns (``schemas.sessions``: ``SESSION_ROW``, ``ACTION_ROW``), in
session and action order. The columns the build added (the question id, counts, the replay)
are derived from these, so nothing else is needed to build again."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from builder.restore.folder import read_table
from schemas.sessions import ACTION_ROW, SESSION_ROW


def session_rows(folder: Path) -> tuple[pa.Table, pa.Table] | None:
    """(sessions, actions) as database rows; None when the build read no sessions."""
    sessions = read_table(folder, "sessions")
    if sessions is None:
        return None
    actions = read_table(folder, "actions")
    sessions = sessions.sort("session_id").select(SESSION_ROW.names)
    rows = sessions.to_arrow().cast(SESSION_ROW)
    if actions is None:
        return rows, ACTION_ROW.empty_table()
    actions = actions.sort("session_id", "action_id", maintain_order=True)
    return rows, actions.select(ACTION_ROW.names).to_arrow().cast(ACTION_ROW)
