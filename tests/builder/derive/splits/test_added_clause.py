"""A question and the same question with a clause added at its start or end share a split:
the capture project's banks hold such pairs (an answer format appended between versions),
and word 3-gram Jaccard puts them under 0.5 once the clause is as long as the question."""

from __future__ import annotations

import itertools
import random

import polars as pl

from builder.derive.splits import SplitConfig
from builder.derive.splits.added_clause import MIN_WORDS, added_clause_edges
from builder.derive.splits.assign import SplitPolicy, assign
from builder.derive.splits.audit import audit
from tests.builder.derive.splits.test_assign import frame, no_pins, similarity, words

RATIOS = SplitConfig(0.6, 0.2, 0.2, "clause")
FORMATS = [
    "return as a float rounded to 2 decimal places.",
    "answer with a single integer and nothing else please.",
    "give the answer as json with keys column and value.",
]
CONDITION = "among rows where the region is north and age is over thirty,"
VOCABULARY = [f"w{i}" for i in range(400)]


def with_clause(short: str, long: str) -> bool:
    """Written again from the definition: the shorter text's words are the longer one's
    first or last words, at least ``MIN_WORDS`` of them and a third of the longer's."""
    x, y = words(short), words(long)
    if len(x) > len(y):
        x, y = y, x
    if len(x) == len(y) or len(x) < MIN_WORDS or 3 * len(x) < len(y):
        return False
    return y[: len(x)] == x or y[-len(x) :] == x


def questions() -> list[tuple[str, str, str]]:
    """Unrelated questions of eight to fourteen words (normalized: lower case, as split keys
    are), and variants of them with a clause added at the end or the start."""
    rng = random.Random(11)
    base = [" ".join(rng.sample(VOCABULARY, rng.randint(8, 14))) + "?" for _ in range(120)]
    out = [(q, "d", "base") for q in base]
    for i, q in enumerate(base):
        if i % 2 == 0:
            out.append((f"{q} {FORMATS[i % len(FORMATS)]}", "d", "format"))
        if i % 3 == 0:
            out.append((f"{CONDITION} {q}", "d", "condition"))
    return out


def test_a_clause_as_long_as_the_question_is_below_the_threshold() -> None:
    """Why the rule exists: the pair the capture project's history holds scores 0.4."""
    short = "what is the overall mean of the tl column?"
    long = f"{short} return as a float rounded to 2 decimal places."
    assert with_clause(short, long) and similarity(short, long) < 0.5


def test_the_edges_are_the_pairs_the_definition_gives() -> None:
    rng = random.Random(5)
    texts = [t for t, _, _ in questions()]
    # short openings a clause extends, texts of the same words in another order, and a text
    # too short for the longer one (under a third of its words)
    texts += ["what is the median of", "what is the median of the fare column"]
    texts += [" ".join(rng.sample(words(t), len(words(t)))) for t in texts[:20]]
    texts += ["w1 w2 w3 w4 w5 w6", "w1 w2 w3 w4 w5 w6 " + " ".join(VOCABULARY[300:313])]
    found = added_clause_edges(pl.Series(texts))
    pairs = {(a, b) for a, b in found.iter_rows()}
    expected = {
        (i, j)
        for i, j in itertools.combinations(range(len(texts)), 2)
        if with_clause(texts[i], texts[j])
    }
    assert pairs == expected and len(expected) > 90


def test_no_held_out_question_is_a_training_one_with_a_clause() -> None:
    data = frame(questions())
    policy = SplitPolicy("near_duplicate", 0.5, RATIOS)
    result = assign(data, no_pins(), policy)
    rows = result.frame.join(data, on="question_id").with_columns(pl.col("text").str.to_lowercase())
    assert rows.filter(pl.col("split") != "train").height > 10
    train = rows.filter(pl.col("split") == "train").get_column("text").to_list()
    held = rows.filter(pl.col("split") != "train").get_column("text").to_list()
    assert not [(h, t) for h in held for t in train if with_clause(h, t)]
    assert audit(result, data, policy)["added_clause_from_train"] == 0


def test_the_question_policy_leaks_them_and_the_audit_counts_each() -> None:
    data = frame(questions())
    policy = SplitPolicy("question", 0.5, RATIOS)
    result = assign(data, no_pins(), policy)
    rows = result.frame.join(data, on="question_id")
    train = rows.filter(pl.col("split") == "train").get_column("text").to_list()
    held = rows.filter(pl.col("split") != "train").get_column("text").to_list()
    leaking = {h for h in held for t in train if with_clause(h, t)}
    assert leaking
    assert audit(result, data, policy)["added_clause_from_train"] == len(leaking)
