"""Word n-grams: with a vocabulary, exactly the n-grams whose words are all in it."""

from __future__ import annotations

import sys
import unicodedata

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.contract.hashing import normalize_question_text
from builder.derive.splits.shingles import comparable, ngram_frame, words_of
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


# characters Python's unicodedata knows: Polars' Unicode tables are newer, and a character
# assigned since lowercases there and not in Python (no text compared by both can hold it)
KNOWN = [
    chr(i)
    for i in range(sys.maxunicode + 1)
    if not 0xD800 <= i <= 0xDFFF and unicodedata.category(chr(i)) != "Cn"
]


def _spaced(text: str) -> str:
    return " ".join(text.split())


def test_every_character_compares_as_its_normalized_text() -> None:
    """Each assigned character alone, and after an ASCII letter (the ASCII shortcut is per
    text): ``comparable`` gives what ``normalize_question_text`` gives, spacing aside."""
    for prefix in ("", "a"):
        texts = [prefix + c for c in KNOWN]
        got = comparable(pl.Series(texts)).to_list()
        expected = [normalize_question_text(t) for t in texts]
        wrong = [(t, g, e) for t, g, e in zip(texts, got, expected, strict=True) if _spaced(g) != e]
        assert not wrong, wrong[:5]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(st.sampled_from(KNOWN[:3000] + list("ΣσςßẞſﬁİI\u200b\u00ad \t")))))
def test_texts_compare_as_their_normalized_texts(texts: list[str]) -> None:
    got = comparable(pl.Series(texts, dtype=pl.String)).to_list()
    assert [_spaced(g) for g in got] == [normalize_question_text(t) for t in texts]


def test_final_sigma_sharp_s_and_ligatures_compare_alike() -> None:
    pairs = [
        ("ΠΟΙΟΣ ΕΊΝΑΙ Ο ΜΈΣΟΣ ΌΡΟΣ", "ποιος είναι ο μέσος όρος"),
        ("STRASSE", "Straße"),
        ("ﬁnal", "final"),
        ("me\u00adan", "mean"),
    ]
    for a, b in pairs:
        assert comparable(pl.Series([a])).to_list() == comparable(pl.Series([b])).to_list()
