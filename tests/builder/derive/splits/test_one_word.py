"""Short questions one word apart share a split: the near-duplicates word 3-gram Jaccard
cannot see (a slot of a template changed in an eight-word question scores 0.33)."""

from __future__ import annotations

import itertools
import random

import polars as pl

from builder.derive.splits import SplitConfig
from builder.derive.splits.assign import SplitPolicy, assign
from builder.derive.splits.audit import audit
from builder.derive.splits.one_word import MAX_WORDS, one_word_edges, words_needed
from tests.builder.derive.splits.test_assign import (
    brute_force_groups,
    frame,
    no_pins,
    one_word_apart,
    similarity,
)

RATIOS = SplitConfig(0.8, 0.1, 0.1, "one-word")
COLUMNS = ["age", "bmi", "charges", "children", "income", "score", "price", "weight"]
GROUPS = ["sex", "region", "smoker", "city", "year", "grade"]
STATS = ["minimum", "maximum", "mean", "median"]


def templated_short() -> list[tuple[str, str, str]]:
    """Ten-word questions of one template, every slot at least two words from either end:
    each pair one slot apart is a near-copy that word 3-gram Jaccard puts at 5/11."""
    return [
        (f"what is the {stat} {column} for each {group} in it?", "d", "by_group")
        for stat, column, group in itertools.product(STATS, COLUMNS, GROUPS)
    ]


def held_out_next_to_train(rows: pl.DataFrame) -> list[tuple[str, str]]:
    """Every (held-out, train) pair one word apart, by comparing all pairs."""
    train = rows.filter(pl.col("split") == "train").get_column("text").to_list()
    held = rows.filter(pl.col("split") != "train").get_column("text").to_list()
    return [(h, t) for h in held for t in train if one_word_apart(h, t)]


def test_one_word_apart_is_below_any_useful_jaccard_threshold() -> None:
    """Why the rule exists: the n-gram similarity alone would let these cross splits."""
    a, b = "what is the minimum age for each sex?", "what is the minimum bmi for each sex?"
    assert one_word_apart(a, b)
    assert similarity(a, b) < 0.34


def test_no_held_out_question_is_one_word_from_a_training_one() -> None:
    # mixed with unrelated questions, so that held-out splits can be filled
    rng = random.Random(3)
    others = [
        (" ".join(rng.choice(COLUMNS + GROUPS + STATS) for _ in range(12)), "o", "other")
        for _ in range(600)
    ]
    data = frame(templated_short() + others)
    result = assign(data, no_pins(), SplitPolicy("near_duplicate", 0.5, RATIOS))
    rows = result.frame.join(data, on="question_id")
    assert rows.filter(pl.col("split") != "train").height > 50
    assert held_out_next_to_train(rows) == []
    # the whole template is one group: every question of it shares one split
    template = rows.filter(pl.col("template") == "by_group")
    assert template.get_column("group").n_unique() == 1
    assert (
        audit(result, data, SplitPolicy("near_duplicate", 0.5, RATIOS))["one_word_from_train"] == 0
    )


def test_the_question_policy_leaks_them_and_the_audit_counts_each() -> None:
    data = frame(templated_short())
    policy = SplitPolicy("question", 0.5, RATIOS)
    result = assign(data, no_pins(), policy)
    rows = result.frame.join(data, on="question_id")
    leaking = {held for held, _ in held_out_next_to_train(rows)}
    assert leaking
    figures = audit(result, data, policy)
    assert figures["one_word_from_train"] == len(leaking)
    assert figures["at_or_above_threshold"] == 0  # invisible to the Jaccard audit


def test_a_question_of_unknown_dataset_joins_its_one_word_near_copies() -> None:
    """Under ``dataset``, a question with no dataset falls back to its near-duplicates; the
    others (a dataset each here) join nothing."""
    data = frame(templated_short())
    unknown = pl.int_range(pl.len()) % 7 == 0
    data = data.with_columns(dataset=pl.when(unknown).then(None).otherwise(pl.col("text")))
    result = assign(data, no_pins(), SplitPolicy("dataset", 0.5, RATIOS))
    rows = result.frame.join(data, on="question_id")
    split = dict(zip(rows.get_column("text"), rows.get_column("split"), strict=True))
    orphans = rows.filter(pl.col("dataset").is_null()).get_column("text").to_list()
    assert result.stats["fell_back_to_near_duplicate"] == len(orphans)
    for orphan in orphans:
        near = [t for t in split if t != orphan and one_word_apart(orphan, t)]
        assert near and {split[t] for t in near} == {split[orphan]}


def test_edges_give_the_brute_force_groups_of_one_word_pairs() -> None:
    rng = random.Random(11)
    vocabulary = ["a", "b", "c", "d", "e"]
    texts = sorted(
        {" ".join(rng.choice(vocabulary) for _ in range(rng.randint(3, 7))) for _ in range(400)}
    )
    edges = one_word_edges(pl.Series(texts), 0.5)
    for a, b in edges.iter_rows():
        assert a < b and one_word_apart(texts[a], texts[b]), (texts[a], texts[b])
    # the edges' components are those of every pair one word apart (threshold past 1: none)
    expected = brute_force_groups(texts, 1.01)
    parent = list(range(len(texts)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for a, b in edges.iter_rows():
        x, y = root(a), root(b)
        parent[max(x, y)] = min(x, y)
    assert [root(i) for i in range(len(texts))] == expected


def test_short_texts_and_texts_sharing_too_few_words_are_not_joined() -> None:
    texts = pl.Series(["mean age", "mean bmi", "what is the mean", "what is the mode", "x y z w v"])
    assert one_word_edges(texts, 0.5).height == 0


def test_only_texts_the_n_gram_join_would_miss_are_keyed() -> None:
    """Past ``words_needed`` words the 3-gram join groups one word apart itself (a text's
    keys cost the square of its length: a pasted table, or a long question in a script
    where each character is a word, is never keyed)."""
    for threshold in (0.3, 0.5, 0.7, 0.9):
        n = words_needed(threshold) + 1
        a = [f"w{i}" for i in range(n)]
        b = [*a[: n // 2], "changed", *a[n // 2 + 1 :]]
        assert similarity(" ".join(a), " ".join(b)) >= threshold
        c = [*a[: n // 2], "more", *a[n // 2 :]]
        assert similarity(" ".join(a), " ".join(c)) >= threshold
    assert words_needed(0.5) == 12 and words_needed(0.99) == MAX_WORDS
    long = "".join(chr(0x4E00 + i) for i in range(3000))  # 3,000 words: one per character
    texts = pl.Series(
        [long, long[:-1] + "\u4e00", *(f"short text number {i} here" for i in range(3))]
    )
    edges = one_word_edges(texts, 0.5)
    assert edges.sort("a", "b").rows() == [(2, 3), (2, 4)]  # the short ones only
