"""Word n-grams: with a vocabulary, exactly the n-grams whose words are all in it."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.derive.splits.shingles import ngram_frame, words_of
from tests.builder.derive.splits.test_assign import words

WORDS = ["a", "b", "c", "dd", "e_1", "ÿ", "42"]
texts = st.lists(
    st.one_of(
        st.none(),
        st.lists(st.sampled_from(WORDS), max_size=25).map(" ".join),
        st.lists(st.sampled_from([*WORDS, "?", "  ", "x-y"]), max_size=12).map("".join),
    ),
    max_size=30,
)


def _all_known(gram: str, known: set[str]) -> bool:
    return all(word in known for word in gram.split(" "))


@settings(max_examples=150, deadline=None)
@given(texts, st.sets(st.sampled_from(WORDS)), st.integers(1, 9))
def test_a_vocabulary_keeps_exactly_the_n_grams_of_its_words(
    rows: list[str | None], vocabulary: set[str], n: int
) -> None:
    every = ngram_frame(pl.Series(rows, dtype=pl.String), n)
    known = ngram_frame(pl.Series(rows, dtype=pl.String), n, pl.Series(sorted(vocabulary)))
    # a text shorter than n keeps its one n-gram either way: it is compared whole
    short = every.get_column("gram").str.count_matches(" ") + 1 < n
    kept = [
        is_short or _all_known(gram, vocabulary)
        for gram, is_short in zip(every.get_column("gram"), short, strict=True)
    ]
    assert known.equals(every.filter(pl.Series(kept, dtype=pl.Boolean)))


def test_words_of_lists_each_word_once() -> None:
    found = words_of(pl.Series(["the cat, the hat", None, "hat?"]))
    assert sorted(found.to_list()) == ["cat", "hat", "the"]


# Letters of each kind of script: spaced (Latin, Hangul) and written without spaces (Han,
# kana, Thai), with digits, underscores, spaces and punctuation between them.
MIXED = "ab_7 ,?。、한국计算平均值のデータภาษา"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=MIXED, max_size=30), max_size=12), st.integers(1, 4))
def test_n_grams_follow_the_word_definition_in_every_script(rows: list[str], n: int) -> None:
    """Against the definition written again from Unicode names (``test_assign.words``):
    a character each in the scripts written without spaces, runs of ``\\w`` elsewhere."""
    found = ngram_frame(pl.Series(rows, dtype=pl.String), n)
    expected = set()
    for row, text in enumerate(rows):
        tokens = words(text)
        if 0 < len(tokens) < n:
            expected.add((row, " ".join(tokens)))
        expected |= {(row, " ".join(tokens[i : i + n])) for i in range(len(tokens) - n + 1)}
    assert set(found.select("row", "gram").iter_rows()) == expected


def test_a_chinese_question_is_compared_a_character_at_a_time() -> None:
    grams = ngram_frame(pl.Series(["计算df的平均值"]), 3).get_column("gram").to_list()
    assert grams == ["计 算 df", "算 df 的", "df 的 平", "的 平 均", "平 均 值"]
