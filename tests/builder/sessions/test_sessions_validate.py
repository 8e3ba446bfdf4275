"""Every reject kind with its keys, on constraint-less tables; valid sessions still build."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import pytest
from sessions_support import Backend, action, session

from builder.derive.sessions import run
from builder.sessions.read import read_source
from builder.sessions.validate import Validated, validate_source
from schemas.vocabulary import SESSION_REJECT_KINDS as KINDS


def _validated(backend: Backend) -> Validated:
    return validate_source(read_source(backend.url, batch_rows=3))


def _by_key(v: Validated) -> dict[str, list[str]]:
    kinds: dict[str, list[str]] = defaultdict(list)
    for reject in v.rejects:
        assert reject.key is not None
        kinds[reject.key].append(reject.kind)
    return dict(kinds)


GOOD = [  # session 10: verified, complete, trains
    action("g1", 10, 1, "set_code", "df.head()", True, "ai"),
    action("g2", 10, 2, "set_exec_output", "   a\n0  1", None, "ai"),
]


@pytest.fixture
def loaded(backend: Backend) -> Backend:
    backend.create("loose")
    backend.insert(
        "sessions",
        [
            session(1, "Clean session with some bad actions."),
            session(2, None),  # a null instruction is no reject (the seed sets no constraint)
            session(3, "first"),  # duplicate_session_id (conflict)
            session(3, "second"),
            session(4, "copied"),  # duplicate_session_id (exact copy: one kept)
            session(4, "copied"),
            session(None, "no id"),  # null_field
            session(10, "Good session."),
        ],
    )
    backend.insert(
        "actions",
        [
            *GOOD,
            action("a1", 1, 1, "set_code", "x = 1", True, "ai"),
            action("orphan", 99, 1),  # orphan_action
            action("dup", 1, 2, text="one"),  # duplicate_action_uuid (conflict)
            action("dup", 1, 3, text="two"),
            action("copy", 4, 1),  # duplicate_action_uuid (exact copy)
            action("copy", 4, 1),
            action("type", 1, 4, type_="run"),  # invalid_action_type
            action("src", 1, 5, source="robot"),  # invalid_source
            action("id1", 1, 6),  # duplicate_action_id (two different actions)
            action("id2", 1, 6, text="bye"),
            action("g1-again", 10, 1, "set_code", "df.head()", True, "ai"),  # an insert retried
            action("noid", 1, None),  # missing_action_id
            action("notype", 1, 7, type_=None),  # null_field
            action(None, 1, 8),  # null_field
            action("r2", 2, 1),  # fine: session 2 is clean
            action("r3", 3, 1),  # rejected_session
        ],
    )
    return backend


def test_every_reject_kind_with_its_keys(loaded: Backend) -> None:
    v = _validated(loaded)
    assert _by_key(v) == {
        "sessions.session_id=3": ["duplicate_session_id", "duplicate_session_id"],
        "sessions.session_id=4": ["duplicate_session_id"],
        "sessions.session_id=null": ["null_field"],
        "actions.action_uuid=orphan": ["orphan_action"],
        "actions.action_uuid=dup": ["duplicate_action_uuid", "duplicate_action_uuid"],
        "actions.action_uuid=copy": ["duplicate_action_uuid"],
        "actions.action_uuid=type": ["invalid_action_type"],
        "actions.action_uuid=src": ["invalid_source"],
        "actions.action_uuid=id1": ["duplicate_action_id"],
        "actions.action_uuid=id2": ["duplicate_action_id"],
        "actions.action_uuid=g1-again": ["duplicate_action_id"],
        "actions.action_uuid=noid": ["missing_action_id"],
        "actions.action_uuid=notype": ["null_field"],
        "actions.action_uuid=null": ["null_field"],
        "actions.action_uuid=r3": ["rejected_session"],
    }
    paths = {r.key: r.path for r in v.rejects}
    assert paths["sessions.session_id=null"] == "$.session_id"
    assert paths["actions.action_uuid=type"] == "$.action_type"
    assert paths["actions.action_uuid=src"] == "$.source"
    assert paths["actions.action_uuid=orphan"] == "$.session_id"
    assert paths["actions.action_uuid=id1"] == "$.action_id"
    assert paths["actions.action_uuid=notype"] == "$.action_type"
    assert paths["actions.action_uuid=null"] == "$.action_uuid"
    assert {r.kind for r in v.rejects} <= set(KINDS)


def test_rejects_do_not_follow_the_order_the_server_returns_rows_in(loaded: Backend) -> None:
    """PostgreSQL returns rows in another order after an update or a vacuum: the same rows
    read in reverse give the same rejects, in the same order (the rejects file is part of
    a byte-identical rebuild)."""
    import polars as pl

    from builder.sessions.validate import validate

    read = read_source(loaded.url, batch_rows=3)

    def reversed_rows(table: object) -> object:
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        return frame.reverse().to_arrow()

    forward = validate_source(read).rejects
    backward = validate(
        reversed_rows(read.sessions),
        reversed_rows(read.actions),
        read.source,  # type: ignore[arg-type]
    ).rejects
    assert len(forward) > 10 and backward == forward


def test_reject_records_are_complete_and_redacted(loaded: Backend) -> None:
    v = _validated(loaded)
    for reject in v.rejects:
        record = reject.to_json()
        assert record["line"] is None and record["source_file"] == v.source
        assert "hunter2" not in json.dumps(record)
        assert reject.message and reject.errors
    orphan = next(r for r in v.rejects if r.key == "actions.action_uuid=orphan")
    assert json.loads(orphan.raw) == {
        "action": "hello",
        "action_id": 1,
        "action_type": "input",
        "action_uuid": "orphan",
        "correct": None,
        "session_id": 99,
        "source": "human",
    }
    assert "session 99 does not exist" in orphan.message
    src = next(r for r in v.rejects if r.key == "actions.action_uuid=src")
    assert "'robot' is not one of human, ai, dataset" in src.message


def test_valid_sessions_still_build(loaded: Backend) -> None:
    v = _validated(loaded)
    sessions = {r["session_id"]: r for r in v.sessions.to_dicts()}
    assert set(sessions) == {1, 2, 4, 10}  # 4: one exact copy rejected, the other kept
    assert sessions[1]["incomplete"] and sessions[1]["n_rejected_actions"] == 9
    assert not sessions[4]["incomplete"] and sessions[4]["n_rejected_actions"] == 1
    # a retried insert (same action, another uuid) leaves the session whole, as a copy does
    assert not sessions[10]["incomplete"] and sessions[10]["n_rejected_actions"] == 1
    retry = next(r for r in v.rejects if r.key == "actions.action_uuid=g1-again")
    assert "the same action as g1 of session 10 at action_id 1" in retry.message
    assert sorted(v.actions["action_uuid"].to_list()) == ["a1", "copy", "g1", "g2", "r2"]
    assert v.rows_read == {"sessions": 8, "actions": 18}
    result = run(loaded.url, batch_rows=3)
    assert result.sft["session_id"].to_list() == [10]  # 4 has no code to train on
    assert result.summary["excluded_sessions"]["no_trainable_turns"] == 2  # 2 and 4
    assert result.summary["excluded_sessions"]["rejected_actions"] == 1
    assert result.summary["rejected"]["by_kind"]["rejected_session"] == 1
    assert result.tables["sessions"].num_rows == 4
    checks = dict(
        zip(
            *result.tables["sessions"].select(["session_id", "checks"]).to_pydict().values(),
            strict=True,
        )
    )
    assert checks == {1: ["rejected_actions"], 2: [], 4: [], 10: []}
    assert "hunter2" not in json.dumps(result.summary)


def test_ill_typed_values_are_rejected(backend: Backend) -> None:
    backend.create("untyped")
    backend.insert(
        "sessions",
        [session("abc", "x"), session(2, "y", verified="maybe"), session(3, "z")],
    )
    backend.insert(
        "actions",
        [
            action("half", 3, 2.5),
            action("big", 3, 2**40),
            action("unsure", 3, 1, correct="sure"),
            action("sid", "three", 2),
            action("ok", 3, 3, "set_code", "print(1)", True, "ai"),
        ],
    )
    v = _validated(backend)
    assert _by_key(v) == {
        "sessions.session_id=abc": ["invalid_type"],
        "sessions.session_id=2": ["invalid_type"],
        "actions.action_uuid=half": ["invalid_type"],
        "actions.action_uuid=big": ["invalid_type"],
        "actions.action_uuid=unsure": ["invalid_type"],
        "actions.action_uuid=sid": ["invalid_type"],
    }
    raw = {r.key: json.loads(r.raw) for r in v.rejects}
    assert raw["sessions.session_id=abc"]["session_id"] == "abc"
    assert raw["actions.action_uuid=unsure"]["correct"] == "sure"
    big = next(r for r in v.rejects if r.key == "actions.action_uuid=big")
    assert "outside INT" in big.message and big.path == "$.action_id"
    assert v.actions["action_uuid"].to_list() == ["ok"]


def test_an_empty_database_builds_empty_tables(backend: Backend) -> None:
    backend.create("strict")
    result = run(backend.url)
    assert result.rejects == [] and result.sft.is_empty() and result.self_correction.is_empty()
    assert {name: t.num_rows for name, t in result.tables.items()} == {"sessions": 0, "actions": 0}
    assert result.summary["verified_share"] == 0.0


def test_text_that_is_not_utf8_is_rejected_and_the_output_stays_readable(
    tmp_path: Path,
) -> None:
    """SQLite keeps any bytes as text (a producer storing captured output as bytes): such a
    value is an ``invalid_utf8`` reject naming its column, shown escaped; nothing else is
    lost, and every Parquet file the build writes is valid UTF-8 for every reader."""
    import polars as pl
    import pyarrow.parquet as pq

    from builder.config import BuildConfig
    from builder.pipeline import build

    path = tmp_path / "bytes.db"
    backend = Backend("sqlite", f"sqlite:///{path}", str(path))
    backend.create("loose")
    backend.insert("sessions", [session(1, "Fine."), session(2, "Fine too.")])
    backend.execute(
        "INSERT INTO sessions VALUES (3, CAST(X'636166E9' AS TEXT), NULL, NULL, 1)",
        "UPDATE sessions SET initial_code = CAST(X'FFFE' AS TEXT) WHERE session_id = 2",
    )
    backend.insert(
        "actions",
        [*(action(f"g{i}", 1, i, "set_code", "x = 1", True, "ai") for i in (1, 2))],
    )
    backend.execute(
        "INSERT INTO actions VALUES ('bad', 1, 3, 'set_exec_output', CAST(X'FF41' AS TEXT),"
        " NULL, 'ai')",
        "INSERT INTO actions VALUES (CAST(X'FF' AS TEXT), 1, 4, 'input', 'hi', NULL, 'human')",
    )
    v = _validated(backend)
    assert _by_key(v) == {
        "sessions.session_id=2": ["invalid_utf8"],
        "sessions.session_id=3": ["invalid_utf8"],
        "actions.action_uuid=bad": ["invalid_utf8"],
        "actions.action_uuid=\\xff": ["invalid_utf8"],
    }
    three = next(r for r in v.rejects if r.key == "sessions.session_id=3")
    assert three.path == "$.initial_instruction"
    assert three.message == "$.initial_instruction: not valid UTF-8: 'caf\\xe9'"
    assert json.loads(three.raw)["initial_instruction"] == "caf\\xe9"
    assert sorted(v.actions["action_uuid"].to_list()) == ["g1", "g2"]

    out = tmp_path / "out"
    config = BuildConfig(sessions=backend.url, out=out, rejects=tmp_path / "r.jsonl")
    report = build(replace(config, max_reject_ratio=1.0))
    assert report.manifest["rejects"]["by_kind"] == {"invalid_utf8": 4}
    for file in out.rglob("*.parquet"):
        pq.read_table(file).validate(full=True)
        pl.read_parquet(file)


def test_actions_of_a_session_rejected_for_its_id_type_are_not_orphans(tmp_path: Path) -> None:
    """SQLite without type affinity keeps ``'4'`` as text: the session is an ``invalid_type``
    reject, and its actions name a session that exists but was rejected."""
    path = tmp_path / "untyped.db"
    backend = Backend("sqlite", f"sqlite:///{path}", str(path))
    backend.create("untyped")
    backend.insert("sessions", [session(" 4 ", "As text."), session(5, "Fine.")])
    backend.insert("actions", [action("a4", 4, 1), action("a6", 6, 1)])
    v = _validated(backend)
    assert _by_key(v) == {
        "sessions.session_id= 4 ": ["invalid_type"],
        "actions.action_uuid=a4": ["rejected_session"],
        "actions.action_uuid=a6": ["orphan_action"],
    }


def test_a_database_without_the_tables_says_how_to_create_them(backend: Backend) -> None:
    from builder.sessions.urls import DatabaseError

    backend.execute("CREATE TABLE unrelated (x INTEGER)")
    with pytest.raises(DatabaseError, match=r"no table sessions") as caught:
        read_source(backend.url)
    assert "episodes sessions init URL" in f"{caught.value} — {caught.value.hint}"
