"""The exact similarity join finds every pair a brute-force comparison finds, at several
thresholds, on templated text where most pairs sit just around the threshold."""

from __future__ import annotations

import random

import polars as pl
import pytest

from builder.derive.splits.similarity_join import components, hashed_ngrams, similar_pairs
from samples.paraphrases import paraphrase, questions
from tests.builder.derive.splits.test_assign import similarity


@pytest.fixture(scope="module")
def texts() -> list[str]:
    rng = random.Random(5)
    items = [t for t, _, _ in questions(500, seed=5)]
    items += [paraphrase(t, rng) for t in items[::3]]
    items += ["a b", "a b", "", "one", "one two three", "one two three four"]
    return sorted(set(items))


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.7])
def test_every_pair_at_the_threshold_is_found_and_none_below(
    texts: list[str], threshold: float
) -> None:
    found = similar_pairs(hashed_ngrams(pl.Series(texts)), threshold)
    got = {(a, b) for a, b in found.select("a", "b").iter_rows()}
    expected = {
        (i, j)
        for i in range(len(texts))
        for j in range(i + 1, len(texts))
        if similarity(texts[i], texts[j]) >= threshold
    }
    assert got == expected
    for a, b, value in found.iter_rows():
        assert value == pytest.approx(similarity(texts[a], texts[b]))


def test_pairs_across_two_sides_only(texts: list[str]) -> None:
    grams = hashed_ngrams(pl.Series(texts))
    left = pl.Series(range(0, len(texts), 2), dtype=pl.UInt32)
    right = pl.Series(range(1, len(texts), 2), dtype=pl.UInt32)
    found = similar_pairs(grams, 0.5, left, right)
    expected = {
        (i, j)
        for i in left.to_list()
        for j in right.to_list()
        if similarity(texts[i], texts[j]) >= 0.5
    }
    assert {(a, b) for a, b, _ in found.iter_rows()} == expected


def test_components_join_through_chains() -> None:
    # a ~ b and b ~ c at ≥ 0.5, a and c below: one group
    a = "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12"
    b = "w1 w2 w3 w4 w5 w6 w7 w8 w9 x10 x11 x12"
    c = "y1 y2 y3 w4 w5 w6 w7 w8 w9 x10 x11 x12"
    assert similarity(a, b) >= 0.5 and similarity(b, c) >= 0.5 and similarity(a, c) < 0.5
    d = "something else entirely here"
    label = components(hashed_ngrams(pl.Series([a, b, c, d])), 4, 0.5)
    assert label.get_column("label").to_list() == [0, 0, 0, 3]
