"""Sessions database URLs: what kind each is, what libpq is given, and how every message,
reject and table names the database (redacted: a password must never end up in a rejects
file or a dataset card).

Three kinds of URL (``builder.sessions.db`` connects to each):

* ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db`` (SQLAlchemy's convention)
  opens an SQLite file;
* ``sqlite:///path.sql`` is a SQL dump (readable, diffable text: the form the sample ships
  in);
* ``postgresql://...`` (or ``postgres://``) is handed to libpq as written, with a connect
  timeout appended (a libpq ``key=value`` string is refused: the URL is what names the
  database everywhere else).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, urlencode, urlsplit

from builder.errors import UsageError
from builder.fs import network

Dialect = Literal["sqlite", "postgresql"]
_SQLITE_PREFIX = "sqlite:///"
_POSTGRES_SCHEMES = ("postgresql", "postgres")
_SECRET_PARAMS = {"password", "sslpassword"}
# A libpq key=value pair whose value is secret: the value bare or single-quoted (with \\ and
# \' escapes), as libpq reads it
_SECRET_PAIR = re.compile(r"\b((?:ssl)?password)(\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)", re.IGNORECASE)
_CONNINFO = re.compile(r"^\s*[A-Za-z_]+\s*=")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
# Without a timeout of its own, a host that takes the connection and never answers (a
# firewall, a server that is not PostgreSQL) holds libpq, and the build, forever.
CONNECT_TIMEOUT_S = 10


class DatabaseError(UsageError, ValueError):
    """A sessions database that cannot be used, named by its redacted URL."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint

    def about(self, source: str) -> DatabaseError:
        """The same error, its message prefixed with the (redacted) database it is about."""
        return type(self)(f"{source}: {self}", self.hint)


@dataclass(frozen=True)
class DatabaseURL:
    url: str
    dialect: Dialect
    path: Path | None = None  # SQLite only: the database file or SQL dump

    @property
    def is_dump(self) -> bool:
        return self.path is not None and self.path.suffix.lower() == ".sql"  # DUMP.SQL too

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


def _misplaced_userinfo(url: str) -> bool:
    """Whether the user info (as a reader means it, up to ``_userinfo_end``) holds an
    unencoded ``@``, ``/``, ``?``, ``#``, ``[`` or ``]``: a parser would cut it elsewhere,
    or take it for an IPv6 host."""
    rest = url.split("://", 1)[-1]
    end = _userinfo_end(rest)
    return end is not None and any(c in rest[:end] for c in "@/?#[]")


def _hide_userinfo(url: str) -> str:
    """``url`` with its user info hidden, and any password parameter."""
    scheme, _, rest = url.rpartition("://")
    end = _userinfo_end(rest)
    after = rest[end + 1 :] if end is not None else rest
    after = re.sub(r"((?:^|[?&])(?:ssl)?password=)[^&#]*", r"\1***", after, flags=re.IGNORECASE)
    return f"{scheme}://***@{after}"


def _check_postgres_url(url: str) -> None:
    """Refuse a URL whose user info is misplaced (``_misplaced_userinfo``): libpq's message
    could echo the rest of the password."""
    if _misplaced_userinfo(url):
        raise DatabaseError(
            f"{_hide_userinfo(url)}: the URL's user or password holds a character that must be "
            "percent-encoded",
            "percent-encode it (@ is %40, / is %2F, ? is %3F, # is %23, [ is %5B, ] is %5D), "
            "or put the password in PGPASSWORD or ~/.pgpass",
        )


def with_connect_timeout(url: str) -> str:
    """``url`` with libpq's ``connect_timeout`` appended (``EPISODES_TIMEOUT`` when it is set,
    else ``CONNECT_TIMEOUT_S``), unless it sets its own; the rest of
    the text is left exactly as given (libpq reads ``%20``, not ``+``; ``postgresql:///db``
    has an empty host)."""
    if "#" in url or any(k == "connect_timeout" for k, _ in parse_qsl(urlsplit(url).query)):
        return url  # libpq reads no fragment: after a '#', the timeout would join its text
    seconds = max(1, math.ceil(network.timeout(CONNECT_TIMEOUT_S)))  # libpq takes whole seconds
    return f"{url}{'&' if '?' in url else '?'}connect_timeout={seconds}"


def redact(url: str) -> str:
    """The URL with any password (in the user info or the query string) replaced by ``***``;
    a libpq key=value string with its ``password=`` value replaced."""
    if "://" not in url:
        return _SECRET_PAIR.sub(r"\1\2***", url)
    if _misplaced_userinfo(url):
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
