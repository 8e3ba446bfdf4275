"""``export-jsonl --sessions-db``: a build's sessions and actions go back into a database
of either dialect, as the rows it read (read back by the sessions source itself)."""

from __future__ import annotations

from sessions_support import Backend

from builder.cli.export_jsonl import write_sessions
from builder.pipeline import BuildReport
from builder.restore.sessions import session_rows
from builder.sessions.read import read_source


def test_the_sessions_go_back_into_the_database(
    backend: Backend, sample_build: BuildReport
) -> None:
    restored = session_rows(sample_build.out)
    assert restored is not None
    sessions, actions = restored
    assert write_sessions(sample_build.out, backend.url) == (30, 300)
    read = read_source(backend.url)
    for table, rows, key in (
        (read.sessions, sessions, "session_id"),
        (read.actions, actions, "action_uuid"),
    ):
        back = table.select(rows.schema.names).cast(rows.schema).sort_by(key)
        assert back.to_pylist() == rows.sort_by(key).to_pylist()
