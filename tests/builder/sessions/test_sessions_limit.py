"""A sessions table larger than the build may hold in memory, or a view whose rows never end,
is refused in one line before memory runs out (``builder.sessions.read``)."""

from __future__ import annotations

import pytest
from sessions_support import Backend

from builder.engine import memory
from builder.sessions import read
from builder.sessions.read import TooLargeToHold, read_source


def _endless_actions(backend: Backend) -> None:
    """``sessions`` empty and ``actions`` a view over a series without end. (A recursive
    query streams its rows on both databases; PostgreSQL's ``generate_series`` would first
    be materialized whole by the server, until its disk is full.)"""
    backend.create()
    backend.execute("DROP TABLE actions")
    one = "1" if backend.dialect == "sqlite" else "1::bigint"
    series = f"WITH RECURSIVE n(i) AS (SELECT {one} UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"
    backend.execute(
        "CREATE VIEW actions AS SELECT 'uuid-' || i AS action_uuid, 1 AS session_id, "
        "i AS action_id, 'input' AS action_type, 'print(1)' AS action, "
        f"NULL AS correct, 'human' AS source FROM ({series}) AS s"
    )


def test_a_view_that_never_ends_is_refused(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    _endless_actions(backend)
    monkeypatch.setattr(read, "available_bytes", lambda: 12 * 2**20)  # 4 MiB to hold
    with pytest.raises(TooLargeToHold) as refused:
        read_source(backend.url)
    message = str(refused.value)
    assert "table actions holds more than" in message
    assert "is it a view whose rows never end?" in message
    assert message.count("actions") == 1 and "\n" not in message
    assert refused.value.hint


def test_tables_within_the_limit_are_read(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend.create()
    backend.insert("sessions", [(1, "Find the mean", "", "", True)])
    monkeypatch.setattr(read, "available_bytes", lambda: 12 * 2**20)
    assert read_source(backend.url).sessions.num_rows == 1


def test_the_free_memory_is_known_here() -> None:
    free = memory.available_bytes()
    assert free is not None and 0 < free <= 2**50
    assert read.holding_limit() is not None
