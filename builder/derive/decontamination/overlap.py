"""Which prompts match which eval items: n-gram overlap, computed as joins of n-gram columns
(no loop over rows), so 100,000 prompts against 10,000 items cost seconds."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from builder.derive.decontamination.evals import EvalSet
from builder.derive.splits.shingles import WORD, comparable, ngram_frame, words_of
from schemas.vocabulary import EVAL_PREFIX

MOST_MATCHED = 10
CHUNK_BYTES = 1 << 20  # prompt text matched at once (``_chunks``)
PROMPTS = {"kind": pl.String, "key": pl.String, "text": pl.String}
QUESTION, EPISODE, SESSION = "question", "episode", "session"  # a session's key: its id


@dataclass(frozen=True)
class Contamination:
    questions: pl.DataFrame  # question_id, reason (``eval:<name>``)
    episodes: pl.DataFrame  # episode_id, reason
    sessions: pl.DataFrame  # session_id, reason
    summary: dict[str, Any]  # the manifest's ``decontamination`` section, rows aside


def _chunks(texts: pl.Series) -> Iterator[tuple[int, pl.Series]]:
    """``texts`` in slices of about ``CHUNK_BYTES`` of text, each with its first row: a
    prompt's n-grams are matched within its slice, so memory follows the slice, not the
    build (a prompt's words and n-grams take many times its text)."""
    ends = (texts.str.len_bytes().fill_null(0).cum_sum() // CHUNK_BYTES).to_numpy()
    start = 0
    while start < len(texts):
        stop = start + int(np.searchsorted(ends[start:], ends[start], side="right"))
        yield start, texts.slice(start, stop - start)
        start = stop


def matched_items(
    prompts: pl.DataFrame, evals: list[EvalSet], n: int, threshold: float
) -> pl.DataFrame:
    """``prompt`` (row of ``prompts``), ``eval``, ``item``, ``share``: every item matched."""
    items = pl.DataFrame(
        [(e.name, i, text) for e in evals for i, text in enumerate(e.items)],
        schema={"eval": pl.String, "item": pl.Int64, "text": pl.String},
        orient="row",
    )
    items = items.with_columns(
        text=comparable(items.get_column("text")),
    ).with_columns(size=pl.min_horizontal(pl.col("text").str.count_matches(WORD), pl.lit(n)))
    items = items.filter(pl.col("size") > 0)
    sizes = []  # per item size: its items, their n-grams, n-gram counts and words
    for size in items.get_column("size").unique().sort().to_list():
        of_size = items.filter(pl.col("size") == size).with_row_index("e")
        texts = of_size.get_column("text")
        grams = ngram_frame(texts, size).rename({"row": "e"})
        sizes.append((size, of_size, grams, grams.group_by("e").len("total"), words_of(texts)))
    found = []
    for start, chunk in _chunks(prompts.get_column("text")):
        compared = comparable(chunk.fill_null(""))  # once per slice, for every size
        for size, of_size, grams, totals, vocabulary in sizes:
            # only a prompt's n-grams made of the items' words can be shared with one of theirs
            prompt_grams = ngram_frame(compared, size, vocabulary)
            shared = (
                grams.join(prompt_grams.rename({"row": "prompt"}), on="gram")
                .group_by("e", "prompt")
                .len("shared")
                .join(totals, on="e")
                .with_columns(share=pl.col("shared") / pl.col("total"))
                .filter(pl.col("share") > threshold)
            )
            found.append(
                shared.join(of_size.select("e", "eval", "item"), on="e").select(
                    pl.col("prompt") + start, "eval", "item", "share"
                )
            )
    schema = {"prompt": pl.UInt32, "eval": pl.String, "item": pl.Int64, "share": pl.Float64}
    if not found:
        return pl.DataFrame(schema=schema)
    return pl.concat([f.cast(schema) for f in found]).sort("prompt", "eval", "item")


def decontaminate(
    prompts: pl.DataFrame, evals: list[EvalSet], n: int, threshold: float
) -> Contamination:
    """``prompts`` (``PROMPTS``: ``kind`` question, episode or session, its ``key``, its
    ``text``)."""
    # many prompts share a text (a system prompt, a templated question): each is matched once
    texts = prompts.select("text").unique(maintain_order=True)
    matches = matched_items(texts, evals, n, threshold)
    order = {e.name: i for i, e in enumerate(evals)}
    keyed = (
        prompts.join(texts.with_row_index("prompt"), on="text", maintain_order="left")
        .join(matches, on="prompt")
        .with_columns(rank=pl.col("eval").replace_strict(order, return_dtype=pl.Int64))
    )
    first = (
        keyed.sort("rank")
        .group_by("kind", "key", maintain_order=True)
        .first()
        .select("kind", "key", reason=pl.lit(EVAL_PREFIX) + pl.col("eval"))
        .sort("kind", "key")
    )
    questions = first.filter(pl.col("kind") == QUESTION).select(question_id="key", reason="reason")
    episodes = first.filter(pl.col("kind") == EPISODE).select(episode_id="key", reason="reason")
    sessions = (
        first.filter(pl.col("kind") == SESSION)
        .select(session_id=pl.col("key").cast(pl.Int64), reason="reason")
        .sort("session_id")
    )
    per_eval = []
    for e in evals:
        mine = keyed.filter(pl.col("eval") == e.name)
        matched = mine.get_column("item").n_unique()
        per_eval.append(
            {
                "name": e.name,
                "file": e.path,
                "field": e.field,
                "items": len(e.items),
                "matched_items": matched,
                "matched_share": round(matched / len(e.items), 6) if e.items else 0.0,
                "matched_questions": mine.filter(pl.col("kind") == QUESTION)
                .get_column("key")
                .n_unique(),
                "matched_episodes": mine.filter(pl.col("kind") == EPISODE)
                .get_column("key")
                .n_unique(),
                "matched_sessions": mine.filter(pl.col("kind") == SESSION)
                .get_column("key")
                .n_unique(),
            }
        )
    texts = {e.name: e.items for e in evals}
    most = (
        keyed.group_by("eval", "item")
        .agg(prompts=pl.len())
        .sort("prompts", "eval", "item", descending=[True, False, False])
        .head(MOST_MATCHED)
    )
    summary = {
        "evals": per_eval,
        "most_matched": [
            {
                "eval": r["eval"],
                "item": r["item"],
                "text": texts[r["eval"]][r["item"]][:300],
                "prompts": r["prompts"],
            }
            for r in most.iter_rows(named=True)
        ],
    }
    return Contamination(questions, episodes, sessions, summary)
