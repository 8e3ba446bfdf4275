"""An episode takes its question's split, yet it trains on every prompt it shows: a training
episode whose captured conversation (or its question itself) holds a validation or test
question leaves every training config (``held_out_copy``), as a session does; one that asks
only its own question trains."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import polars as pl

from builder.config import BuildConfig
from builder.pipeline import build
from samples.files import write_jsonl
from samples.paraphrases import questions
from tests.e2e.held_out_data import episode_about

FILLER = (
    "Working from the quarterly retail extract that the finance team exported last "
    "Tuesday, after removing duplicated invoice lines and converting every currency "
    "column to euros, please answer the following carefully:"
)


def read(folder: Path, config: str) -> pl.DataFrame:
    files = sorted((folder / config).glob("*.parquet"))
    return pl.concat(
        [pl.read_parquet(f).with_columns(split=pl.lit(f.name.split("-", 1)[0])) for f in files],
        how="diagonal_relaxed",
    )


def asking(text: str, other: str, rng: random.Random, index: int) -> dict:
    """An episode on ``text`` whose conversation later asks ``other`` (after an output)."""
    episode = episode_about(text, rng, index)
    while "conversation_for_sft" not in episode:  # a captured conversation, not gold turns
        episode = episode_about(text, rng, index)
    messages = episode["conversation_for_sft"]["messages"]
    later = next(i for i, m in enumerate(messages) if i and m["role"] == "user")
    messages[later]["content"] += f"\nGood. Next question: {other}"
    return episode


def test_a_training_episode_asking_a_held_out_question_does_not_train(tmp_path: Path) -> None:
    texts = [t for t, _, _ in questions(90, seed=7)]
    rng = random.Random(3)
    episodes = [episode_about(t, rng, i) for i, t in enumerate(texts)]
    source = tmp_path / "e.jsonl"
    write_jsonl(source, episodes)
    out = tmp_path / "ds"
    base = BuildConfig(episodes=(str(source),), out=out, rejects=tmp_path / "r.jsonl")
    base = replace(base, split_train=0.5, split_validation=0.25, split_test=0.25)
    first = build(base)
    assert first.manifest["splits"].get("held_out_copy_episodes", 0) == 0  # each its own only
    splits = read(out, "splits")
    train = splits.filter(pl.col("split") == "train").get_column("normalized_text").to_list()
    held = [
        t
        for t in splits.filter(pl.col("split") != "train").get_column("normalized_text")
        if len(t.split()) >= 6
    ]
    # a train question asks a held-out one later; another asks only its own question again
    copy = asking(train[0], held[0], rng, 100)
    own = asking(train[1], train[1], rng, 101)
    # long questions quoting a short held-out question whole: too unlike it to share a group
    # (the held-out one under a third of their words: no clause added to it, as grouping
    # reads one), each of its own group
    quoting = [
        episode_about(f"{_preamble(rng)} {FILLER} {h}", rng, 102 + i)
        for i, h in enumerate(held[1:9])
    ]
    write_jsonl(source, [*episodes, copy, own, *quoting])
    report = build(base)

    splits = read(out, "splits")
    split_of = dict(zip(splits["normalized_text"], splits["split"], strict=True))
    quoted_train = [e for e in quoting if split_of[_key(e, split_of)] == "train"]
    assert quoted_train, "no quoting question landed in train: pick other texts"
    expected = {copy["episode_id"], *(e["episode_id"] for e in quoted_train)}
    sft = read(out, "sft").filter(pl.col("episode_id").is_not_null())
    trained = set(sft.filter(pl.col("split") == "train").get_column("episode_id"))
    assert not expected & trained
    assert own["episode_id"] in trained
    manifest = report.manifest
    assert manifest["splits"]["held_out_copy_episodes"] == len(expected)
    assert manifest["held_out_rows"]["sft"] == {"held_out_copy": len(expected)}
    # the tables keep them
    kept = set(read(out, "episodes").get_column("episode_id"))
    assert expected <= kept


def _preamble(rng: random.Random) -> str:
    """Forty words of a vocabulary of its own: long questions that share no n-gram."""
    return " ".join(f"{rng.choice('bcdfgklmnprstvz')}{rng.randrange(10**6)}" for _ in range(40))


def _key(episode: dict, split_of: dict[str, str]) -> str:
    """The ``splits`` config's text of ``episode``'s question (normalized: casefolded)."""
    text = " ".join(episode["question"]["question_text"].split()).casefold()
    return text if text in split_of else next(k for k in split_of if k.endswith(text[-40:]))
