"""URLs, password redaction, the DDL and init_database, on both backends."""

from __future__ import annotations

from pathlib import Path

import pytest
from sessions_support import Backend, action, session

from builder.sessions.db import connect, init_database
from builder.sessions.read import read_table
from builder.sessions.urls import DatabaseError, parse_url, published, redact


def test_parse_url_kinds(tmp_path: Path) -> None:
    db = parse_url("sqlite:///data/x.db")
    assert (db.dialect, db.path, db.is_dump) == ("sqlite", Path("data/x.db"), False)
    assert parse_url("sqlite:////abs/x.sql").path == Path("/abs/x.sql")
    assert parse_url("sqlite:///x.sql").is_dump
    assert parse_url("sqlite:///DUMP.SQL").is_dump  # the suffix in any case
    assert parse_url("sqlite:///x.db", base=tmp_path).path == tmp_path / "x.db"
    assert parse_url("postgresql://u@h/db").dialect == "postgresql"
    assert parse_url("postgres://u@h/db").dialect == "postgresql"
    with pytest.raises(DatabaseError, match="unsupported"):
        parse_url("mysql://u:pw@h/db")


def test_unsupported_url_message_is_redacted() -> None:
    with pytest.raises(DatabaseError) as info:
        parse_url("mysql://user:topsecret@h/db")
    assert "topsecret" not in str(info.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:pw@h:5432/db", "postgresql://u:***@h:5432/db"),
        (
            "postgresql://u@h/db?password=pw&sslmode=require",
            "postgresql://u@h/db?password=***&sslmode=require",
        ),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("sqlite:///data/sessions/sample.sql", "sqlite:///data/sessions/sample.sql"),
    ],
)
def test_redact(url: str, shown: str) -> None:
    assert redact(url) == shown


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://ana:pw@db.lab:5432/app", "postgresql://db.lab:5432/app"),
        (
            "postgres://ana@db.lab/app?sslmode=require&password=x&user=ana",
            "postgres://db.lab/app?sslmode=require",
        ),
        (
            "postgresql://db.lab/app?options=-csearch_path%3Dapp",
            "postgresql://db.lab/app?options=-csearch_path%3Dapp",
        ),
        ("sqlite:///data/s.db", "sqlite:///data/s.db"),
    ],
)
def test_a_dataset_names_the_database_without_its_account(url: str, shown: str) -> None:
    assert published(url) == shown


def test_missing_sqlite_file(tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match="no such file"):
        read_table(f"sqlite:///{tmp_path}/absent.db", "sessions")


def test_init_database_creates_constrained_tables(backend: Backend) -> None:
    init_database(backend.url)
    init_database(backend.url)  # idempotent
    backend.insert("sessions", [session(1)])
    backend.insert("actions", [action("a", 1, 1)])
    for bad_session, bad_action in [
        ([session(1)], None),  # primary key
        (None, [action("a", 1, 2)]),  # primary key
        (None, [action("b", 1, 2, type_="run")]),  # CHECK action_type
        (None, [action("c", 1, 3, source="robot")]),  # CHECK source
    ]:
        with pytest.raises(Exception):  # noqa: B017 - sqlite3 or psycopg integrity error
            if bad_session:
                backend.insert("sessions", bad_session)
            if bad_action:
                backend.insert("actions", bad_action)
    if backend.dialect == "postgresql":  # SQLite enforces foreign keys only when asked
        with pytest.raises(Exception):  # noqa: B017
            backend.insert("actions", [action("d", 99, 1)])
    with connect(backend.url) as conn, conn.cursor() as cur:
        if backend.dialect == "sqlite":
            cur.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        else:
            cur.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'actions'")
        assert "actions_session_id" in {row[0] for row in cur.fetchall()}


def test_init_refuses_a_dump(tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match="read-only"):
        init_database(f"sqlite:///{tmp_path}/x.sql")


def test_missing_column_is_a_clear_error(backend: Backend) -> None:
    backend.execute(
        "CREATE TABLE sessions (session_id INTEGER, initial_instruction TEXT, verified BOOLEAN)"
    )
    with pytest.raises(DatabaseError) as info:
        read_table(backend.url, "sessions")
    message = str(info.value)
    assert "initial_code" in message and "initial_exec_output" in message
    assert "hunter2" not in message


def test_bad_dump_is_a_clear_error(tmp_path: Path) -> None:
    dump = tmp_path / "bad.sql"
    dump.write_text("CREATE TABLE sessions (;\n", encoding="utf-8")
    with pytest.raises(DatabaseError, match="does not load"):
        read_table(f"sqlite:///{dump}", "sessions")
