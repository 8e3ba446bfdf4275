"""Sessions databases by URL: parse, redact, connect (ADBC), create the tables, ingest Arrow data.

Three kinds of URL, one code path after ``connect``:

* ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db`` (SQLAlchemy's convention)
  opens an SQLite file;
* ``sqlite:///path.sql`` is a SQL dump (readable, diffable text: the form the sample ships
  in); it is executed into a temporary SQLite file that lives as long as the connection;
* ``postgresql://...`` (or ``postgres://``) is handed to libpq unchanged (a libpq
  ``key=value`` string is refused: the URL is what names the database everywhere else).

Connections are ADBC DB-API connections, so results arrive as Arrow record batches. Every
message, reject and table names the database by its redacted URL: a password must never end
up in a rejects file or a dataset card.
"""

from __future__ import annotations

import importlib.util
import re
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit

import pyarrow as pa

from builder.errors import EnvironmentProblem, UsageError

Dialect = Literal["sqlite", "postgresql"]
SQL_DIR = Path(__file__).resolve().parents[2] / "schemas" / "sql"
_SQLITE_PREFIX = "sqlite:///"
_POSTGRES_SCHEMES = ("postgresql", "postgres")
_SECRET_PARAMS = {"password", "sslpassword"}
# A libpq key=value pair whose value is secret: the value bare or single-quoted (with \\ and
# \' escapes), as libpq reads it
_SECRET_PAIR = re.compile(r"\b((?:ssl)?password)(\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)", re.IGNORECASE)
_CONNINFO = re.compile(r"^\s*[A-Za-z_]+\s*=")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# Why a connection was refused, in libpq's words, when the URL (not the server) is at fault
_AUTH_FAILED = ("authentication failed", "no password supplied")
_NOT_FOUND = ("does not exist",)  # the URL's role or database
_PASSWORD_HINT = (
    "check the password: in the URL (postgresql://user:password@host/db), in PGPASSWORD or "
    "in ~/.pgpass, and that the URL's user is the right one"
)
# libpq's words for a query a signal canceled (Ctrl-C reaches the server's query first)
CANCELED = "canceling statement due to user request"
# Without a timeout of its own, a host that takes the connection and never answers (a
# firewall, a server that is not PostgreSQL) holds libpq, and the build, forever.
CONNECT_TIMEOUT_S = 10
# Lines only pg_dump (or psql) writes: SQLite stops at the first of them
_PG_DUMP_MARKS = ("-- PostgreSQL database dump", "\\connect ", "\\restrict ", "FROM stdin;")


class DatabaseError(UsageError, ValueError):
    """A sessions database that cannot be used, named by its redacted URL."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint

    def about(self, source: str) -> DatabaseError:
        """The same error, its message prefixed with the (redacted) database it is about."""
        return type(self)(f"{source}: {self}", self.hint)


class DriverMissing(EnvironmentProblem, DatabaseError):
    """The database's driver is not installed (a dependency left out of the environment)."""

    hint = "pip install adbc-driver-postgresql (or reinstall agent-traces with its dependencies)"


class DatabaseUnreachable(EnvironmentProblem, DatabaseError):
    """The database server did not accept the connection: the environment, not the URL's
    form, is at fault."""

    hint = "check that the server is running and that the URL's host, port and user are right"


@dataclass(frozen=True)
class DatabaseURL:
    url: str
    dialect: Dialect
    path: Path | None = None  # SQLite only: the database file or SQL dump

    @property
    def is_dump(self) -> bool:
        return self.path is not None and self.path.suffix == ".sql"

    @property
    def redacted(self) -> str:
        return redact(self.url)

    @property
    def published(self) -> str:
        return published(self.url)


def parse_url(url: str, base: Path | None = None) -> DatabaseURL:
    """Classify ``url``; a relative SQLite path is resolved against ``base`` when given."""
    if url.startswith(_SQLITE_PREFIX):
        rest = url[len(_SQLITE_PREFIX) :].split("?", 1)[0]
        if not rest:
            raise DatabaseError(f"{url}: no database path after {_SQLITE_PREFIX}")
        path = Path(rest)
        if base is not None and not path.is_absolute():
            path = base / path
        return DatabaseURL(url, "sqlite", path)
    found = _SCHEME.match(url)  # before any parser, which may fail on the password
    scheme = found.group(1).lower() if found else ""
    if scheme in _POSTGRES_SCHEMES:
        _check_postgres_url(url)
        return DatabaseURL(url, "postgresql")
    if _CONNINFO.match(url):
        raise DatabaseError(
            f"{redact(url)}: a libpq key=value connection string, which is not supported",
            "give a URL instead: postgresql://user@host:port/dbname, with the password in "
            "PGPASSWORD or ~/.pgpass (or postgresql://user:password@host:port/dbname)",
        )
    raise DatabaseError(
        f"{redact(url)}: unsupported sessions database URL "
        "(expected sqlite:///path.db, sqlite:///dump.sql or postgresql://...)"
    )


# An '@' followed by a host (and port) and the database's path: where a password holding a
# '?' really ends, whatever the '?' seemed to start
_HOST_THEN_PATH = re.compile(r"@[A-Za-z0-9.\-:\[\],%]*/")


def _userinfo_end(rest: str) -> int | None:
    """Where the user info of ``rest`` (a URL after its ``://``) ends: the last ``@`` before
    the query. A ``?`` in a password starts the query early, which is then told by an ``@``
    followed by a host and a path (``?s=s@db.lab:5432/app``), or by an ``@`` in the first
    parameter before any ``=`` (``?cd@db.lab``); an ``@`` in a value
    (``application_name=me@host``) is none of the user info's."""
    query = rest.find("?")
    head = rest if query < 0 else rest[:query]
    at = head.rfind("@")
    if at >= 0:
        return at
    if query >= 0:
        tail = rest[query + 1 :]
        host = _HOST_THEN_PATH.search(tail)  # "…@db.lab:5432/app": a host, not a value
        if host is not None:
            return query + 1 + host.start()
        first = tail.split("&", 1)[0]
        at, equals = first.find("@"), first.find("=")
        if at >= 0 and (equals < 0 or at < equals):
            return query + 1 + at
    return None


def _userinfo(url: str) -> str | None:
    """The user info as a reader means it, however a parser would cut it (an unencoded
    ``/``, ``?``, ``#`` or ``@`` in a password ends it early). None without one."""
    rest = url.split("://", 1)[-1]
    end = _userinfo_end(rest)
    return rest[:end] if end is not None else None


def _hide_userinfo(url: str) -> str:
    """``url`` with its user info hidden, and any password parameter."""
    scheme, _, rest = url.rpartition("://")
    end = _userinfo_end(rest)
    after = rest[end + 1 :] if end is not None else rest
    after = re.sub(r"((?:^|[?&])(?:ssl)?password=)[^&#]*", r"\1***", after, flags=re.IGNORECASE)
    return f"{scheme}://***@{after}"


def _check_postgres_url(url: str) -> None:
    """Refuse a URL whose user or password holds an unencoded ``@``, ``/``, ``?``, ``#``,
    ``[`` or ``]``: a parser would cut it elsewhere (or take it for an IPv6 host) and could
    echo the rest of the password in its message."""
    info = _userinfo(url)
    if info is not None and any(c in info for c in "@/?#[]"):
        raise DatabaseError(
            f"{_hide_userinfo(url)}: the URL's user or password holds a character that must be "
            "percent-encoded",
            "percent-encode it (@ is %40, / is %2F, ? is %3F, # is %23, [ is %5B, ] is %5D), "
            "or put the password in PGPASSWORD or ~/.pgpass",
        )


def with_connect_timeout(url: str) -> str:
    """``url`` with libpq's ``connect_timeout`` appended, unless it sets its own; the rest of
    the text is left exactly as given (libpq reads ``%20``, not ``+``; ``postgresql:///db``
    has an empty host)."""
    if "#" in url or any(k == "connect_timeout" for k, _ in parse_qsl(urlsplit(url).query)):
        return url  # libpq reads no fragment: after a '#', the timeout would join its text
    return f"{url}{'&' if '?' in url else '?'}connect_timeout={CONNECT_TIMEOUT_S}"


def redact(url: str) -> str:
    """The URL with any password (in the user info or the query string) replaced by ``***``;
    a libpq key=value string with its ``password=`` value replaced."""
    if "://" not in url:
        return _SECRET_PAIR.sub(r"\1\2***", url)
    info = _userinfo(url)
    if info is not None and any(c in info for c in "@/?#[]"):  # a parser would misplace it
        return _hide_userinfo(url)
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable database URL>"
    netloc, query = parts.netloc, parts.query
    if parts.password is not None:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = userinfo.split(":", 1)[0] + ":***@" + host
    pairs = parse_qsl(query, keep_blank_values=True)
    if any(k.lower() in _SECRET_PARAMS for k, _ in pairs):
        hidden = [(k, "***" if k.lower() in _SECRET_PARAMS else v) for k, v in pairs]
        query = urlencode(hidden, safe="*")
    if (netloc, query) == (parts.netloc, parts.query):
        return url  # nothing secret: unchanged
    return _unsplit(parts.scheme, netloc, parts.path, query, parts.fragment)


def _unsplit(scheme: str, netloc: str, path: str, query: str, fragment: str) -> str:
    """A URL from its parts, with its ``//`` even when the host is empty (``urlunsplit``
    writes ``postgresql:/db`` for ``postgresql:///db``, which no longer reads as a URL)."""
    url = f"{scheme}://{netloc}{path}"
    return url + (f"?{query}" if query else "") + (f"#{fragment}" if fragment else "")


def published(url: str) -> str:
    """How the dataset names the database (the rows' ``source_url``, the manifest, rejects):
    a PostgreSQL URL without its user and password, nor a ``user`` or secret parameter — an
    account is no provenance, and a dataset may be public; host, port and database stay. Any
    other URL as ``redact`` gives it."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if parts.scheme not in _POSTGRES_SCHEMES:
        return redact(url)
    hidden = _SECRET_PARAMS | {"user"}
    pairs = [
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() not in hidden
    ]
    host = parts.netloc.rsplit("@", 1)[-1]
    return _unsplit(parts.scheme, host, parts.path, urlencode(pairs), parts.fragment)


def scrub(text: str, url: str) -> str:
    """``text`` (a driver's message) without the URL's password, should the driver echo it."""
    for secret in _secrets(url):
        text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", "***", text)
    return _SECRET_PAIR.sub(r"\1\2***", text)


def _secrets(url: str) -> list[str]:
    if "://" not in url:
        found = [m.group(3).strip("'") for m in _SECRET_PAIR.finditer(url)]
    else:
        try:
            parts = urlsplit(url)
            found = [parts.password or ""]
            found += [v for k, v in parse_qsl(parts.query) if k.lower() in _SECRET_PARAMS]
        except ValueError:
            found = []
    return [s for s in found if s and s != "***"]


def ddl(dialect: Dialect) -> str:
    """The text of ``schemas/sql/<dialect>.sql``: both tables, their keys and the index."""
    return (SQL_DIR / f"{dialect}.sql").read_text(encoding="utf-8")


def statements(script: str) -> list[str]:
    """Split one of our own DDL scripts into statements (no ``;`` inside literals or comments)."""
    lines = [line.split("--", 1)[0] for line in script.splitlines()]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def load_dump(dump: Path, target: Path) -> None:
    """Execute the SQL dump ``dump`` into a new SQLite database file ``target``."""
    try:
        script = dump.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatabaseError(f"{dump}: cannot read SQL dump: {exc}") from exc
    con = sqlite3.connect(target)
    try:
        con.executescript(script)
        con.commit()
    except sqlite3.Error as exc:
        if any(mark in script for mark in _PG_DUMP_MARKS):
            raise DatabaseError(
                f"{dump}: not a SQLite dump: it looks like pg_dump output, which SQLite cannot "
                f"load ({exc})",
                f"load it into PostgreSQL (psql -d DBNAME -f {dump}) and pass "
                "--sessions postgresql://user@host/DBNAME",
            ) from exc
        raise DatabaseError(f"{dump}: SQL dump does not load into SQLite: {exc}") from exc
    finally:
        con.close()


@contextmanager
def connect(url: str | DatabaseURL) -> Iterator[Any]:
    """An ADBC DB-API connection to the database (a dump is loaded into a temporary file)."""
    db = parse_url(url) if isinstance(url, str) else url
    if db.dialect == "postgresql":
        try:
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
        import adbc_driver_sqlite.dbapi as sqlite
    except ImportError as exc:
        raise DriverMissing(
            f"{db.redacted}: the SQLite driver is not installed",
            "pip install adbc-driver-sqlite (or reinstall agent-traces with its dependencies)",
        ) from exc
    assert db.path is not None
    if not db.path.is_file():
        raise DatabaseError(f"{db.redacted}: no such file {db.path}")
    if not db.is_dump:
        with sqlite.connect(str(db.path)) as conn:
            yield conn
        return
    with tempfile.TemporaryDirectory(prefix="sessions-dump-") as tmp:
        loaded = Path(tmp) / "loaded.db"
        load_dump(db.path, loaded)
        with sqlite.connect(str(loaded)) as conn:
            yield conn


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
        if not db.path.is_file():
            raise DatabaseError(f"{db.redacted}: no such file {db.path}")
        return
    if importlib.util.find_spec("adbc_driver_postgresql") is None:
        raise DriverMissing(
            f"{db.redacted}: PostgreSQL needs the Python module 'adbc_driver_postgresql', "
            "which is not installed"
        )
    with connect(db):
        pass


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


def ingest(url: str | DatabaseURL, table: str, data: pa.Table) -> None:
    """Append Arrow data to an existing table (ADBC bulk ingest: binary COPY on PostgreSQL).

    Binary COPY needs the exact column types (``INTEGER`` is int32), so on PostgreSQL the data
    is first cast to the table's own Arrow schema.
    """
    db = parse_url(url) if isinstance(url, str) else url
    with connect(db) as conn:
        with conn.cursor() as cur:
            if db.dialect == "postgresql":
                cur.execute(f'SELECT * FROM "{table}" LIMIT 0')
                target = cur.fetch_arrow_table().schema
                data = data.select(target.names).cast(target)
            cur.adbc_ingest(table, data, mode="append")
        conn.commit()


def driver_error(exc: BaseException, url: str) -> str:
    """A driver's error in one line, without the URL's password: the server's own ``ERROR:``
    line when there is one (the driver's first line may be a statement of many lines)."""
    text = str(exc).strip()
    server = re.search(r"\bERROR:\s*(.+)", text)
    line = server.group(1) if server else (text.splitlines() or [type(exc).__name__])[0]
    return scrub(line.strip(), url)
