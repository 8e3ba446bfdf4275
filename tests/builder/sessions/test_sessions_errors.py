"""A user's mistakes with a sessions database: one line that says what happened and what to do,
the right exit code, never a password; and both tables read as of one moment."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sessions_support import PASSWORD, Backend, action, session

from builder import errors as exit_codes
from builder.cli.episodes import main
from builder.errors import one_line
from builder.sessions import read as read_module
from builder.sessions.db import check_database, init_database
from builder.sessions.read import read_source
from builder.sessions.urls import DatabaseError, parse_url, redact
from builder.sessions.validate import validate_source
from schemas.sessions import ACTION_ROW, SESSION_ROW

SAMPLE_DUMP = Path(__file__).resolve().parents[3] / "data" / "sessions" / "sample.sql"

POSTGRESQL = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
SQLITE = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
IN_APP = "options=-csearch_path%3Dapp"  # the query parameter the messages advise


def _as_user(backend: Backend, user: str, password: str | None = None) -> str:
    login = user if password is None else f"{user}:{password}"
    return backend.url.replace(f"postgres:{PASSWORD}@", f"{login}@", 1)


def _error(url: str) -> DatabaseError:
    with pytest.raises(DatabaseError) as info:
        read_source(url)
    return info.value


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    return code, err


@pytest.fixture
def role(backend: Backend) -> Iterator[str]:
    """A login role of the backend's cluster, with nothing granted (dropped afterwards)."""
    name = f"r_{uuid.uuid4().hex[:12]}"
    backend.execute(f"CREATE ROLE {name} LOGIN PASSWORD 'rightpw'")
    yield name
    backend.execute(f"DROP OWNED BY {name}", f"DROP ROLE {name}")


@pytest.fixture
def password_role(backend: Backend, role: str) -> Iterator[str]:
    """``role``, which must sign in with its password (the rest of the cluster trusts)."""
    with psycopg.connect(backend.dsn, autocommit=True) as conn:
        hba = Path(str(conn.execute("SHOW hba_file").fetchone()[0]))  # type: ignore[index]
        kept = hba.read_text(encoding="utf-8")
        hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n{kept}", encoding="utf-8")
        conn.execute("SELECT pg_reload_conf()")
    yield role
    hba.write_text(kept, encoding="utf-8")
    with psycopg.connect(backend.dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_reload_conf()")


# Tables off the search path


@POSTGRESQL
def test_tables_in_another_schema_are_named_with_how_to_reach_them(backend: Backend) -> None:
    backend.execute("CREATE SCHEMA app")
    in_app = f"{backend.url}?{IN_APP}"
    init_database(in_app)  # the advised URL reaches the schema through ADBC's libpq
    backend.execute("INSERT INTO app.sessions VALUES (1, 'Plot it.', NULL, NULL, TRUE)")
    error = _error(backend.url)
    line = one_line("build", error)
    assert "no table sessions in the connection's search path (public)" in line
    assert "found in schema app" in line
    assert line.index(IN_APP) < line.index("`episodes sessions init URL` creates new, empty")
    assert error.exit_code == exit_codes.USAGE and PASSWORD not in line
    assert read_source(in_app).sessions["session_id"].to_pylist() == [1]


@POSTGRESQL
def test_tables_named_in_another_case_are_named_with_how_to_rename_them(
    backend: Backend,
) -> None:
    """``CREATE TABLE "Sessions"`` keeps the capital: ``sessions`` is not it, and making new,
    empty tables (the advice when there is none) would build an empty dataset."""
    backend.execute(
        'CREATE TABLE "Sessions" (session_id INTEGER PRIMARY KEY, initial_instruction TEXT)'
    )
    line = one_line("build", _error(backend.url))
    assert 'public."Sessions" differs from it only in case' in line
    assert 'ALTER TABLE public."Sessions" RENAME TO sessions' in line
    assert "sessions init" not in line


@POSTGRESQL
def test_every_url_form_libpq_reads_still_connects(backend: Backend) -> None:
    """The connect timeout is appended to the URL as written: an escaped space in a
    parameter, an empty host with the host in the query, and two hosts all connect."""
    from urllib.parse import urlsplit

    backend.execute("CREATE SCHEMA app")
    parts = urlsplit(backend.url)
    host, port, name = parts.hostname, parts.port, parts.path.lstrip("/")
    account = parts.netloc.rsplit("@", 1)[0]
    init_database(f"{backend.url}?options=-c%20search_path%3Dapp")
    backend.execute("INSERT INTO app.sessions VALUES (1, 'Plot it.', NULL, NULL, TRUE)")
    spaced = f"{backend.url}?options=-c%20search_path%3Dapp"
    assert read_source(spaced).sessions["session_id"].to_pylist() == [1]
    user, _, password = account.partition(":")
    query = f"host={host}&port={port}&user={user}" + (f"&password={password}" if password else "")
    empty_host = f"postgresql:///{name}?{query}&options=-c%20search_path%3Dapp"
    source = read_source(empty_host)
    assert source.sessions["session_id"].to_pylist() == [1]
    assert source.source.startswith("postgresql:///")  # how the dataset names it: a URL still
    assert parse_url(source.source).dialect == "postgresql"
    two_hosts = f"postgresql://{account}@{host}:{port},{host}:{port}/{name}?{IN_APP}"
    assert read_source(two_hosts).sessions["session_id"].to_pylist() == [1]


@POSTGRESQL
def test_a_schema_without_usage_is_named(backend: Backend, role: str) -> None:
    backend.execute("CREATE SCHEMA app")
    init_database(f"{backend.url}?{IN_APP}")
    line = one_line("build", _error(f"{_as_user(backend, role)}?{IN_APP}"))
    assert f"schema app has one, but user {role} lacks USAGE on it" in line
    assert f"GRANT USAGE ON SCHEMA app TO {role}" in line


# A password is never shown


@pytest.mark.parametrize(
    ("conninfo", "shown"),
    [
        ("host=127.0.0.1 password=secretpw dbname=prod", "host=127.0.0.1 password=*** dbname=prod"),
        ("password = 'secret pw' dbname=prod", "password = *** dbname=prod"),
        ("dbname=prod sslpassword=secretpw", "dbname=prod sslpassword=***"),
    ],
)
def test_a_key_value_string_is_redacted(conninfo: str, shown: str) -> None:
    assert redact(conninfo) == shown
    with pytest.raises(DatabaseError) as info:
        parse_url(conninfo)
    line = one_line("build", info.value)
    assert "secret" not in line and "postgresql://" in line


def test_a_key_value_string_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    conninfo = "host=127.0.0.1 password=secretpw dbname=prod"
    for argv in (
        ["build", "--sessions", conninfo, "--out", str(tmp_path / "out")],
        ["sessions", "init", conninfo],
    ):
        code, err = _cli(capsys, *argv)
        assert code == exit_codes.USAGE
        assert "secretpw" not in err and "password=***" in err
        assert "key=value" in err and "postgresql://user@host:port/dbname" in err


# Logins and privileges are the user's to fix


@POSTGRESQL
def test_a_wrong_or_missing_password_exits_1_and_names_the_password(
    backend: Backend, password_role: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for url in (_as_user(backend, password_role, "wrongpw"), _as_user(backend, password_role)):
        code, err = _cli(capsys, "sessions", "init", url)
        assert code == exit_codes.USAGE, err
        assert "password" in err and "PGPASSWORD" in err and "~/.pgpass" in err
        assert "wrongpw" not in err
    check_database(_as_user(backend, password_role, "rightpw"))


@POSTGRESQL
def test_a_server_that_is_down_is_still_the_environment(
    backend: Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    down = "postgresql://postgres:hunter2@127.0.0.1:1/db"
    code, err = _cli(capsys, "sessions", "init", down)
    assert code == exit_codes.UNAVAILABLE and "hunter2" not in err


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("postgresql://postgres:pw@127.0.0.1:notaport/db", 'invalid integer value "notaport"'),
        ("postgresql://postgres:p@ss:w0rd@127.0.0.1:1/db", "must be percent-encoded"),
        ("postgresql://postgres:p@ss:w/rd0w0rd@127.0.0.1:1/db", "must be percent-encoded"),
        ("postgresql://postgres:ab/cdw0rd@127.0.0.1:1/db", "must be percent-encoded"),
        ("postgresql://postgres:ab#cdw0rd@127.0.0.1:1/db", "must be percent-encoded"),
        ("postgresql://postgres:ab?cdw0rd@127.0.0.1:1/db", "must be percent-encoded"),
        ("postgresql://postgres:pa?s=s0w0rd@127.0.0.1:1/db", "must be percent-encoded"),
        (
            "postgresql://postgres:a?b&cw0rd@127.0.0.1:1/db?sslmode=disable",
            "must be percent-encoded",
        ),
        ("postgresql://postgres:ab[w0rd]cd@127.0.0.1:1/db", "must be percent-encoded"),
        ("postgresql://postgres:pw@127.0.0.1:1/db?foo=bar", 'invalid URI query parameter: "foo"'),
        ("postgresql://postgres:pw@127.0.0.1:1/db?sslmode=bogus", "invalid sslmode value"),
    ],
)
def test_a_url_libpq_cannot_use_is_the_user_s_to_fix(
    url: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1 and "fix the URL", not "check that the server is running"; an unencoded '@'
    is refused before libpq, whose message would show the rest of the password."""
    code, err = _cli(capsys, "sessions", "init", url)
    assert code == exit_codes.USAGE, err
    assert said in err and "server is running" not in err
    assert "w0rd" not in err and err.count("\n") == 1


def test_a_host_that_takes_the_connection_and_never_answers_times_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without a timeout libpq waits forever, deaf to Ctrl-C; a URL's own timeout wins."""
    import socket

    from builder.sessions import db, urls

    monkeypatch.setattr(urls, "CONNECT_TIMEOUT_S", 1)
    monkeypatch.setenv("EPISODES_RETRIES", "0")  # one wait is the point here
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"postgresql://postgres:pw@127.0.0.1:{silent.getsockname()[1]}/db"
        with pytest.raises(db.DatabaseUnreachable, match="timeout expired"):
            check_database(url)
    assert urls.with_connect_timeout(url + "?connect_timeout=3") == url + "?connect_timeout=3"
    # appended to the text as given: libpq reads %20, not +; an empty host stays empty
    options = url + "?options=-c%20search_path%3Dapp"
    assert urls.with_connect_timeout(options) == options + "&connect_timeout=1"
    # an '@' in a parameter's value is no user info: the URL is not refused
    named = url + "?application_name=me@host"
    assert urls.parse_url(named).url == named
    assert urls.with_connect_timeout("postgresql:///db") == "postgresql:///db?connect_timeout=1"


def test_an_sqlite_url_naming_a_folder_or_missing_a_slash_says_so(tmp_path: Path) -> None:
    folder = tmp_path / "sessions.db"
    folder.mkdir()
    with pytest.raises(DatabaseError, match=r"is a folder: give a \.db file"):
        check_database(f"sqlite:///{folder}")
    real = tmp_path / "real.db"
    init_database(f"sqlite:///{real}")
    relative = str(real).lstrip("/")  # sqlite:///tmp/... names tmp/... in this folder
    with pytest.raises(DatabaseError, match="relative to this folder") as caught:
        check_database(f"sqlite:///{relative}")
    assert f"sqlite:///{real}" in caught.value.hint


def test_a_server_still_starting_is_tried_again_before_any_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check before the build tries a refused connection again, as the read does: a
    server that answers on the second try is no error."""
    from contextlib import contextmanager

    from builder.fs import network
    from builder.sessions import db

    monkeypatch.setattr(network, "FIRST_BACKOFF_S", 0.01)
    monkeypatch.setattr(db.importlib.util, "find_spec", lambda name: object())
    tries: list[int] = []

    @contextmanager
    def refused_once(url: object) -> Iterator[None]:
        tries.append(1)
        if len(tries) == 1:
            raise db.DatabaseUnreachable("postgresql://h/db: cannot connect: refused")
        yield

    monkeypatch.setattr(db, "connect", refused_once)
    check_database("postgresql://h/db")
    assert len(tries) == 2
    monkeypatch.setenv("EPISODES_RETRIES", "0")
    tries.clear()
    with pytest.raises(db.DatabaseUnreachable, match="refused"):
        check_database("postgresql://h/db")


@POSTGRESQL
def test_creating_tables_without_the_privilege_is_one_line(backend: Backend, role: str) -> None:
    backend.execute(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC, {role}")
    with pytest.raises(DatabaseError, match=r"cannot create the tables: .*permission denied"):
        init_database(_as_user(backend, role))


# Tables that differ from the contract


@SQLITE
def test_sqlite_column_names_match_in_any_case(backend: Backend) -> None:
    backend.execute(
        f"CREATE TABLE sessions ({', '.join(n.title() for n in SESSION_ROW.names)})",
        f"CREATE TABLE actions ({', '.join(n.upper() for n in ACTION_ROW.names)})",
    )
    backend.insert("sessions", [session(1)])
    backend.insert("actions", [action("a", 1, 1, correct=True)])
    source = read_source(backend.url)
    assert source.sessions["session_id"].to_pylist() == [1]
    assert source.actions["correct"].to_pylist() == [True]
    assert source.unread_columns == {"sessions": [], "actions": []}


@POSTGRESQL
def test_postgresql_says_a_quoted_name_differs_only_in_case(backend: Backend) -> None:
    backend.create("strict")
    backend.execute('ALTER TABLE sessions RENAME COLUMN session_id TO "Session_Id"')
    line = one_line("build", _error(backend.url))
    assert 'table sessions lacks column(s) session_id; its column(s) "Session_Id" differ' in line
    assert "only in case" in line


def test_actions_without_the_optional_correct_column(backend: Backend) -> None:
    backend.create("loose")
    backend.execute("ALTER TABLE actions DROP COLUMN correct")
    backend.insert("sessions", [session(1)])
    backend.insert("actions", [action("a", 1, 1)[:5] + action("a", 1, 1)[6:]])
    source = read_source(backend.url)
    assert source.actions.schema.field("correct").type == ACTION_ROW.field("correct").type
    assert source.actions["correct"].to_pylist() == [None]
    validated = validate_source(source)
    assert validated.rejects == [] and validated.actions["correct"].to_list() == [None]


def test_a_missing_column_names_the_table_and_the_contract(backend: Backend) -> None:
    backend.create("loose")
    backend.execute("ALTER TABLE actions DROP COLUMN source")
    line = one_line("build", _error(backend.url))
    assert "table actions lacks column(s) source" in line
    assert f"schemas/sql/{backend.dialect}.sql" in line
    assert "dataset.toml" not in line and PASSWORD not in line


PG_DUMP = """--
-- PostgreSQL database dump
--

\\restrict 5mXgZ1
SET statement_timeout = 0;
SELECT pg_catalog.set_config('search_path', '', false);

COPY public.sessions (session_id, initial_instruction) FROM stdin;
1\tPlot it.
\\.
"""


def test_a_pg_dump_given_as_sqlite_says_to_load_it_into_postgresql(tmp_path: Path) -> None:
    dump = tmp_path / "prod.sql"
    dump.write_text(PG_DUMP, encoding="utf-8")
    line = one_line("build", _error(f"sqlite:///{dump}"))
    assert "not a SQLite dump" in line and "pg_dump" in line
    assert "load it into PostgreSQL" in line and "postgresql://" in line


# One snapshot for both tables


def _commit_elsewhere(backend: Backend) -> None:
    """Session 2 and its action, committed by another process (SQLite) or connection."""
    if backend.dialect == "postgresql":
        backend.insert("sessions", [session(2)])
        backend.insert("actions", [action("a2", 2, 1)])
        return
    script = (
        "import sqlite3, sys; con = sqlite3.connect(sys.argv[1], timeout=5)\n"
        "with con: con.execute(\"INSERT INTO sessions VALUES (2, 'x', NULL, NULL, 1)\"); "
        "con.execute(\"INSERT INTO actions VALUES ('a2', 2, 1, 'input', 'x', NULL, 'human')\")"
    )
    subprocess.run([sys.executable, "-c", script, backend.dsn], check=True, timeout=60)


def test_both_tables_are_read_as_of_one_moment(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend.create("strict")
    if backend.dialect == "sqlite":  # a reader and a writer at once, as an application runs
        con = sqlite3.connect(backend.dsn)
        con.execute("PRAGMA journal_mode=WAL")
        con.close()
    backend.insert("sessions", [session(1)])
    backend.insert("actions", [action("a1", 1, 1)])
    collect = read_module._collect

    def committed_in_between(*args: object) -> object:
        table = collect(*args)  # type: ignore[arg-type]
        if args[2] == "sessions":
            _commit_elsewhere(backend)
        return table

    monkeypatch.setattr(read_module, "_collect", committed_in_between)
    validated = validate_source(read_source(backend.url))
    assert [r.kind for r in validated.rejects] == []
    assert validated.actions["action_uuid"].to_list() == ["a1"]
    monkeypatch.undo()
    assert validate_source(read_source(backend.url)).actions["action_uuid"].sort().to_list() == [
        "a1",
        "a2",
    ]


def test_a_query_canceled_by_ctrl_c_is_an_interrupt(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C may reach the server's query before Python: the driver then reports the
    cancel as a query error, which is the interrupt ("interrupted", exit 130), not a table
    that cannot be read."""
    backend.create("canceled")

    def canceled(*_: object, **__: object) -> Iterator[object]:
        raise RuntimeError("ERROR: canceling statement due to user request")
        yield

    monkeypatch.setattr(read_module, "iter_batches", canceled)
    with pytest.raises(KeyboardInterrupt):
        read_source(backend.url)


def test_a_build_without_the_correct_column_says_every_action_trains(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``correct`` is optional in the seeds: without it no action is incorrect, so the
    build warns, naming a column that looks like it, and the manifest records the absence."""
    import json

    db = tmp_path / "s.db"
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE sessions (session_id INTEGER PRIMARY KEY, initial_instruction TEXT,"
        " initial_code TEXT, initial_exec_output TEXT, verified BOOLEAN);"
        "CREATE TABLE actions (action_uuid TEXT PRIMARY KEY, session_id INTEGER, action_id"
        " INTEGER, action_type TEXT, action TEXT, is_correct BOOLEAN, source TEXT);"
        "INSERT INTO sessions VALUES (1, 'Print it', NULL, NULL, 1);"
        "INSERT INTO actions VALUES ('a', 1, 1, 'set_code', 'print(1)', 0, 'ai');"
    )
    con.commit()
    con.close()
    out = tmp_path / "ds"
    args = ["build", "--config", str(tmp_path / "none.toml"), "--no-progress"]
    (tmp_path / "none.toml").write_text("")
    args += ["--sessions", f"sqlite:///{db}", "--out", str(out)]
    assert main([*args, "--rejects", str(tmp_path / "r.jsonl")]) == 0
    said = capsys.readouterr().out
    assert "warning: the sessions' actions table has no correct column" in said
    assert "Its column is_correct is not read" in said
    assert "1 sessions, 1 actions" in said
    sessions = json.loads((out / "manifest.json").read_text())["sessions"]
    assert sessions["absent_columns"] == {"sessions": [], "actions": ["correct"]}


def test_init_on_a_table_of_another_shape_says_what_it_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``sessions init`` creates what is missing and leaves an existing table as it is: one
    that lacks a column of the contract is named now, not by the next build."""
    db = tmp_path / "s.db"
    con = sqlite3.connect(db)
    con.execute(
        "CREATE TABLE actions (action_uuid TEXT PRIMARY KEY, session_id INTEGER,"
        " action_id INTEGER, action_type TEXT, action TEXT, correct BOOLEAN)"
    )
    con.commit()
    con.close()
    code, err = _cli(capsys, "sessions", "init", f"sqlite:///{db}")
    assert code == exit_codes.USAGE
    assert "table actions lacks column(s) source" in err


def _locked_for(path: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process holding an SQLite file's write lock for ``seconds`` (a capture
    process committing while the build reads); returned once it holds it."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('begin exclusive')\n"
            "print('locked', flush=True)\n"
            "time.sleep(float(sys.argv[2]))\n"
            "c.execute('commit')\n",
            str(path),
            str(seconds),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def test_an_sqlite_file_locked_by_a_writer_is_waited_for_then_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sessions.db"
    init_database(f"sqlite:///{path}")
    monkeypatch.setenv("EPISODES_TIMEOUT", "20")  # a lock shorter than the timeout: waited for
    holder = _locked_for(path, 0.5)
    assert read_source(f"sqlite:///{path}").sessions.num_rows == 0
    holder.wait()
    monkeypatch.setenv("EPISODES_TIMEOUT", "0.3")  # one longer: one line, the environment's
    holder = _locked_for(path, 5)
    try:
        with pytest.raises(DatabaseError) as info:
            read_source(f"sqlite:///{path}")
    finally:
        holder.kill()
    assert info.value.exit_code == exit_codes.UNAVAILABLE
    assert "another process held the database locked for 0.3 s" in one_line("build", info.value)


def test_a_dump_holding_a_nul_character_is_one_line(tmp_path: Path) -> None:
    dump = tmp_path / "nul.sql"
    dump.write_text("CREATE TABLE t (x);\nINSERT INTO t VALUES ('a\x00b');\n")
    with pytest.raises(DatabaseError, match="a NUL character at line 2: not an SQL dump"):
        read_source(f"sqlite:///{dump}")


@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_dump_whose_statement_never_ends_stops_on_ctrl_c_or_sigterm(
    tmp_path: Path, sent: signal.Signals, code: int
) -> None:
    """The statement runs inside SQLite; the signal still stops it, with its exit code, and
    the build leaves nothing beside its output."""
    endless = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT count(*)"
    (tmp_path / "slow.sql").write_text(f"CREATE TABLE t AS {endless} FROM r;\n")
    (tmp_path / "none.jsonl").write_text("")
    argv = ["build", "--episodes", "none.jsonl", "--sessions", f"sqlite:///{tmp_path}/slow.sql"]
    argv += ["--out", "out/ds", "--rejects", "out/rejects.jsonl", "--no-progress"]
    build = subprocess.Popen(
        [str(Path(sys.executable).parent / "episodes"), *argv],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(2)  # well into the statement
    build.send_signal(sent)
    _, err = build.communicate(timeout=60)
    assert build.returncode == code, err
    assert len(err.strip().splitlines()) == 1
    assert not list((tmp_path / "out").glob("*")) and not list((tmp_path / "out").glob(".*"))


@pytest.mark.parametrize("statement", ["ATTACH '{other}' AS a", "VACUUM INTO '{other}'"])
def test_a_dump_may_not_open_another_file(tmp_path: Path, statement: str) -> None:
    other = tmp_path / "elsewhere.db"
    dump = tmp_path / "dump.sql"
    dump.write_text(f"CREATE TABLE t (x);\n{statement.format(other=other)};\n")
    with pytest.raises(DatabaseError, match="ATTACH and VACUUM INTO are refused"):
        read_source(f"sqlite:///{dump}")
    assert not other.exists()


def test_a_dump_named_in_upper_case_is_read_as_a_dump(tmp_path: Path) -> None:
    upper = tmp_path / "SAMPLE.SQL"
    upper.write_bytes(SAMPLE_DUMP.read_bytes())
    got = read_source(f"sqlite:///{upper}")
    want = read_source(f"sqlite:///{SAMPLE_DUMP}")
    assert got.actions.num_rows == want.actions.num_rows > 0
    assert got.actions.equals(want.actions)


def test_a_database_file_it_may_not_read_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """SQLite says "failed to allocate memory" of a file it may not open, which was an
    internal error (exit 70). The file is opened first: its error, one line, exit 1. (Root
    reads any file: the refusal is the system's, stood in for here.)"""
    db = tmp_path / "s.db"
    sqlite3.connect(db).close()
    opened = Path.open

    def refused(self: Path, *args: object, **kwargs: object) -> object:
        if self == db:
            raise PermissionError(13, "Permission denied", str(self))
        return opened(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "open", refused)
    with pytest.raises(DatabaseError, match=rf"cannot open {db}: Permission denied"):
        read_source(f"sqlite:///{db}")
    (tmp_path / "none.jsonl").write_text("")
    argv = ["build", "--episodes", str(tmp_path / "none.jsonl"), "--sessions", f"sqlite:///{db}"]
    code = main([*argv, "--out", str(tmp_path / "ds"), "--rejects", str(tmp_path / "r.jsonl")])
    err = capfd.readouterr().err
    assert code == 1 and "Permission denied" in err and "internal error" not in err, err
    assert len(err.strip().splitlines()) == 1


def test_a_pipe_named_as_the_database_is_said_for_what_it_is(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "s.db")
    with pytest.raises(DatabaseError, match="not a regular file \\(a pipe\\?\\)"):
        check_database(f"sqlite:///{tmp_path / 's.db'}")
