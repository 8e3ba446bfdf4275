"""The SQL that reads a producer's ``sessions``/``actions`` table as the contract's columns.

Integer and boolean columns are selected through a guard (``builder.sessions.read``): a value
of the declared type is read as is, text only in its exact spelling, anything else lands as
text in a companion ``_invalid_<column>`` column. Columns are matched by name as the database
does: case-insensitively in SQLite, exactly in PostgreSQL (where a quoted name keeps its
case). A column the contract marks optional (``actions.correct``) may be absent: it is read as
all-null. A table or column that is not there gets a message saying where it was looked for
and what to do.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from builder.sessions.urls import DatabaseError, Dialect
from schemas.sessions import ROW_SCHEMAS

INVALID_PREFIX = "_invalid_"
NOT_UTF8_PREFIX = "_not_utf8_"
SENTINEL = "_sentinel"  # SQLite's typing row (``select_sql``)
_PG_INTEGERS = {"int2", "int4", "int8"}
# The spellings of an integer and of a boolean that text may hold: an integer as Python or
# SQL writes one (no padding, sign or leading zero), a boolean as PostgreSQL's canonical words
_PG_INTEGER_TEXT = r"^(0|-?[1-9][0-9]{0,17})$"
_BOOLEAN_WORDS = "('true', 'false', 't', 'f', '1', '0')"
_TRUE = "('true', 't', '1')"
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
    return f"SELECT 0 AS {SENTINEL}, {typed} UNION ALL SELECT 1, {body}"


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
    cursor.execute(
        "SELECT n.nspname::text, c.relname::text FROM pg_catalog.pg_class c "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE lower(c.relname) = '{table}' AND c.relkind IN ('r', 'p', 'v', 'm', 'f') "
        "ORDER BY 1, 2"
    )
    cased = cursor.fetchall()
    if cased:  # created with a quoted name: PostgreSQL folds only unquoted names
        schema, name = (_as_written(part) for part in cased[0])
        where = f"{schema}.{name}"
        return DatabaseError(
            f"{message}; {where} differs from it only in case",
            f"rename it (ALTER TABLE {where} RENAME TO {table}) or give it the name as a view "
            f"(CREATE VIEW {schema}.{table} AS SELECT * FROM {where})",
        )
    return DatabaseError(
        f"{message}, nor in any other schema of the database",
        f"{init} (or fix the URL, if it names the wrong database)",
    )


def _as_written(name: str) -> str:
    """``name`` as SQL must spell it: quoted unless a plain lower-case identifier."""
    plain = _PLAIN_IDENTIFIER.fullmatch(name) and name == name.lower()
    return name if plain else _quote(name)


def _search_path_option(schema: str) -> str:
    """The URL query parameter that makes ``schema`` the search path (libpq ``options``,
    where a space would end the value unless escaped)."""
    if not _PLAIN_IDENTIFIER.fullmatch(schema):
        schema = _quote(schema).replace("\\", "\\\\").replace(" ", "\\ ")
    return "options=" + quote(f"-csearch_path={schema}", safe="-")
