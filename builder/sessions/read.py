"""Read the sessions and actions tables Arrow-natively, in bounded record batches.

ADBC drivers hand results over as Arrow record batches (``cursor.fetch_record_batch()``), so
no row ever becomes a Python object and a large table streams: each batch holds at most
``batch_rows`` rows (SQLite: the driver's batch size; PostgreSQL: the driver batches by a
byte budget, which we size from ``batch_rows`` and then slice zero-copy).

The database may not respect its declared types (SQLite stores any value in any column; an
application's PostgreSQL schema may use other types), and the validator must see such values
instead of the build crashing on them. So integer and boolean columns are selected through a
guard: a value of the right type lands in the typed column, anything else lands, as text, in
a companion ``_invalid_<column>`` column, which the validator turns into an ``invalid_type``
reject (the SQL: ``builder.sessions.columns``). Text columns are cast to text. SQLite keeps
whatever bytes it was given as text, and the driver hands them over unchecked: a value that
is not UTF-8 would make Parquet that no reader opens. So a batch whose text fails Arrow's
UTF-8 check has each such value moved, shown with backslash escapes, to a
``_not_utf8_<column>`` column (an ``invalid_utf8`` reject). Two driver facts shape the
SQL:

* ADBC SQLite infers each column's type from the first batch, so an all-null first batch
  followed by text fails. A typed sentinel row is put first (``UNION ALL``) and dropped.
* On PostgreSQL the guards cost a regex per value, so they are only used for columns whose
  catalog type is not already an integer (``int2/4/8``) or ``bool``.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from builder.engine.memory import available_bytes
from builder.fs import network
from builder.sessions.columns import (
    INVALID_PREFIX,
    NOT_UTF8_PREFIX,
    OPTIONAL_COLUMNS,
    SENTINEL,
    batch_schema,
    column_types,
    no_table,
    read_schema,
    select_sql,
)
from builder.sessions.db import (
    CANCELED,
    ConnectionLost,
    DatabaseLocked,
    DatabaseUnreachable,
    connect,
    driver_error,
    lost_connection,
)
from builder.sessions.urls import DatabaseError, DatabaseURL, Dialect, parse_url
from schemas.sessions import ROW_SCHEMAS

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "INVALID_PREFIX",
    "NOT_UTF8_PREFIX",
    "SessionsSource",
    "batch_schema",
    "iter_batches",
    "read_source",
    "read_table",
]

DEFAULT_BATCH_ROWS = 65_536
_PG_BYTES_PER_ROW = 256  # sizes the driver's byte budget from batch_rows
_PG_MIN_BATCH_BYTES, _PG_MAX_BATCH_BYTES = 64 << 10, 64 << 20


def _utf8_checked(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with every text value that is not UTF-8 moved to its ``_not_utf8_`` column
    (a guard's ``_invalid_`` text is only shown, so it is escaped in place). One pass of
    Arrow's check for a clean batch; Python only for the column that fails it."""
    try:
        batch.validate(full=True)
        return batch
    except pa.ArrowInvalid:
        pass
    columns = list(batch.columns)
    for i, field in enumerate(schema):
        if not pa.types.is_string(field.type) or field.name.startswith(NOT_UTF8_PREFIX):
            continue
        try:
            columns[i].validate(full=True)
            continue
        except pa.ArrowInvalid:
            pass
        kept: list[str | None] = []
        moved: list[str | None] = []
        for value in columns[i].view(pa.binary()).to_pylist():
            try:
                kept.append(None if value is None else value.decode("utf-8"))
                moved.append(None)
            except UnicodeDecodeError:
                shown = value.decode("utf-8", "backslashreplace")
                kept.append(shown if field.name.startswith(INVALID_PREFIX) else None)
                moved.append(None if field.name.startswith(INVALID_PREFIX) else shown)
        columns[i] = pa.array(kept, pa.string())
        if not field.name.startswith(INVALID_PREFIX):
            columns[schema.get_field_index(NOT_UTF8_PREFIX + field.name)] = pa.array(
                moved, pa.string()
            )
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _batch_options(dialect: Dialect, batch_rows: int) -> dict[str, str]:
    if dialect == "sqlite":
        return {"adbc.sqlite.query.batch_rows": str(batch_rows)}
    budget = batch_rows * _PG_BYTES_PER_ROW
    budget = max(_PG_MIN_BATCH_BYTES, min(_PG_MAX_BATCH_BYTES, budget))
    return {"adbc.postgresql.batch_size_hint_bytes": str(budget)}


def iter_batches(
    conn: Any,
    dialect: Dialect,
    table: str,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    arrived: Callable[[], None] = lambda: None,
) -> Iterator[pa.RecordBatch]:
    """Stream ``table`` as record batches of at most ``batch_rows`` rows, in ``batch_schema``;
    ``arrived`` is called as each batch comes from the driver."""
    if batch_rows < 1:
        raise ValueError("batch_rows must be positive")
    schema = batch_schema(table)
    read = read_schema(table)
    with conn.cursor() as cur:
        types = column_types(cur, dialect, table)
        if not types:
            raise no_table(cur, dialect, table)
        sql = select_sql(dialect, table, types)
        cur.adbc_statement.set_options(**_batch_options(dialect, batch_rows))
        cur.execute(sql)
        reader = cur.fetch_record_batch()
        first = dialect == "sqlite"
        for batch in reader:
            arrived()
            if dialect == "sqlite":
                if first:  # the typing sentinel is the first row of the first batch
                    if batch.num_rows == 0 or batch.column(0)[0].as_py() != 0:
                        raise DatabaseError(f"{table}: SQLite returned no typing sentinel first")
                    batch, first = batch.slice(1), False
                batch = batch.drop_columns([SENTINEL])
            batch = batch.rename_columns(read.names).cast(read)
            for field in schema:  # filled by the UTF-8 check, when a value fails it
                if field.name not in read.names:
                    batch = batch.append_column(field, pa.nulls(batch.num_rows, field.type))
            batch = _utf8_checked(batch, schema)
            for offset in range(0, batch.num_rows, batch_rows):
                yield batch.slice(offset, batch_rows)


def unread_columns(conn: Any, db: DatabaseURL, table: str) -> tuple[list[str], list[str]]:
    """(the producer's columns of ``table`` that no output holds, in the table's order; the
    optional columns of the contract it lacks, read as null): the manifest names both, so
    neither goes unnoticed."""
    declared = set(ROW_SCHEMAS[table].names)
    with conn.cursor() as cur:
        types = column_types(cur, db.dialect, table)
    key = str.lower if db.dialect == "sqlite" else str
    present = {c.lower() for c in types}
    absent = sorted(c for c in OPTIONAL_COLUMNS[table] if c not in present)
    return [c for c in types if key(c) not in declared], absent


class TooLargeToHold(DatabaseError):
    """A sessions table larger than the memory the build may give it (or one that never
    ends: a view over an endless series)."""

    hint = "read the sessions on a machine with more free memory, or check the table's view"


# The share of the machine's free memory the two tables may take as read: their validation
# and replay hold them whole, with frames of their own beside them.
HELD_SHARE = 1 / 3


def holding_limit() -> int | None:
    """Bytes the sessions tables may hold as read, together; None: no bound known."""
    free = available_bytes()
    return int(free * HELD_SHARE) if free is not None else None


def _collect(
    conn: Any,
    db: DatabaseURL,
    table: str,
    batch_rows: int,
    arrived: Callable[[], None] = lambda: None,
    limit: int | None = None,
) -> pa.Table:
    """``table`` read whole; refused once its batches hold more than ``limit`` bytes."""
    batches: list[pa.RecordBatch] = []
    held = 0
    try:
        for batch in iter_batches(conn, db.dialect, table, batch_rows, arrived):
            held += batch.nbytes
            if limit is not None and held > limit:
                rows = sum(b.num_rows for b in batches) + batch.num_rows
                raise TooLargeToHold(  # named by its database below (``about``)
                    f"table {table} holds more than {rows:,} rows "
                    f"({held / 2**30:.1f} GiB read), more than the build may hold in memory "
                    f"(a third of this machine's free memory, which its validation needs "
                    f"whole): is it a view whose rows never end?"
                )
            batches.append(batch)
    except DatabaseError as exc:
        raise exc.about(db.redacted) from exc
    except Exception as exc:  # driver errors (ADBC, Arrow) name neither database nor table
        detail = driver_error(exc, db.url)
        if CANCELED in detail:  # Ctrl-C reached the server's query first: an interrupt
            raise KeyboardInterrupt from exc
        if lost_connection(detail):
            raise ConnectionLost(
                f"{db.redacted}: the connection was lost while reading table {table}: {detail}"
            ) from exc
        if "database is locked" in detail:  # a writer held it past ``--timeout``
            raise DatabaseLocked(
                f"{db.redacted}: another process held the database locked for "
                f"{network.timeout():g} s while the build read table {table}"
            ) from exc
        raise DatabaseError(f"{db.redacted}: cannot read table {table}: {detail}") from exc
    # The batches become the table's chunks: no copy.
    return pa.Table.from_batches(batches, schema=batch_schema(table))


def read_table(
    url: str | DatabaseURL, table: str, batch_rows: int = DEFAULT_BATCH_ROWS
) -> pa.Table:
    """All of ``table``, read batch-wise."""
    db = parse_url(url) if isinstance(url, str) else url
    with connect(db) as conn:
        return _collect(conn, db, table, batch_rows)


def one_snapshot(conn: Any, db: DatabaseURL) -> None:
    """Make the connection's transaction read both tables from one snapshot, so that a session
    committed between the two reads cannot leave its actions looking like orphans.

    The DB-API connection is not in autocommit mode: the driver keeps one transaction open
    across statements. In SQLite that is enough (a read transaction sees one state of the
    file from its first read on). PostgreSQL's default, READ COMMITTED, takes a new snapshot
    per statement: REPEATABLE READ takes one for the whole transaction."""
    if db.dialect != "postgresql":
        return
    try:
        conn.rollback()  # SET TRANSACTION must be the first statement of its transaction
        with conn.cursor() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
    except Exception as exc:  # driver errors name no database
        detail = driver_error(exc, db.url)
        raise DatabaseError(
            f"{db.redacted}: cannot start a read-only transaction: {detail}"
        ) from exc


def check_tables(url: str | DatabaseURL) -> None:
    """Both tables have the contract's columns: ``sessions init`` leaves a table that
    existed as it was, and a build would refuse one that lacks a column."""
    db = parse_url(url) if isinstance(url, str) else url
    with connect(db) as conn, conn.cursor() as cur:
        for table in ("sessions", "actions"):
            try:
                select_sql(db.dialect, table, column_types(cur, db.dialect, table))
            except DatabaseError as exc:
                raise exc.about(db.redacted) from exc


@dataclass(frozen=True)
class SessionsSource:
    """Both tables of one database as read (``_invalid_*`` columns included)."""

    source: str  # the URL as the dataset names it (``db.published``: no account, no password)
    sessions: pa.Table
    actions: pa.Table
    unread_columns: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # table -> names
    absent_columns: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # optional


def read_source(url: str | DatabaseURL, batch_rows: int = DEFAULT_BATCH_ROWS) -> SessionsSource:
    """Read ``sessions`` and ``actions`` over one connection (one load of a SQL dump), in one
    transaction: both as of one moment. A server that cannot be reached, or that goes away
    while they are read, is tried again (``builder.fs.network``): both tables again, in a
    new snapshot."""
    db = parse_url(url) if isinstance(url, str) else url
    if db.dialect == "sqlite":
        return _read_source(db, batch_rows)
    failed: list[DatabaseUnreachable] = []

    def attempt() -> SessionsSource:
        try:
            return _watched(db, batch_rows)
        except DatabaseUnreachable as exc:
            failed.append(exc)
            raise

    try:
        return network.retrying(attempt, lambda exc: isinstance(exc, DatabaseUnreachable))
    except ConnectionLost:
        raise
    except DatabaseUnreachable as exc:
        if not isinstance(failed[0], ConnectionLost):
            raise
        # Lost mid-read, then gone: the loss is the news, the refusals after it follow from it
        tries = len(failed) - 1
        raise ConnectionLost(
            f"{failed[0]} (tried again {tries} time{'s' * (tries != 1)}: it does not answer)"
        ) from exc


def _watched(db: DatabaseURL, batch_rows: int) -> SessionsSource:
    """``_read_source`` on a thread of its own, given up on when the server sends nothing for
    ``network.stall_timeout()`` (a host that hangs mid-read, a network that drops packets:
    the connection stays open and libpq would wait for ever). The thread is left where it
    waits, with its connection, which nothing may close under it; it ends with the process.
    """
    heard = [time.monotonic()]  # when the server was last heard from
    result: list[SessionsSource] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def arrived() -> None:
        heard[0] = time.monotonic()

    def read() -> None:
        try:
            result.append(_read_source(db, batch_rows, arrived))
        except BaseException as exc:  # handed to the waiting thread, which raises it
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=read, name="sessions-read", daemon=True).start()
    limit = network.stall_timeout()
    while not done.wait(min(1.0, limit)):
        if time.monotonic() - heard[0] > limit:
            raise ConnectionLost(
                f"{db.redacted}: the server sent nothing for {limit:g} s while the sessions "
                f"were read (EPISODES_TIMEOUT × {network.STALL_TIMEOUTS}): it hangs"
            )
    if failure:
        raise failure[0]
    return result[0]


def _read_source(
    db: DatabaseURL, batch_rows: int, arrived: Callable[[], None] = lambda: None
) -> SessionsSource:
    limit = holding_limit()
    with connect(db) as conn:
        arrived()  # connected: the clock runs from here
        one_snapshot(conn, db)
        sessions = _collect(conn, db, "sessions", batch_rows, arrived, limit)
        left = None if limit is None else max(0, limit - sessions.nbytes)
        actions = _collect(conn, db, "actions", batch_rows, arrived, left)
        found = {t: unread_columns(conn, db, t) for t in ("sessions", "actions")}
    unread = {t: names for t, (names, _) in found.items()}
    absent = {t: names for t, (_, names) in found.items()}
    return SessionsSource(db.published, sessions, actions, unread, absent)
