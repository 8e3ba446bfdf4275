"""The exact similarity join finds every pair a brute-force comparison finds, at several
thresholds, on templated text where most pairs sit just around the threshold; its groups are
those of every such pair, however many blocks and rounds they are found in."""

from __future__ import annotations

import random

import polars as pl
import pytest

from builder.derive.splits import similarity_join
from builder.derive.splits.similarity_join import (
    components,
    connect,
    hashed_ngrams,
    measure,
    nearest,
    set_lists,
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


def similar_pairs(
    texts: list[str], threshold: float, pair: pl.Expr, left: pl.Series | None = None
) -> pl.DataFrame:
    """Every candidate pair the join makes (of ``left`` rows with any, when given),
    measured, at or above ``threshold``."""
    grams = hashed_ngrams(pl.Series(texts))
    prefix = similarity_join._prefixes(grams, threshold).lazy()
    ours = prefix if left is None else prefix.filter(pl.col("row").is_in(left.implode()))
    bits = similarity_join.signatures(grams)
    found = similarity_join._matches(ours, prefix, threshold, pair, bits)
    return measure(found, set_lists(grams)).filter(pl.col("similarity") >= threshold)


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.56, 0.7, 0.9])
def test_every_pair_at_the_threshold_is_a_candidate(texts: list[str], threshold: float) -> None:
    found = similar_pairs(texts, threshold, pl.col("row") < pl.col("row_b"))
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


def test_pairs_of_one_side_with_any_other_row(texts: list[str]) -> None:
    left = pl.Series(range(0, len(texts), 2), dtype=pl.UInt32)
    found = similar_pairs(texts, 0.5, pl.col("row") != pl.col("row_b"), left)
    expected = {
        (i, j)
        for i in left.to_list()
        for j in range(len(texts))
        if i != j and similarity(texts[i], texts[j]) >= 0.5
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
    blocks = list(similarity_join._component_blocks(prefix, len(texts), None))
    assert len(blocks) > 10
    label = components(grams, len(texts), threshold)
    assert label.get_column("row").to_list() == list(range(len(texts)))
    expected = brute_force_groups(texts, threshold, one_word=False)
    assert len(set(expected)) < len(texts) * 0.9  # groups of more than one text exist
    assert label.get_column("label").to_list() == expected


def test_a_pair_exactly_at_the_threshold_is_joined() -> None:
    # 14 of 25 word 3-grams shared: Jaccard 0.56 exactly, where 0.56 × 25 is computed as
    # 14.000000000000002, just past the 14 n-grams it stands for
    long = " ".join(f"w{i}" for i in range(27))
    short = " ".join(f"w{i}" for i in range(16))
    assert similarity(long, short) == 0.56
    grams = hashed_ngrams(pl.Series([long, short]))
    assert components(grams, 2, 0.56).get_column("label").to_list() == [0, 0]
    one = pl.Series([0], dtype=pl.UInt32)
    assert nearest(grams, 0.56, one, pl.Series([1], dtype=pl.UInt32)).rows() == [(0, 1, 0.56)]


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


def test_components_join_given_groups_through_the_pairs_of_some_rows(
    texts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # groups made by a label (every tenth text with the next), then joined further only
    # through pairs ≥ 0.5 with a row of ``among``: as connecting all those edges at once
    monkeypatch.setattr(similarity_join, "BLOCK_PAIRS", 100)
    size = len(texts)
    given = pl.DataFrame(
        {"a": range(0, size - 1, 10), "b": range(1, size, 10)},
        schema={"a": pl.UInt32, "b": pl.UInt32},
    )
    among = pl.Series([i for i in range(size) if i % 3 == 0], dtype=pl.UInt32)
    near = [
        (i, j)
        for i in range(size)
        for j in range(i + 1, size)
        if (i % 3 == 0 or j % 3 == 0) and similarity(texts[i], texts[j]) >= 0.5
    ]
    edges = pl.concat([given, pl.DataFrame(near, schema=given.schema, orient="row")])
    expected = connect(size, edges).get_column("label").to_list()
    grams = hashed_ngrams(pl.Series(texts))
    got = components(grams, size, 0.5, connect(size, given), among)
    assert got.get_column("label").to_list() == expected
    assert got.get_column("label").n_unique() < size - len(given) - 20  # pairs joined groups


def _overlaps(texts: list[str]) -> pl.DataFrame:
    """Every pair of ``texts`` with its true overlap of hashed n-grams and its sizes, by
    comparing all pairs; ``reach`` left at the larger size, where ``_bounded`` starts."""
    grams = hashed_ngrams(pl.Series(texts))
    sets = {row: set(h) for row, h in set_lists(grams).iter_rows()}
    pairs = [
        (a, b, len(sets[a] & sets[b]), len(sets[a]), len(sets[b]))
        for a in sets
        for b in sets
        if a < b
    ]
    columns = {"a": pl.UInt32, "b": pl.UInt32, "overlap": pl.Int64, "size": pl.Int64}
    frame = pl.DataFrame(pairs, schema={**columns, "size_b": pl.Int64}, orient="row")
    return frame.with_columns(reach=pl.max_horizontal("size", "size_b"))


@pytest.mark.parametrize("words", [12, 400])
def test_the_signature_bound_never_falls_below_the_true_overlap(words: int) -> None:
    """Short texts (a few bits each) and long ones (400 n-grams in 256 bits, most bits
    set): a bound below a pair's overlap would lose a pair at the threshold."""
    rng = random.Random(words)
    vocabulary = [f"w{i}" for i in range(60)]
    base = [rng.choice(vocabulary) for _ in range(words)]
    texts = [" ".join(base)]
    for _ in range(40):  # near and far copies: a few words to most of them changed
        changed = list(base)
        for at in rng.sample(range(words), rng.randint(1, words)):
            changed[at] = rng.choice(vocabulary)
        texts.append(" ".join(changed))
    pairs = _overlaps(texts)
    grams = hashed_ngrams(pl.Series(texts))
    bounded = similarity_join._bounded(pairs.lazy(), similarity_join.signatures(grams)).collect()
    assert bounded.height == pairs.height
    assert (bounded.get_column("reach") >= bounded.get_column("overlap")).all()
    if words == 12:  # short texts' bound is tight enough to drop most unlike pairs
        loose = bounded.filter(pl.col("reach") > pl.col("overlap") + 2)
        assert loose.height < bounded.height / 4


def test_the_signature_bound_drops_most_candidates_below_the_threshold(texts: list[str]) -> None:
    """On templated questions: most candidates the positional filter leaves are below the
    threshold; the signatures leave few of them, and every pair at the threshold."""
    grams = hashed_ngrams(pl.Series(texts))
    prefix = similarity_join._prefixes(grams, 0.5).lazy()
    pair = pl.col("row") < pl.col("row_b")
    bits = similarity_join.signatures(grams)
    with_bits = similarity_join._matches(prefix, prefix, 0.5, pair, bits)
    lax = bits.with_columns(pl.exclude("row").clip(0, 0))  # no bit set: no bound
    without = similarity_join._matches(prefix, prefix, 0.5, pair, lax)
    sets = set_lists(grams)
    at_threshold = measure(without, sets).filter(pl.col("similarity") >= 0.5)
    below = without.height - at_threshold.height
    assert below > 300  # the bound has work to do
    assert with_bits.height - at_threshold.height < below / 4
    kept = measure(with_bits, sets).filter(pl.col("similarity") >= 0.5)
    assert kept.sort("a", "b").equals(at_threshold.sort("a", "b"))


@pytest.mark.parametrize("texts", [[], ["", "?"]])
def test_texts_without_n_grams_are_groups_of_their_own(texts: list[str]) -> None:
    grams = hashed_ngrams(pl.Series(texts, dtype=pl.String))
    assert grams.height == 0
    label = components(grams, len(texts), 0.5)
    assert label.get_column("label").to_list() == list(range(len(texts)))
    rows = pl.Series(range(len(texts)), dtype=pl.UInt32)
    assert nearest(grams, 0.3, rows, rows).height == 0
