"""Hashing: test vectors for question ids and value hashes, and every row of normalize_value's table."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import subprocess
import sys
from decimal import Decimal

import numpy as np
import pandas as pd
import polars as pl
import pytest

from builder.contract.hashing import (
    canonical_json,
    hash_canonical_json,
    normalize_question_text,
    normalize_value,
    question_id,
    rehash_json_text,
    round_floats,
    sha256_16,
    value_hash,
)


def seed_question_id(text: str, hint: str | None) -> str:
    """The episode schema's definition, written out independently of the builder."""
    return hashlib.sha256(f"{text}|{hint or ''}".encode()).hexdigest()[:16]


def seed_value_hash(canonical: object) -> str:
    """``sha256(json.dumps(x, sort_keys=True))[:16]`` on an already-canonical value."""
    return hashlib.sha256(json.dumps(canonical, sort_keys=True).encode()).hexdigest()[:16]


# ---------------------------------------------------------------- question ids


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("What is 2+2?", None),
        ("What is 2+2?", ""),
        ("Which city has the most rows?", "Use groupby"),
        ("Café – naïve?", "ünï"),
        ("", None),
        ("a|b", "c|d"),
    ],
)
def test_question_id_follows_the_seed_definition(text: str, hint: str | None) -> None:
    assert question_id(text, hint) == seed_question_id(text, hint)


def test_question_id_pinned_vectors() -> None:
    # Literals: a change of the id definition must break this test, not just move with it.
    assert question_id("What is 2+2?", None) == "c0591215f6e8d129"
    assert question_id("Which city has the most rows?", "Use groupby") == "fcc8a6b67f826c05"
    assert question_id("Café – naïve?", "ünï") == "c6b6346b78a7ad23"


def test_question_id_hint_none_and_empty_agree_but_a_hint_changes_the_id() -> None:
    assert question_id("Q", None) == question_id("Q", "")
    assert question_id("Q", "h") != question_id("Q", None)
    # The separator is part of the definition: moving text between the halves changes the id.
    assert question_id("a|b", None) != question_id("a", "b")
    assert len(question_id("Q", None)) == 16


# ---------------------------------------------------------------- value hashes


@pytest.mark.parametrize(
    "value",
    [1, "1", 1.0, True, None, [1, 2], {"b": 1, "a": [1.5, None]}, "é", -0.5, {"k": {}}, []],
)
def test_value_hash_follows_the_seed_definition_for_json_values(value: object) -> None:
    assert value_hash(value) == seed_value_hash(value)
    assert canonical_json(value) == json.dumps(value, sort_keys=True)
    assert hash_canonical_json(canonical_json(value)) == value_hash(value)


def test_value_hash_pinned_vectors() -> None:
    assert value_hash(1) == "6b86b273ff34fce1"
    assert value_hash("1") == "391552c099c101b1"
    assert value_hash(1.0) == "d0ff5974b6aa52cf"
    assert value_hash(True) == "b5bea41b6c623f7c"
    assert value_hash(None) == "74234e98afe7498f"
    assert value_hash([1, 2]) == "3a316d6d3226f84c"
    assert value_hash({"b": 1, "a": [1.5, None]}) == "ad3879169fd83895"
    assert value_hash("é") == "abc3932c9ec58f04"
    assert value_hash({"shape": [300, 4], "columns": ["a"]}) == "81cbf0fe699078e3"


def test_canonical_json_uses_default_separators_sorted_keys_and_ascii_escapes() -> None:
    assert canonical_json({"b": 1, "a": [1, 2]}) == '{"a": [1, 2], "b": 1}'
    assert canonical_json("é") == '"\\u00e9"'
    assert canonical_json({"z": {"y": 1, "x": 2}}) == '{"z": {"x": 2, "y": 1}}'


def test_string_one_and_number_one_stay_distinct() -> None:
    assert canonical_json("1") == '"1"'
    assert canonical_json(1) == "1"
    assert value_hash("1") != value_hash(1)


def test_one_one_point_zero_and_true_are_three_values() -> None:
    texts = {canonical_json(1), canonical_json(1.0), canonical_json(True)}
    assert texts == {"1", "1.0", "true"}
    assert len({value_hash(1), value_hash(1.0), value_hash(True)}) == 3
    assert type(normalize_value(True)) is bool
    assert type(normalize_value(1.0)) is float


# ---------------------------------------------------------------- the capture contract

# Every row of the capture contract's table (computed with the capture code itself):
# value, canonical JSON text, exact hash, precision=2 hash.
CAPTURE_VECTORS = [
    (lambda: 42, "42", "73475cb40a568e8d", "73475cb40a568e8d"),
    (lambda: 54.321, "54.321", "d8427dc3117e6a19", "de02ffdce268a89f"),
    (lambda: float("nan"), "NaN", "d5b592c05dc25b50", "d5b592c05dc25b50"),
    (lambda: float("inf"), "Infinity", "d0067cad9a63e081", "d0067cad9a63e081"),
    (lambda: pd.DataFrame({"a": [5]}), "5", "ef2d127de37b942b", "ef2d127de37b942b"),
    (lambda: pd.DataFrame({"a": [1, 2, 3]}), "[1, 2, 3]", "a36b1f2c3f84522d", "a36b1f2c3f84522d"),
    (
        lambda: pd.DataFrame({"a": [1, 2]}, index=["x", "y"]),
        '{"x": 1, "y": 2}',
        "8ce18b46435aba76",
        "8ce18b46435aba76",
    ),
    (
        lambda: pd.DataFrame({"k": ["x", "y"], "v": [1.5, 2.0]}),
        '{"x": 1.5, "y": 2.0}',
        "ac8e85402945b4a4",
        "ac8e85402945b4a4",
    ),
    (
        lambda: pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5], "c": ["p", "q"]}),
        '[{"a": 1, "b": 0.5, "c": "p"}, {"a": 2, "b": 1.5, "c": "q"}]',
        "91f56c07ec17a98e",
        "91f56c07ec17a98e",
    ),
    (lambda: pd.Series([7]), "7", "7902699be42c8a8e", "7902699be42c8a8e"),
    (lambda: pd.Series([1.25, 2.5]), "[1.25, 2.5]", "c7c01b8e73acfa56", "c7c01b8e73acfa56"),
    (
        lambda: pd.Series([3, 1], index=["m", "f"]),
        '{"f": 1, "m": 3}',
        "03d57369f1d6a226",
        "03d57369f1d6a226",
    ),
    (lambda: np.int64(7), "7", "7902699be42c8a8e", "7902699be42c8a8e"),
    (
        lambda: dt.datetime(2025, 1, 1, 12, 30),
        '"2025-01-01 12:30:00"',
        "211dff5d7bbb245a",
        "211dff5d7bbb245a",
    ),
    (lambda: pd.DataFrame(), "{}", "44136fa355b3678a", "44136fa355b3678a"),
]


@pytest.mark.parametrize(("make", "text", "exact", "rounded"), CAPTURE_VECTORS)
def test_capture_contract_vectors(make, text: str, exact: str, rounded: str) -> None:
    value = make()
    assert canonical_json(value) == text
    assert value_hash(value) == exact
    assert value_hash(value, precision=2) == rounded
    assert sha256_16(text) == exact  # the hash is of exactly that text


def capture_side(value: object, precision: int | None = None) -> str:
    """The capture side's serialisation, written out independently for plain values."""
    if precision is not None:
        value = round_floats(value, precision)
    return json.dumps(value, sort_keys=True, default=str)


@pytest.mark.parametrize(
    "value",
    [
        {"b": [1.234567, float("-inf")], "a": (0.125, "x")},
        [[1.005, 2.675], {"k": float("nan")}],
        {"when": dt.date(2024, 1, 2), "amount": Decimal("1.10"), "raw": b"ab"},
        {1: "int keys", 2: 2.5},
        frozenset({3, 1, 2}),
    ],
    ids=["nested", "rounding-edges", "str-fallback", "int-key", "set"],
)
def test_plain_values_follow_the_capture_serialiser(value: object) -> None:
    assert canonical_json(value) == capture_side(value)
    assert canonical_json(value, 2) == capture_side(value, 2)
    assert value_hash(value, 3) == sha256_16(capture_side(value, 3))


def test_rounded_scheme_rounds_every_float_but_not_ints_or_strings() -> None:
    assert canonical_json({"x": [54.321, 7, "54.321"]}, 2) == '{"x": [54.32, 7, "54.321"]}'
    assert canonical_json(np.float64(2.345), 1) == "2.3"  # numpy floats are Python floats
    assert canonical_json(pd.DataFrame({"k": ["a"], "v": [0.123]}).set_index("k"), 2) == "0.12"
    assert value_hash(54.321, 2) == value_hash(54.32, 2) == value_hash(54.32)
    assert value_hash(54.321) != value_hash(54.32)


def test_nan_and_infinity_are_tokens_not_null() -> None:
    assert (
        canonical_json([float("nan"), float("inf"), -float("inf")]) == "[NaN, Infinity, -Infinity]"
    )
    assert value_hash(float("nan")) != value_hash(None)
    assert canonical_json(pd.Series([1.0, np.nan])) == "[1.0, NaN]"


def test_values_nested_in_a_structure_go_through_the_str_fallback() -> None:
    # A DataFrame inside a list is not normalized (the capture side does not recurse).
    frame = pd.DataFrame({"a": [1]})
    assert canonical_json([frame]) == json.dumps([str(frame)])
    assert canonical_json({"t": pd.Timestamp("2025-01-01 12:30")}) == '{"t": "2025-01-01 12:30:00"}'
    assert canonical_json([np.int32(3), np.float32(0.5), np.array([1, 2])]) == "[3, 0.5, [1, 2]]"


def test_numpy_bools_nested_differ_between_the_two_schemes_as_on_the_capture_side() -> None:
    # The seeds' serialiser had no numpy-bool case (str: "True"); the contract package's has.
    assert canonical_json([np.bool_(True)]) == '["True"]'
    assert canonical_json([np.bool_(True)], 2) == "[true]"
    assert canonical_json(np.bool_(True)) == "true"  # top level: np.generic -> .item()


def test_pandas_forms_keep_python_scalars_and_labelled_indexes() -> None:
    assert normalize_value(pd.Series([1.5, 2.5], index=[10, 20])) == {10: 1.5, 20: 2.5}
    assert canonical_json(pd.Series([1.5, 2.5], index=[10, 20])) == '{"10": 1.5, "20": 2.5}'
    two = pd.DataFrame({"day": ["mon", "mon"], "n": [1, 2]})
    assert canonical_json(two) == '{"mon": 2}'  # the same key twice: the last wins
    stamped = pd.DataFrame({"day": pd.to_datetime(["2025-01-01"]), "n": [1]}).head(0)
    assert canonical_json(stamped) == "{}"
    # Timestamp keys: json.dumps refuses them on the capture side too (no hash exists)
    with pytest.raises(TypeError):
        value_hash(pd.DataFrame({"day": pd.to_datetime(["2025-01-01", "2025-01-02"]), "n": [1, 2]}))
    wide = pd.DataFrame({"a": [1], "b": [True], "c": [None]})
    assert canonical_json(wide) == '[{"a": 1, "b": true, "c": null}]'


def test_polars_takes_the_pandas_forms_of_a_range_index() -> None:
    assert canonical_json(pl.DataFrame({"a": [5]})) == "5"
    assert canonical_json(pl.DataFrame({"a": [1, 2]})) == "[1, 2]"
    assert (
        canonical_json(pl.DataFrame({"k": ["x", "y"], "v": [1.5, 2.0]})) == '{"x": 1.5, "y": 2.0}'
    )
    three = {"a": [1, 2], "b": [0.5, 1.5], "c": ["p", "q"]}
    assert value_hash(pl.DataFrame(three)) == value_hash(pd.DataFrame(three))
    assert value_hash(pl.Series([7])) == value_hash(pd.Series([7]))
    assert value_hash(pl.Series([1.25, 2.5])) == value_hash(pd.Series([1.25, 2.5]))
    assert canonical_json(pl.DataFrame()) == "{}"


class Opaque:
    def __str__(self) -> str:
        return "opaque"


@pytest.mark.parametrize(
    ("value", "text"),
    [(Opaque(), '"opaque"'), (1 + 2j, '"(1+2j)"'), ([1, Opaque()], '[1, "opaque"]')],
    ids=["class", "complex", "nested"],
)
def test_anything_else_hashes_as_its_str_and_never_raises(value: object, text: str) -> None:
    assert canonical_json(value) == text
    assert len(value_hash(value, 2)) == 16


def test_stored_text_rehashes_under_either_scheme() -> None:
    text = canonical_json({"mean": 54.321, "n": 3})
    assert rehash_json_text(text, None) == value_hash({"mean": 54.321, "n": 3})
    assert rehash_json_text(text, 2) == value_hash({"mean": 54.321, "n": 3}, 2)
    assert rehash_json_text("NaN", 2) == value_hash(float("nan"), 2)


def test_hashing_imports_neither_numpy_nor_pandas() -> None:
    code = (
        "import sys; from builder.contract.hashing import value_hash; from builder.contract import rewards;"
        "value_hash({'a': [1.5]}, 2); rewards.outcome_reward(3, value_hash(3));"
        "print(sorted(m for m in ('numpy', 'pandas', 'polars') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- question text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  What   is\t2+2?\n", "what is 2+2?"),
        ("Stra\u00dfe", "strasse"),  # casefold, not lower
        ("\ufb01le", "file"),  # NFKC: ligature
        ("\uff21\uff22\uff23", "abc"),  # NFKC: full-width letters
        ("a\u00a0b\u2003c", "a b c"),  # NFKC turns no-break and em spaces into spaces
        ("Cafe\u0301", "caf\u00e9"),  # NFKC composes
        ("Cafe\u200b\u0301", "caf\u00e9"),  # invisible characters dropped before NFKC
        ("me\u00adan\u2060 of\u200b \u200dprice\ufeff", "mean of price"),
        ("\u202ebackwards\u202c \u2066x\u2069", "backwards x"),
        # every default-ignorable code point goes: grapheme joiner, Arabic letter mark,
        # variation selector, tag space, Hangul fillers, Mongolian selector, blank braille
        ("ci\u034fty\u061c ma\ufe0fx\U000e0020", "city max"),
        ("a\u3164b\uffa0c\u180bd\u2800e \u115fx\U0001d173", "abcde x"),
        ("", ""),
    ],
)
def test_normalize_question_text(text: str, expected: str) -> None:
    assert normalize_question_text(text) == expected


def test_normalized_text_is_idempotent() -> None:
    once = normalize_question_text(" ＡＢ  \ufb01 Straße ")
    assert normalize_question_text(once) == once
