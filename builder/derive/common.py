"""What every objective joins: per-episode context (lineage, prompt parts, expected answer)
and the traces of those episodes in a stable order.

The expected answer is ``rl_verification_data``'s; an episode without it falls back to its
gold trace's answer (a training-eligible episode is verified, so the gold answer is the
consensus answer).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

import polars as pl

from builder.contract.answers import answer_texts_match
from builder.derive.eligibility import eligible_episodes, sound_episodes
from builder.derive.options import DeriveOptions

SOURCE = "episode"
# Final sort of trace rows: gold first, then consistency traces by index.
TRACE_ORDER = ("question_id", "episode_id", "consistency", "trace_index")


def episode_context(
    tables: Mapping[str, pl.LazyFrame],
    options: DeriveOptions,
    verified_only: bool = True,
    hooks: bool = False,
) -> pl.LazyFrame:
    """One row per episode that trains (``builder.derive.eligibility``; with
    ``verified_only`` false, also those that only fail verification, for ``prm``; with
    ``hooks``, only those the configs that read hooks train on):
    ``episode_id``, ``question_id``, ``difficulty``, ``source``, ``question``, ``system``,
    ``expected_hash``, ``expected_answer``, ``verified_recomputed``, ``verified_holds`` (as
    captured and recomputed) and ``accepted_hashes``
    (the expected hash, then every other hash the question's ground truth accepts)."""
    episodes = tables["episodes"]
    trains = eligible_episodes(tables, hooks) if verified_only else sound_episodes(tables)
    episodes = episodes.join(trains, on="episode_id", how="semi")
    questions = (
        tables["questions"]
        .select("question_id", "difficulty", question="question_text")
        .unique("question_id", keep="first", maintain_order=True)
    )
    gold = tables["traces"].filter(pl.col("role") == "gold")
    gold = gold.select("episode_id", gold_hash="final_answer_hash", gold_answer="final_answer")
    has_rl = pl.col("expected_final_answer_hash").is_not_null()
    return (
        episodes.join(questions, on="question_id", how="left")
        .join(gold, on="episode_id", how="left")
        .select(
            "episode_id",
            "question_id",
            "difficulty",
            pl.lit(SOURCE).alias("source"),
            "question",
            # a blank system prompt is none: the default stands in, as for a missing one
            system=pl.when(pl.col("system_prompt").str.strip_chars().fill_null("") != "")
            .then("system_prompt")
            .otherwise(pl.lit(options.default_system_prompt)),
            expected_hash=pl.when(has_rl).then("expected_final_answer_hash").otherwise("gold_hash"),
            expected_answer=pl.when(has_rl).then("expected_final_answer").otherwise("gold_answer"),
            verified_recomputed=pl.col("verified_recomputed").fill_null(False),
            verified_holds=pl.col("verified").fill_null(False)
            & pl.col("verified_recomputed").fill_null(False),
            ground_truth_hashes="ground_truth_hashes",
        )
        .with_columns(
            accepted_hashes=pl.concat_list(
                pl.col("expected_hash"), pl.col("ground_truth_hashes").fill_null([])
            )
            .list.drop_nulls()
            .list.unique(maintain_order=True)
        )
        .drop("ground_truth_hashes")
        .cache()  # see ``episode_traces``
    )


def episode_traces(
    tables: Mapping[str, pl.LazyFrame], options: DeriveOptions, hooks: bool = False
) -> pl.LazyFrame:
    """Traces of the training-eligible episodes (``episode_context``) with its columns, plus
    ``consistency`` (sort key), ``trace_role`` and ``correct``: the answer is one the ``rl``
    reward accepts (``builder.contract.rewards.outcome_reward``): its hash is an accepted one or,
    with
    an answer tolerance, it matches the expected answer by value (``builder.contract.answers``), as
    the capture code that verified the episode compared them."""
    by_hash = pl.col("accepted_hashes").list.contains(pl.col("final_answer_hash")).fill_null(False)
    correct = by_hash
    if options.answer_tolerance is not None:
        within = partial(answer_texts_match, tolerance=options.answer_tolerance)
        by_value = pl.struct(answer="final_answer", expected="expected_answer").map_elements(
            lambda pair: within(pair["answer"], pair["expected"]), return_dtype=pl.Boolean
        )
        correct = by_hash | by_value.fill_null(False)
    return (
        tables["traces"]
        .join(episode_context(tables, options, hooks=hooks), on="episode_id", how="inner")
        .with_columns(
            consistency=pl.col("role") != "gold",
            correct=correct,
            trace_role=pl.col("role"),
        )
        # An objective joins these rows several times over; Polars' common-subplan
        # elimination does not merge the branches once filters are pushed into them, so
        # each would compute them again (sft and dpo: about twice their CPU).
        .cache()
    )
