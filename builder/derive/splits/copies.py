"""Held-out questions copied into what a training session says after its question.

A session's split is its question's (its initial instruction's), but it trains on everything
it says: a later ``set_instruction`` or chat ``input`` holding a validation or test question
would put that question into training. Such a session is kept out of every training config
(``held_out_copy``), by the rule decontamination uses: more than ``threshold`` of the held-out
question's word ``n``-grams occur in one of the session's user messages as the replay shows
them (consecutive ``input`` actions, and the output before them, are one). A held-out question of
fewer than ``MIN_WORDS`` words is not looked for: "show the columns" is everyday chat.

An episode is checked the same way (``held_out_episodes``): a training episode whose prompts
(its question, system message, captured non-assistant messages, rendered turn output) hold a
held-out question leaves every training config too; a held-out episode is not looked at.
"""

from __future__ import annotations

import polars as pl

from builder.derive.decontamination.evals import EvalSet
from builder.derive.decontamination.overlap import matched_items
from builder.derive.sessions.replay import DEFAULT_OPTIONS, ReplayOptions, adjacent_merged, rows_of
from builder.derive.splits.shingles import WORD, comparable
from schemas.vocabulary import HELD_OUT_COPY

SESSION_PROMPTS = {"session_id": pl.Int64, "question_id": pl.String, "text": pl.String}
EXCLUDED_SESSIONS = {"session_id": pl.Int64, "reason": pl.String}
EPISODE_PROMPTS = {"episode_id": pl.String, "question_id": pl.String, "text": pl.String}
EXCLUDED_EPISODES = {"episode_id": pl.String, "reason": pl.String}
MIN_WORDS = 6
SAID = ("set_instruction", "input")  # the actions that may restate the question


def later_messages(
    sessions: pl.DataFrame, actions: pl.DataFrame, options: ReplayOptions = DEFAULT_OPTIONS
) -> pl.DataFrame:
    """``SESSION_PROMPTS``: what each verified session (the ones that train) says besides
    its question, as the replay shows it: its user messages (``rows_of``), consecutive ones
    joined into one (``adjacent_merged``: two ``input`` actions in a row, or an output and
    the ``input`` after it, are one message, so a question split between them is whole
    there), less what restates the question: the opening's instruction, and the
    ``set_instruction`` and ``input`` actions that say it again (the action a session
    without an initial instruction took it from, among them; compared word for word, as the
    split key is normalized). The opening's code and output, and every output, are kept."""
    verified = sessions.filter(pl.col("verified").fill_null(False))
    acts = actions.join(verified.select("session_id"), on="session_id", how="semi")
    if not acts.height:
        return pl.DataFrame(schema=SESSION_PROMPTS)

    def words(texts: pl.Series) -> pl.Series:
        return comparable(texts.fill_null("")).str.extract_all(WORD).list.join(" ")

    opening = verified.with_columns(initial_instruction=pl.lit(None, pl.String))
    rows = rows_of(acts, opening, options).join(
        verified.select("session_id", "question_id", "split_text"),
        on="session_id",
        maintain_order="left",
    )
    restates = words(rows.get_column("action")) == words(rows.get_column("split_text"))
    restated = pl.col("action_type").is_in(SAID) & pl.lit(restates)
    rows = rows.with_columns(content=pl.when(restated).then(pl.lit("")).otherwise("content"))
    said = adjacent_merged(rows.drop("split_text")).filter(
        (pl.col("role") == "user") & (pl.col("content").str.strip_chars() != "")
    )
    return said.select("session_id", "question_id", text="content").cast(SESSION_PROMPTS)


def held_out_items(
    assignment: pl.DataFrame, questions: pl.DataFrame, pinned: pl.DataFrame
) -> pl.Series:
    """The held-out questions looked for: this build's validation and test questions
    (``assignment``: ``question_id``, ``split``, ``reason``; ``questions``: ``question_id``,
    ``text``) and the earlier builds' (``pinned``: ``question_id``, ``text``, ``split``,
    ``reason``) this build lacks, which stay held out; bridges aside, of ``MIN_WORDS``+."""
    held = assignment.filter((pl.col("split") != "train") & pl.col("reason").is_null())
    ours = questions.join(held.select("question_id"), on="question_id").get_column("text")
    earlier = pinned.filter(
        (pl.col("split") != "train") & pl.col("reason").is_null() & pl.col("text").is_not_null()
    ).join(questions, on="question_id", how="anti")
    items = pl.concat([ours, earlier.get_column("text")]).drop_nulls().unique().sort()
    return items.filter(comparable(items).str.count_matches(WORD) >= MIN_WORDS)


def _keys(items: pl.Series, n: int) -> list[str]:
    """Words of which a prompt holding one of ``items`` holds one (as text: a cheap filter
    before n-grams are built): an item of fewer than ``n`` words is one n-gram, its longest
    word; a longer one's every ``n``-th word from the offset whose shortest is longest, as
    each run of ``n`` words has one of them, and a match holds at least one run."""
    keys = set()
    for words in comparable(items).str.extract_all(WORD).to_list():
        offset = max(range(min(n, len(words))), key=lambda o: min(map(len, words[o::n])))
        keys.update([max(words, key=len)] if len(words) < n else words[offset::n])
    return sorted(keys)


def _matches(prompts: pl.DataFrame, items: pl.Series, n: int, t: float) -> pl.DataFrame:
    """``text``, ``item``: each distinct text of ``prompts`` and the ``items`` it holds,
    matched once (a system prompt, a question asked by many episodes)."""
    texts = prompts.select("text").unique(maintain_order=True)
    texts = texts.filter(comparable(texts.get_column("text")).str.contains_any(_keys(items, n)))
    found = matched_items(texts, [EvalSet("held-out questions", "", "", tuple(items))], n, t)
    return texts.with_row_index("prompt").join(found, on="prompt").select("text", "item")


def _copying(
    prompts: pl.DataFrame,
    key: str,
    assignment: pl.DataFrame,
    items: pl.Series,
    n: int,
    t: float,
    excused: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """``key``, ``reason``: the ``prompts`` (``key``, ``question_id``, ``text``) whose question
    trains and that hold one of ``items``; with ``excused`` (``question_id``, ``text``), not
    for an item its own question's text holds too."""
    training = assignment.filter((pl.col("split") == "train") & pl.col("reason").is_null())
    checked = prompts.join(training.select("question_id"), on="question_id", how="semi").filter(
        pl.col("text").is_not_null()
    )
    if not items.len() or not checked.height:
        return pl.DataFrame(schema={key: prompts.schema[key], "reason": pl.String})
    copying = checked.join(_matches(checked, items, n, t), on="text")
    if excused is not None:  # what the prompt's own question says is not a copy
        own = excused.join(checked.select("question_id").unique(), on="question_id")
        copying = copying.join(
            own.join(_matches(own, items, n, t), on="text").select("question_id", "item"),
            on=["question_id", "item"],
            how="anti",
        )
    return copying.select(key, reason=pl.lit(HELD_OUT_COPY)).unique(key).sort(key)


def held_out_copies(
    prompts: pl.DataFrame,
    assignment: pl.DataFrame,
    questions: pl.DataFrame,
    pinned: pl.DataFrame,
    n: int,
    threshold: float,
) -> pl.DataFrame:
    """``EXCLUDED_SESSIONS``: the training sessions whose ``prompts`` (``SESSION_PROMPTS``)
    hold a held-out question (``held_out_items`` of the other arguments)."""
    items = held_out_items(assignment, questions, pinned)
    found = _copying(prompts, "session_id", assignment, items, n, threshold)
    return found.cast(EXCLUDED_SESSIONS)


def held_out_episodes(
    prompts: pl.DataFrame,
    assignment: pl.DataFrame,
    questions: pl.DataFrame,
    pinned: pl.DataFrame,
    n: int,
    threshold: float,
    own_questions_excused: bool = False,
) -> pl.DataFrame:
    """``EXCLUDED_EPISODES``: the training episodes whose ``prompts`` (``EPISODE_PROMPTS``:
    every text a training config shows of the episode, its question's included) hold a
    held-out question (``held_out_items``). Its own question trains, so it is no item: an
    episode that asks only its own question is never excluded, unless that question itself
    holds a held-out one (a long question quoting a short one whole, too unlike to group).
    ``own_questions_excused``: that too is left to the audit, under a policy that lets
    paraphrases of held-out questions train by choice (an item an episode's own question
    holds is no copy of it)."""
    items = held_out_items(assignment, questions, pinned)
    excused = questions if own_questions_excused else None
    found = _copying(prompts, "episode_id", assignment, items, n, threshold, excused)
    return found.cast(EXCLUDED_EPISODES)
