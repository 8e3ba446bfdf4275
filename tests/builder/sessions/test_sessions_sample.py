"""The shipped sample dump loads (SQLite and PostgreSQL), validates cleanly and replays."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
from sessions_support import Backend

from builder.derive.sessions import run
from builder.sessions.urls import DatabaseURL, parse_url
from samples.sessions import SAMPLE_PATH, dump_sql, generate, write_sample
from schemas.sessions import ACTION_ROW, ACTIONS, SESSION_ROW, SESSIONS


def _url(backend: Backend) -> str:
    """The sample as each backend gets it: the dump itself (SQLite) or loaded (PostgreSQL)."""
    if backend.dialect == "sqlite":
        return f"sqlite:///{SAMPLE_PATH}"
    backend.load_script(SAMPLE_PATH.read_text(encoding="utf-8"))
    return backend.url


def test_sample_loads_validates_and_replays(backend: Backend) -> None:
    result = run(_url(backend), batch_rows=64)
    s = result.summary
    assert result.rejects == []
    assert (s["sessions"], s["actions"]) == (30, 300)
    assert all(s["actions_by_source"][k] > 0 for k in ("human", "ai", "dataset"))
    assert 0 < s["verified_sessions"] < 30
    assert s["excluded_sessions"]["unverified"] == 30 - s["verified_sessions"]
    assert s["sft_rows"] == s["verified_sessions"]
    assert s["sft_assistant_messages"]["context_only"] > 0
    assert s["self_correction_rows"] > 0
    assert result.tables["sessions"].schema.names == SESSIONS.names
    assert result.tables["actions"].schema.names == ACTIONS.names
    assert result.tables["actions"].num_rows == 300
    errors = set(result.self_correction["error_type"].to_list())
    assert errors <= {"KeyError", "TypeError", "SyntaxError", "UndefinedVariableError"}
    assert result.self_correction["error_feedback"].str.contains("Error").all()
    # a SQLite file is traced to its bytes like every JSONL input; a server has no file
    if backend.dialect == "sqlite":
        digest = hashlib.sha256(SAMPLE_PATH.read_bytes()).hexdigest()
        assert (s["sha256"], s["bytes"]) == (digest, SAMPLE_PATH.stat().st_size)
    else:
        assert (s["sha256"], s["bytes"]) == (None, None)


def test_sample_file_is_what_write_sample_writes(tmp_path: Path) -> None:
    written = write_sample(tmp_path / "sample.sql")
    assert written.read_bytes() == SAMPLE_PATH.read_bytes()


def test_generate_is_deterministic_and_shaped() -> None:
    sessions, actions = generate(7, 13, seed=5)
    again = generate(7, 13, seed=5)
    assert sessions.equals(again[0]) and actions.equals(again[1])
    assert sessions.schema == SESSION_ROW and actions.schema == ACTION_ROW
    assert (sessions.num_rows, actions.num_rows) == (7, 91)
    frame = pl.from_arrow(actions)
    assert frame["action_uuid"].n_unique() == 91
    assert frame.group_by("session_id").len()["len"].to_list() == [13] * 7
    assert "INSERT INTO actions" in dump_sql(sessions, actions)


def test_relative_sample_url_resolves_against_base() -> None:
    db = parse_url("sqlite:///data/sessions/sample.sql", base=SAMPLE_PATH.parents[2])
    assert isinstance(db, DatabaseURL) and db.path == SAMPLE_PATH


def test_a_question_asked_by_an_episode_and_a_session_is_listed_once(tmp_path: Path) -> None:
    """Episodes and sessions key a question alike (sha256 of the text, no hint): ``splits``
    lists it once, and the session's rows carry the split the episode's got."""
    import json

    from builder.config import BuildConfig
    from builder.contract.hashing import question_id
    from builder.pipeline import build

    episodes = Path(__file__).resolve().parents[3] / "data/episodes/episodes.jsonl"
    texts = [
        json.loads(line)["question"]
        for line in episodes.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    shared = next(q["question_text"] for q in texts if not q.get("hint"))
    path = tmp_path / "s.db"
    backend = Backend("sqlite", f"sqlite:///{path}", str(path))
    backend.create("strict")
    backend.insert(
        "sessions", [(1, shared, None, None, True), (2, "Only a session asks.", None, None, True)]
    )
    backend.insert("actions", [("a1", 1, 1, "set_code", "x = 1", True, "ai")])
    config = BuildConfig(
        episodes=(str(episodes),),
        sessions=backend.url,
        out=tmp_path / "o",
        rejects=tmp_path / "r.jsonl",
    )
    build(config)
    splits = pl.read_parquet(tmp_path / "o" / "splits" / "*.parquet")
    assert splits["question_id"].is_unique().all()
    qid = question_id(shared, None)
    assert qid in splits["question_id"].to_list()
    assert question_id("Only a session asks.", None) in splits["question_id"].to_list()
    split = splits.filter(pl.col("question_id") == qid)["split"].item()
    files = sorted((tmp_path / "o" / "sessions").glob(f"{split}-*.parquet"))
    assert 1 in pl.read_parquet(files)["session_id"].to_list()  # the episode's split
