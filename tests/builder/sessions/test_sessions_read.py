"""Batch-wise Arrow reading: bounded batches, declared types, ill-typed values kept aside."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from sessions_support import Backend, action, session

from builder.derive.sessions import run
from builder.export.card import _sessions_section
from builder.sessions.db import connect, ingest
from builder.sessions.read import batch_schema, iter_batches, read_source, read_table
from builder.sessions.urls import parse_url
from samples.sessions import generate
from schemas.sessions import ACTION_ROW


def _sorted(table: pa.Table, key: str) -> pa.Table:
    return table.take(pc.sort_indices(table, [(key, "ascending")]))


def test_tiny_batches_give_the_same_rows(backend: Backend) -> None:
    backend.create("strict")
    sessions, actions = generate(20, 9, seed=3)
    ingest(backend.url, [("sessions", sessions), ("actions", actions)])
    db = parse_url(backend.url)
    with connect(db) as conn:
        batches = list(iter_batches(conn, db.dialect, "actions", batch_rows=7))
    assert len(batches) >= 180 // 7
    assert all(0 < b.num_rows <= 7 for b in batches)
    assert all(b.schema == batch_schema("actions") for b in batches)
    tiny = pa.Table.from_batches(batches)
    whole = read_table(backend.url, "actions", batch_rows=100_000)
    assert tiny.num_rows == whole.num_rows == 180
    expected = actions.cast(ACTION_ROW)
    got = _sorted(tiny, "action_uuid").select(ACTION_ROW.names)
    assert got.equals(_sorted(expected, "action_uuid"))
    assert _sorted(whole, "action_uuid").equals(_sorted(tiny, "action_uuid"))


def test_declared_types_and_all_null_first_batch(backend: Backend) -> None:
    backend.create("loose")
    backend.insert("sessions", [session(i, None, None, None, None) for i in range(1, 4)])
    backend.insert("sessions", [session(4, "Plot it.", "x = 1", "1", False)])
    src = read_source(backend.url, batch_rows=2)  # first batch: nothing but nulls
    assert src.sessions.schema == batch_schema("sessions")
    assert src.sessions.num_rows == 4
    last = _sorted(src.sessions, "session_id").slice(3).to_pylist()[0]
    assert last["initial_instruction"] == "Plot it." and last["verified"] is False
    assert src.actions.num_rows == 0
    assert "hunter2" not in src.source
    if backend.dialect == "postgresql":  # no account in what a dataset publishes
        assert "postgres@" not in src.source and src.source.startswith("postgresql://127.0.0.1:")


def test_ill_typed_values_land_in_invalid_columns(backend: Backend) -> None:
    backend.create("untyped")
    backend.insert("sessions", [session("abc", "x"), session(2, "y", verified="maybe")])
    backend.insert(
        "actions",
        [action("a", 2, 1), action("b", 2, 2.5), action("c", 2, 3, correct="sure")],
    )
    src = read_source(backend.url)
    rows = {r["initial_instruction"]: r for r in src.sessions.to_pylist()}
    assert rows["x"]["session_id"] is None and rows["x"]["_invalid_session_id"] == "abc"
    assert rows["y"]["session_id"] == 2 and rows["y"]["_invalid_verified"] == "maybe"
    acts = {r["action_uuid"]: r for r in src.actions.to_pylist()}
    assert acts["a"]["action_id"] == 1 and acts["a"]["_invalid_action_id"] is None
    assert acts["b"]["action_id"] is None and acts["b"]["_invalid_action_id"] == "2.5"
    assert acts["c"]["correct"] is None and acts["c"]["_invalid_correct"] == "sure"


def test_both_databases_read_the_same_text_the_same_way(backend: Backend) -> None:
    # Without the contract's column types, numbers and flags arrive as text: the exact
    # spelling of an integer or a boolean is read as one, in SQLite as in PostgreSQL; padded,
    # signed or zero-led text, and words other than true/false/t/f/1/0, are invalid.
    backend.create("untyped")
    ids = ["4", "-8", " 5", "06", "+7", "1e3", "1234567890123456789"]
    flags = ["TRUE", "f", "1", "yes", " t", "on"]
    backend.insert("sessions", [session(i, f"s{i}") for i in ids])
    backend.insert("actions", [action(f, 4, n, correct=f) for n, f in enumerate(flags)])
    src = read_source(backend.url)
    sessions = {r["initial_instruction"]: r for r in src.sessions.to_pylist()}
    read = {i: sessions[f"s{i}"]["session_id"] for i in ids}
    assert read == dict.fromkeys(ids) | {"4": 4, "-8": -8}
    invalid = {i: sessions[f"s{i}"]["_invalid_session_id"] for i in ids}
    assert invalid == {i: i for i in ids} | {"4": None, "-8": None}
    actions = {r["action_uuid"]: r for r in src.actions.to_pylist()}
    assert {f: actions[f]["correct"] for f in flags} == dict.fromkeys(flags) | {
        "TRUE": True,
        "f": False,
        "1": True,
    }
    assert [f for f in flags if actions[f]["_invalid_correct"] == f] == ["yes", " t", "on"]


def test_columns_no_table_holds_are_named(backend: Backend) -> None:
    # A producer's own columns are not read; the manifest and the card name them, so a user
    # learns the dataset lacks them instead of finding out downstream.
    backend.create("strict")
    sessions, actions = generate(2, 3, seed=3)
    ingest(backend.url, [("sessions", sessions), ("actions", actions)])
    backend.execute(
        "ALTER TABLE sessions ADD COLUMN reviewer TEXT",
        "ALTER TABLE actions ADD COLUMN latency_ms INTEGER",
        "ALTER TABLE actions ADD COLUMN model TEXT",
    )
    summary = run(backend.url).summary
    assert summary["unread_columns"] == {
        "sessions": ["reviewer"],
        "actions": ["latency_ms", "model"],
    }
    card = "\n".join(_sessions_section(summary))
    assert "`sessions.reviewer`, `actions.latency_ms`, `actions.model`" in card
    backend.execute("DROP TABLE actions", "DROP TABLE sessions")
    backend.create("strict")
    assert run(backend.url).summary["unread_columns"] == {"sessions": [], "actions": []}
