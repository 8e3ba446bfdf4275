"""A session's prompts are read as the replay shows them: two ``input`` actions in a row are
one user message, so a held-out question or an eval item typed in two halves is found there
(``held_out_copy``, ``eval:<name>``) and the session leaves training, as it does when typed
whole."""

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


def halves(text: str) -> list[str]:
    words = text.split()
    return [" ".join(words[: len(words) // 2]), " ".join(words[len(words) // 2 :])]


def read(folder: Path, config: str) -> pl.DataFrame:
    files = sorted((folder / config).glob("*.parquet"))
    return pl.concat(
        [pl.read_parquet(f).with_columns(split=pl.lit(f.name.split("-", 1)[0])) for f in files],
        how="diagonal_relaxed",
    )


def sessions_db(path: Path, talks: list[tuple[str, list[str]]]) -> str:
    """One verified session per (instruction, inputs typed one after the other), each with
    code that ran before and after them."""
    url = f"sqlite:///{path}"
    init_database(url)
    con = sqlite3.connect(path)
    for sid, (instruction, inputs) in enumerate(talks, 1):
        con.execute("INSERT INTO sessions VALUES (?, ?, '', '', 1)", (sid, instruction))
        said = [("input", text) for text in inputs]
        steps = [("set_code", "x = 1"), ("set_exec_output", "1"), *said, ("set_code", "y = 2")]
        for aid, (kind, action) in enumerate(steps):
            con.execute(
                "INSERT INTO actions VALUES (?, ?, ?, ?, ?, 1, 'human')",
                (f"{sid}-{aid}", sid, aid, kind, action),
            )
    con.commit()
    con.close()
    return url


def test_a_question_typed_in_two_inputs_is_found_as_the_replay_joins_them(
    tmp_path: Path,
) -> None:
    texts = [t for t, _, _ in questions(90, seed=7)]
    episodes = write_episodes(tmp_path / "e.jsonl", texts, seed=3)
    out = tmp_path / "ds"
    base = BuildConfig(episodes=(str(episodes),), out=out, rejects=tmp_path / "r.jsonl")
    base = replace(base, split_train=0.5, split_validation=0.25, split_test=0.25)
    build(base)
    splits = read(out, "splits")
    train = splits.filter(pl.col("split") == "train").get_column("normalized_text").to_list()
    held = splits.filter(pl.col("split") != "train").get_column("normalized_text").to_list()
    held = [t for t in held if len(t.split()) >= 12]  # each half under one 8-gram
    talks = [
        (train[0], halves(held[0])),
        (train[1], halves(EVAL_ITEM)),
        (train[2], ["looks right,", "please add a title to the plot"]),
    ]
    url = sessions_db(tmp_path / "s.db", talks)
    evals = tmp_path / "dev.jsonl"
    evals.write_text(json.dumps({"question": EVAL_ITEM}) + "\n", encoding="utf-8")
    report = build(replace(base, sessions=url, decontamination_evals=(str(evals),)))
    manifest = report.manifest
    assert manifest["splits"]["held_out_copies"] == 1
    (found,) = manifest["decontamination"]["evals"]
    assert found["matched_sessions"] == 1 and found["matched_items"] == 1
    assert manifest["held_out_rows"]["sft"] == {"eval:dev": 1, "held_out_copy": 1}
    sft = read(out, "sft").filter(pl.col("session_id").is_not_null())
    assert sft.get_column("session_id").to_list() == [3]
    assert read(out, "sessions").get_column("session_id").sort().to_list() == [1, 2, 3]
