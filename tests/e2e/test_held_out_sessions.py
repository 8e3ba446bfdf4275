"""A session takes its question's split but trains on everything it says: a training session
whose later ``set_instruction`` or ``input`` holds a held-out question leaves every training
config (``held_out_copy``), and what a session says is decontaminated against eval sets."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path

import polars as pl

from builder.config import BuildConfig
from builder.pipeline import build
from builder.sessions.db import init_database
from samples.paraphrases import questions
from tests.e2e.held_out_data import write_episodes

EVAL_ITEM = "Which three airlines had the most delayed departures on rainy mornings last winter?"


def read(folder: Path, config: str) -> pl.DataFrame:
    files = sorted((folder / config).glob("*.parquet"))
    return pl.concat(
        [pl.read_parquet(f).with_columns(split=pl.lit(f.name.split("-", 1)[0])) for f in files],
        how="diagonal_relaxed",
    )


def _sessions(path: Path, talks: list[tuple[str, str, str]]) -> str:
    """One verified session per (instruction, later action type, its text), each with code
    that ran after it."""
    url = f"sqlite:///{path}"
    init_database(url)
    con = sqlite3.connect(path)
    for sid, (instruction, kind, text) in enumerate(talks, 1):
        con.execute("INSERT INTO sessions VALUES (?, ?, '', '', 1)", (sid, instruction))
        for aid, (atype, action) in enumerate(
            [("set_code", "x = 1"), ("set_exec_output", "1"), (kind, text), ("set_code", "y = 2")]
        ):
            con.execute(
                "INSERT INTO actions VALUES (?, ?, ?, ?, ?, 1, 'human')",
                (f"{sid}-{aid}", sid, aid, atype, action),
            )
    con.commit()
    con.close()
    return url


def test_a_session_asking_a_held_out_question_later_does_not_train(tmp_path: Path) -> None:
    texts = [t for t, _, _ in questions(90, seed=7)]
    episodes = write_episodes(tmp_path / "e.jsonl", texts, seed=3)
    out = tmp_path / "ds"
    base = BuildConfig(episodes=(str(episodes),), out=out, rejects=tmp_path / "r.jsonl")
    base = replace(base, split_train=0.5, split_validation=0.25, split_test=0.25)
    build(base)
    splits = read(out, "splits")
    train = splits.filter(pl.col("split") == "train").get_column("normalized_text").to_list()
    held = splits.filter(pl.col("split") != "train").get_column("normalized_text").to_list()
    talks = [
        (train[0], "set_instruction", held[0]),  # a new task: a test question
        (train[1], "input", f"thanks! now also: {held[1]}"),  # typed in the chat
        (train[2], "input", EVAL_ITEM),
        (train[3], "input", "looks right, please add a title to the plot"),
    ]
    url = _sessions(tmp_path / "s.db", talks)
    evals = tmp_path / "dev.jsonl"
    evals.write_text(json.dumps({"question": EVAL_ITEM}) + "\n", encoding="utf-8")
    config = replace(base, sessions=url, decontamination_evals=(str(evals),))
    report = build(config)
    sft = read(out, "sft").filter(pl.col("session_id").is_not_null())
    trained = sft.filter(pl.col("split") == "train").get_column("session_id").to_list()
    assert trained == [4]
    assert sorted(sft.get_column("session_id").to_list()) == [4]
    manifest = report.manifest
    assert manifest["splits"]["held_out_copies"] == 2
    assert manifest["held_out_rows"]["sft"] == {"eval:dev": 1, "held_out_copy": 2}
    (found,) = manifest["decontamination"]["evals"]
    assert found["matched_sessions"] == 1 and found["matched_questions"] == 0
    turns = read(out, "sft_turns").filter(pl.col("session_id").is_not_null())
    assert set(turns.get_column("session_id").to_list()) == {4}
    kept = read(out, "sessions").get_column("session_id").sort().to_list()
    assert kept == [1, 2, 3, 4]  # the tables keep every session
