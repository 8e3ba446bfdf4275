"""Sessions databases: connect (ADBC), create the tables, ingest Arrow data.

One code path for the three kinds of URL (``builder.sessions.urls``): an SQLite file is
opened; an SQL dump is executed into a temporary SQLite file that lives as long as the
connection; a PostgreSQL URL is handed to libpq. Connections are ADBC DB-API connections,
so results arrive as Arrow record batches. A driver's message is scrubbed of the URL's
password before it is shown.
"""

from __future__ import annotations

import importlib.util
import math
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.engine.no_pandas import imports_without_pandas
from builder.errors import EnvironmentProblem
from builder.fs import network
from builder.sessions.dump import loaded_dump
from builder.sessions.urls import (
    DatabaseError,
    DatabaseURL,
    Dialect,
    parse_url,
    scrub,
    with_connect_timeout,
)

if TYPE_CHECKING:
    import pyarrow as pa

SQL_DIR = Path(__file__).resolve().parents[2] / "schemas" / "sql"
# Why a connection was refused, in libpq's words, when the URL (not the server) is at fault
_AUTH_FAILED = ("authentication failed", "no password supplied")
_NOT_FOUND = ("does not exist",)  # the URL's role or database
_PASSWORD_HINT = (
    "check the password: in the URL (postgresql://user:password@host/db), in PGPASSWORD or "
    "in ~/.pgpass, and that the URL's user is the right one"
)
# libpq's words for a query a signal canceled (Ctrl-C reaches the server's query first)
CANCELED = "canceling statement due to user request"
# Lines only pg_dump (or psql) writes: SQLite stops at the first of them


class DriverMissing(EnvironmentProblem, DatabaseError):
    """The database's driver is not installed (a dependency left out of the environment)."""

    hint = "pip install adbc-driver-postgresql (or reinstall agent-traces with its dependencies)"


class DatabaseUnreachable(EnvironmentProblem, DatabaseError):
    """The database server did not accept the connection: the environment, not the URL's
    form, is at fault."""

    hint = "check that the server is running and that the URL's host, port and user are right"


# libpq's (and the OS's) words for a connection that died under a query: the server stopped,
# crashed or was cut off. Another try may find it back; the build is not the user's to fix.
_LOST = (
    "server closed the connection unexpectedly",
    "terminating connection due to administrator command",
    "could not receive data from server",
    "could not send data to server",
    "no connection to the server",
    "connection to server was lost",
    "connection reset by peer",
    "broken pipe",
    "ssl syscall error",
)


def lost_connection(detail: str) -> bool:
    lowered = detail.lower()
    return any(mark in lowered for mark in _LOST)


class ConnectionLost(DatabaseUnreachable):
    """The server went away while the build was reading from it."""

    hint = "check that the server is running, and run the same command again"


class DatabaseLocked(EnvironmentProblem, DatabaseError):
    """An SQLite file another process kept locked for longer than the build waits."""

    hint = "run it again once that write is done, or give it longer with --timeout"


def ddl(dialect: Dialect) -> str:
    """The text of ``schemas/sql/<dialect>.sql``: both tables, their keys and the index."""
    return (SQL_DIR / f"{dialect}.sql").read_text(encoding="utf-8")


def statements(script: str) -> list[str]:
    """Split one of our own DDL scripts into statements (no ``;`` inside literals or comments)."""
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


# SQLite's virtual machine steps between calls of the progress handler: about a millisecond.
@contextmanager
def connect(url: str | DatabaseURL) -> Iterator[Any]:
    """An ADBC DB-API connection to the database (a dump is loaded into a temporary file)."""
    db = parse_url(url) if isinstance(url, str) else url
    if db.dialect == "postgresql":
        try:
            with imports_without_pandas():
                import adbc_driver_postgresql.dbapi as postgresql
        except ImportError as exc:
            raise DriverMissing(f"{db.redacted}: the PostgreSQL driver is not installed") from exc
        try:
            conn = postgresql.connect(with_connect_timeout(db.url))
        except Exception as exc:  # ADBC raises driver-specific errors
            raise _refused(db, exc) from exc
        with conn:
            yield conn
        return
    try:
        with imports_without_pandas():
            import adbc_driver_sqlite.dbapi as sqlite
    except ImportError as exc:
        raise DriverMissing(
            f"{db.redacted}: the SQLite driver is not installed",
            "pip install adbc-driver-sqlite (or reinstall agent-traces with its dependencies)",
        ) from exc
    assert db.path is not None
    if not db.path.is_file():
        what = "not a regular file (a pipe?):" if db.path.exists() else "no such file"
        raise DatabaseError(f"{db.redacted}: {what} {db.path}")
    try:  # SQLite says "failed to allocate memory" of a file it may not read
        db.path.open("rb").close()
    except OSError as exc:
        raise DatabaseError(f"{db.redacted}: cannot open {db.path}: {exc.strerror or exc}") from exc
    if not db.is_dump:
        with sqlite.connect(str(db.path)) as conn:
            wait_for_writers(conn)
            yield conn
        return
    with loaded_dump(db.path) as loaded, sqlite.connect(str(loaded)) as conn:
        yield conn


def wait_for_writers(conn: Any) -> None:
    """Have SQLite wait, up to ``--timeout`` (``EPISODES_TIMEOUT``), for a writer's lock
    (a capture process committing while the build reads) rather than fail at once with
    "database is locked"."""
    milliseconds = max(1, math.ceil(network.timeout() * 1000))
    with conn.cursor() as cur:
        cur.execute(f"PRAGMA busy_timeout = {milliseconds}")
        cur.fetchall()


def _refused(db: DatabaseURL, exc: BaseException) -> DatabaseError:
    """The error for a failed connection: the user's (exit 1) when the server refused the
    URL's credentials or names, the environment's (exit 5) otherwise."""
    detail = driver_error(exc, db.url)
    reason = re.split(r"FATAL:|failed: ", detail)[-1].strip()  # libpq's own words, unprefixed
    lowered = reason.lower()
    if any(mark in lowered for mark in _AUTH_FAILED):
        return DatabaseError(
            f"{db.redacted}: the server refused the login: {reason}", _PASSWORD_HINT
        )
    if "FATAL:" in detail and any(mark in lowered for mark in _NOT_FOUND):
        return DatabaseError(
            f"{db.redacted}: cannot connect: {reason}", "fix the user or database name in the URL"
        )
    said = detail.rsplit("Failed to connect: ", 1)[-1].strip()
    if "FATAL:" not in detail and said.lower().startswith("invalid "):  # libpq read the URL
        return DatabaseError(
            f"{db.redacted}: libpq cannot use the URL: {said}",
            "fix the URL: postgresql://user:password@host:port/dbname?param=value, with "
            "parameters libpq knows (sslmode=require, connect_timeout=10, ...)",
        )
    return DatabaseUnreachable(f"{db.redacted}: cannot connect: {detail}")


def check_database(url: str) -> None:
    """Before any work: the database can be opened (an SQLite file or dump exists; a
    PostgreSQL server accepts the connection)."""
    db = parse_url(url)
    if db.dialect == "sqlite":
        assert db.path is not None
        if db.path.is_dir():
            raise DatabaseError(f"{db.redacted} is a folder: give a .db file")
        if not db.path.is_file():
            rooted = Path("/") / db.path
            if not db.path.is_absolute() and rooted.is_file():  # sqlite:/// + a relative path
                raise DatabaseError(
                    f"{db.redacted}: no such file {db.path} (relative to this folder)",
                    f"for the file {rooted}, write four slashes: sqlite:///{rooted}",
                )
            what = "not a regular file (a pipe?):" if db.path.exists() else "no such file"
            raise DatabaseError(f"{db.redacted}: {what} {db.path}")
        return
    if importlib.util.find_spec("adbc_driver_postgresql") is None:
        raise DriverMissing(
            f"{db.redacted}: PostgreSQL needs the Python module 'adbc_driver_postgresql', "
            "which is not installed"
        )

    def attempt() -> None:
        with connect(db):
            pass

    # a server still starting is tried again, as the read itself would try it
    network.retrying(attempt, lambda exc: isinstance(exc, DatabaseUnreachable))


def init_database(url: str | DatabaseURL) -> None:
    """Create the ``sessions`` and ``actions`` tables (and the index) if they do not exist."""
    db = parse_url(url) if isinstance(url, str) else url
    if db.is_dump:
        raise DatabaseError(f"{db.redacted}: a SQL dump is read-only; give a .db file")
    if db.dialect == "sqlite":
        assert db.path is not None
        if db.path.is_dir():
            raise DatabaseError(f"{db.redacted} is a folder: give a .db file")
        try:
            db.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(db.path)
            try:
                con.executescript(ddl("sqlite"))
            finally:
                con.close()
        except (OSError, sqlite3.Error) as exc:  # not a database, or not writable
            if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
                full = EnvironmentProblem(f"{db.redacted}: no space left creating the tables")
                full.hint = "free space on its device and run it again"
                raise full from exc
            raise DatabaseError(f"{db.redacted}: cannot create the tables: {exc}") from exc
        return
    with connect(db) as conn:
        try:
            execute(conn, statements(ddl("postgresql")))
        except Exception as exc:  # the driver's errors (no privilege, no schema) name no database
            detail = driver_error(exc, db.url)
            raise DatabaseError(f"{db.redacted}: cannot create the tables: {detail}") from exc


def execute(conn: Any, sql: list[str]) -> None:
    """Run statements on an ADBC connection and commit."""
    with conn.cursor() as cur:
        for statement in sql:
            cur.execute(statement)
    conn.commit()


def ingest(url: str | DatabaseURL, tables: list[tuple[str, pa.Table]]) -> None:
    """Append Arrow data to existing tables, in one transaction (ADBC bulk ingest: binary
    COPY on PostgreSQL). A write that fails is one line: a full disk is the environment's
    (exit 5), anything else the database's; a SQLite file this call created is removed.

    Binary COPY needs the exact column types (``INTEGER`` is int32), so on PostgreSQL the data
    is first cast to the table's own Arrow schema.
    """
    db = parse_url(url) if isinstance(url, str) else url
    try:
        with connect(db) as conn:
            with conn.cursor() as cur:
                for table, data in tables:
                    if not data.num_rows:
                        continue
                    if db.dialect == "postgresql":
                        cur.execute(f'SELECT * FROM "{table}" LIMIT 0')
                        target = cur.fetch_arrow_table().schema
                        data = data.select(target.names).cast(target)
                    cur.adbc_ingest(table, data, mode="append")
            conn.commit()
    except DatabaseError:
        raise
    except Exception as exc:  # the driver's errors
        detail = driver_error(exc, db.url)
        if re.search(r"disk is full|no space left|could not extend file", detail, re.IGNORECASE):
            said = detail.removeprefix("INTERNAL: ").removeprefix("failed to execute: ")
            full = EnvironmentProblem(f"{db.redacted}: no space left writing the sessions ({said})")
            full.hint = "free space on its device and run it again"
            raise full from exc
        raise DatabaseError(f"{db.redacted}: cannot write the sessions: {detail}") from exc


def driver_error(exc: BaseException, url: str) -> str:
    """A driver's error in one line, without the URL's password: the server's own ``ERROR:``
    line when there is one (the driver's first line may be a statement of many lines)."""
    text = str(exc).strip()
    server = re.search(r"\bERROR:\s*(.+)", text)
    line = server.group(1) if server else (text.splitlines() or [type(exc).__name__])[0]
    return scrub(line.strip(), url)
