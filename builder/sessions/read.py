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
reject. Text columns are cast to text. SQLite keeps whatever bytes it was given as text, and
the driver hands them over unchecked: a value that is not UTF-8 would make Parquet that no
reader opens. So a batch whose text fails Arrow's UTF-8 check has each such value moved, shown
with backslash escapes, to a ``_not_utf8_<column>`` column (an ``invalid_utf8`` reject). Two
driver facts shape the SQL:

* ADBC SQLite infers each column's type from the first batch, so an all-null first batch
  followed by text fails. A typed sentinel row is put first (``UNION ALL``) and dropped.
* On PostgreSQL the guards cost a regex per value, so they are only used for columns whose
  catalog type is not already an integer (``int2/4/8``) or ``bool``.

Columns are matched by name as the database does: case-insensitively in SQLite, exactly in
PostgreSQL (where a quoted name keeps its case). A column the contract marks optional
(``actions.correct``) may be absent: it is read as all-null.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from builder.sessions.db import (
    DatabaseError,
    DatabaseURL,
    Dialect,
    connect,
    driver_error,
    parse_url,
)
from schemas.sessions import ROW_SCHEMAS

DEFAULT_BATCH_ROWS = 65_536
INVALID_PREFIX = "_invalid_"
NOT_UTF8_PREFIX = "_not_utf8_"
_SENTINEL = "_sentinel"
_PG_INTEGERS = {"int2", "int4", "int8"}
# The spellings of an integer and of a boolean that text may hold: an integer as Python or
# SQL writes one (no padding, sign or leading zero), a boolean as PostgreSQL's canonical words
_PG_INTEGER_TEXT = r"^(0|-?[1-9][0-9]{0,17})$"
_BOOLEAN_WORDS = "('true', 'false', 't', 'f', '1', '0')"
_TRUE = "('true', 't', '1')"
_PG_BYTES_PER_ROW = 256  # sizes the driver's byte budget from batch_rows
_PG_MIN_BATCH_BYTES, _PG_MAX_BATCH_BYTES = 64 << 10, 64 << 20
# Columns the seed's spec marks optional: a table without them is read as if all null
OPTIONAL_COLUMNS = {"sessions": frozenset[str](), "actions": frozenset({"correct"})}
_PLAIN_IDENTIFIER = re.compile(r"[a-z_][a-z0-9_$]*")


def guarded(type_: pa.DataType) -> bool:
    """Columns read through a type guard (the others are cast to text)."""
    return pa.types.is_integer(type_) or pa.types.is_boolean(type_)


def batch_schema(table: str) -> pa.Schema:
    """What ``iter_batches`` yields: the declared columns, then ``_invalid_*`` and
    ``_not_utf8_*`` text columns."""
    declared = ROW_SCHEMAS[table]
    invalid = [pa.field(INVALID_PREFIX + f.name, pa.string()) for f in declared if guarded(f.type)]
    not_utf8 = [
        pa.field(NOT_UTF8_PREFIX + f.name, pa.string())
        for f in declared
        if pa.types.is_string(f.type)
    ]
    return pa.schema([*declared, *invalid, *not_utf8], metadata=declared.metadata)


def read_schema(table: str) -> pa.Schema:
    """The columns the ``SELECT`` returns: ``batch_schema`` but the ``_not_utf8_*`` ones."""
    schema = batch_schema(table)
    return pa.schema([f for f in schema if not f.name.startswith(NOT_UTF8_PREFIX)])


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


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def column_types(cursor: Any, dialect: Dialect, table: str) -> dict[str, str]:
    """Column name -> declared (SQLite) or catalog (PostgreSQL) type name."""
    if dialect == "sqlite":
        cursor.execute(f"PRAGMA table_info({_quote(table)})")
        return {row[1]: str(row[2]).lower() for row in cursor.fetchall()}
    cursor.execute(
        "SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t ON a.atttypid = t.oid "
        f"WHERE a.attrelid = to_regclass('{table}') AND a.attnum > 0 AND NOT a.attisdropped"
    )
    return {str(name): str(type_) for name, type_ in cursor.fetchall()}


def _absent_sql(field: pa.Field) -> tuple[str, str | None]:
    """An optional column the table lacks: nulls, typed as the column would be."""
    name, invalid = _quote(field.name), _quote(INVALID_PREFIX + field.name)
    if not guarded(field.type):
        return f"CAST(NULL AS TEXT) AS {name}", None
    target = "BOOLEAN" if pa.types.is_boolean(field.type) else "BIGINT"
    return f"CAST(NULL AS {target}) AS {name}", f"CAST(NULL AS TEXT) AS {invalid}"


def _column_sql(
    dialect: Dialect, field: pa.Field, catalog_type: str, column: str | None = None
) -> tuple[str, str | None]:
    """``(value AS name, invalid text AS _invalid_name)`` for one column (None: not guarded);
    ``column`` is the table's own spelling of the name, when it differs.

    A value of the declared type is read as is; text is read only in its exact spelling
    (``_PG_INTEGER_TEXT``, ``_BOOLEAN_WORDS``), the same rule in both databases."""
    c, invalid = _quote(column or field.name), _quote(INVALID_PREFIX + field.name)
    name = _quote(field.name)
    if not guarded(field.type):
        return f"CAST({c} AS TEXT) AS {name}", None
    is_bool = pa.types.is_boolean(field.type)
    text = f"CAST({c} AS TEXT)"
    if dialect == "sqlite":
        is_text = f"typeof({c}) = 'text'"
        if is_bool:
            word = f"{is_text} AND lower({c}) IN {_BOOLEAN_WORDS}"
            ok = f"(typeof({c}) = 'integer' AND {c} IN (0, 1)) OR ({word})"
            value = f"CASE WHEN typeof({c}) = 'integer' THEN {c} ELSE lower({c}) IN {_TRUE} END"
        else:  # text that is an integer's exact spelling: it survives the round trip
            exact = f"CAST(CAST({c} AS INTEGER) AS TEXT) = {c} AND length(ltrim({c}, '-')) <= 18"
            ok = f"typeof({c}) = 'integer' OR ({is_text} AND {exact})"
            value = f"CAST({c} AS INTEGER)"
    else:
        native = catalog_type == "bool" if is_bool else catalog_type in _PG_INTEGERS
        target = "BOOLEAN" if is_bool else "BIGINT"
        if native:
            return f"CAST({c} AS {target}) AS {name}", f"CAST(NULL AS TEXT) AS {invalid}"
        if is_bool:
            ok = f"lower({text}) IN {_BOOLEAN_WORDS}"
            value = f"CAST(lower({text}) AS BOOLEAN)"
        else:
            ok, value = f"{text} ~ '{_PG_INTEGER_TEXT}'", f"CAST({text} AS BIGINT)"
    return (
        f"CASE WHEN {ok} THEN {value} END AS {name}",
        f"CASE WHEN {c} IS NOT NULL AND NOT ({ok}) THEN {text} END AS {invalid}",
    )


def own_names(dialect: Dialect, types: dict[str, str]) -> dict[str, str]:
    """Declared column name -> the table's own spelling of it (SQLite ignores case)."""
    if dialect == "sqlite":
        return {name.lower(): name for name in types}
    return {name: name for name in types}


def _lacks_columns(
    dialect: Dialect, table: str, missing: list[str], types: dict[str, str]
) -> DatabaseError:
    message = f"table {table} lacks column(s) {', '.join(missing)}"
    by_case = {name.lower(): name for name in types}
    cased = [by_case[m] for m in missing if m in by_case]
    if cased:  # PostgreSQL: a quoted name keeps its case, and matches only that case
        shown = ", ".join(_quote(name) for name in cased)
        message += f"; its column(s) {shown} differ from them only in case"
    return DatabaseError(
        message,
        f"the tables must have the columns of schemas/sql/{dialect}.sql: add or rename "
        f"(ALTER TABLE {table} RENAME COLUMN ...) the missing ones",
    )


def select_sql(dialect: Dialect, table: str, types: dict[str, str]) -> str:
    """The guarded ``SELECT`` for one table, columns in ``batch_schema`` order."""
    declared = ROW_SCHEMAS[table]
    if not types:
        raise DatabaseError(f"no table {table}: create both with `episodes sessions init URL`")
    names = own_names(dialect, types)
    cased = {name.lower() for name in types}  # an optional column in another case is no absence
    optional = OPTIONAL_COLUMNS[table] - cased
    missing = [f.name for f in declared if f.name not in names and f.name not in optional]
    if missing:
        raise _lacks_columns(dialect, table, missing, types)
    pairs = [
        _column_sql(dialect, f, types[names[f.name]], names[f.name])
        if f.name in names
        else _absent_sql(f)
        for f in declared
    ]
    exprs = [value for value, _ in pairs] + [invalid for _, invalid in pairs if invalid]
    body = f"{', '.join(exprs)} FROM {_quote(table)}"
    if dialect == "postgresql":
        return f"SELECT {body}"
    typed = ", ".join("0" if guarded(f.type) else "''" for f in read_schema(table))
    return f"SELECT 0 AS {_SENTINEL}, {typed} UNION ALL SELECT 1, {body}"


def _batch_options(dialect: Dialect, batch_rows: int) -> dict[str, str]:
    if dialect == "sqlite":
        return {"adbc.sqlite.query.batch_rows": str(batch_rows)}
    budget = batch_rows * _PG_BYTES_PER_ROW
    budget = max(_PG_MIN_BATCH_BYTES, min(_PG_MAX_BATCH_BYTES, budget))
    return {"adbc.postgresql.batch_size_hint_bytes": str(budget)}


def iter_batches(
    conn: Any, dialect: Dialect, table: str, batch_rows: int = DEFAULT_BATCH_ROWS
) -> Iterator[pa.RecordBatch]:
    """Stream ``table`` as record batches of at most ``batch_rows`` rows, in ``batch_schema``."""
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
            if dialect == "sqlite":
                if first:  # the typing sentinel is the first row of the first batch
                    if batch.num_rows == 0 or batch.column(0)[0].as_py() != 0:
                        raise DatabaseError(f"{table}: SQLite returned no typing sentinel first")
                    batch, first = batch.slice(1), False
                batch = batch.drop_columns([_SENTINEL])
            batch = batch.rename_columns(read.names).cast(read)
            for field in schema:  # filled by the UTF-8 check, when a value fails it
                if field.name not in read.names:
                    batch = batch.append_column(field, pa.nulls(batch.num_rows, field.type))
            batch = _utf8_checked(batch, schema)
            for offset in range(0, batch.num_rows, batch_rows):
                yield batch.slice(offset, batch_rows)


def no_table(cursor: Any, dialect: Dialect, table: str) -> DatabaseError:
    """``table`` is not found: say where it was looked for and, on PostgreSQL, where it is.
    Tables in a schema off the search path are a common case that ``sessions init`` would
    only hide, by creating new, empty tables next to the search path's first schema."""
    if dialect == "sqlite":
        return DatabaseError(
            f"no table {table}: create both with `episodes sessions init URL`",
            "or fix the URL, if it names the wrong database file",
        )
    cursor.execute("SELECT array_to_string(current_schemas(false), ', '), current_user::text")
    path, user = cursor.fetchall()[0]
    cursor.execute(
        "SELECT n.nspname::text, has_schema_privilege(n.oid, 'USAGE') FROM pg_catalog.pg_class c "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE c.relname = '{table}' AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1"
    )
    found = cursor.fetchall()
    usable = [schema for schema, usage in found if usage]
    barred = [schema for schema, usage in found if not usage]
    message = f"no table {table} in the connection's search path ({path or 'no schema'})"
    first = path.split(",")[0] or "the search path's first schema"
    init = f"`episodes sessions init URL` creates new, empty tables in {first}"
    if usable:
        option = _search_path_option(usable[0])
        return DatabaseError(
            f"{message}; found in schema {', '.join(usable)}",
            f"to read it, add {option} to the URL's query string (.../dbname?{option}); "
            f"{init} instead",
        )
    if barred:
        return DatabaseError(
            f"{message}; schema {', '.join(barred)} has one, but user {user} lacks USAGE on it",
            f"ask for GRANT USAGE ON SCHEMA {barred[0]} TO {user} (and SELECT on the tables), "
            f"then add {_search_path_option(barred[0])} to the URL's query string",
        )
    return DatabaseError(
        f"{message}, nor in any other schema of the database",
        f"{init} (or fix the URL, if it names the wrong database)",
    )


def _search_path_option(schema: str) -> str:
    """The URL query parameter that makes ``schema`` the search path (libpq ``options``,
    where a space would end the value unless escaped)."""
    if not _PLAIN_IDENTIFIER.fullmatch(schema):
        schema = _quote(schema).replace("\\", "\\\\").replace(" ", "\\ ")
    return "options=" + quote(f"-csearch_path={schema}", safe="-")


def unread_columns(conn: Any, db: DatabaseURL, table: str) -> list[str]:
    """The producer's columns of ``table`` that no output holds, in the table's order: the
    manifest names them, so none goes unnoticed."""
    declared = set(ROW_SCHEMAS[table].names)
    with conn.cursor() as cur:
        types = column_types(cur, db.dialect, table)
    key = str.lower if db.dialect == "sqlite" else str
    return [c for c in types if key(c) not in declared]


def _collect(conn: Any, db: DatabaseURL, table: str, batch_rows: int) -> pa.Table:
    try:
        batches = list(iter_batches(conn, db.dialect, table, batch_rows))
    except DatabaseError as exc:
        raise exc.about(db.redacted) from exc
    except Exception as exc:  # driver errors (ADBC, Arrow) name neither database nor table
        detail = driver_error(exc, db.url)
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


@dataclass(frozen=True)
class SessionsSource:
    """Both tables of one database as read (``_invalid_*`` columns included)."""

    source: str  # the redacted URL
    sessions: pa.Table
    actions: pa.Table
    unread_columns: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # table -> names


def read_source(url: str | DatabaseURL, batch_rows: int = DEFAULT_BATCH_ROWS) -> SessionsSource:
    """Read ``sessions`` and ``actions`` over one connection (one load of a SQL dump), in one
    transaction: both as of one moment."""
    db = parse_url(url) if isinstance(url, str) else url
    with connect(db) as conn:
        one_snapshot(conn, db)
        sessions = _collect(conn, db, "sessions", batch_rows)
        actions = _collect(conn, db, "actions", batch_rows)
        unread = {t: unread_columns(conn, db, t) for t in ("sessions", "actions")}
    return SessionsSource(db.redacted, sessions, actions, unread)
