"""Validate sessions and actions as whole columns (Polars), never row by row; nothing is lost.

A database may lack its constraints, so every rule of ``schemas.sessions`` is checked again.
Each check is one expression yielding, per row, an error ``{kind, path, message}`` or null;
a row with any error goes to the rejects file (``builder.validate.validator.Reject``, ``line=None``,
``key="actions.action_uuid=..."`` or ``"sessions.session_id=..."``, ``raw`` = the row as read,
as canonical JSON, with an ill-typed value shown as its text). Its kind is its first error.

Reject kinds, in the order a row is examined:

* ``invalid_type``: a value of the wrong type (SQLite stores anything anywhere), or an
  ``action_id`` outside the seed's ``INT`` (32-bit); ``invalid_utf8``: text that is not
  UTF-8 (SQLite keeps any bytes as text), shown in the reject with backslash escapes;
* ``null_field``: a required field is null (sessions: ``session_id``; actions:
  ``action_uuid``, ``session_id``, ``action_type``, ``source``); ``missing_action_id``: a
  null ``action_id`` (the action cannot be ordered);
* ``invalid_action_type`` / ``invalid_source``: a value outside the seed's enum;
* ``orphan_action``: the action's session does not exist; ``rejected_session``: it exists
  but was itself rejected (so the action cannot be attributed to a clean session);
* ``duplicate_session_id`` / ``duplicate_action_uuid``: a primary key seen twice;
  ``duplicate_action_id``: two actions of one session with the same ``action_id``.

Decisions:

* Duplicates. An exact copy of an earlier row (every column equal: a double insert) is
  rejected and the first copy kept, since nothing is ambiguous. So is an action inserted
  again under a new ``action_uuid`` (a retried insert whose key the database generated): the
  same session, ``action_id``, type, text, ``correct`` and source; the one with the least
  ``action_uuid`` is kept (whatever order the database returns rows in). Rows that share a key but
  differ are *all* rejected: no copy is more authoritative than another, and the result
  does not depend on the order the database returns rows in.
* A session with a rejected action (other than an exact copy) stays in the ``sessions`` and
  ``actions`` tables with its clean actions, marked (``incomplete``; the ``checks`` column of
  the table says ``rejected_actions``), but is not replayed into training data: a
  conversation with a missing or ambiguous step would teach the wrong thing. The manifest
  counts it as excluded.
* A null ``verified`` is kept and means "not verified" (the seed: sessions should be *marked*
  verified for training use). A null ``action`` is kept (an empty edit or output).
* A session's question (its ``question_id`` and split) is its task: the initial instruction,
  or, when that is blank or null, the session's first instruction set by an action.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from builder.contract.hashing import canonical_json
from builder.sessions.columns import INVALID_PREFIX, NOT_UTF8_PREFIX, guarded
from builder.sessions.instructions import _question_ids, _task
from builder.sessions.read import SessionsSource
from builder.validate.reject import FieldError, Reject
from schemas.sessions import (
    ACTION_ROW,
    ACTION_SOURCES,
    ACTION_TYPES,
    INT32_MAX,
    INT32_MIN,
    SESSION_ROW,
    Action,
    Session,
    required_fields,
)
from schemas.tables import KEY, columns_with_role
from schemas.vocabulary import (
    DUPLICATE_ACTION_ID,
    DUPLICATE_ACTION_UUID,
    DUPLICATE_SESSION_ID,
    INVALID_ACTION_TYPE,
    INVALID_SOURCE,
    INVALID_TYPE,
    INVALID_UTF8,
    MISSING_ACTION_ID,
    NULL_FIELD,
    ORPHAN_ACTION,
    REJECTED_SESSION,
)

_ROW = "_row"
_ERRORS = "_errors"
_FIRST = "_first"  # first of its exact copies (a row with no copy is its own first)
_VARIANTS = "_variants"  # distinct rows (exact copies counted once) sharing the row's key
_SAME_ID = "_same_id"  # distinct actions sharing the row's (session_id, action_id)
_RETRY = "_retry"  # the same action as one with a lesser action_uuid (a retried insert)
_KEPT = "_kept"  # that action's action_uuid
# What an action is, beside its keys: a retried insert repeats all of it
_CONTENT = tuple(n for n in ACTION_ROW.names if n not in columns_with_role(ACTION_ROW, KEY))


@dataclass(frozen=True)
class Validated:
    """Clean rows of one database, its rejects, and what the tables and replay need."""

    source: str  # the redacted database URL
    sessions: pl.DataFrame  # SESSION_ROW columns + question_id, normalized_instruction,
    #                         n_rejected_actions, incomplete, split_text (the normalized
    #                         instruction as captured, which redaction leaves alone: what
    #                         the split's key is made from); sorted by session_id
    actions: pl.DataFrame  # ACTION_ROW columns (action_id int32) + question_id;
    #                        sorted by session_id, action_id
    rejects: list[Reject]
    rows_read: dict[str, int]  # table -> rows read from the database
    unread_columns: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # table -> names
    # the contract's optional columns the tables lack (read as null): ``actions.correct``
    absent_columns: dict[str, list[str]] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    """One rule: a boolean expression over the prepared frame, and what to report."""

    when: pl.Expr
    kind: str
    path: str
    message: pl.Expr | str

    def error(self) -> pl.Expr:
        """``{kind, path, message}`` where the rule fails, else null."""
        text = pl.lit(self.message) if isinstance(self.message, str) else self.message
        fields = pl.struct(kind=pl.lit(self.kind), path=pl.lit(self.path), message=text)
        return pl.when(self.when).then(fields)


def _guarded(schema: pa.Schema) -> list[pa.Field]:
    """Columns the reader pairs with an ``_invalid_`` text column."""
    return [f for f in schema if guarded(f.type)]


def _texts(schema: pa.Schema) -> list[pa.Field]:
    """Columns the reader pairs with a ``_not_utf8_`` column."""
    return [f for f in schema if pa.types.is_string(f.type)]


def _companions(schema: pa.Schema) -> list[str]:
    return [
        *(INVALID_PREFIX + f.name for f in _guarded(schema)),
        *(NOT_UTF8_PREFIX + f.name for f in _texts(schema)),
    ]


def _type_and_null_checks(schema: pa.Schema, required: tuple[str, ...]) -> list[Check]:
    checks = []
    for field in schema:
        name, invalid = field.name, INVALID_PREFIX + field.name
        is_null = pl.col(name).is_null()
        if guarded(field.type):
            expected = "boolean" if pa.types.is_boolean(field.type) else "integer"
            got = pl.format(f"expected {expected}, got '{{}}'", pl.col(invalid))
            checks.append(Check(pl.col(invalid).is_not_null(), INVALID_TYPE, f"$.{name}", got))
            is_null = is_null & pl.col(invalid).is_null()
        elif pa.types.is_string(field.type):
            bytes_ = pl.col(NOT_UTF8_PREFIX + name)
            shown = pl.format("not valid UTF-8: '{}'", bytes_)
            checks.append(Check(bytes_.is_not_null(), INVALID_UTF8, f"$.{name}", shown))
            is_null = is_null & bytes_.is_null()
        if name in required:
            kind = MISSING_ACTION_ID if name == "action_id" else NULL_FIELD
            checks.append(Check(is_null, kind, f"$.{name}", "required field is null"))
    return checks


def _enum_check(name: str, allowed: tuple[str, ...], kind: str) -> Check:
    bad = pl.col(name).is_not_null() & ~pl.col(name).is_in(list(allowed))
    message = pl.format(f"'{{}}' is not one of {', '.join(allowed)}", pl.col(name))
    return Check(bad, kind, f"$.{name}", message)


def _copy_checks(key: str, kind: str) -> list[Check]:
    """Exact copies after the first; every row of a key held by rows that differ."""
    has_key, first, n = pl.col(key).is_not_null(), pl.col(_FIRST), pl.col(_VARIANTS)
    copy = pl.format(
        f"exact copy of an earlier row with {key} {{}}; the first is kept", pl.col(key)
    )
    conflict = pl.format(f"{{}} different rows have {key} {{}}; all are rejected", n, pl.col(key))
    return [
        Check(has_key & ~first, kind, f"$.{key}", copy),
        Check(has_key & first & (n > 1), kind, f"$.{key}", conflict),
    ]


def _prepare(data: pa.Table | pl.DataFrame, schema: pa.Schema, key: str) -> pl.DataFrame:
    """Read order (``_row``), absent ``_invalid_`` columns, and the duplicate bookkeeping:
    ``_first`` (not an exact copy of an earlier row) and ``_variants`` (distinct rows sharing
    this row's ``key``). An exact copy shares its key, so whole rows are only compared among
    the (rare) rows whose key repeats: no full-table row hashing."""
    frame = data if isinstance(data, pl.DataFrame) else pl.from_arrow(data)
    assert isinstance(frame, pl.DataFrame)
    columns = [*schema.names, *_companions(schema)]
    absent = [pl.lit(None, pl.String).alias(n) for n in columns if n not in frame.columns]
    frame = frame.with_columns(absent).select(columns).with_row_index(_ROW)
    repeated = pl.col(key).is_not_null() & (pl.len().over(key) > 1)
    candidates = frame.filter(repeated)
    first = pl.repeat(True, frame.height, eager=True)
    variants = pl.repeat(1, frame.height, dtype=pl.Int64, eager=True)
    if candidates.height:
        is_first = pl.struct(columns).is_first_distinct()
        marked = candidates.select(
            _ROW, is_first.alias(_FIRST), is_first.cast(pl.Int64).sum().over(key).alias(_VARIANTS)
        )
        first = first.scatter(marked[_ROW], marked[_FIRST])
        variants = variants.scatter(marked[_ROW], marked[_VARIANTS])
    return frame.with_columns(first.alias(_FIRST), variants.alias(_VARIANTS))


def _split(frame: pl.DataFrame, checks: list[Check]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(clean rows, rejected rows with their ``_errors``). The error structs are built for
    the rejected rows only; when nothing fails, the clean frame is the input, uncopied.
    Checks read only columns (window counts are columns of ``frame``), so they give the same
    answer on the rejected subset as on the whole."""
    failed = pl.any_horizontal([c.when.fill_null(False) for c in checks])
    flags = frame.select(failed.alias("failed")).to_series()
    if not flags.any():
        return frame, frame.clear().with_columns(pl.lit([]).alias(_ERRORS))
    errors = pl.concat_list([c.error() for c in checks]).list.drop_nulls().alias(_ERRORS)
    # rechunk: Polars 2.1 panics in pl.format over columns chunked differently (the row
    # index is one chunk, columns read in batches are many); the rejected rows are few.
    return frame.filter(~flags), frame.filter(flags).rechunk().with_columns(errors)


def _session_checks() -> list[Check]:
    return [
        *_type_and_null_checks(SESSION_ROW, required_fields(Session)),
        *_copy_checks("session_id", DUPLICATE_SESSION_ID),
    ]


def _with_retries(actions: pl.DataFrame) -> pl.DataFrame:
    """``_retry``/``_kept`` (the same action under a lesser ``action_uuid``) and ``_same_id``
    (distinct actions, by content, sharing the row's session and ``action_id``)."""
    sid, aid = pl.col("session_id"), pl.col("action_id")
    keyed = pl.col(_FIRST) & sid.is_not_null() & aid.is_not_null()
    same_action = ["session_id", "action_id", *_CONTENT]
    kept = pl.col("action_uuid").min().over(same_action)
    content = pl.struct(*_CONTENT)
    return actions.with_columns(
        (keyed & (pl.col("action_uuid") != kept)).fill_null(False).alias(_RETRY),
        kept.alias(_KEPT),
        content.filter(keyed).n_unique().over(sid, aid).cast(pl.Int64).alias(_SAME_ID),
    )


def _action_checks(ok: pl.Series, rejected: pl.Series) -> list[Check]:
    """``ok``/``rejected``: ids of sessions with a clean row / with rejected rows only."""
    sid, aid, n_ids = pl.col("session_id"), pl.col("action_id"), pl.col(_SAME_ID)
    in_rejected = sid.is_in(rejected.implode())
    return [
        *_type_and_null_checks(ACTION_ROW, required_fields(Action)),
        Check(
            aid.is_not_null() & ~aid.is_between(INT32_MIN, INT32_MAX),
            INVALID_TYPE,
            "$.action_id",
            pl.format("{} is outside INT (32-bit)", aid),
        ),
        _enum_check("action_type", ACTION_TYPES, INVALID_ACTION_TYPE),
        _enum_check("source", ACTION_SOURCES, INVALID_SOURCE),
        Check(
            sid.is_not_null() & ~sid.is_in(ok.implode()) & ~in_rejected,
            ORPHAN_ACTION,
            "$.session_id",
            pl.format("session {} does not exist", sid),
        ),
        Check(
            in_rejected,
            REJECTED_SESSION,
            "$.session_id",
            pl.format("session {} was rejected (see its own reject)", sid),
        ),
        *_copy_checks("action_uuid", DUPLICATE_ACTION_UUID),
        Check(
            pl.col(_RETRY),
            DUPLICATE_ACTION_ID,
            "$.action_uuid",
            pl.format(
                "the same action as {} of session {} at action_id {}, under another "
                "action_uuid (an insert retried): the least action_uuid is kept",
                pl.col(_KEPT),
                sid,
                aid,
            ),
        ),
        Check(
            pl.col(_FIRST) & (n_ids > 1),
            DUPLICATE_ACTION_ID,
            "$.action_id",
            pl.format("{} different actions of session {} have action_id {}", n_ids, sid, aid),
        ),
    ]


def _rejects(bad: pl.DataFrame, schema: pa.Schema, key: str, source: str) -> list[Reject]:
    """Reject records, by key then row content: not in read order, which a server may change
    between two reads of the same rows (PostgreSQL after an update or a vacuum), and the
    rejects file is part of what a rebuild must give byte for byte. Python here runs once
    per *rejected* row only."""
    typed = {f.name: INVALID_PREFIX + f.name for f in _guarded(schema)}
    typed |= {f.name: NOT_UTF8_PREFIX + f.name for f in _texts(schema)}
    table = "sessions" if schema is SESSION_ROW else "actions"
    out = []
    for row in bad.sort(_ROW).iter_rows(named=True):
        raw = {
            name: row[typed[name]] if name in typed and row[name] is None else row[name]
            for name in schema.names
        }
        shown = "null" if raw[key] is None else raw[key]
        out.append(
            Reject(
                source_file=source,
                line=None,
                kind=row[_ERRORS][0]["kind"],
                errors=tuple(FieldError(e["path"], e["message"]) for e in row[_ERRORS]),
                raw=canonical_json(raw).encode("utf-8"),
                key=f"{table}.{key}={shown}",
            )
        )
    return sorted(out, key=lambda r: (r.key or "", r.raw, r.kind, r.message))


def _in_order(actions: pl.DataFrame) -> pl.DataFrame:
    """Sorted by (session_id, action_id); skips the sort (a full copy) when already so."""
    sid, aid = pl.col("session_id").diff(), pl.col("action_id").cast(pl.Int64).diff()
    ordered = actions.select(((sid > 0) | ((sid == 0) & (aid > 0))).fill_null(True).all()).item()
    return actions if ordered else actions.sort("session_id", "action_id")


def validate(
    sessions: pa.Table | pl.DataFrame,
    actions: pa.Table | pl.DataFrame,
    source: str,
    unread_columns: dict[str, list[str]] | None = None,
    absent_columns: dict[str, list[str]] | None = None,
) -> Validated:
    """Split both tables into clean rows and rejects (see the module docstring).

    ``sessions``/``actions`` are what ``builder.sessions.read`` yields (``_invalid_*``
    columns optional); ``source`` names the database in rejects (already redacted).
    """
    s_all = _prepare(sessions, SESSION_ROW, "session_id")
    s_ok, s_bad = _split(s_all, _session_checks())
    ok_ids = s_ok["session_id"]
    # A session rejected for an id of the wrong type (the text '4') is still the session its
    # actions name: they are ``rejected_session``, not orphans.
    as_text = pl.col(INVALID_PREFIX + "session_id").str.strip_chars().cast(pl.Int64, strict=False)
    rejected_ids = s_bad.select(pl.coalesce("session_id", as_text)).to_series()
    rejected_ids = rejected_ids.filter(~rejected_ids.is_in(ok_ids.implode()))
    a_all = _with_retries(_prepare(actions, ACTION_ROW, "action_uuid"))
    a_ok, a_bad = _split(a_all, _action_checks(ok_ids, rejected_ids.drop_nulls().unique()))

    per_session = (
        a_bad.filter(pl.col("session_id").is_in(ok_ids.implode()))
        .group_by("session_id")
        .agg(
            n_rejected_actions=pl.len().cast(pl.Int32),
            # an exact copy or a retried insert alone leaves the session whole
            incomplete=(pl.col(_FIRST) & ~pl.col(_RETRY)).any(),
        )
    )
    s_ok = s_ok.select(SESSION_ROW.names)
    tasks = _task(s_ok, a_ok)
    sessions_out = (
        s_ok.join(tasks, on="session_id", how="left", maintain_order="left")
        .join(_question_ids(tasks["_task"]), on="_task", how="left")
        .drop("_task")
        .join(per_session, on="session_id", how="left")
        .with_columns(
            pl.col("n_rejected_actions").fill_null(0),
            pl.col("incomplete").fill_null(False),
        )
        .sort("session_id")
    )
    question = pl.col("session_id").replace_strict(
        sessions_out["session_id"], sessions_out["question_id"], default=None
    )
    actions_out = a_ok.select(ACTION_ROW.names).with_columns(
        pl.col("action_id").cast(pl.Int32), question.alias("question_id")
    )
    rejects = _rejects(s_bad, SESSION_ROW, "session_id", source)
    rejects += _rejects(a_bad, ACTION_ROW, "action_uuid", source)
    return Validated(
        source=source,
        sessions=sessions_out,
        actions=_in_order(actions_out),
        rejects=rejects,
        rows_read={"sessions": s_all.height, "actions": a_all.height},
        unread_columns=dict(unread_columns or {}),
        absent_columns=dict(absent_columns or {}),
    )


def validate_source(source: SessionsSource) -> Validated:
    """``validate`` for what ``builder.sessions.read.read_source`` returned."""
    return validate(
        source.sessions, source.actions, source.source, source.unread_columns, source.absent_columns
    )
