"""The exact similarity join finds every pair a brute-force comparison finds, at several
thresholds, on templated text where most pairs sit just around the threshold; its groups are
those of every such pair, however many blocks and rounds they are found in."""

from __future__ import annotations

import itertools
import random

import polars as pl
import pytest

from builder.derive.splits import similarity_join
from builder.derive.splits.similarity_join import (
    components,
    hashed_ngrams,
    nearest,
    similar_pairs,
)
from samples.paraphrases import paraphrase, questions
from tests.builder.derive.splits.test_assign import brute_force_groups, similarity


@pytest.fixture(scope="module")
def texts() -> list[str]:
    rng = random.Random(5)
    items = [t for t, _, _ in questions(500, seed=5)]
    items += [paraphrase(t, rng) for t in items[::3]]
    items += ["a b", "a b", "", "one", "one two three", "one two three four"]
    return sorted(set(items))


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.56, 0.7, 0.9])
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


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.56, 0.7])
def test_components_are_the_brute_force_groups_in_many_blocks_and_rounds(
    texts: list[str], threshold: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # blocks of a few rows and rounds of a few pairs: groups are joined across both
    monkeypatch.setattr(similarity_join, "BLOCK_PAIRS", 100)
    monkeypatch.setattr(similarity_join, "ROUND", 40)
    grams = hashed_ngrams(pl.Series(texts))
    prefix = similarity_join._prefixes(grams, threshold)
    blocks = similarity_join._blocks(prefix, len(texts))
    assert len(blocks) > 10
    assert blocks[0][0] == 0 and blocks[-1][1] == len(texts)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(blocks))
    label = components(grams, len(texts), threshold)
    assert label.get_column("row").to_list() == list(range(len(texts)))
    expected = brute_force_groups(texts, threshold)
    assert len(set(expected)) < len(texts) * 0.9  # groups of more than one text exist
    assert label.get_column("label").to_list() == expected


def test_a_pair_exactly_at_the_threshold_is_joined() -> None:
    # 14 of 25 word 3-grams shared: Jaccard 0.56 exactly, where 0.56 × 25 is computed as
    # 14.000000000000002, just past the 14 n-grams it stands for
    long = " ".join(f"w{i}" for i in range(27))
    short = " ".join(f"w{i}" for i in range(16))
    assert similarity(long, short) == 0.56
    grams = hashed_ngrams(pl.Series([long, short]))
    assert similar_pairs(grams, 0.56).select("a", "b").rows() == [(0, 1)]
    assert components(grams, 2, 0.56).get_column("label").to_list() == [0, 0]


@pytest.mark.parametrize("floor", [0.3, 0.5])
@pytest.mark.parametrize("first", [1, 8])
def test_nearest_is_the_brute_force_nearest(
    texts: list[str], floor: float, first: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a few candidates measured first, in small blocks: the rest must be bounded right
    monkeypatch.setattr(similarity_join, "BLOCK_PAIRS", 200)
    monkeypatch.setattr(similarity_join, "NEAREST_FIRST", first)
    left = pl.Series(range(0, len(texts), 3), dtype=pl.UInt32)
    right = pl.Series([i for i in range(len(texts)) if i % 3], dtype=pl.UInt32)
    found = nearest(hashed_ngrams(pl.Series(texts)), floor, left, right)
    expected = []
    for a in left.to_list():
        scored = [(similarity(texts[a], texts[b]), b) for b in right.to_list()]
        best = max((v for v, _ in scored if v >= floor), default=None)
        if best is not None:
            b = min(b for v, b in scored if v == best)
            expected.append((a, b))
    assert len(expected) > 50
    assert found.select("a", "b").rows() == expected
    for a, b, value in found.iter_rows():
        assert value == pytest.approx(similarity(texts[a], texts[b]))
